#include "graph/chunked.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/json_reader.h"
#include "common/log.h"
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
    if (g.Has("label_kind")) {
      m.label_kind = ParseLabelKind(g.At("label_kind").String(), dir + "/metadata.json");
    }
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

bool IsFloat(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kFloat64;
}

// An array of any numeric dtype as doubles, read once; *integral: its dtype
// is an integer one.
std::vector<double> ReadNumbers(const std::string& path, bool* integral) {
  NpyHeader h = ReadNpyHeader(path);
  *integral = !IsFloat(h.dtype);
  if (!*integral) {
    const std::vector<float> values = ReadNpyFloats(path, &h);
    return std::vector<double>(values.begin(), values.end());
  }
  const std::vector<int64_t> ints = ReadNpyInts(path, &h);
  return std::vector<double>(ints.begin(), ints.end());
}

// Relation r's edge_data `name`, or null.
const ChunkedMeta::Files* EdgeData(const ChunkedMeta& m, size_t r, const std::string& name) {
  for (const auto& entry : m.edge_data_files[r]) {
    if (entry.first == name) return &entry.second;
  }
  return nullptr;
}

// Chunk c of edge_data `f` (`name`): one value per edge ([chunk edges] or
// [chunk edges, 1]); *integral: the array holds integers. DataError naming
// the file on another shape.
std::vector<double> ReadEdgeColumnChunk(const ChunkedMeta& m, size_t r, const std::string& name,
                                        const ChunkedMeta::Files& f, int c, bool* integral) {
  const std::string path = Resolve(m, f.paths[static_cast<size_t>(c)], "edge data file");
  const NpyHeader h = ReadNpyHeader(path);
  const int64_t want = m.edges_per_chunk[r][static_cast<size_t>(c)];
  if (h.shape.empty() || h.shape[0] != want || h.shape.size() > 2 ||
      (h.shape.size() == 2 && h.shape[1] != 1)) {
    throw DataError(path + ": edge_data " + name + " holds one value per edge ([" +
                    std::to_string(want) + "] wanted)");
  }
  return ReadNumbers(path, integral);
}

// An edge task's names (edge_data "label" with "train_mask" and the
// optional "val_mask", "test_mask"), checked before any file is read:
// DataError naming metadata.json for a mask without a label or a label
// without train_mask. Returns whether relation r has a label.
bool CheckEdgeTaskNames(const ChunkedMeta& m, size_t r) {
  const std::string prefix = m.dir + "/metadata.json: edge_data." + m.edge_types[r] + ".";
  if (!EdgeData(m, r, "label")) {
    for (const char* mask : kChunkSplitNames) {
      if (EdgeData(m, r, mask)) throw DataError(prefix + mask + " has no label beside it");
    }
    return false;
  }
  if (!EdgeData(m, r, kChunkSplitNames[0])) {
    throw DataError(prefix + "label needs train_mask beside it");
  }
  return true;
}

// Chunk c's label and split into *out; an edge in two masks is a DataError
// naming the mask and the edge.
void ReadEdgeLabelChunk(const ChunkedMeta& m, size_t r, int c, int64_t first_edge,
                        EdgeDataChunk* out) {
  const std::string prefix = m.dir + "/metadata.json: edge_data." + m.edge_types[r] + ".";
  out->labeled = true;
  out->labels = ReadEdgeColumnChunk(m, r, "label", *EdgeData(m, r, "label"), c, &out->integral);
  out->split.assign(out->labels.size(), 0);
  for (int k = 0; k < 3; ++k) {
    const ChunkedMeta::Files* f = EdgeData(m, r, kChunkSplitNames[k]);
    if (!f) continue;
    bool ints = true;
    const std::vector<double> mask = ReadEdgeColumnChunk(m, r, kChunkSplitNames[k], *f, c, &ints);
    for (size_t e = 0; e < mask.size(); ++e) {
      if (mask[e] == 0) continue;
      if (out->split[e] != 0) {
        throw DataError(prefix + kChunkSplitNames[k] + ": edge " +
                        std::to_string(first_edge + static_cast<int64_t>(e)) +
                        " is in another split too");
      }
      out->split[e] = static_cast<uint8_t>(k + 1);
    }
  }
}

// Chunk c of every feature array (not an edge task's), in name order,
// side by side into out->features.
void ReadEdgeFeatureChunk(const ChunkedMeta& m, size_t r, int c, int64_t first_edge,
                          const EdgeDataChunk* earlier, EdgeDataChunk* out) {
  const std::string meta = m.dir + "/metadata.json";
  const int64_t want = m.edges_per_chunk[r][static_cast<size_t>(c)];
  std::vector<std::vector<float>> arrays;
  for (const auto& [name, f] : m.edge_data_files[r]) {
    if (IsEdgeTaskData(name)) continue;  // ReadEdgeLabelChunk
    if (f.format != "numpy") {
      throw DataError(meta + ": edge data " + name + " of " + m.edge_types[r] + " must be numpy");
    }
    const std::string path = Resolve(m, f.paths[static_cast<size_t>(c)], "edge data file");
    NpyHeader h;
    arrays.push_back(ReadNpyFloats(path, &h));
    const int64_t cw = h.shape.size() == 1 ? 1 : h.shape.size() == 2 ? h.shape[1] : -1;
    if (h.shape.empty() || h.shape[0] != want || cw < 1) {
      throw DataError(path + ": shape does not match the chunk's " + std::to_string(want) +
                      " edges ([" + std::to_string(want) + "] or [" + std::to_string(want) +
                      ", k] wanted)");
    }
    const size_t a = out->columns.size();
    if (earlier && earlier->columns[a].width != cw) {
      throw DataError(path + ": " + std::to_string(cw) + " columns, earlier chunks of " + name +
                      " have " + std::to_string(earlier->columns[a].width));
    }
    out->columns.push_back({name, out->width, cw});
    out->width += cw;
  }
  out->features.resize(static_cast<size_t>(want * out->width));
  for (size_t a = 0; a < arrays.size(); ++a) {
    const int64_t first = out->columns[a].first, w = out->columns[a].width;
    for (int64_t i = 0; i < want; ++i) {
      const float* row = arrays[a].data() + i * w;
      for (int64_t j = 0; j < w; ++j) {
        if (!std::isfinite(row[j])) {
          throw DataError(m.graph_name + ": edge " + std::to_string(first_edge + i) +
                          " has a feature that is not a finite number (column " +
                          std::to_string(first + j) + ")");
        }
      }
      std::copy(row, row + w, out->features.begin() + i * out->width + first);
    }
  }
}

// Relation r's edge data, every chunk, into `d` (features, and an edge
// task's labels and split).
void ReadChunkedEdgeData(const ChunkedMeta& m, size_t r, Dataset* d) {
  EdgeDataChunk first;
  int64_t first_edge = 0;
  std::vector<double> labels;
  for (int c = 0; c < m.num_chunks; ++c) {
    EdgeDataChunk chunk = ReadEdgeDataChunk(m, r, c, first_edge, c == 0 ? nullptr : &first);
    first_edge += chunk.edges;
    d->edge_features.insert(d->edge_features.end(), chunk.features.begin(), chunk.features.end());
    d->edge_split.insert(d->edge_split.end(), chunk.split.begin(), chunk.split.end());
    if (!chunk.integral) first.integral = false;
    labels.insert(labels.end(), chunk.labels.begin(), chunk.labels.end());
    if (c == 0) first = std::move(chunk);
  }
  d->edge_feature_dim = first.width;
  d->edge_feature_columns = first.columns;
  if (!first.labeled) return;
  if (first.integral) {
    d->edge_label_kind = LabelKind::kClass;
    d->edge_labels.assign(labels.begin(), labels.end());
    d->num_edge_classes = 0;
    for (size_t e = 0; e < d->edge_labels.size(); ++e) {
      if (d->edge_split[e] != 0)
        d->num_edge_classes = std::max(d->num_edge_classes, d->edge_labels[e] + 1);
    }
  } else {
    d->edge_label_kind = LabelKind::kRegression;
    d->edge_targets.assign(labels.begin(), labels.end());
  }
}

// The train, valid and test lists of node type `target` from its masks.
void ReadSplits(const ChunkedMeta& m, size_t target, HeteroDataset* d) {
  std::vector<int64_t>* splits[3] = {&d->train_idx, &d->valid_idx, &d->test_idx};
  for (int s = 0; s < 3; ++s) {
    const ChunkedMeta::Files* f = NodeData(m, target, kChunkSplitNames[s]);
    if (!f) {
      throw DataError(m.dir + "/metadata.json: " + d->target + " has no " + kChunkSplitNames[s]);
    }
    int64_t width = 0;
    const std::vector<uint8_t> mask = ReadNodeData<uint8_t>(m, target, kChunkSplitNames[s], &width);
    for (size_t i = 0; i < mask.size(); ++i)
      if (mask[i]) splits[s]->push_back(static_cast<int64_t>(i));
  }
}

// The dataset; with `class_labels` false its labels are left to the caller
// (label rows), and so is checking it.
HeteroDataset ReadChunkedHetero(const ChunkedMeta& m, bool class_labels = true) {
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
  ReadSplits(m, target, &d);
  if (!class_labels) return d;
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
  d.Validate();
  return d;
}

}  // namespace

bool ChunkedLabelRows(const ChunkedMeta& m, const std::string& task) {
  if (m.hetero()) return false;
  if (m.label_kind != LabelKind::kClass) return true;
  if (task == "multilabel" || task == "node_regression") return true;
  const ChunkedMeta::Files* f = NodeData(m, 0, "label");
  if (!f || f->format != "numpy" || m.num_chunks == 0) return false;
  const NpyHeader h = ReadNpyHeader(Resolve(m, f->paths[0], "node data file"));
  return IsFloat(h.dtype) || (h.shape.size() == 2 && h.shape[1] != 1);
}

std::string ChunkedLabelTask(const ChunkedMeta& m, const std::string& task) {
  if (task != "auto") return task;
  return m.label_kind == LabelKind::kClass ? "auto" : LabelTaskName(m.label_kind);
}

std::vector<double> ReadChunkLabelRows(const ChunkedMeta& m, int chunk, int64_t* width) {
  const ChunkedMeta::Files* f = NodeData(m, 0, "label");
  if (!f) throw DataError(m.dir + "/metadata.json: " + m.node_types[0] + " has no label");
  const std::string path = Resolve(m, f->paths[static_cast<size_t>(chunk)], "node data file");
  if (f->format != "numpy") {
    throw DataError(m.dir + "/metadata.json: node data label of " + m.node_types[0] +
                    " must be numpy");
  }
  const NpyHeader h = ReadNpyHeader(path);
  const int64_t want = m.nodes_per_chunk[0][static_cast<size_t>(chunk)];
  const int64_t w = h.shape.size() == 1 ? 1 : h.shape.size() == 2 ? h.shape[1] : -1;
  if (h.shape.empty() || h.shape[0] != want || w < 1) {
    throw DataError(path + ": shape does not match the chunk's " + std::to_string(want) + " nodes");
  }
  *width = w;
  bool integral = true;
  return ReadNumbers(path, &integral);
}

EdgeDataChunk ReadEdgeDataChunk(const ChunkedMeta& m, size_t relation, int chunk,
                                int64_t first_edge, const EdgeDataChunk* earlier) {
  if (!m.edge_data_unknown.empty()) {
    throw DataError(m.dir + "/metadata.json: " + m.edge_data_unknown[0] +
                    " names a relation that is not one of edge_type");
  }
  const bool labeled = CheckEdgeTaskNames(m, relation);
  EdgeDataChunk out;
  out.edges = m.edges_per_chunk[relation][static_cast<size_t>(chunk)];
  ReadEdgeFeatureChunk(m, relation, chunk, first_edge, earlier, &out);
  if (labeled) ReadEdgeLabelChunk(m, relation, chunk, first_edge, &out);
  return out;
}

bool TypedEdgeFeatures(const ChunkedMeta& m) {
  TypedEdgeLabelRelation(m);  // the unknown relation, labels on two: one line
  for (size_t r = 0; r < m.edge_types.size(); ++r) {
    for (const auto& entry : m.edge_data_files[r]) {
      if (!IsEdgeTaskData(entry.first)) return true;
    }
  }
  return false;
}

int TypedEdgeLabelRelation(const ChunkedMeta& m) {
  const std::string meta = m.dir + "/metadata.json";
  if (!m.edge_data_unknown.empty()) {
    throw DataError(meta + ": " + m.edge_data_unknown[0] +
                    " names a relation that is not one of edge_type");
  }
  int labelled = -1;
  for (size_t r = 0; r < m.edge_types.size(); ++r) {
    for (const auto& entry : m.edge_data_files[r]) {
      if (!IsEdgeTaskData(entry.first) || labelled == static_cast<int>(r)) continue;
      if (labelled >= 0) {
        throw DataError(meta + ": edge_data." + m.edge_types[r] + "." + entry.first +
                        ": edge labels on two relations (" +
                        m.edge_types[static_cast<size_t>(labelled)] + " and " + m.edge_types[r] +
                        "); a typed edge task labels one");
      }
      labelled = static_cast<int>(r);
    }
  }
  return labelled;
}

HeteroDataset ReadChunkedHeteroDataset(const std::string& dir, bool ignore_edge_data) {
  const ChunkedMeta m = ReadChunkedMeta(dir);
  for (size_t t = 0; t < m.node_types.size(); ++t) {
    if (NodeData(m, t, kChunkUserIds)) {
      throw DataError(dir + "/metadata.json: node_data." + m.node_types[t] + "." + kChunkUserIds +
                      " (the user's node ids) is kept for homogeneous graphs only so far");
    }
  }
  if (ignore_edge_data) {
    RefuseEdgeData((fs::path(dir) / "metadata.json").string(), m.edge_data, true);
    return ReadChunkedHetero(m);
  }
  // Edge data first: a refused name stops the read before the heavy arrays.
  TypedEdgeFeatures(m);
  std::vector<Dataset> edge_data(m.edge_types.size());
  for (size_t r = 0; r < m.edge_types.size(); ++r) {
    if (!m.edge_data_files[r].empty()) ReadChunkedEdgeData(m, r, &edge_data[r]);
  }
  HeteroDataset d = ReadChunkedHetero(m);
  for (size_t r = 0; r < m.edge_types.size(); ++r) {
    Dataset& e = edge_data[r];
    d.relations[r].edge_feature_dim = e.edge_feature_dim;
    d.relations[r].edge_features = std::move(e.edge_features);
    if (!e.edge_labeled()) continue;
    HeteroDataset::EdgeLabels& t = d.edge_task;
    t.relation = static_cast<int>(r);
    t.kind = e.edge_label_kind;
    t.num_classes = e.num_edge_classes;
    t.labels = std::move(e.edge_labels);
    t.targets = std::move(e.edge_targets);
    t.split = std::move(e.edge_split);
  }
  d.Validate();
  return d;
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
    ReadChunkedEdgeData(m, 0, &d);
  }
  const bool rows = ChunkedLabelRows(m, "auto");
  HeteroDataset h = ReadChunkedHetero(m, !rows);
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
  if (rows) {
    // Multi-label or regression targets: every chunk's rows, then the kind.
    std::vector<double> values;
    int64_t width = -1;
    for (int c = 0; c < m.num_chunks; ++c) {
      int64_t w = 0;
      const std::vector<double> chunk = ReadChunkLabelRows(m, c, &w);
      if (width >= 0 && w != width) {
        throw DataError(dir + "/metadata.json: label chunk " + std::to_string(c) + " has " +
                        std::to_string(w) + " columns, earlier chunks have " +
                        std::to_string(width));
      }
      width = w;
      values.insert(values.end(), chunk.begin(), chunk.end());
    }
    const std::string said = SetLabelRows(&d, std::move(values), width, ChunkedLabelTask(m, "auto"),
                                          dir + "/metadata.json: label");
    if (!said.empty()) {
      GNN_LOG(kInfo) << said;
    }
  }
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
