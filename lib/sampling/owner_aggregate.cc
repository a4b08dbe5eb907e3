#include "sampling/owner_aggregate.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/memory.h"
#include "common/parallel.h"
#include "common/row_sums.h"
#include "sampling/edge_batch.h"

namespace gnn {

void SampleAggregate(const OwnerDraw& draw, float* out_rows, OwnerSums* sums, int64_t own_rows) {
  if (own_rows < 0 || own_rows > draw.n) own_rows = draw.n;
  SampleAggregateInto(draw, out_rows, out_rows + own_rows * draw.dim, nullptr, own_rows, sums);
}

void SampleAggregateInto(const OwnerDraw& draw, float* own_out, float* sum_out, const size_t* at,
                         int64_t own_rows, OwnerSums* sums) {
  const CscView& csc = draw.csc;
  const float* features = draw.features;
  const int64_t dim = draw.dim, n = draw.n;
  const int64_t* dsts = draw.dsts;
  std::vector<int64_t>* counts = &sums->counts;
  std::vector<int64_t>* remote_indptr = &sums->remote_indptr;
  std::vector<int64_t>* remote_ids = &sums->remote_ids;
  if (own_rows < 0 || own_rows > n) own_rows = n;
  // Working arrays kept per calling thread between requests (a server's
  // workers and a trainer's sampling thread call this for every batch).
  // Bound to references here: a lambda run by another thread that named a
  // thread_local itself would see that thread's copy.
  thread_local std::vector<int64_t> tl_indptr, tl_indices, tl_held_indptr, tl_held_ids;
  std::vector<int64_t>& indptr = tl_indptr;
  std::vector<int64_t>& indices = tl_indices;
  std::vector<int64_t>& held_indptr = tl_held_indptr;
  std::vector<int64_t>& held_ids = tl_held_ids;
  SampleNeighbors(csc, dsts, n, draw.fanout, draw.replace, draw.rng_seed, draw.threads, &indptr,
                  &indices);
  if (draw.exclude) draw.exclude->Filter(dsts, n, &indptr, &indices);
  const int64_t* ptr = indptr.data();
  const int64_t* idx = indices.data();
  const int64_t lo = csc.node_start, hi = csc.node_start + csc.num_nodes;
  auto held = [&](int64_t v) { return v >= lo && v < hi; };
  // Counts and offsets first (a cheap pass), so the held and the remote
  // neighbours can be listed in parallel into their places.
  counts->resize(n);
  remote_indptr->assign(n + 1, 0);
  int64_t* rp = remote_indptr->data();
  held_indptr.assign(n + 1, 0);
  int64_t* hp = held_indptr.data();
  for (int64_t i = 0; i < n; ++i) {
    (*counts)[i] = ptr[i + 1] - ptr[i];
    const int64_t remote_count =
        std::count_if(idx + ptr[i], idx + ptr[i + 1], [&](int64_t v) { return !held(v); });
    rp[i + 1] = rp[i] + remote_count;
    hp[i + 1] = hp[i] + (*counts)[i] - remote_count;
  }
  remote_ids->resize(rp[n]);
  int64_t* remote = remote_ids->data();
  held_ids.resize(hp[n]);
  CsrSum<float> sum = PlainCsrSum(hp, held_ids.data(), features, dim, dim, sum_out);
  sum.row_start = lo;
  sum.out_at = at;
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  // Each destination's own row is scattered over the partition's features
  // too: prefetched kOwnAhead destinations ahead of its copy.
  constexpr int64_t kOwnAhead = 8;
  ParallelFor(n, draw.threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t h = hp[i], r = rp[i];
      for (int64_t k = ptr[i]; k < ptr[i + 1]; ++k) {
        if (held(idx[k])) {
          held_ids[h++] = idx[k];
        } else {
          remote[r++] = idx[k];
        }
      }
      // A set to be summed: in increasing order it varint-codes small.
      std::sort(remote + rp[i], remote + r);
    }
    for (int64_t i = b; i < std::min(e, own_rows); ++i) {
      if (i + kOwnAhead < std::min(e, own_rows)) {
        PrefetchBytes(features + (dsts[i + kOwnAhead] - lo) * dim, row_bytes);
      }
      const size_t o = at ? at[i] : static_cast<size_t>(i);
      std::memcpy(own_out + o * dim, features + (dsts[i] - lo) * dim, row_bytes);
    }
    // The held neighbours' rows, summed in edge order.
    SumCsrRows(sum, b, e);
  });
}

void SumRowGroups(const float* features, int64_t dim, int64_t node_start, const int64_t* ids,
                  const int64_t* group_ptr, int64_t groups, float* out) {
  CsrSum<float> sum = PlainCsrSum(group_ptr, ids, features, dim, dim, out);
  sum.row_start = node_start;
  SumCsrRows(sum, 0, groups);
}

namespace {

// FinishMeans along `sum` (its rows set by the caller): each destination's
// remote rows added to what sums[i] holds, then scaled by 1 / counts[i].
void FinishMeansAlong(int64_t n, int64_t dim, const std::vector<int64_t>& counts,
                      const std::vector<int64_t>& remote_indptr,
                      const std::vector<int64_t>& remote_row, CsrSum<float> sum, float* sums) {
  if (static_cast<int64_t>(counts.size()) != n ||
      static_cast<int64_t>(remote_indptr.size()) != n + 1 ||
      static_cast<int64_t>(remote_row.size()) != remote_indptr.back()) {
    throw DataError("FinishMeans: " + std::to_string(counts.size()) + " counts and " +
                    std::to_string(remote_indptr.size()) + " offsets and " +
                    std::to_string(remote_row.size()) + " remote rows for " + std::to_string(n) +
                    " destinations");
  }
  std::vector<float> scale(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    scale[i] = counts[i] > 0 ? 1.0f / static_cast<float>(counts[i]) : 1.0f;
  }
  sum.ptr = remote_indptr.data();
  sum.idx = remote_row.data();
  sum.d = dim;
  sum.out = sums;
  sum.row_scale = scale.data();
  sum.accumulate = true;
  SumCsrRows(sum, 0, n);
}

}  // namespace

void FinishMeans(int64_t n, int64_t dim, const std::vector<int64_t>& counts,
                 const std::vector<int64_t>& remote_indptr, const float* remote_rows,
                 const std::vector<int64_t>& remote_row, float* sums) {
  CsrSum<float> sum;
  sum.x = remote_rows;
  sum.x_stride = dim;
  FinishMeansAlong(n, dim, counts, remote_indptr, remote_row, sum, sums);
}

void FinishMeansByPointer(int64_t n, int64_t dim, const std::vector<int64_t>& counts,
                          const std::vector<int64_t>& remote_indptr, const float* const* row_ptrs,
                          const std::vector<int64_t>& remote_row, float* sums) {
  CsrSum<float> sum;
  sum.row_ptrs = row_ptrs;
  FinishMeansAlong(n, dim, counts, remote_indptr, remote_row, sum, sums);
}

}  // namespace gnn
