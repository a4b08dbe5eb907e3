// gnn-dataset --write_chunked: a Dataset or HeteroDataset as DGL's chunked
// graph format (metadata.json, edge index chunks, node and edge data npy
// chunks), written into a temporary folder that becomes the output only
// when complete. The reader is chunked.cc.
#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/npy.h"
#include "graph/chunked.h"

namespace gnn {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kChunkedVersion = 1;

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
  // Label rows (multi-label or regression targets, [nodes, label_width])
  // instead of class ids, and their kind (metadata.json's gnn.label_kind).
  const float* targets = nullptr;
  int64_t label_width = 0;
  LabelKind label_kind = LabelKind::kClass;
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
  if (chunks < 1 || chunks > kMaxChunkCount) {
    throw ConfigError("--write_chunked needs 1 to " + std::to_string(kMaxChunkCount) +
                      " chunks, got " + std::to_string(chunks));
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
    if (v.targets) {
      WriteNodeRows<float>(
          l, t, type_dir, "label", v.label_width,
          [&](int64_t i, float* o) {
            std::copy(v.targets + i * v.label_width, v.targets + (i + 1) * v.label_width, o);
          },
          meta);
    } else {
      WriteNodeRows<int64_t>(
          l, t, type_dir, "label", 1, [&](int64_t i, int64_t* o) { *o = v.labels[i]; }, meta);
    }
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
  if (v.label_kind != LabelKind::kClass) meta["gnn"]["label_kind"] = LabelKindName(v.label_kind);
  WriteFileAtomic((layout.out / "metadata.json").string(), meta.dump(2) + "\n");
  std::error_code ec;
  fs::rename(layout.out, target, ec);
  if (ec) throw DataError("cannot move the chunks to " + dir + ": " + ec.message());
  SyncDir(target.parent_path().string());
}

}  // namespace

void WriteChunked(const Dataset& d, int chunks, const std::string& dir) {
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
  if (d.label_kind != LabelKind::kClass) {
    v.targets = d.targets.data();
    v.label_width = d.label_width;
    v.label_kind = d.label_kind;
  }
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
  for (const Relation& r : d.relations) {
    v.rels.push_back({r.Key(), r.src.data(), r.dst.data(), r.num_edges(), r.edge_features.data(),
                      r.edge_feature_dim});
  }
  if (d.edge_labeled()) {
    const HeteroDataset::EdgeLabels& e = d.edge_task;
    RelView& r = v.rels[static_cast<size_t>(e.relation)];
    r.split = e.split.data();
    if (e.kind == LabelKind::kClass) {
      r.labels = e.labels.data();
    } else {
      r.targets = e.targets.data();
    }
  }
  v.target = static_cast<size_t>(d.TypeIndex(d.target));
  v.labels = d.labels.data();
  v.num_classes = d.num_classes;
  v.splits[0] = &d.train_idx;
  v.splits[1] = &d.valid_idx;
  v.splits[2] = &d.test_idx;
  Write(v, chunks, dir);
}

}  // namespace gnn
