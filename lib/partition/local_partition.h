// One partition's arrays loaded into memory from the partition format.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/sparse_rows.h"
#include "partition/config.h"

namespace gnn {

struct LocalPartition {
  int part_id = 0;
  int64_t node_start = 0;  // first owned global id
  int64_t num_nodes = 0;   // owned nodes
  int64_t feature_dim = 0;
  std::vector<int64_t> indptr;   // [num_nodes + 1]
  std::vector<int64_t> indices;  // global ids of in-neighbours
  std::vector<float> features;   // [num_nodes, feature_dim]
  // A sparse-feature partition loaded to stay sparse
  // (LoadLocalPartition's keep_sparse): its CSR rows, `features` then
  // empty.
  SparseRows sparse_features;
  bool sparse() const { return sparse_features.rows() > 0; }
  std::vector<int64_t> labels;  // [num_nodes]; class ids only
  // Multi-label / regression graphs: float32 [num_nodes, label_width]
  // (config.label_kind), `labels` then empty.
  int64_t label_width = 0;
  std::vector<float> targets;
  std::vector<uint8_t> train_mask, valid_mask, test_mask;  // [num_nodes]
  std::vector<int64_t> orig_nids;                          // [num_nodes] new id -> input id
  // The stored in-edges' data (edge_feat.npy, [indices.size(), edge_dim]),
  // loaded when asked (LoadLocalPartition's edge_data); else empty, 0.
  int64_t edge_dim = 0;
  std::vector<float> edge_data;

  // Global ids of owned nodes whose mask is set.
  std::vector<int64_t> Nodes(const std::vector<uint8_t>& mask) const;
};

// Held-out edges of one partition (see kValEdgeFiles); empty when the
// config has none.
struct HeldOutEdges {
  int num_negatives = 0;
  std::vector<int64_t> heads, tails;  // [K] global ids
  std::vector<int64_t> negatives;     // [K, num_negatives] corrupted tails
  int64_t size() const { return static_cast<int64_t>(heads.size()); }
};

// Borrowed views of one partition's arrays, each of the length the config
// gives it: indptr [n + 1], indices [e], labels, masks and orig_nids [n].
struct PartitionArrays {
  const int64_t* indptr = nullptr;
  const int64_t* indices = nullptr;
  const int64_t* labels = nullptr;  // class ids, or
  const float* targets = nullptr;   // [n, config.label_width] (multi-label, regression)
  const uint8_t* masks[3] = {nullptr, nullptr, nullptr};  // train, valid, test
  const int64_t* orig_nids = nullptr;
};

// The consistency checks of partition `part`'s arrays against `config`,
// shared by every loader (files, shared memory): indptr starts at 0, never
// decreases and ends at the edge count; indices and orig_nids are node ids
// of the graph; labels in [-1, num_classes) (targets finite, and 0/1 for
// multi-label); masks hold 0/1 and as many
// ones as the config's num_train / num_valid / num_test. Throws DataError
// naming the file (config.FilePath) and the first bad entry. Pure,
// thread-safe.
void CheckPartitionArrays(const PartitionConfig& config, int part, const PartitionArrays& a);

// Reads partition `part`'s held-out edges (checksums first when asked);
// shapes and ids are checked; DataError names the file.
HeldOutEdges LoadHeldOutEdges(const PartitionConfig& config, int part, bool verify_checksums);

// Loads partition `part` of `config`. With verify_checksums every file's
// sha256 is compared with the config first. Shapes and dtypes are checked
// against the config; any mismatch throws DataError naming the file.
// With `edge_data` the edge features too (config edge_feature_dim > 0;
// checked finite, and against their checksum when verifying). A partition
// of sparse features (config.sparse_features) is made dense rows unless
// `keep_sparse`.
LocalPartition LoadLocalPartition(const PartitionConfig& config, int part, bool verify_checksums,
                                  bool edge_data = false, bool keep_sparse = false);

// The CSR node features of partition `part` of a sparse-feature config:
// shapes and dtypes against the config, then CheckSparse (column ids in
// range and sorted, row pointers ending at the ids' count, values finite);
// DataError naming the file. Checksums are the caller's.
SparseRows ReadSparseFeatures(const PartitionConfig& config, int part);
// Reads the edge data into a partition loaded without it (a model file
// read later says it weighs messages); no-op without edge data or when
// loaded already.
void LoadEdgeData(const PartitionConfig& config, int part, bool verify_checksums,
                  LocalPartition* p);

// A partition's edge labels (config.edge_labels), aligned with its stored
// in-edges: class ids (`labels`) or values (`targets`), and each edge's
// split (config.h: kEdgeSplitFile).
struct EdgeLabelFiles {
  std::vector<int64_t> labels;
  std::vector<float> targets;
  std::vector<uint8_t> split;
  // With `features`: the edges' own features (kEdgeFeatFile), [edges,
  // feature_dim].
  std::vector<float> features;
  int64_t feature_dim = 0;
};
// Appends stored in-edge e's class (to *labels) or value (to *targets),
// and its features when `f` holds some (to *features).
void AppendEdgeRow(const EdgeLabelFiles& f, int64_t e, std::vector<int64_t>* labels,
                   std::vector<float>* targets, std::vector<float>* features);
// Reads them (checksums first when `verify_checksums`), and the edge
// features too when `features` (the config must have some); DataError
// naming the file when one is missing, of the wrong shape, or holds a
// split other than 0-4, a class out of range or a value that is not finite
// on an edge in a split 1-3, or a feature that is not finite.
EdgeLabelFiles ReadEdgeLabels(const PartitionConfig& config, int part, bool verify_checksums,
                              bool features = false);

// The input edges of partition `part` (config.edge_labels: the stored
// in-edges that run as the input lists them), in stored order: each one's
// input edge id, its ends (global new ids, the source first), split (1-3,
// or 4 for none) and class or value. Reads the partition's CSC and edge files (checksums first when
// `verify_checksums`); DataError naming a file as ReadEdgeLabels does.
struct LabeledEdgeRows {
  std::vector<int64_t> eids, heads, tails;
  std::vector<uint8_t> split;
  std::vector<int64_t> labels;
  std::vector<float> targets;
  std::vector<float> features;  // with `features`: [edges, feature_dim]
  int64_t feature_dim = 0;
};
LabeledEdgeRows ReadLabeledEdges(const PartitionConfig& config, int part, bool verify_checksums,
                                 bool features = false);

// The user's ids of partition `part`'s nodes (kUserIdsFile, aligned with
// orig_nids); empty when the config has none. DataError naming the file
// when it is missing or of the wrong shape.
std::vector<int64_t> LoadUserNodeIds(const PartitionConfig& config, int part);

}  // namespace gnn
