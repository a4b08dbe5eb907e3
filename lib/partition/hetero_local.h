// One heterogeneous partition's arrays loaded into memory (what a
// standalone RGCN trainer and a heterogeneous server read): the CSC of every
// relation with each edge's relation, each type's feature rows, and the
// target type's labels and masks.
#pragma once

#include <cstdint>
#include <vector>

#include "partition/config.h"

namespace gnn {

struct HeteroPartition {
  int part_id = 0;
  int64_t node_start = 0, num_nodes = 0;  // owned new ids [node_start, node_start + num_nodes)
  std::vector<int64_t> indptr;            // [num_nodes + 1]
  std::vector<int64_t> indices;           // global (new) ids of in-neighbours
  std::vector<int64_t> etypes;            // relation of each in-edge; sorted within a row
  std::vector<int64_t> orig_nids;         // type-local input id of each owned node
  // Input homogeneous id of each owned node (InputTypeOffsets()[type] +
  // orig_nids): the sampling and embedding-initialisation key.
  std::vector<int64_t> rng_keys;
  std::vector<std::pair<int64_t, int64_t>> ntype_ranges;  // owned ids of each type
  std::vector<int64_t> feature_dims;                      // per type (0: no features)
  std::vector<std::vector<float>> features;               // per type: rows of its owned range
  int target = 0;                                         // index of the labelled type
  std::vector<int64_t> labels;                            // per owned target node
  std::vector<uint8_t> masks[3];                          // train, valid, test per target node

  // Global ids of owned target nodes whose mask `m` is set.
  std::vector<int64_t> Nodes(int m) const;
  // Node type of owned node `v` (global id); -1 when not owned.
  int TypeOf(int64_t v) const;
};

// Loads partition `part` of a heterogeneous `config` (checksums first when
// asked). Shapes come from the config; ids, relations (in range and sorted
// within each row), labels and mask counts are checked: DataError names the
// file and the first bad entry.
HeteroPartition LoadHeteroPartition(const PartitionConfig& config, int part, bool verify_checksums);

}  // namespace gnn
