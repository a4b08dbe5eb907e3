// A typed block's edges regrouped by (relation, destination): what RGCN's
// per-relation means aggregate over (train/rgcn.h), and the groups whose
// rows a cluster sums where they live (DistGraph's typed first layer).
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/block.h"

namespace gnn {

// A block's edges regrouped by (relation, destination): row r * num_dst + d
// lists the sources of d's in-edges of relation r, in their order in the
// block. Plain vectors owned by the struct.
struct RelationBlock {
  int64_t num_dst = 0;  // of the block
  int64_t num_src = 0;
  int64_t num_rels = 0;
  std::vector<int64_t> indptr;   // [num_rels * num_dst + 1]
  std::vector<int64_t> indices;  // [E] local source index per edge
  // When the block carries edge data (Block::edge_dim > 0): each entry's
  // edge in the block (its row of Block::edge_data); else empty.
  std::vector<int64_t> eids;
};

// Counting sort of the block's edges by (etypes[e], destination): O(E +
// num_rels * num_dst). DataError when block.etypes does not have one entry
// per edge, a relation is outside [0, num_rels), or indptr does not fit the
// block; ConfigError when num_rels < 1. Pure; thread-safe.
RelationBlock ToRelationBlock(const Block& block, int64_t num_rels);

// The non-empty (relation, destination) rows of `rb` for relations `rels`
// (relations in that order, destinations in increasing order within each),
// their sources as ids of `src_nodes` (the block's): group k is
// ids[ptr[k], ptr[k + 1]) and is row rows[k] = r * num_dst + d of `rb`.
// What the typed first layer sums where the rows live.
struct RelationGroups {
  std::vector<int64_t> ids;
  std::vector<int64_t> ptr{0};
  std::vector<int64_t> rows;
  size_t size() const { return rows.size(); }
};
RelationGroups GroupSources(const RelationBlock& rb, const std::vector<int64_t>& src_nodes,
                            const std::vector<int64_t>& rels);

}  // namespace gnn
