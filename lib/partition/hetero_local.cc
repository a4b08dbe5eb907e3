#include "partition/hetero_local.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/npy.h"

namespace gnn {

int64_t HeteroPartitionView::num_targets() const {
  const auto [b, e] = ntype_ranges[static_cast<size_t>(target)];
  return e - b;
}

std::vector<int64_t> HeteroPartitionView::Nodes(int m) const {
  std::vector<int64_t> out;
  const int64_t first = ntype_ranges[static_cast<size_t>(target)].first;
  const uint8_t* mask = masks[m];
  for (int64_t i = 0, n = num_targets(); i < n; ++i) {
    if (mask[i]) out.push_back(first + i);
  }
  return out;
}

int HeteroPartitionView::TypeOf(int64_t v) const {
  for (size_t t = 0; t < ntype_ranges.size(); ++t) {
    if (v >= ntype_ranges[t].first && v < ntype_ranges[t].second) return static_cast<int>(t);
  }
  return -1;
}

HeteroPartitionView HeteroPartition::View() const {
  HeteroPartitionView v;
  v.part_id = part_id;
  v.node_start = node_start;
  v.num_nodes = num_nodes;
  v.num_edges = static_cast<int64_t>(indices.size());
  v.indptr = indptr.data();
  v.indices = indices.data();
  v.etypes = etypes.data();
  v.orig_nids = orig_nids.data();
  v.rng_keys = rng_keys.data();
  v.ntype_ranges = ntype_ranges;
  v.feature_dims = feature_dims;
  for (const std::vector<float>& f : features) v.features.push_back(f.empty() ? nullptr : f.data());
  v.target = target;
  v.labels = labels.data();
  for (int m = 0; m < 3; ++m) v.masks[m] = masks[m].data();
  v.edge_dim = edge_dim;
  v.edge_data = edge_data.empty() ? nullptr : edge_data.data();
  return v;
}

HeteroPartitionView HeteroShape(const PartitionConfig& config, int part) {
  if (!config.hetero()) {
    throw ConfigError(config.graph_name + " is not a heterogeneous partitioning (no target_ntype)");
  }
  if (part < 0 || part >= config.num_parts) {
    throw ConfigError("partition " + std::to_string(part) + " does not exist (config has " +
                      std::to_string(config.num_parts) + ")");
  }
  const PartInfo& info = config.parts[static_cast<size_t>(part)];
  HeteroPartitionView v;
  v.part_id = part;
  v.node_start = info.node_start;
  v.num_nodes = info.num_nodes();
  v.num_edges = info.num_edges();
  v.ntype_ranges = info.ntype_ranges;
  v.feature_dims = config.ntype_feature_dims;
  v.feature_dims.resize(config.ntypes.size(), 0);
  v.features.assign(config.ntypes.size(), nullptr);
  v.target =
      static_cast<int>(std::find(config.ntypes.begin(), config.ntypes.end(), config.target_ntype) -
                       config.ntypes.begin());
  v.edge_dim = config.edge_feature_dim;
  return v;
}

namespace {

void CheckOffsets(const PartitionConfig& config, const HeteroPartitionView& v) {
  const std::string file = config.FilePath(v.part_id, "indptr.npy");
  if (v.indptr[0] != 0 || v.indptr[v.num_nodes] != v.num_edges) {
    throw DataError(file + ": offsets do not run from 0 to the " + std::to_string(v.num_edges) +
                    " entries of indices.npy");
  }
  for (int64_t i = 0; i < v.num_nodes; ++i) {
    if (v.indptr[i + 1] < v.indptr[i])
      throw DataError(file + ": offsets decrease at entry " + std::to_string(i + 1));
  }
}

void CheckEdges(const PartitionConfig& config, const HeteroPartitionView& v) {
  const int64_t num_rels = static_cast<int64_t>(config.etypes.size());
  for (int64_t i = 0; i < v.num_nodes; ++i) {
    const int64_t b = v.indptr[i], end = v.indptr[i + 1];
    for (int64_t k = b; k < end; ++k) {
      const int64_t r = v.etypes[k];
      if (r < 0 || r >= num_rels || (k > b && r < v.etypes[k - 1])) {
        throw DataError(config.FilePath(v.part_id, kEtypeFile) + ": entry " + std::to_string(k) +
                        " (relation " + std::to_string(r) + ") is outside [0, " +
                        std::to_string(num_rels) + ") or out of order within its node's in-edges");
      }
      const int64_t u = v.indices[k];
      if (u < 0 || u >= config.num_nodes) {
        throw DataError(config.FilePath(v.part_id, "indices.npy") + ": entry " + std::to_string(k) +
                        " is node id " + std::to_string(u) + ", outside [0, " +
                        std::to_string(config.num_nodes) + ")");
      }
    }
  }
}

void FillRngKeys(const PartitionConfig& config, const HeteroPartitionView& v, int64_t* keys) {
  const std::vector<int64_t> offset = config.InputTypeOffsets();
  for (int64_t i = 0; i < v.num_nodes; ++i) {
    const int t = v.TypeOf(v.node_start + i);
    const int64_t o = v.orig_nids[i];
    const int64_t size =
        t < 0 ? 0 : offset[static_cast<size_t>(t) + 1] - offset[static_cast<size_t>(t)];
    if (t < 0 || o < 0 || o >= size) {
      throw DataError(config.FilePath(v.part_id, "orig_nids.npy") + ": entry " + std::to_string(i) +
                      " is " + std::to_string(o) + ", not an input id of its node type");
    }
    keys[i] = offset[static_cast<size_t>(t)] + o;
  }
}

const char* const kMaskSuffix[3] = {"-train_mask.npy", "-valid_mask.npy", "-test_mask.npy"};

void CheckTargets(const PartitionConfig& config, const HeteroPartitionView& v) {
  const std::string& tn = config.target_ntype;
  const int64_t n = v.num_targets();
  for (int64_t i = 0; i < n; ++i) {
    if (v.labels[i] < -1 || v.labels[i] >= config.num_classes) {
      throw DataError(config.FilePath(v.part_id, tn + "-label.npy") + ": label " +
                      std::to_string(v.labels[i]) + " outside [0, " +
                      std::to_string(config.num_classes) + ")");
    }
  }
  const PartInfo& info = config.parts[static_cast<size_t>(v.part_id)];
  const int64_t counts[3] = {info.num_train, info.num_valid, info.num_test};
  for (int m = 0; m < 3; ++m) {
    const std::string file = config.FilePath(v.part_id, tn + kMaskSuffix[m]);
    int64_t ones = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (v.masks[m][i] > 1) throw DataError(file + ": an entry is not 0 or 1");
      ones += v.masks[m][i];
    }
    if (ones != counts[m]) {
      throw DataError(file + ": " + std::to_string(ones) +
                      " nodes are set, the partition config says " + std::to_string(counts[m]));
    }
  }
}

// Every stored edge's features finite, and 0 past its relation's width.
void CheckEdgeFeatures(const PartitionConfig& config, const HeteroPartitionView& v) {
  if (v.edge_dim == 0 || v.edge_data == nullptr) return;
  for (int64_t k = 0; k < v.num_edges; ++k) {
    const float* row = v.edge_data + k * v.edge_dim;
    const int64_t w = config.etype_edge_feature_dims[static_cast<size_t>(v.etypes[k])];
    for (int64_t j = 0; j < v.edge_dim; ++j) {
      if (!std::isfinite(row[j]) || (j >= w && row[j] != 0.0f)) {
        throw DataError(config.FilePath(v.part_id, kEdgeFeatFile) + ": entry (" +
                        std::to_string(k) + ", " + std::to_string(j) + ") is " +
                        (std::isfinite(row[j])
                             ? "not 0 past its relation's " + std::to_string(w) + " columns"
                             : std::string("not a finite number")));
      }
    }
  }
}

}  // namespace

void CheckHeteroArrays(const PartitionConfig& config, const HeteroPartitionView& v,
                       int64_t* rng_keys) {
  CheckOffsets(config, v);
  CheckEdges(config, v);
  FillRngKeys(config, v, rng_keys);
  CheckTargets(config, v);
  CheckEdgeFeatures(config, v);
}

HeteroPartition LoadHeteroPartition(const PartitionConfig& config, int part, bool verify_checksums,
                                    bool edge_data) {
  const HeteroPartitionView shape = HeteroShape(config, part);
  if (verify_checksums) VerifyPartFiles(config, part);
  const int64_t n = shape.num_nodes, e = shape.num_edges;
  auto path = [&](const std::string& f) { return config.FilePath(part, f); };
  HeteroPartition p;
  p.part_id = part;
  p.node_start = shape.node_start;
  p.num_nodes = n;
  p.ntype_ranges = shape.ntype_ranges;
  p.feature_dims = shape.feature_dims;
  p.target = shape.target;
  p.indptr = ReadNpy<int64_t>(path("indptr.npy"), {n + 1});
  p.indices = ReadNpy<int64_t>(path("indices.npy"), {e});
  p.etypes = ReadNpy<int64_t>(path(kEtypeFile), {e});
  p.orig_nids = ReadNpy<int64_t>(path("orig_nids.npy"), {n});
  p.features.resize(config.ntypes.size());
  for (size_t t = 0; t < config.ntypes.size(); ++t) {
    if (p.feature_dims[t] == 0) continue;
    const int64_t rows = p.ntype_ranges[t].second - p.ntype_ranges[t].first;
    p.features[t] = ReadNpy<float>(path(config.ntypes[t] + "-feat.npy"), {rows, p.feature_dims[t]});
  }
  const std::string& tn = config.target_ntype;
  const int64_t targets = shape.num_targets();
  p.labels = ReadNpy<int64_t>(path(tn + "-label.npy"), {targets});
  for (int m = 0; m < 3; ++m) p.masks[m] = ReadNpy<uint8_t>(path(tn + kMaskSuffix[m]), {targets});
  p.rng_keys.resize(static_cast<size_t>(n));
  CheckHeteroArrays(config, p.View(), p.rng_keys.data());
  if (edge_data) LoadHeteroEdgeData(config, part, verify_checksums, &p);
  return p;
}

void LoadHeteroEdgeData(const PartitionConfig& config, int part, bool verify_checksums,
                        HeteroPartition* p) {
  if (config.edge_feature_dim == 0 || p->edge_dim > 0) return;
  const std::string file = config.FilePath(part, kEdgeFeatFile);
  // Hashed here, not in VerifyPartFiles (which leaves the edge files to
  // the runs that read them).
  if (verify_checksums) {
    VerifyPartFile(file, config.parts[static_cast<size_t>(part)].files.at(kEdgeFeatFile));
  }
  p->edge_data =
      ReadNpy<float>(file, {static_cast<int64_t>(p->indices.size()), config.edge_feature_dim});
  p->edge_dim = config.edge_feature_dim;
  CheckEdgeFeatures(config, p->View());
}

}  // namespace gnn
