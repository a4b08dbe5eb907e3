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

namespace {

// One data item's files (edges, node_data.<type>.<name>, edge_data...):
// numpy or csv (parquet refused by name), one file per chunk.
ChunkedMeta::Files FilesOf(const JsonReader& f, int num_chunks) {
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
  if (static_cast<int>(data.ArraySize()) != num_chunks)
    data.Fail("needs one file per chunk (" + std::to_string(num_chunks) + ")");
  for (size_t c = 0; c < data.ArraySize(); ++c) out.paths.push_back(data.Item(c).String());
  return out;
}

}  // namespace

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
  if (m.num_chunks < 1 || m.num_chunks > kMaxChunkCount) ncounts.Fail("bad number of chunks");
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
  auto files = [&](const JsonReader& f) { return FilesOf(f, m.num_chunks); };
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

}  // namespace gnn
