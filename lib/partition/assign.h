// Node -> partition assignment: METIS k-way (multi-constraint) or random.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/random.h"
#include "graph/csr.h"

namespace gnn {

// --sparsify K: whether the partitioner sees undirected edge {a, b}, of
// degrees da and db: always when max(da, db) <= K, else with probability
// K / max(da, db), from one seeded draw per pair (the same at both ends,
// so the kept graph stays symmetric). Hubs keep about K edges; edges
// between nodes of degree <= K are all kept. Shared by METIS here and
// PT-Scotch (--distributed).
inline bool KeepSparsifiedEdge(int64_t a, int64_t b, int64_t da, int64_t db, int64_t cap,
                               uint64_t seed) {
  const int64_t most = da > db ? da : db;
  if (most <= cap) return true;
  const uint64_t h = SplitMix64(SplitMix64(seed ^ static_cast<uint64_t>(a < b ? a : b)) +
                                static_cast<uint64_t>(a < b ? b : a));
  return static_cast<double>(h >> 11) * 0x1.0p-53 < static_cast<double>(cap) / most;
}

// The edges of `sym` KeepSparsifiedEdge keeps (cap >= 1).
Csr32 SparsifySymmetric(const Csr32& sym, int64_t cap, uint64_t seed);

// METIS_PartGraphKway on the symmetric adjacency `sym` (its int32 indices
// are METIS's idx_t and are passed without a copy; METIS does not modify
// them). `vertex_weights`
// holds one array of length num_nodes per balance constraint (node count,
// train nodes, in-degree, ...). sparsify > 0: METIS partitions
// SparsifySymmetric(sym, sparsify, seed) instead, whose coarsening levels
// are that much smaller (a power-law graph's edges barely merge as METIS
// coarsens, so it holds several copies of them). Throws ConfigError if the
// graph exceeds METIS's 32-bit index, Error if METIS fails. Returns part
// ids in [0, num_parts).
//
// `memory` bounds what METIS may take (MetisBytes): when it would not fit
// and the user chose no --sparsify, METIS partitions the graph sparsified
// with the largest K of 64, 32, ..., 1 that fits (said in one line), and
// ConfigError says so when none does; a --sparsify the user chose is kept,
// with a warning when it does not fit. `*used_sparsify` gets the K METIS
// partitioned with (0: every edge).
struct MetisMemory {
  int64_t budget = -1;         // bytes METIS may take on top of what is held; -1: no bound
  bool auto_sparsify = false;  // the user left --sparsify unset
  std::string budget_from;     // what set the budget, for the messages
};
std::vector<int32_t> MetisAssign(const Csr32& sym,
                                 const std::vector<std::vector<int32_t>>& vertex_weights,
                                 int num_parts, uint64_t seed, int64_t sparsify = 0,
                                 const MetisMemory& memory = {}, int64_t* used_sparsify = nullptr);

// About the most memory METIS_PartGraphKway takes (with our copies of its
// inputs) for `nodes` nodes, `entries` symmetric adjacency entries and
// `ncon` balance constraints: its coarsening levels and their edge weights
// took 30-40 bytes per entry and ~40-70 per node on synthetic graphs here,
// sparsified ones at the high end (docs/PERFORMANCE.md); the upper ends.
int64_t MetisBytes(int64_t nodes, int64_t entries, int64_t ncon);

// The adjacency entries SparsifySymmetric(sym, cap, ...) keeps on average,
// for each of `caps`, in one pass.
std::vector<int64_t> ExpectedSparsifiedEntries(const Csr32& sym, const std::vector<int64_t>& caps);

// One-pass streaming assignment (linear deterministic greedy, LDG) for
// graphs METIS cannot take: nodes in breadth-first order (components in id
// order), each to the part holding most of its already placed neighbours,
// scaled by how empty that part still is, among the parts where every
// balance constraint (`vertex_weights`, as MetisAssign's) stays within
// (1 + slack) x its even share. O(edges + nodes x parts) time, O(nodes)
// memory; 64-bit ids. Deterministic.
template <typename Index>
std::vector<int32_t> StreamAssign(const CsrT<Index>& sym,
                                  const std::vector<std::vector<int32_t>>& vertex_weights,
                                  int num_parts, double slack = 0.05);

// Adjacency entries METIS's 32-bit idx_t can take (GNN_METIS_MAX_ADJACENCY
// lowers it, so the streaming fallback can be tested on small graphs).
int64_t MetisMaxAdjacency();

// Uniformly random and exactly balanced: a seeded shuffle dealt round-robin.
std::vector<int32_t> RandomAssign(int64_t num_nodes, int num_parts, uint64_t seed);

// Number of undirected edges of `sym` whose ends lie in different parts.
template <typename Index>
int64_t EdgeCut(const CsrT<Index>& sym, const std::vector<int32_t>& part);

}  // namespace gnn
