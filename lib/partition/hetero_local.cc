#include "partition/hetero_local.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/npy.h"

namespace gnn {

std::vector<int64_t> HeteroPartition::Nodes(int m) const {
  std::vector<int64_t> out;
  const int64_t first = ntype_ranges[static_cast<size_t>(target)].first;
  const std::vector<uint8_t>& mask = masks[m];
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) out.push_back(first + static_cast<int64_t>(i));
  }
  return out;
}

int HeteroPartition::TypeOf(int64_t v) const {
  for (size_t t = 0; t < ntype_ranges.size(); ++t) {
    if (v >= ntype_ranges[t].first && v < ntype_ranges[t].second) return static_cast<int>(t);
  }
  return -1;
}

HeteroPartition LoadHeteroPartition(const PartitionConfig& config, int part,
                                    bool verify_checksums) {
  if (!config.hetero()) {
    throw ConfigError(config.graph_name + " is not a heterogeneous partitioning (no target_ntype)");
  }
  if (part < 0 || part >= config.num_parts) {
    throw ConfigError("partition " + std::to_string(part) + " does not exist (config has " +
                      std::to_string(config.num_parts) + ")");
  }
  if (verify_checksums) VerifyPartFiles(config, part);
  const PartInfo& info = config.parts[static_cast<size_t>(part)];
  const int64_t n = info.num_nodes(), e = info.num_edges();
  auto path = [&](const std::string& f) { return config.FilePath(part, f); };
  HeteroPartition p;
  p.part_id = part;
  p.node_start = info.node_start;
  p.num_nodes = n;
  p.ntype_ranges = info.ntype_ranges;
  p.feature_dims = config.ntype_feature_dims;
  p.feature_dims.resize(config.ntypes.size(), 0);
  p.target =
      static_cast<int>(std::find(config.ntypes.begin(), config.ntypes.end(), config.target_ntype) -
                       config.ntypes.begin());
  p.indptr = ReadNpy<int64_t>(path("indptr.npy"), {n + 1});
  p.indices = ReadNpy<int64_t>(path("indices.npy"), {e});
  p.etypes = ReadNpy<int64_t>(path(kEtypeFile), {e});
  p.orig_nids = ReadNpy<int64_t>(path("orig_nids.npy"), {n});
  if (p.indptr[0] != 0 || p.indptr[static_cast<size_t>(n)] != e) {
    throw DataError(path("indptr.npy") + ": offsets do not run from 0 to the " + std::to_string(e) +
                    " entries of indices.npy");
  }
  for (int64_t v = 0; v < n; ++v) {
    if (p.indptr[static_cast<size_t>(v + 1)] < p.indptr[static_cast<size_t>(v)])
      throw DataError(path("indptr.npy") + ": offsets decrease at entry " + std::to_string(v + 1));
  }
  const int64_t num_rels = static_cast<int64_t>(config.etypes.size());
  for (int64_t v = 0; v < n; ++v) {
    const int64_t b = p.indptr[static_cast<size_t>(v)], end = p.indptr[static_cast<size_t>(v + 1)];
    for (int64_t k = b; k < end; ++k) {
      const int64_t r = p.etypes[static_cast<size_t>(k)];
      if (r < 0 || r >= num_rels || (k > b && r < p.etypes[static_cast<size_t>(k - 1)])) {
        throw DataError(path(kEtypeFile) + ": entry " + std::to_string(k) + " (relation " +
                        std::to_string(r) + ") is outside [0, " + std::to_string(num_rels) +
                        ") or out of order within its node's in-edges");
      }
      const int64_t u = p.indices[static_cast<size_t>(k)];
      if (u < 0 || u >= config.num_nodes) {
        throw DataError(path("indices.npy") + ": entry " + std::to_string(k) + " is node id " +
                        std::to_string(u) + ", outside [0, " + std::to_string(config.num_nodes) +
                        ")");
      }
    }
  }
  const std::vector<int64_t> offset = config.InputTypeOffsets();
  p.rng_keys.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int t = p.TypeOf(p.node_start + i);
    const int64_t size = offset[static_cast<size_t>(t) + 1] - offset[static_cast<size_t>(t)];
    const int64_t o = p.orig_nids[static_cast<size_t>(i)];
    if (t < 0 || o < 0 || o >= size) {
      throw DataError(path("orig_nids.npy") + ": entry " + std::to_string(i) + " is " +
                      std::to_string(o) + ", not an input id of its node type");
    }
    p.rng_keys[static_cast<size_t>(i)] = offset[static_cast<size_t>(t)] + o;
  }
  p.features.resize(config.ntypes.size());
  for (size_t t = 0; t < config.ntypes.size(); ++t) {
    if (p.feature_dims[t] == 0) continue;
    const int64_t rows = p.ntype_ranges[t].second - p.ntype_ranges[t].first;
    p.features[t] = ReadNpy<float>(path(config.ntypes[t] + "-feat.npy"), {rows, p.feature_dims[t]});
  }
  const std::string& tn = config.target_ntype;
  const auto [tb, te] = p.ntype_ranges[static_cast<size_t>(p.target)];
  p.labels = ReadNpy<int64_t>(path(tn + "-label.npy"), {te - tb});
  for (size_t i = 0; i < p.labels.size(); ++i) {
    if (p.labels[i] < -1 || p.labels[i] >= config.num_classes) {
      throw DataError(path(tn + "-label.npy") + ": label " + std::to_string(p.labels[i]) +
                      " outside [0, " + std::to_string(config.num_classes) + ")");
    }
  }
  const char* mask_files[3] = {"-train_mask.npy", "-valid_mask.npy", "-test_mask.npy"};
  const int64_t counts[3] = {info.num_train, info.num_valid, info.num_test};
  for (int m = 0; m < 3; ++m) {
    p.masks[m] = ReadNpy<uint8_t>(path(tn + mask_files[m]), {te - tb});
    int64_t ones = 0;
    for (uint8_t x : p.masks[m]) {
      if (x > 1) throw DataError(path(tn + mask_files[m]) + ": an entry is not 0 or 1");
      ones += x;
    }
    if (ones != counts[m]) {
      throw DataError(path(tn + mask_files[m]) + ": " + std::to_string(ones) +
                      " nodes are set, the partition config says " + std::to_string(counts[m]));
    }
  }
  return p;
}

}  // namespace gnn
