// Sample and aggregate at the owner: the first layer GraphSAGE computes
// (over raw input features, which need no gradient) consumes only each
// destination's own row and the mean of its sampled in-neighbours' rows
// (MiniBatch::input_means). The partition that owns a destination can
// sample its neighbours and sum the rows it holds itself, so what crosses
// the network is two rows per destination and the few neighbour ids it
// does not hold, not the neighbour list and every neighbour's row (the
// principle of P3, OSDI'21: move partial results, not features). Mean and
// sum aggregations fit it (GraphSAGE's mean today); attention does not.
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/sampler.h"

namespace gnn {

class EdgeExclusion;

// What one owner draws and sums: destinations `dsts` [n] (global ids
// owned by `csc`), each one's in-neighbours sampled exactly as
// SampleNeighbors(csc, dsts, n, fanout, replace, rng_seed) samples them,
// over `features` [csc.num_nodes, dim] (the rows of the nodes csc owns),
// with `threads` threads (<= 0: all cores). With `exclude` (an edge task's
// batch), the sampled pairs in it are dropped before anything is counted
// or summed, as EdgeExclusion::Filter drops them from a sampled block.
struct OwnerDraw {
  CscView csc;
  const float* features = nullptr;
  int64_t dim = 0;
  const int64_t* dsts = nullptr;
  int64_t n = 0;
  int fanout = -1;
  bool replace = false;
  uint64_t rng_seed = 0;
  int threads = 1;
  const EdgeExclusion* exclude = nullptr;
};

// What it lists beside the rows: counts[i], how many neighbours
// destination i sampled in all; the ones not held here as a CSR over
// destinations, remote_indptr [n+1] / remote_ids, each destination's in
// increasing order (as varints they cost 1-3 bytes on the wire; sampled
// order would cost 3-4).
struct OwnerSums {
  std::vector<int64_t> counts;
  std::vector<int64_t> remote_indptr;
  std::vector<int64_t> remote_ids;
};

// Writes, into `out_rows` [2n, dim], each destination's own row (rows
// 0..n-1) and the sum of its sampled neighbours' rows that `features`
// holds (rows n..2n-1), and lists the rest in `sums`. With own_rows = k in
// [0, n) only the first k destinations' own rows are written (the asker
// holds the others'): `out_rows` is [k + n, dim], the sums from row k.
// Blocking. DataError when a destination is not owned by `csc`.
void SampleAggregate(const OwnerDraw& draw, float* out_rows, OwnerSums* sums,
                     int64_t own_rows = -1);

// The same, writing destination i's own row (when i < own_rows) to
// own_out + at[i] * dim and its sum to sum_out + at[i] * dim (at ==
// nullptr: at[i] = i), so a caller assembling rows from several owners
// gets this owner's in place, without a copy.
void SampleAggregateInto(const OwnerDraw& draw, float* own_out, float* sum_out, const size_t* at,
                         int64_t own_rows, OwnerSums* sums);

// The other half of it, at the owners of the neighbours a destination's
// owner does not hold: out [groups, dim] row k = the sum of the rows of
// ids[group_ptr[k], group_ptr[k + 1]) (global ids, all inside the rows
// `features` holds, [node_start, node_start + num_rows)), in float32 and in
// order; an empty group sums to zeros. The caller checks ownership and the
// offsets (PullSums::Decode does). Blocking, one thread.
void SumRowGroups(const float* features, int64_t dim, int64_t node_start, const int64_t* ids,
                  const int64_t* group_ptr, int64_t groups, float* out);

// Turns the sums of SampleAggregate into means: adds to sums[i] the rows of
// destination i's remote neighbours (remote neighbour k, for k in
// [remote_indptr[i], remote_indptr[i + 1]), is row remote_row[k] of
// `remote_rows` [*, dim]: a neighbour shared by several destinations is
// pulled once) and scales it by 1 / counts[i] (a destination without
// neighbours keeps a zero mean), as MeanOfSources computes it over the
// whole neighbour list (equal up to float summation order).
void FinishMeans(int64_t n, int64_t dim, const std::vector<int64_t>& counts,
                 const std::vector<int64_t>& remote_indptr, const float* remote_rows,
                 const std::vector<int64_t>& remote_row, float* sums);
// The same with remote neighbour k's row at row_ptrs[remote_row[k]]: rows
// that lie in several arrays (the partition, the hot-row cache, pulled
// rows), added where they are. Both add in edge order with SumCsrRows.
void FinishMeansByPointer(int64_t n, int64_t dim, const std::vector<int64_t>& counts,
                          const std::vector<int64_t>& remote_indptr, const float* const* row_ptrs,
                          const std::vector<int64_t>& remote_row, float* sums);

}  // namespace gnn
