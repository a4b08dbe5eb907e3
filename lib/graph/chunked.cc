#include "graph/chunked.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/json_reader.h"
#include "common/npy.h"

namespace gnn {

namespace fs = std::filesystem;

const char* const kChunkSplitNames[3] = {"train_mask", "val_mask", "test_mask"};
const char* const kChunkUserIds = "node_ids";
using nlohmann::json;

namespace {

constexpr int kChunkedVersion = 1;
constexpr int kMaxChunks = 1 << 16;

// A dataset as the writer sees it: borrowed arrays, homogeneous or not.
struct TypeView {
  std::string name;
  int64_t num_nodes = 0, feature_dim = 0;
  const float* features = nullptr;
};
struct RelView {
  std::string key;
  const int64_t *src = nullptr, *dst = nullptr;
  int64_t num_edges = 0;
  const float* features = nullptr;  // [num_edges, feature_dim] edge features, or none
  int64_t feature_dim = 0;
  // Edge labels (edge tasks): classes or values, and splits (1-3), or none.
  const int64_t* labels = nullptr;
  const float* targets = nullptr;
  const uint8_t* split = nullptr;
};
struct DatasetView {
  std::string name;
  std::vector<TypeView> types;
  std::vector<RelView> rels;
  size_t target = 0;
  const int64_t* labels = nullptr;
  const int64_t* node_ids = nullptr;  // the user's id of each node (one type), or none
  int64_t num_classes = 0;
  const std::vector<int64_t>* splits[3] = {nullptr, nullptr, nullptr};
  bool known_undirected = false;  // written as metadata.json's gnn.known_undirected
};

// Safe as a folder name inside the output ("src:rel:dst" keys are checked
// by the dataset already; '/' and ".." never reach here).
std::string Checked(const std::string& name) {
  if (name.empty() || name == "." || name.find("..") != std::string::npos ||
      name.find('/') != std::string::npos) {
    throw DataError("'" + name + "' cannot name a folder of a chunked dataset");
  }
  return name;
}

// Where the chunks go (the temporary folder) and how many: chunk c of n
// items holds [Start(n, c), Start(n, c + 1)).
struct ChunkLayout {
  fs::path out;
  int chunks = 1;
  int64_t Start(int64_t n, int c) const { return n * c / chunks; }
};

void CheckChunkCount(const DatasetView& v, int chunks) {
  if (chunks < 1 || chunks > kMaxChunks) {
    throw ConfigError("--write_chunked needs 1 to " + std::to_string(kMaxChunks) + " chunks, got " +
                      std::to_string(chunks));
  }
  for (const TypeView& t : v.types) {
    if (t.num_nodes < chunks) {
      throw ConfigError("cannot cut " + std::to_string(t.num_nodes) + " " + t.name +
                        " nodes into " + std::to_string(chunks) + " chunks");
    }
  }
}

// metadata.json's node types and their nodes per chunk.
void DescribeNodes(const DatasetView& v, const ChunkLayout& l, json* meta) {
  (*meta)["node_type"] = json::array();
  (*meta)["num_nodes_per_chunk"] = json::array();
  for (const TypeView& t : v.types) {
    (*meta)["node_type"].push_back(t.name);
    json counts = json::array();
    for (int c = 0; c < l.chunks; ++c)
      counts.push_back(l.Start(t.num_nodes, c + 1) - l.Start(t.num_nodes, c));
    (*meta)["num_nodes_per_chunk"].push_back(counts);
  }
}

// edges/<relation>/chunk-<c>.npy, (src, dst) rows, and their metadata.
void WriteEdges(const DatasetView& v, const ChunkLayout& l, json* meta) {
  (*meta)["edge_type"] = json::array();
  (*meta)["num_edges_per_chunk"] = json::array();
  (*meta)["edges"] = json::object();
  for (const RelView& r : v.rels) {
    (*meta)["edge_type"].push_back(r.key);
    json counts = json::array(), paths = json::array();
    const std::string rel_dir = "edges/" + Checked(r.key);
    MakeDirs((l.out / rel_dir).string());
    for (int c = 0; c < l.chunks; ++c) {
      const int64_t b = l.Start(r.num_edges, c), e = l.Start(r.num_edges, c + 1);
      std::vector<int64_t> pairs(static_cast<size_t>(2 * (e - b)));
      for (int64_t i = b; i < e; ++i) {
        pairs[static_cast<size_t>(2 * (i - b))] = r.src[i];
        pairs[static_cast<size_t>(2 * (i - b) + 1)] = r.dst[i];
      }
      const std::string path = rel_dir + "/chunk-" + std::to_string(c) + ".npy";
      WriteNpy((l.out / path).string(), pairs.data(), {e - b, 2});
      counts.push_back(e - b);
      paths.push_back(path);
    }
    (*meta)["num_edges_per_chunk"].push_back(counts);
    (*meta)["edges"][r.key] = {{"format", {{"name", "numpy"}}}, {"data", paths}};
  }
}

// edge_data/<relation>/feat-<c>.npy, [chunk edges, k] float32, for the
// relations with edge features, and their metadata.
void WriteEdgeData(const DatasetView& v, const ChunkLayout& l, json* meta) {
  (*meta)["edge_data"] = json::object();
  for (const RelView& r : v.rels) {
    if (r.feature_dim == 0) continue;
    const std::string dir = "edge_data/" + Checked(r.key);
    MakeDirs((l.out / dir).string());
    json paths = json::array();
    for (int c = 0; c < l.chunks; ++c) {
      const int64_t b = l.Start(r.num_edges, c), e = l.Start(r.num_edges, c + 1);
      const std::string path = dir + "/feat-" + std::to_string(c) + ".npy";
      WriteNpy((l.out / path).string(), r.features + b * r.feature_dim, {e - b, r.feature_dim});
      paths.push_back(path);
    }
    (*meta)["edge_data"][r.key]["feat"] = {{"format", {{"name", "numpy"}}}, {"data", paths}};
  }
  // DGL's edge task data: label, and a uint8 mask per split.
  for (const RelView& r : v.rels) {
    if (r.split == nullptr) continue;
    const std::string dir = "edge_data/" + Checked(r.key);
    MakeDirs((l.out / dir).string());
    const char* names[4] = {"label", "train_mask", "val_mask", "test_mask"};
    for (int k = 0; k < 4; ++k) {
      json paths = json::array();
      for (int c = 0; c < l.chunks; ++c) {
        const int64_t b = l.Start(r.num_edges, c), e = l.Start(r.num_edges, c + 1);
        const std::string path = dir + "/" + names[k] + "-" + std::to_string(c) + ".npy";
        if (k == 0 && r.labels != nullptr) {
          WriteNpy((l.out / path).string(), r.labels + b, {e - b});
        } else if (k == 0) {
          WriteNpy((l.out / path).string(), r.targets + b, {e - b});
        } else {
          std::vector<uint8_t> mask(static_cast<size_t>(e - b));
          for (int64_t i = b; i < e; ++i) mask[i - b] = r.split[i] == k ? 1 : 0;
          WriteNpy((l.out / path).string(), mask.data(), {e - b});
        }
        paths.push_back(path);
      }
      (*meta)["edge_data"][r.key][names[k]] = {{"format", {{"name", "numpy"}}}, {"data", paths}};
    }
  }
}

// <type_dir>/<name>-<c>.npy: `width` values of type T per node of `t`,
// node i's written by row_of(i, out); and their metadata.
template <typename T, typename RowOf>
void WriteNodeRows(const ChunkLayout& l, const TypeView& t, const std::string& type_dir,
                   const std::string& name, int64_t width, RowOf row_of, json* meta) {
  MakeDirs((l.out / type_dir).string());
  json paths = json::array();
  for (int c = 0; c < l.chunks; ++c) {
    const int64_t b = l.Start(t.num_nodes, c), e = l.Start(t.num_nodes, c + 1);
    std::vector<T> rows(static_cast<size_t>((e - b) * width));
    for (int64_t i = b; i < e; ++i) row_of(i, rows.data() + (i - b) * width);
    const std::string path = type_dir + "/" + name + "-" + std::to_string(c) + ".npy";
    std::vector<int64_t> shape = {e - b};
    if (width > 1 || name == "feat") shape.push_back(width);
    WriteNpy((l.out / path).string(), rows.data(), shape);
    paths.push_back(path);
  }
  (*meta)["node_data"][t.name][name] = {{"format", {{"name", "numpy"}}}, {"data", paths}};
}

// node_data/<type>/: every type's features; the target's labels and split
// masks.
void WriteNodeData(const DatasetView& v, const ChunkLayout& l, json* meta) {
  (*meta)["node_data"] = json::object();
  for (size_t ti = 0; ti < v.types.size(); ++ti) {
    const TypeView& t = v.types[ti];
    const std::string type_dir = "node_data/" + Checked(t.name);
    if (t.feature_dim > 0) {
      WriteNodeRows<float>(
          l, t, type_dir, "feat", t.feature_dim,
          [&](int64_t i, float* o) {
            std::copy(t.features + i * t.feature_dim, t.features + (i + 1) * t.feature_dim, o);
          },
          meta);
    }
    if (ti != v.target) continue;
    if (v.node_ids) {
      WriteNodeRows<int64_t>(
          l, t, type_dir, kChunkUserIds, 1, [&](int64_t i, int64_t* o) { *o = v.node_ids[i]; },
          meta);
    }
    WriteNodeRows<int64_t>(
        l, t, type_dir, "label", 1, [&](int64_t i, int64_t* o) { *o = v.labels[i]; }, meta);
    for (int m = 0; m < 3; ++m) {
      std::vector<uint8_t> mask(static_cast<size_t>(t.num_nodes), 0);
      for (int64_t i : *v.splits[m]) mask[static_cast<size_t>(i)] = 1;
      WriteNodeRows<uint8_t>(
          l, t, type_dir, kChunkSplitNames[m], 1,
          [&](int64_t i, uint8_t* o) { *o = mask[static_cast<size_t>(i)]; }, meta);
    }
  }
}

// Writes the chunks into a temporary folder beside `dir`, which becomes
// `dir` only when complete.
void Write(const DatasetView& v, int chunks, const std::string& dir) {
  CheckChunkCount(v, chunks);
  if (PathExists(dir)) throw ConfigError(dir + " exists: choose a new folder for the chunks");
  fs::path target = fs::absolute(dir).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();  // a trailing slash
  MakeDirs(target.parent_path().string());
  ScopedTempDir tmp(target.parent_path().string(), "." + target.filename().string() + ".tmp.");
  const ChunkLayout layout{tmp.path(), chunks};
  json meta;
  meta["graph_name"] = v.name;
  DescribeNodes(v, layout, &meta);
  WriteEdges(v, layout, &meta);
  WriteNodeData(v, layout, &meta);
  WriteEdgeData(v, layout, &meta);
  meta["gnn"] = {{"format_version", kChunkedVersion},
                 {"target", v.types[v.target].name},
                 {"num_classes", v.num_classes},
                 {"known_undirected", v.known_undirected}};
  WriteFileAtomic((layout.out / "metadata.json").string(), meta.dump(2) + "\n");
  std::error_code ec;
  fs::rename(layout.out, target, ec);
  if (ec) throw DataError("cannot move the chunks to " + dir + ": " + ec.message());
  SyncDir(target.parent_path().string());
}

std::string Resolve(const ChunkedMeta& m, const std::string& path, const std::string& what) {
  const fs::path p(path);
  if (p.is_absolute()) return path;  // DGL's metadata may name files anywhere
  if (path.find("..") != std::string::npos) {
    throw DataError(m.dir + "/metadata.json: " + what + " '" + path +
                    "' must be absolute or a path inside the folder (no '..')");
  }
  return (fs::path(m.dir) / p).string();
}

}  // namespace

void ReadEdgeChunk(const ChunkedMeta& m, size_t r, int c, std::vector<int64_t>* src,
                   std::vector<int64_t>* dst) {
  const ChunkedMeta::Files& f = m.edges[r];
  const std::string path = Resolve(m, f.paths[static_cast<size_t>(c)], "edge file");
  const int64_t want = m.edges_per_chunk[r][static_cast<size_t>(c)];
  if (f.format == "numpy") {
    const std::vector<int64_t> pairs = ReadNpy<int64_t>(path, {want, 2});
    src->reserve(src->size() + static_cast<size_t>(want));
    dst->reserve(dst->size() + static_cast<size_t>(want));
    for (int64_t i = 0; i < want; ++i) {
      src->push_back(pairs[static_cast<size_t>(2 * i)]);
      dst->push_back(pairs[static_cast<size_t>(2 * i + 1)]);
    }
    return;
  }
  OpenForRead(path);  // "cannot open PATH: REASON", a folder too (ifstream would open one)
  std::ifstream in(path);
  if (!in) throw DataError(CannotMessage("open", path, errno));
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::replace(line.begin(), line.end(), f.delimiter, ' ');
    std::istringstream ss(line);
    int64_t a = 0, b = 0;
    std::string rest;
    if (!(ss >> a >> b) || (ss >> rest)) {
      throw DataError(path + ": line " + std::to_string(n + 1) + " is not 'src" + f.delimiter +
                      "dst'");
    }
    src->push_back(a);
    dst->push_back(b);
    ++n;
  }
  if (n != want) {
    throw DataError(path + ": " + std::to_string(n) + " edges, metadata.json says " +
                    std::to_string(want));
  }
}

const ChunkedMeta::Files* NodeData(const ChunkedMeta& m, size_t t, const std::string& name) {
  for (const auto& [n, f] : m.node_data[t]) {
    if (n == name) return &f;
  }
  return nullptr;
}

template <typename T>
std::vector<T> ReadChunkNodeData(const ChunkedMeta& m, size_t t, const std::string& name, int c,
                                 int64_t* width) {
  const ChunkedMeta::Files* f = NodeData(m, t, name);
  if (!f) throw DataError(m.dir + "/metadata.json: " + m.node_types[t] + " has no " + name);
  if (f->format != "numpy") {
    throw DataError(m.dir + "/metadata.json: node data " + name + " of " + m.node_types[t] +
                    " must be numpy");
  }
  std::vector<int64_t> shape;
  const std::string path = Resolve(m, f->paths[static_cast<size_t>(c)], "node data file");
  std::vector<T> rows = ReadNpy<T>(path, {}, &shape);
  const int64_t w = shape.size() == 1 ? 1 : (shape.size() == 2 ? shape[1] : -1);
  if (shape.empty() || shape[0] != m.nodes_per_chunk[t][static_cast<size_t>(c)] || w < 0) {
    throw DataError(path + ": shape does not match the chunk's " +
                    std::to_string(m.nodes_per_chunk[t][static_cast<size_t>(c)]) + " nodes");
  }
  *width = w;
  return rows;
}

template std::vector<float> ReadChunkNodeData<float>(const ChunkedMeta&, size_t, const std::string&,
                                                     int, int64_t*);
template std::vector<int64_t> ReadChunkNodeData<int64_t>(const ChunkedMeta&, size_t,
                                                         const std::string&, int, int64_t*);
template std::vector<uint8_t> ReadChunkNodeData<uint8_t>(const ChunkedMeta&, size_t,
                                                         const std::string&, int, int64_t*);

namespace {

template <typename T>
std::vector<T> ReadNodeData(const ChunkedMeta& m, size_t t, const std::string& name,
                            int64_t* width) {
  std::vector<T> all;
  *width = -1;
  for (int c = 0; c < m.num_chunks; ++c) {
    int64_t w = 0;
    std::vector<T> rows = ReadChunkNodeData<T>(m, t, name, c, &w);
    if (*width >= 0 && w != *width) {
      throw DataError(
          Resolve(m, NodeData(m, t, name)->paths[static_cast<size_t>(c)], "node data file") + ": " +
          std::to_string(w) + " columns, earlier chunks have " + std::to_string(*width));
    }
    *width = w;
    all.insert(all.end(), rows.begin(), rows.end());
  }
  return all;
}

}  // namespace

int64_t ChunkedMeta::NumNodes(size_t type) const {
  int64_t n = 0;
  for (int64_t c : nodes_per_chunk[type]) n += c;
  return n;
}

int64_t ChunkedMeta::ChunkStart(size_t type, int c) const {
  int64_t n = 0;
  for (int i = 0; i < c; ++i) n += nodes_per_chunk[type][static_cast<size_t>(i)];
  return n;
}

bool IsChunkedFolder(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(fs::path(path) / "metadata.json", ec);
}

ChunkedMeta ReadChunkedMeta(const std::string& dir) {
  const std::string file = (fs::path(dir) / "metadata.json").string();
  const json j = json::parse(ReadFile(file), nullptr, false);
  if (j.is_discarded()) throw DataError(file + " is not JSON");
  const JsonReader r(j, file);
  ChunkedMeta m;
  m.dir = dir;
  m.graph_name = r.At("graph_name").String();
  // It names the partition config file: a plain file name.
  if (m.graph_name.empty() || m.graph_name[0] == '.' ||
      m.graph_name.find('/') != std::string::npos) {
    r.At("graph_name").Fail("'" + m.graph_name + "' cannot name a graph (a plain file name)");
  }
  m.undirected_reason = KnownUndirectedReason(m.graph_name);
  // A list of per-chunk counts, each in [0, most].
  auto counts_of = [](const JsonReader& list, int64_t most) {
    std::vector<int64_t> counts;
    for (size_t c = 0; c < list.ArraySize(); ++c) counts.push_back(list.Item(c).Int(0, most));
    return counts;
  };
  const JsonReader types = r.At("node_type"), ncounts = r.At("num_nodes_per_chunk");
  if (types.ArraySize() < 1 || ncounts.ArraySize() != types.ArraySize())
    ncounts.Fail("needs one list of chunk sizes per node type");
  for (size_t t = 0; t < types.ArraySize(); ++t) {
    m.node_types.push_back(types.Item(t).String());
    m.nodes_per_chunk.push_back(counts_of(ncounts.Item(t), int64_t{1} << 40));
  }
  m.num_chunks = static_cast<int>(m.nodes_per_chunk[0].size());
  if (m.num_chunks < 1 || m.num_chunks > kMaxChunks) ncounts.Fail("bad number of chunks");
  for (const auto& c : m.nodes_per_chunk)
    if (static_cast<int>(c.size()) != m.num_chunks) ncounts.Fail("chunk counts differ by type");
  const JsonReader etypes = r.At("edge_type"), ecounts = r.At("num_edges_per_chunk");
  if (ecounts.ArraySize() != etypes.ArraySize())
    ecounts.Fail("needs one list of chunk sizes per edge type");
  for (size_t e = 0; e < etypes.ArraySize(); ++e) {
    m.edge_types.push_back(etypes.Item(e).String());
    const std::vector<int64_t> counts = counts_of(ecounts.Item(e), int64_t{1} << 42);
    if (static_cast<int>(counts.size()) != m.num_chunks)
      ecounts.Item(e).Fail("needs " + std::to_string(m.num_chunks) + " chunk sizes");
    m.edges_per_chunk.push_back(counts);
  }
  auto files = [&](const JsonReader& f) {
    ChunkedMeta::Files out;
    out.format = f.At("format").At("name").String();
    if (out.format == "parquet") {
      f.At("format").At("name").Fail(
          "parquet is not read (Debian 12 has no C++ Arrow): write the chunks as numpy or csv");
    }
    if (out.format != "numpy" && out.format != "csv")
      f.At("format").At("name").Fail("must be numpy or csv");
    if (out.format == "csv" && f.At("format").Has("delimiter")) {
      const std::string d = f.At("format").At("delimiter").String();
      if (d.size() != 1) f.At("format").At("delimiter").Fail("must be one character");
      out.delimiter = d[0];
    }
    const JsonReader data = f.At("data");
    if (static_cast<int>(data.ArraySize()) != m.num_chunks)
      data.Fail("needs one file per chunk (" + std::to_string(m.num_chunks) + ")");
    for (size_t c = 0; c < data.ArraySize(); ++c) out.paths.push_back(data.Item(c).String());
    return out;
  };
  for (const std::string& key : m.edge_types) m.edges.push_back(files(r.At("edges").At(key)));
  m.node_data.resize(m.node_types.size());
  if (r.Has("node_data")) {
    for (size_t t = 0; t < m.node_types.size(); ++t) {
      if (!r.At("node_data").Has(m.node_types[t])) continue;
      const JsonReader nd = r.At("node_data").At(m.node_types[t]);
      for (const std::string& name : nd.Keys())
        m.node_data[t].push_back({name, files(nd.At(name))});
    }
  }
  m.edge_data_files.resize(m.edge_types.size());
  if (r.Has("edge_data")) {
    const JsonReader ed = r.At("edge_data");
    for (const std::string& etype : ed.Keys()) {
      const auto it = std::find(m.edge_types.begin(), m.edge_types.end(), etype);
      for (const std::string& name : ed.At(etype).Keys()) {
        m.edge_data.push_back("edge_data." + etype + "." + name);
        // Named (and so refused or dropped) even when its relation is not
        // one of edge_type; read only when it is.
        if (it == m.edge_types.end()) {
          m.edge_data_unknown.push_back(m.edge_data.back());
          continue;
        }
        m.edge_data_files[static_cast<size_t>(it - m.edge_types.begin())].push_back(
            {name, files(ed.At(etype).At(name))});
      }
    }
  }
  if (r.Has("gnn")) {
    const JsonReader g = r.At("gnn");
    if (g.Has("target")) m.target = g.At("target").String();
    if (g.Has("num_classes")) m.num_classes = g.At("num_classes").Int(0, int64_t{1} << 31);
    if (g.Has("known_undirected")) {
      m.undirected_reason =
          g.At("known_undirected").Bool() ? "its metadata.json says so (gnn.known_undirected)" : "";
    }
  }
  if (m.target.empty()) {
    for (size_t t = 0; t < m.node_types.size(); ++t)
      if (NodeData(m, t, "label")) m.target = m.node_types[t];
  }
  if (std::find(m.node_types.begin(), m.node_types.end(), m.target) == m.node_types.end()) {
    r.Fail("no node type has a 'label' (or gnn.target names none)");
  }
  return m;
}

namespace {

// DGL's names of an edge task's edge data: the label and the splits' masks.
bool IsEdgeTaskData(const std::string& name) {
  return name == "label" || name == "train_mask" || name == "val_mask" || name == "test_mask";
}

// One value per edge of relation r from edge_data `name`, every chunk
// ([chunk edges] or [chunk edges, 1]); *integral: the arrays hold
// integers. DataError naming the file on another shape.
std::vector<double> ReadEdgeColumn(const ChunkedMeta& m, size_t r, const std::string& name,
                                   bool* integral) {
  const ChunkedMeta::Files* f = nullptr;
  for (const auto& entry : m.edge_data_files[r]) {
    if (entry.first == name) f = &entry.second;
  }
  std::vector<double> out;
  if (f == nullptr) return out;
  *integral = true;
  for (int c = 0; c < m.num_chunks; ++c) {
    const std::string path = Resolve(m, f->paths[static_cast<size_t>(c)], "edge data file");
    NpyHeader h;
    const std::vector<float> values = ReadNpyFloats(path, &h);
    const int64_t want = m.edges_per_chunk[r][static_cast<size_t>(c)];
    if (h.shape.empty() || h.shape[0] != want || h.shape.size() > 2 ||
        (h.shape.size() == 2 && h.shape[1] != 1)) {
      throw DataError(path + ": edge_data " + name + " holds one value per edge ([" +
                      std::to_string(want) + "] wanted)");
    }
    const bool ints =
        h.dtype != DType::kFloat32 && h.dtype != DType::kFloat16 && h.dtype != DType::kFloat64;
    *integral = *integral && ints;
    if (ints) {
      for (int64_t v : ReadNpyInts(path, &h)) out.push_back(static_cast<double>(v));
    } else {
      out.insert(out.end(), values.begin(), values.end());
    }
  }
  return out;
}

// An edge task's labels (edge_data "label" with "train_mask" and the
// optional "val_mask", "test_mask"): an integer array is class ids, a
// float one values. DataError naming metadata.json for a mask without a
// label or a label without train_mask, an edge in two masks.
void ReadChunkedEdgeLabels(const ChunkedMeta& m, size_t r, Dataset* d) {
  const std::string meta = m.dir + "/metadata.json";
  const std::string prefix = meta + ": edge_data." + m.edge_types[r] + ".";
  const char* masks[3] = {"train_mask", "val_mask", "test_mask"};
  auto has = [&](const std::string& name) {
    for (const auto& entry : m.edge_data_files[r]) {
      if (entry.first == name) return true;
    }
    return false;
  };
  // Names first: a missing partner is named before any file is read.
  if (!has("label")) {
    for (const char* mask : masks) {
      if (has(mask)) throw DataError(prefix + mask + " has no label beside it");
    }
    return;
  }
  if (!has(masks[0])) throw DataError(prefix + "label needs train_mask beside it");
  bool integral = true, mask_ints = true;
  const std::vector<double> label = ReadEdgeColumn(m, r, "label", &integral);
  std::vector<double> split[3];
  for (int k = 0; k < 3; ++k) split[k] = ReadEdgeColumn(m, r, masks[k], &mask_ints);
  const size_t n = label.size();
  d->edge_split.assign(n, 0);
  for (int k = 0; k < 3; ++k) {
    for (size_t e = 0; e < split[k].size(); ++e) {
      if (split[k][e] == 0) continue;
      if (d->edge_split[e] != 0) {
        throw DataError(prefix + masks[k] + ": edge " + std::to_string(e) +
                        " is in another split too");
      }
      d->edge_split[e] = static_cast<uint8_t>(k + 1);
    }
  }
  if (integral) {
    d->edge_label_kind = LabelKind::kClass;
    d->edge_labels.assign(label.begin(), label.end());
    d->num_edge_classes = 0;
    for (size_t e = 0; e < n; ++e) {
      if (d->edge_split[e] != 0)
        d->num_edge_classes = std::max(d->num_edge_classes, d->edge_labels[e] + 1);
    }
  } else {
    d->edge_label_kind = LabelKind::kRegression;
    d->edge_targets.assign(label.begin(), label.end());
  }
}

// Relation r's edge data as features: every array in name order, its
// columns side by side. *width: the total.
std::vector<float> ReadEdgeFeatures(const ChunkedMeta& m, size_t r, int64_t* width,
                                    std::vector<Dataset::EdgeColumns>* columns = nullptr) {
  const std::string meta = m.dir + "/metadata.json";
  if (!m.edge_data_unknown.empty()) {
    throw DataError(meta + ": " + m.edge_data_unknown[0] +
                    " names a relation that is not one of edge_type");
  }
  int64_t edges = 0;
  for (int64_t c : m.edges_per_chunk[r]) edges += c;
  std::vector<std::vector<float>> arrays;
  std::vector<int64_t> widths;
  for (const auto& [name, f] : m.edge_data_files[r]) {
    if (IsEdgeTaskData(name)) continue;  // ReadChunkedEdgeLabels
    if (f.format != "numpy") {
      throw DataError(meta + ": edge data " + name + " of " + m.edge_types[r] + " must be numpy");
    }
    std::vector<float> all;
    int64_t w = -1;
    for (int c = 0; c < m.num_chunks; ++c) {
      const std::string path = Resolve(m, f.paths[static_cast<size_t>(c)], "edge data file");
      NpyHeader h;
      std::vector<float> rows = ReadNpyFloats(path, &h);
      const int64_t want = m.edges_per_chunk[r][static_cast<size_t>(c)];
      const int64_t cw = h.shape.size() == 1 ? 1 : h.shape.size() == 2 ? h.shape[1] : -1;
      if (h.shape.empty() || h.shape[0] != want || cw < 1) {
        throw DataError(path + ": shape does not match the chunk's " + std::to_string(want) +
                        " edges ([" + std::to_string(want) + "] or [" + std::to_string(want) +
                        ", k] wanted)");
      }
      if (w >= 0 && cw != w) {
        throw DataError(path + ": " + std::to_string(cw) + " columns, earlier chunks of " + name +
                        " have " + std::to_string(w));
      }
      w = cw;
      all.insert(all.end(), rows.begin(), rows.end());
    }
    arrays.push_back(std::move(all));
    widths.push_back(w);
  }
  *width = 0;
  for (int64_t w : widths) *width += w;
  std::vector<float> out(static_cast<size_t>(edges * *width));
  int64_t col = 0;
  size_t named = 0;
  for (const auto& entry : m.edge_data_files[r]) {
    if (IsEdgeTaskData(entry.first)) continue;
    if (columns) columns->push_back({entry.first, 0, widths[named]});
    ++named;
  }
  for (size_t a = 0; a < arrays.size(); ++a) {
    if (columns) (*columns)[a].first = col;
    for (int64_t i = 0; i < edges; ++i) {
      std::copy(arrays[a].begin() + i * widths[a], arrays[a].begin() + (i + 1) * widths[a],
                out.begin() + i * *width + col);
    }
    col += widths[a];
  }
  return out;
}

HeteroDataset ReadChunkedHetero(const ChunkedMeta& m) {
  const std::string& dir = m.dir;
  HeteroDataset d;
  d.name = m.graph_name;
  for (size_t t = 0; t < m.node_types.size(); ++t) {
    NodeType nt;
    nt.name = m.node_types[t];
    nt.num_nodes = m.NumNodes(t);
    if (NodeData(m, t, "feat")) {
      nt.features = ReadNodeData<float>(m, t, "feat", &nt.feature_dim);
    }
    d.node_types.push_back(std::move(nt));
  }
  for (size_t e = 0; e < m.edge_types.size(); ++e) {
    const std::string& key = m.edge_types[e];
    const size_t a = key.find(':'), b = key.rfind(':');
    if (a == std::string::npos || a == b) {
      throw DataError(dir + "/metadata.json: edge type '" + key + "' is not src:rel:dst");
    }
    Relation rel;
    rel.src_type = key.substr(0, a);
    rel.name = key.substr(a + 1, b - a - 1);
    rel.dst_type = key.substr(b + 1);
    for (int c = 0; c < m.num_chunks; ++c) ReadEdgeChunk(m, e, c, &rel.src, &rel.dst);
    d.relations.push_back(std::move(rel));
  }
  d.target = m.target;
  const size_t target = static_cast<size_t>(d.TypeIndex(d.target));
  int64_t width = 0;
  const ChunkedMeta::Files* labels = NodeData(m, target, "label");
  if (!labels) throw DataError(dir + "/metadata.json: " + d.target + " has no label");
  d.labels = ReadNodeData<int64_t>(m, target, "label", &width);
  if (width != 1) {
    throw DataError(dir + "/metadata.json: label of " + d.target + " has " + std::to_string(width) +
                    " columns: multi-label node classification is not supported yet; gnn trains "
                    "one class id per node");
  }
  d.num_classes = m.num_classes;
  for (int64_t l : d.labels) {
    if (l >= (int64_t{1} << 31)) {
      throw DataError(dir + ": label " + std::to_string(l) + " of " + d.target + " is not a class");
    }
    d.num_classes = std::max(d.num_classes, l + 1);
  }
  std::vector<int64_t>* splits[3] = {&d.train_idx, &d.valid_idx, &d.test_idx};
  for (int s = 0; s < 3; ++s) {
    const ChunkedMeta::Files* f = NodeData(m, target, kChunkSplitNames[s]);
    if (!f) throw DataError(dir + "/metadata.json: " + d.target + " has no " + kChunkSplitNames[s]);
    const std::vector<uint8_t> mask = ReadNodeData<uint8_t>(m, target, kChunkSplitNames[s], &width);
    for (size_t i = 0; i < mask.size(); ++i)
      if (mask[i]) splits[s]->push_back(static_cast<int64_t>(i));
  }
  d.Validate();
  return d;
}

}  // namespace

HeteroDataset ReadChunkedHeteroDataset(const std::string& dir, bool ignore_edge_data) {
  const ChunkedMeta m = ReadChunkedMeta(dir);
  for (size_t t = 0; t < m.node_types.size(); ++t) {
    if (NodeData(m, t, kChunkUserIds)) {
      throw DataError(dir + "/metadata.json: node_data." + m.node_types[t] + "." + kChunkUserIds +
                      " (the user's node ids) is kept for homogeneous graphs only so far");
    }
  }
  RefuseEdgeData((fs::path(dir) / "metadata.json").string(), m.edge_data, ignore_edge_data,
                 "which gnn does not carry for typed graphs yet");
  return ReadChunkedHetero(m);
}

Dataset ReadChunkedDataset(const std::string& dir, bool ignore_edge_data) {
  const ChunkedMeta m = ReadChunkedMeta(dir);
  if (m.hetero()) {
    throw ConfigError(dir + " holds a heterogeneous graph (" + std::to_string(m.node_types.size()) +
                      " node types, " + std::to_string(m.edge_types.size()) + " relations)");
  }
  if (ignore_edge_data) RefuseEdgeData(dir + "/metadata.json", m.edge_data, true);
  Dataset d;
  // Edge data first: a refused name stops the read before the heavy arrays.
  if (!ignore_edge_data && !m.edge_data.empty()) {
    d.edge_features = ReadEdgeFeatures(m, 0, &d.edge_feature_dim, &d.edge_feature_columns);
    ReadChunkedEdgeLabels(m, 0, &d);
  }
  HeteroDataset h = ReadChunkedHetero(m);
  d.name = h.name;
  d.num_nodes = h.node_types[0].num_nodes;
  d.feature_dim = h.node_types[0].feature_dim;
  d.features = std::move(h.node_types[0].features);
  d.src = std::move(h.relations[0].src);
  d.dst = std::move(h.relations[0].dst);
  d.labels = std::move(h.labels);
  d.num_classes = h.num_classes;
  d.train_idx = std::move(h.train_idx);
  d.valid_idx = std::move(h.valid_idx);
  d.test_idx = std::move(h.test_idx);
  d.undirected_reason = m.undirected_reason;
  if (NodeData(m, 0, kChunkUserIds)) {
    int64_t width = 0;
    d.node_ids = ReadNodeData<int64_t>(m, 0, kChunkUserIds, &width);
    if (width != 1) throw DataError(dir + ": node_data _N.node_ids must be one id per node");
    std::vector<int64_t> sorted = d.node_ids;
    std::sort(sorted.begin(), sorted.end());
    const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) {
      throw DataError(dir + ": node_data _N.node_ids names node " + std::to_string(*dup) +
                      " twice (the user's ids must be distinct)");
    }
  }
  d.Validate();
  return d;
}

void WriteChunked(const Dataset& d, int chunks, const std::string& dir) {
  if (d.label_kind != LabelKind::kClass) {
    throw ConfigError(d.name + " has " + LabelKindName(d.label_kind) +
                      " label rows, which the chunked format does not carry yet (--write_ogb "
                      "does)");
  }
  DatasetView v;
  v.name = d.name;
  v.types.push_back({"_N", d.num_nodes, d.feature_dim, d.features.data()});
  v.rels.push_back({"_N:_E:_N", d.src.data(), d.dst.data(), d.num_edges(), d.edge_features.data(),
                    d.edge_feature_dim});
  if (d.edge_labeled()) {
    RelView& r = v.rels.back();
    r.split = d.edge_split.data();
    if (d.edge_label_kind == LabelKind::kClass) {
      r.labels = d.edge_labels.data();
    } else {
      r.targets = d.edge_targets.data();
    }
  }
  v.labels = d.labels.data();
  if (!d.node_ids.empty()) v.node_ids = d.node_ids.data();
  v.num_classes = d.num_classes;
  v.splits[0] = &d.train_idx;
  v.splits[1] = &d.valid_idx;
  v.splits[2] = &d.test_idx;
  v.known_undirected = d.known_undirected();
  Write(v, chunks, dir);
}

void WriteChunked(const HeteroDataset& d, int chunks, const std::string& dir) {
  DatasetView v;
  v.name = d.name;
  for (const NodeType& t : d.node_types)
    v.types.push_back({t.name, t.num_nodes, t.feature_dim, t.features.data()});
  for (const Relation& r : d.relations)
    v.rels.push_back({r.Key(), r.src.data(), r.dst.data(), r.num_edges()});
  v.target = static_cast<size_t>(d.TypeIndex(d.target));
  v.labels = d.labels.data();
  v.num_classes = d.num_classes;
  v.splits[0] = &d.train_idx;
  v.splits[1] = &d.valid_idx;
  v.splits[2] = &d.test_idx;
  Write(v, chunks, dir);
}

}  // namespace gnn
