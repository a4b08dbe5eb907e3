#include "sampling/owner_aggregate.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/memory.h"
#include "common/parallel.h"

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
  std::vector<int64_t> indptr, indices;
  SampleNeighbors(csc, dsts, n, draw.fanout, draw.replace, draw.rng_seed, draw.threads, &indptr,
                  &indices);
  const int64_t* ptr = indptr.data();
  const int64_t* idx = indices.data();
  const int64_t lo = csc.node_start, hi = csc.node_start + csc.num_nodes;
  auto held = [&](int64_t v) { return v >= lo && v < hi; };
  // Counts and remote offsets first (a cheap pass), so the rows can be
  // summed in parallel into their places.
  counts->resize(n);
  remote_indptr->assign(n + 1, 0);
  int64_t* rp = remote_indptr->data();
  for (int64_t i = 0; i < n; ++i) {
    (*counts)[i] = ptr[i + 1] - ptr[i];
    rp[i + 1] =
        rp[i] + std::count_if(idx + ptr[i], idx + ptr[i + 1], [&](int64_t v) { return !held(v); });
  }
  remote_ids->resize(rp[n]);
  int64_t* remote = remote_ids->data();
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  // The neighbours' rows are scattered over the partition's features:
  // each is prefetched kAhead edges ahead of its sum (an unprefetched loop
  // spent 70 % of its time waiting for rows).
  // So is each destination's own row: kOwnAhead destinations ahead.
  constexpr int64_t kAhead = 8, kOwnAhead = 2;
  ParallelFor(n, draw.threads, [&](int64_t b, int64_t e) {
    const int64_t edge_end = ptr[e];
    for (int64_t k = ptr[b]; k < std::min(ptr[b] + kAhead, edge_end); ++k) {
      if (held(idx[k])) PrefetchBytes(features + (idx[k] - lo) * dim, row_bytes);
    }
    for (int64_t i = b; i < e; ++i) {
      const size_t o = at ? at[i] : static_cast<size_t>(i);
      if (i + kOwnAhead < std::min(e, own_rows)) {
        PrefetchBytes(features + (dsts[i + kOwnAhead] - lo) * dim, row_bytes);
      }
      if (i < own_rows) std::memcpy(own_out + o * dim, features + (dsts[i] - lo) * dim, row_bytes);
      float* sum = sum_out + o * dim;
      std::fill(sum, sum + dim, 0.0f);
      int64_t r = rp[i];
      for (int64_t k = ptr[i]; k < ptr[i + 1]; ++k) {
        if (k + kAhead < edge_end && held(idx[k + kAhead])) {
          PrefetchBytes(features + (idx[k + kAhead] - lo) * dim, row_bytes);
        }
        if (!held(idx[k])) {
          remote[r++] = idx[k];
          continue;
        }
        const float* row = features + (idx[k] - lo) * dim;
        for (int64_t j = 0; j < dim; ++j) sum[j] += row[j];
      }
      // A set to be summed: in increasing order it varint-codes small.
      std::sort(remote + rp[i], remote + r);
    }
  });
}

void SumRowGroups(const float* features, int64_t dim, int64_t node_start, const int64_t* ids,
                  const int64_t* group_ptr, int64_t groups, float* out) {
  for (int64_t g = 0; g < groups; ++g) {
    float* sum = out + g * dim;
    std::fill(sum, sum + dim, 0.0f);
    for (int64_t k = group_ptr[g]; k < group_ptr[g + 1]; ++k) {
      // Rows are scattered in memory: fetch a few ahead of the sum.
      if (k + 8 < group_ptr[groups]) {
        PrefetchBytes(features + (ids[k + 8] - node_start) * dim, dim * sizeof(float));
      }
      const float* row = features + (ids[k] - node_start) * dim;
      for (int64_t j = 0; j < dim; ++j) sum[j] += row[j];
    }
  }
}

void FinishMeans(int64_t n, int64_t dim, const std::vector<int64_t>& counts,
                 const std::vector<int64_t>& remote_indptr, const float* remote_rows,
                 const std::vector<int64_t>& remote_row, float* sums) {
  if (static_cast<int64_t>(counts.size()) != n ||
      static_cast<int64_t>(remote_indptr.size()) != n + 1 ||
      static_cast<int64_t>(remote_row.size()) != remote_indptr.back()) {
    throw DataError("FinishMeans: " + std::to_string(counts.size()) + " counts and " +
                    std::to_string(remote_indptr.size()) + " offsets and " +
                    std::to_string(remote_row.size()) + " remote rows for " + std::to_string(n) +
                    " destinations");
  }
  for (int64_t i = 0; i < n; ++i) {
    float* sum = sums + i * dim;
    for (int64_t k = remote_indptr[i]; k < remote_indptr[i + 1]; ++k) {
      const float* row = remote_rows + remote_row[k] * dim;
      for (int64_t j = 0; j < dim; ++j) sum[j] += row[j];
    }
    if (counts[i] > 0) {
      const float s = 1.0f / static_cast<float>(counts[i]);
      for (int64_t j = 0; j < dim; ++j) sum[j] *= s;
    }
  }
}

}  // namespace gnn
