// A heterogeneous partition's arrays: the CSC of every relation with each
// edge's relation, each type's feature rows, and the target type's labels
// and masks; loaded into memory (a standalone trainer) or viewed where they
// lie (shared memory: servers, trainers and samplers of a machine).
#pragma once

#include <cstdint>
#include <vector>

#include "partition/config.h"

namespace gnn {

// One heterogeneous partition's arrays wherever they live (a HeteroPartition's
// vectors, a shared-memory segment): what servers, trainers and samplers
// read. The pointers are valid while their owner lives.
struct HeteroPartitionView {
  int part_id = 0;
  int64_t node_start = 0, num_nodes = 0, num_edges = 0;
  const int64_t* indptr = nullptr;     // [num_nodes + 1]
  const int64_t* indices = nullptr;    // [num_edges] global (new) ids of in-neighbours
  const int64_t* etypes = nullptr;     // [num_edges] relation of each in-edge; sorted within a row
  const int64_t* orig_nids = nullptr;  // [num_nodes] type-local input id of each owned node
  // [num_nodes] input homogeneous id of each owned node
  // (InputTypeOffsets()[type] + orig_nids): the sampling and
  // embedding-initialisation key.
  const int64_t* rng_keys = nullptr;
  std::vector<std::pair<int64_t, int64_t>> ntype_ranges;  // owned ids of each type
  std::vector<int64_t> feature_dims;                      // per type (0: no features)
  std::vector<const float*> features;  // per type: rows of its owned range (null: none)
  int target = 0;                      // index of the labelled type
  const int64_t* labels = nullptr;     // per owned target node
  const uint8_t* masks[3] = {nullptr, nullptr, nullptr};  // train, valid, test per target node
  // The stored in-edges' features (kEdgeFeatFile, aligned with indices):
  // [num_edges, edge_dim], relation r's in its first
  // config.etype_edge_feature_dims[r] columns, the rest 0; edge_dim 0 and
  // null when the graph has none (or they were not loaded).
  int64_t edge_dim = 0;
  const float* edge_data = nullptr;

  // Owned nodes of the target type.
  int64_t num_targets() const;
  // Global ids of owned target nodes whose mask `m` is set.
  std::vector<int64_t> Nodes(int m) const;
  // Node type of owned node `v` (global id); -1 when not owned.
  int TypeOf(int64_t v) const;
};

// One heterogeneous partition loaded into this process's memory (a
// standalone trainer's).
struct HeteroPartition {
  int part_id = 0;
  int64_t node_start = 0, num_nodes = 0;  // owned new ids [node_start, node_start + num_nodes)
  std::vector<int64_t> indptr;            // [num_nodes + 1]
  std::vector<int64_t> indices;           // global (new) ids of in-neighbours
  std::vector<int64_t> etypes;            // relation of each in-edge; sorted within a row
  std::vector<int64_t> orig_nids;         // type-local input id of each owned node
  std::vector<int64_t> rng_keys;          // see HeteroPartitionView
  std::vector<std::pair<int64_t, int64_t>> ntype_ranges;  // owned ids of each type
  std::vector<int64_t> feature_dims;                      // per type (0: no features)
  std::vector<std::vector<float>> features;               // per type: rows of its owned range
  int target = 0;                                         // index of the labelled type
  std::vector<int64_t> labels;                            // per owned target node
  std::vector<uint8_t> masks[3];                          // train, valid, test per target node
  int64_t edge_dim = 0;                                   // see HeteroPartitionView
  std::vector<float> edge_data;

  // Points into the vectors above.
  HeteroPartitionView View() const;
  std::vector<int64_t> Nodes(int m) const { return View().Nodes(m); }
  int TypeOf(int64_t v) const { return View().TypeOf(v); }
};

// The view's shape from `config` (ranges, feature widths, target; no
// arrays): what every loader fills in. ConfigError for a homogeneous config
// or a partition that does not exist.
HeteroPartitionView HeteroShape(const PartitionConfig& config, int part);

// The checks of partition `part`'s arrays against `config`, shared by every
// loader (files, shared memory): offsets run from 0 to the edge count and
// never decrease; relations in range and sorted within each row; ids are
// node ids of the graph; orig_nids are input ids of their node's type;
// labels in [-1, num_classes); masks hold 0/1 and the config's counts;
// edge features (when the view has them) finite, and 0 beyond their
// relation's width.
// Fills `rng_keys` (num_nodes entries) from orig_nids on the way. Throws
// DataError naming the file (config.FilePath) and the first bad entry.
void CheckHeteroArrays(const PartitionConfig& config, const HeteroPartitionView& v,
                       int64_t* rng_keys);

// Loads partition `part` of a heterogeneous `config` (checksums first when
// asked). Shapes come from the config; CheckHeteroArrays' checks. With
// `edge_data` the edge features too (config edge_feature_dim > 0).
HeteroPartition LoadHeteroPartition(const PartitionConfig& config, int part, bool verify_checksums,
                                    bool edge_data = false);
// Reads the edge features into a partition loaded without them (checked
// finite and 0 past their relation's width, against their checksum when
// verifying); no-op without edge features or when loaded already.
void LoadHeteroEdgeData(const PartitionConfig& config, int part, bool verify_checksums,
                        HeteroPartition* p);

}  // namespace gnn
