#include "partition/local_partition.h"

#include "common/error.h"
#include "common/npy.h"

namespace gnn {

std::vector<int64_t> LocalPartition::Nodes(const std::vector<uint8_t>& mask) const {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < num_nodes; ++i) {
    if (mask[i]) out.push_back(node_start + i);
  }
  return out;
}

LocalPartition LoadLocalPartition(const PartitionConfig& config, int part, bool verify_checksums) {
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
  auto path = [&](const char* f) { return config.FilePath(part, f); };
  p.indptr = ReadNpy<int64_t>(path("indptr.npy"), {n + 1});
  p.indices = ReadNpy<int64_t>(path("indices.npy"), {info.num_edges()});
  if (p.indptr.front() != 0 || p.indptr.back() != info.num_edges()) {
    throw DataError(path("indptr.npy") + ": offsets do not span indices.npy");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (p.indptr[i + 1] < p.indptr[i]) throw DataError(path("indptr.npy") + ": offsets decrease");
  }
  for (int64_t v : p.indices) {
    if (v < 0 || v >= config.num_nodes) {
      throw DataError(path("indices.npy") + ": node id " + std::to_string(v) + " out of range");
    }
  }
  p.features = ReadNpy<float>(path("feat.npy"), {n, config.feature_dim});
  p.labels = ReadNpy<int64_t>(path("label.npy"), {n});
  p.train_mask = ReadNpy<uint8_t>(path("train_mask.npy"), {n});
  p.valid_mask = ReadNpy<uint8_t>(path("valid_mask.npy"), {n});
  p.test_mask = ReadNpy<uint8_t>(path("test_mask.npy"), {n});
  p.orig_nids = ReadNpy<int64_t>(path("orig_nids.npy"), {n});
  for (int64_t l : p.labels) {
    if (l < -1 || l >= config.num_classes) {
      throw DataError(path("label.npy") + ": label " + std::to_string(l) + " outside [0, " +
                      std::to_string(config.num_classes) + ")");
    }
  }
  return p;
}

}  // namespace gnn
