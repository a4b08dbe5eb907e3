#include "partition/local_partition.h"

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
      const std::string path = config.FilePath(part, name);
      if (Sha256File(path) != info.files.at(name).sha256) {
        throw DataError(path + ": checksum mismatch with the partition config");
      }
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
