#include "partition/local_partition.h"

#include <cmath>

#include "common/error.h"
#include "common/npy.h"
#include "common/sha256.h"

namespace gnn {

std::vector<int64_t> LocalPartition::Nodes(const std::vector<uint8_t>& mask) const {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < num_nodes; ++i) {
    if (mask[i]) out.push_back(node_start + i);
  }
  return out;
}

HeldOutEdges LoadHeldOutEdges(const PartitionConfig& config, int part, bool verify_checksums) {
  HeldOutEdges h;
  if (config.val_edges_fraction <= 0) return h;
  const PartInfo& info = config.parts.at(part);
  const int64_t k = info.num_val_edges;
  h.num_negatives = config.val_negatives;
  const std::string edges_path = config.FilePath(part, kValEdgeFiles[0]);
  const std::string neg_path = config.FilePath(part, kValEdgeFiles[1]);
  if (verify_checksums) {
    for (const std::string& name : kValEdgeFiles) {
      VerifyPartFile(config.FilePath(part, name), info.files.at(name));
    }
  }
  std::vector<int64_t> pairs = ReadNpy<int64_t>(edges_path, {k, 2});
  h.negatives = ReadNpy<int64_t>(neg_path, {k, h.num_negatives});
  h.heads.resize(k);
  h.tails.resize(k);
  for (int64_t i = 0; i < k; ++i) {
    h.heads[i] = pairs[2 * i];
    h.tails[i] = pairs[2 * i + 1];
  }
  for (int64_t v : pairs) {
    if (v < 0 || v >= config.num_nodes) {
      throw DataError(edges_path + ": node id " + std::to_string(v) + " out of range");
    }
  }
  for (int64_t v : h.negatives) {
    if (v < 0 || v >= config.num_nodes) {
      throw DataError(neg_path + ": node id " + std::to_string(v) + " out of range");
    }
  }
  return h;
}

namespace {

void CheckIds(const std::string& path, const int64_t* ids, int64_t count, int64_t num_nodes) {
  for (int64_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= num_nodes) {
      throw DataError(path + ": entry " + std::to_string(i) + " is node id " +
                      std::to_string(ids[i]) + ", outside [0, " + std::to_string(num_nodes) + ")");
    }
  }
}

void CheckIndptr(const std::string& path, const int64_t* indptr, int64_t n, int64_t e) {
  if (indptr[0] != 0 || indptr[n] != e) {
    throw DataError(path + ": offsets run from " + std::to_string(indptr[0]) + " to " +
                    std::to_string(indptr[n]) + ", not from 0 to the " + std::to_string(e) +
                    " entries of indices.npy");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (indptr[i + 1] < indptr[i]) {
      throw DataError(path + ": offsets decrease at entry " + std::to_string(i + 1));
    }
  }
}

void CheckMask(const std::string& path, const uint8_t* mask, int64_t n, int64_t want) {
  int64_t ones = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (mask[i] > 1) {
      throw DataError(path + ": entry " + std::to_string(i) + " is " + std::to_string(mask[i]) +
                      ", not 0 or 1");
    }
    ones += mask[i];
  }
  if (ones != want) {
    throw DataError(path + ": " + std::to_string(ones) +
                    " nodes are set, the partition config says " + std::to_string(want));
  }
}

}  // namespace

void CheckPartitionArrays(const PartitionConfig& config, int part, const PartitionArrays& a) {
  const PartInfo& info = config.parts.at(part);
  const int64_t n = info.num_nodes(), e = info.num_edges();
  auto path = [&](const char* f) { return config.FilePath(part, f); };
  CheckIndptr(path("indptr.npy"), a.indptr, n, e);
  CheckIds(path("indices.npy"), a.indices, e, config.num_nodes);
  if (config.label_kind == LabelKind::kClass) {
    for (int64_t i = 0; i < n; ++i) {
      if (a.labels[i] < -1 || a.labels[i] >= config.num_classes) {
        throw DataError(path("label.npy") + ": label " + std::to_string(a.labels[i]) +
                        " outside [0, " + std::to_string(config.num_classes) + ")");
      }
    }
  } else {
    const bool binary = config.label_kind == LabelKind::kMultilabel;
    for (int64_t i = 0; i < n * config.label_width; ++i) {
      const float t = a.targets[i];
      if (std::isfinite(t) && (!binary || t == 0.0f || t == 1.0f)) continue;
      throw DataError(path("label.npy") + ": row " + std::to_string(i / config.label_width) +
                      " holds " + std::to_string(t) +
                      (binary ? ", not 0 or 1 (multi-label)" : ", not a finite number"));
    }
  }
  const char* mask_files[3] = {"train_mask.npy", "valid_mask.npy", "test_mask.npy"};
  const int64_t counts[3] = {info.num_train, info.num_valid, info.num_test};
  for (int m = 0; m < 3; ++m) CheckMask(path(mask_files[m]), a.masks[m], n, counts[m]);
  CheckIds(path("orig_nids.npy"), a.orig_nids, n, config.num_nodes);
}

std::vector<int64_t> LoadUserNodeIds(const PartitionConfig& config, int part) {
  if (!config.user_node_ids) return {};
  return ReadNpy<int64_t>(config.FilePath(part, kUserIdsFile), {config.parts.at(part).num_nodes()});
}

void LoadEdgeData(const PartitionConfig& config, int part, bool verify_checksums,
                  LocalPartition* p) {
  if (config.hetero() || config.edge_feature_dim == 0 || p->edge_dim > 0) return;
  // Not among the files VerifyPartFiles hashes (most runs never read
  // them): checked here when they are read.
  const PartInfo& info = config.parts.at(part);
  const std::string file = config.FilePath(part, kEdgeFeatFile);
  if (verify_checksums) VerifyPartFile(file, info.files.at(kEdgeFeatFile));
  std::vector<float> rows = ReadNpy<float>(file, {info.num_edges(), config.edge_feature_dim});
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!std::isfinite(rows[i])) {
      throw DataError(file + ": edge " +
                      std::to_string(i / static_cast<size_t>(config.edge_feature_dim)) + " holds " +
                      std::to_string(rows[i]) + ", not a finite number");
    }
  }
  p->edge_dim = config.edge_feature_dim;
  p->edge_data = std::move(rows);
}

void AppendEdgeRow(const EdgeLabelFiles& f, int64_t e, std::vector<int64_t>* labels,
                   std::vector<float>* targets, std::vector<float>* features) {
  if (f.labels.empty()) {
    targets->push_back(f.targets[e]);
  } else {
    labels->push_back(f.labels[e]);
  }
  const int64_t w = f.feature_dim;
  features->insert(features->end(), f.features.begin() + e * w, f.features.begin() + (e + 1) * w);
}

EdgeLabelFiles ReadEdgeLabels(const PartitionConfig& config, int part, bool verify_checksums,
                              bool features) {
  if (!config.edge_labels) {
    throw DataError(config.graph_name + ": the partitioning has no edge labels");
  }
  const PartInfo& info = config.parts.at(part);
  const std::string label_file = config.FilePath(part, kEdgeLabelFile);
  const std::string split_file = config.FilePath(part, kEdgeSplitFile);
  if (verify_checksums) {
    VerifyPartFile(label_file, info.files.at(kEdgeLabelFile));
    VerifyPartFile(split_file, info.files.at(kEdgeSplitFile));
  }
  EdgeLabelFiles f;
  const int64_t m = info.num_edges();
  f.split = ReadNpy<uint8_t>(split_file, {m});
  const bool classes = config.edge_label_kind == LabelKind::kClass;
  if (classes) {
    f.labels = ReadNpy<int64_t>(label_file, {m});
  } else {
    f.targets = ReadNpy<float>(label_file, {m});
  }
  int64_t count[3] = {0, 0, 0};
  for (int64_t e = 0; e < m; ++e) {
    const uint8_t s = f.split[e];
    if (s > 4) {
      throw DataError(split_file + ": edge " + std::to_string(e) + " is in split " +
                      std::to_string(s) + " (0 reverse, 1 train, 2 valid, 3 test, 4 none)");
    }
    if (s == 0 || s == 4) continue;
    ++count[s - 1];
    if (classes && (f.labels[e] < 0 || f.labels[e] >= config.num_edge_classes)) {
      throw DataError(label_file + ": edge " + std::to_string(e) + " has class " +
                      std::to_string(f.labels[e]) + ", outside [0, " +
                      std::to_string(config.num_edge_classes) + ")");
    }
    if (!classes && !std::isfinite(f.targets[e])) {
      throw DataError(label_file + ": edge " + std::to_string(e) + " holds " +
                      std::to_string(f.targets[e]) + ", not a finite number");
    }
  }
  for (int k = 0; k < 3; ++k) {
    if (count[k] != info.num_split_edges[k]) {
      throw DataError(split_file + ": " + std::to_string(count[k]) + " " +
                      (k == 0   ? "train"
                       : k == 1 ? "valid"
                                : "test") +
                      " edges, the config says " + std::to_string(info.num_split_edges[k]));
    }
  }
  if (features && config.hetero() && config.edge_feature_dim > 0) {
    // A typed partition's rows, as wide as its widest relation's.
    const std::string file = config.FilePath(part, kEdgeFeatFile);
    if (verify_checksums) VerifyPartFile(file, info.files.at(kEdgeFeatFile));
    f.features = ReadNpy<float>(file, {m, config.edge_feature_dim});
    f.feature_dim = config.edge_feature_dim;
    for (size_t i = 0; i < f.features.size(); ++i) {
      if (!std::isfinite(f.features[i])) {
        throw DataError(file + ": edge " + std::to_string(i / static_cast<size_t>(f.feature_dim)) +
                        " holds " + std::to_string(f.features[i]) + ", not a finite number");
      }
    }
  } else if (features) {
    LocalPartition p;
    LoadEdgeData(config, part, verify_checksums, &p);
    if (p.edge_dim == 0) {
      throw DataError(config.graph_name + ": the partitioning has no edge features");
    }
    f.features = std::move(p.edge_data);
    f.feature_dim = p.edge_dim;
  }
  return f;
}

LabeledEdgeRows ReadLabeledEdges(const PartitionConfig& config, int part, bool verify_checksums,
                                 bool features) {
  EdgeLabelFiles f = ReadEdgeLabels(config, part, verify_checksums, features);
  const PartInfo& info = config.parts.at(part);
  const int64_t n = info.num_nodes(), m = info.num_edges();
  std::vector<std::string> names = {"indptr.npy", "indices.npy", kOrigEidsFile};
  if (verify_checksums) {
    for (const std::string& name : names) {
      VerifyPartFile(config.FilePath(part, name), info.files.at(name));
    }
  }
  const std::vector<int64_t> indptr = ReadNpy<int64_t>(config.FilePath(part, names[0]), {n + 1});
  const std::vector<int64_t> indices = ReadNpy<int64_t>(config.FilePath(part, names[1]), {m});
  const std::vector<int64_t> eids = ReadNpy<int64_t>(config.FilePath(part, names[2]), {m});
  if (indptr.front() != 0 || indptr.back() != m) {
    throw DataError(config.FilePath(part, names[0]) + ": row pointers do not span the " +
                    std::to_string(m) + " stored in-edges");
  }
  LabeledEdgeRows r;
  r.feature_dim = f.feature_dim;
  for (int64_t v = 0; v < n; ++v) {
    if (indptr[v + 1] < indptr[v]) {
      throw DataError(config.FilePath(part, names[0]) + ": row " + std::to_string(v) +
                      " ends before it starts");
    }
    for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
      if (f.split[e] == 0) continue;
      r.eids.push_back(eids[e]);
      r.heads.push_back(indices[e]);
      r.tails.push_back(info.node_start + v);
      r.split.push_back(f.split[e]);
      AppendEdgeRow(f, e, &r.labels, &r.targets, &r.features);
    }
  }
  for (int64_t h : r.heads) {
    if (h < 0 || h >= config.num_nodes) {
      throw DataError(config.FilePath(part, names[1]) + ": node id " + std::to_string(h) +
                      " outside [0, " + std::to_string(config.num_nodes) + ")");
    }
  }
  return r;
}

SparseRows ReadSparseFeatures(const PartitionConfig& config, int part) {
  const int64_t n = config.parts.at(part).num_nodes();
  SparseRows rows;
  rows.cols = config.feature_dim;
  const std::string indptr = config.FilePath(part, kFeatIndptrFile);
  const std::string indices = config.FilePath(part, kFeatIndicesFile);
  rows.indptr = ReadNpy<int64_t>(indptr, {n + 1});
  rows.indices = ReadNpy<int32_t>(indices, {-1});
  if (!config.feature_binary)
    rows.values = ReadNpy<float>(config.FilePath(part, kFeatValuesFile), {-1});
  CheckSparse(rows.view(), static_cast<int64_t>(rows.indices.size()),
              static_cast<int64_t>(rows.values.size()),
              indptr + " and " + indices + (config.feature_binary ? "" : " and feat_values.npy"));
  return rows;
}

LocalPartition LoadLocalPartition(const PartitionConfig& config, int part, bool verify_checksums,
                                  bool edge_data, bool keep_sparse) {
  config.RequireHomogeneous("loading a partition for training");
  if (part < 0 || part >= config.num_parts) {
    throw ConfigError("partition " + std::to_string(part) + " does not exist (config has " +
                      std::to_string(config.num_parts) + ")");
  }
  if (verify_checksums) VerifyPartFiles(config, part);
  const PartInfo& info = config.parts[part];
  const int64_t n = info.num_nodes();
  LocalPartition p;
  p.part_id = part;
  p.node_start = info.node_start;
  p.num_nodes = n;
  p.feature_dim = config.feature_dim;
  // Every read checks dtype and the shape the config implies (so feature
  // rows = owned nodes, and so on); the contents are checked below.
  auto path = [&](const char* f) { return config.FilePath(part, f); };
  p.indptr = ReadNpy<int64_t>(path("indptr.npy"), {n + 1});
  p.indices = ReadNpy<int64_t>(path("indices.npy"), {info.num_edges()});
  if (!config.sparse_features) {
    p.features = ReadNpy<float>(path("feat.npy"), {n, config.feature_dim});
  } else if (keep_sparse) {
    p.sparse_features = ReadSparseFeatures(config, part);
  } else {
    const SparseRows rows = ReadSparseFeatures(config, part);
    p.features.resize(static_cast<size_t>(n * config.feature_dim));
    Densify(rows.view(), p.features.data());
  }
  if (config.label_kind == LabelKind::kClass) {
    p.labels = ReadNpy<int64_t>(path("label.npy"), {n});
  } else {
    p.label_width = config.label_width;
    p.targets = ReadNpy<float>(path("label.npy"), {n, config.label_width});
  }
  p.train_mask = ReadNpy<uint8_t>(path("train_mask.npy"), {n});
  p.valid_mask = ReadNpy<uint8_t>(path("valid_mask.npy"), {n});
  p.test_mask = ReadNpy<uint8_t>(path("test_mask.npy"), {n});
  p.orig_nids = ReadNpy<int64_t>(path("orig_nids.npy"), {n});
  PartitionArrays a;
  a.indptr = p.indptr.data();
  a.indices = p.indices.data();
  a.labels = p.labels.data();
  a.targets = p.targets.data();
  a.masks[0] = p.train_mask.data();
  a.masks[1] = p.valid_mask.data();
  a.masks[2] = p.test_mask.data();
  a.orig_nids = p.orig_nids.data();
  CheckPartitionArrays(config, part, a);
  if (edge_data) LoadEdgeData(config, part, verify_checksums, &p);
  return p;
}

}  // namespace gnn
