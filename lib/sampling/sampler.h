// Uniform neighbour sampling over a CSC of in-edges, block construction and
// feature/label gathering. Pure functions: RNG state comes from the caller's
// seed, so results reproduce exactly and do not depend on the thread count.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/random.h"
#include "sampling/block.h"

namespace gnn {

// Read-only view of in-edges of the nodes [node_start, node_start+num_nodes):
// row i lists the global ids of the in-neighbours of node node_start + i.
// The arrays are owned elsewhere (vectors, mmap, shared memory).
struct CscView {
  const int64_t* indptr = nullptr;  // [num_nodes + 1]
  const int64_t* indices = nullptr;
  int64_t node_start = 0;
  int64_t num_nodes = 0;
  // Optional [num_nodes]: the key each row's RNG is derived from (the node's
  // id in the input dataset, orig_nids). Rows list neighbours in input-id
  // order, so with these keys every partitioning of a graph samples the same
  // neighbours for the same seed. Null: key = global id.
  const int64_t* rng_keys = nullptr;
  // Optional [indptr[num_nodes], edge_dim]: row k the data of the edge
  // indices[k] names (edge_feat.npy). With it, SampleBlocks fills each
  // block's edge_data.
  const float* edge_data = nullptr;
  int64_t edge_dim = 0;
};

// Sampled in-neighbours of `seeds` (global ids owned by `csc`), CSR over
// seeds: out_indptr has seeds.size()+1 entries, out_indices global ids.
// fanout < 0 or >= degree takes every neighbour; otherwise `fanout` distinct
// neighbours uniformly without replacement (or with replacement if
// `replace`, always exactly `fanout`, even when fanout >= degree, for any
// node with at least one in-edge; fanout < 0 still takes every neighbour
// once). fanout == 0 samples nothing. Seed i's draw depends only on
// (rng_seed, key of seeds[i]) (see CscView::rng_keys), so the result is the same for any `threads`.
// Output vectors are resized to their exact sizes. Blocking; uses `threads`
// threads (<= 0: all cores).
// Throws DataError if a seed is not owned by `csc`. `out_edges`, when
// given, receives each sampled edge's position in csc.indices (its row of
// csc.edge_data).
void SampleNeighbors(const CscView& csc, const int64_t* seeds, int64_t num_seeds, int fanout,
                     bool replace, uint64_t rng_seed, int threads, std::vector<int64_t>* out_indptr,
                     std::vector<int64_t>* out_indices, std::vector<int64_t>* out_edges = nullptr);

// out [positions.size(), csc.edge_dim] = rows `positions` of csc.edge_data
// (as SampleNeighbors' out_edges gives them). No-op without edge data.
void GatherEdgeRows(const CscView& csc, const std::vector<int64_t>& positions,
                    std::vector<float>* out);

// Keeps the edge rows `kept` lists (EdgeExclusion::Filter's), in order:
// rows [kept.size(), dim] out of [*, dim], in place.
void KeepEdgeRows(const std::vector<int64_t>& kept, int64_t dim, std::vector<float>* rows);

// Builds a block from destination nodes and their sampled neighbours (as
// SampleNeighbors returns them): src_nodes = dst first, then new neighbours
// in first-seen order; indices relabelled to local positions. Throws
// DataError on a repeated destination node, a negative id, or arrays whose
// sizes do not match. Single-threaded; reuses a thread-local hash table.
Block ToBlock(const std::vector<int64_t>& dst_nodes, std::vector<int64_t> nbr_indptr,
              const std::vector<int64_t>& nbr_indices);

// Numbers the distinct seeds of a batch (an edge batch's endpoints, a
// query's nodes) in order of first appearance: Add(v) appends v to `seeds`
// the first time and returns its position there.
class SeedNumbering {
 public:
  explicit SeedNumbering(std::vector<int64_t>* seeds, size_t expected = 0) : seeds_(seeds) {
    at_.reserve(expected);
  }
  int64_t Add(int64_t v) {
    auto [it, fresh] = at_.emplace(v, static_cast<int64_t>(seeds_->size()));
    if (fresh) seeds_->push_back(v);
    return it->second;
  }

 private:
  std::vector<int64_t>* seeds_;
  std::unordered_map<int64_t, int64_t> at_;
};

// Transposes a CSR of `rows` rows over column ids [0, cols): t_ptr[cols+1]
// and t_idx[ptr[rows]] (caller-allocated) list, per column, the rows that
// reference it, in increasing row order; t_eid (optional, [ptr[rows]])
// the edge of each slot, so also in increasing order. A counting sort,
// O(edges + rows + cols), single-threaded. Throws DataError when an index
// is out of range.
void TransposeCsr(const int64_t* ptr, const int64_t* idx, int64_t rows, int64_t cols,
                  int64_t* t_ptr, int64_t* t_idx, int64_t* t_eid = nullptr);

// Fills block->t_indptr/t_indices/t_eids with the transpose of the block's
// CSR (edges grouped by source). Throws DataError on a malformed block.
void BuildTranspose(Block* block);

// Makes each destination the first in-neighbour in its own row (a
// self-loop: destinations are the first sources), the convention of DGL's
// GAT and GCN examples (dgl.add_self_loop), and sets block->self_loops.
// Before any transpose is built: DataError on a block that has one, on a
// typed block (its edges carry relations) or on one that already has them.
void AddSelfLoops(Block* block);

// Samples all layers for `seeds` (and, when `csc` has edge data, each
// sampled edge's row into Block::edge_data): fanouts[i] belongs to layer i (DGL's
// order), so sampling starts from the seeds with fanouts.back(). Returns
// blocks ordered input -> output. Single-partition (standalone) graphs only.
// Layer l draws with MixSeed(rng_seed, l). Seeds must be unique (DataError
// otherwise, as for nodes the CSC does not own); fanouts must be >= -1
// (ConfigError). Empty fanouts give no blocks. With `exclude`, every
// layer's sampled neighbours are filtered by EdgeExclusion::Filter (sample,
// then drop excluded edges: a destination may keep fewer than fanout).
class EdgeExclusion;
std::vector<Block> SampleBlocks(const CscView& csc, const std::vector<int64_t>& seeds,
                                const std::vector<int>& fanouts, bool replace, uint64_t rng_seed,
                                int threads, const EdgeExclusion* exclude = nullptr);

// Asks for transparent huge pages over [data, data + bytes) before its
// first touch (a fresh feature buffer is tens of MB: one page fault per
// 4 KiB otherwise). Advice only: ignored where THP is off.
void AdviseHugePages(void* data, size_t bytes);

// Sizes a row buffer (std::vector<float> or NoInitVector<float>) to n
// floats: no reallocation when it already has the room, huge pages asked
// for when it is fresh. A NoInitVector is not written.
template <class Vec>
void SizeRowBuffer(Vec* out, size_t n) {
  if (out->size() == n) return;
  if (out->capacity() < n) {
    Vec().swap(*out);
    out->reserve(n);
    AdviseHugePages(out->data(), n * sizeof(float));
  }
  out->resize(n);
}

// out[i, :] = rows[ids[i] - row_start, :] for a row-major [*, dim] matrix,
// out [ids.size(), dim]. The caller guarantees every row exists
// (ids >= row_start and in range).
void GatherRowsTo(const float* rows, int64_t row_start, int64_t dim,
                  const std::vector<int64_t>& ids, float* out, int threads);

// The same into a row buffer sized by SizeRowBuffer.
template <class Vec>
void GatherRows(const float* rows, int64_t row_start, int64_t dim, const std::vector<int64_t>& ids,
                Vec* out, int threads) {
  SizeRowBuffer(out, ids.size() * static_cast<size_t>(dim));
  GatherRowsTo(rows, row_start, dim, ids, out->data(), threads);
}

// out[i, :] = mean over block i's in-edges of the source's row of a
// row-major [*, dim] matrix (row src_nodes[indices[e]] - row_start; the
// caller guarantees every row exists), zero for a destination without
// edges. `out` has block.num_dst * dim floats. Uses `threads` threads.
void MeanOfSources(const float* rows, int64_t row_start, int64_t dim, const Block& block,
                   float* out, int threads);

// Turns a batch whose features follow block 0's sources into the
// MiniBatch::input_means form (destination rows, then their sources'
// means), in place; no-op when it is in that form already or has no
// blocks. Throws DataError when the features do not match block 0.
void PackInputMeans(MiniBatch* mb, int threads);

// The one fan-out parser. --fan_out "10,25": one count per layer, input
// layer first (sampling runs from the seeds outward, so the seeds get the
// last), each an integer >= -1 (-1: every neighbour). ConfigError naming
// `flag`, the spec and the bad part. ParseFanoutCount parses one count of
// `spec` (the typed parser's "REL:n" entries use it too).
std::vector<int> ParseFanouts(const std::string& spec, const std::string& flag = "--fan_out");
int ParseFanoutCount(const std::string& text, const std::string& spec,
                     const std::string& flag = "--fan_out");

}  // namespace gnn
