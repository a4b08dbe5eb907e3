#include "common/row_sums.h"

#include <algorithm>

#include "common/memory.h"

namespace gnn {
namespace {

enum class Weight { kNone, kColumn, kEdge };
// Where edge e's row is: x row idx[e], x row row_of[idx[e]], or row_ptrs[idx[e]].
enum class Rows { kDirect, kMapped, kPointers };

// Rows are scattered over a matrix far larger than the caches: the first
// pass over a row's edges asks for the rows kAhead edges ahead, so several
// misses are in flight; later chunks of the same row find them cached.
constexpr int64_t kAhead = 8;

template <typename T, Weight kW, Rows kR>
struct Edges {
  const CsrSum<T>& s;
  int64_t edge_end;
  size_t row_bytes;

  // Always inlined: a prefetch has no effect GCC can see, so a call to a
  // separate PrefetchAhead was judged pure and dropped.
  __attribute__((always_inline)) const T* Row(int64_t e) const {
    const int64_t c = s.idx[e];
    if constexpr (kR == Rows::kPointers) return s.row_ptrs[c];
    return s.x + ((kR == Rows::kMapped ? s.row_of[c] : c) - s.row_start) * s.x_stride;
  }
  __attribute__((always_inline)) T WeightOf(int64_t e) const {
    if constexpr (kW == Weight::kColumn) return s.col_weight[s.idx[e]];
    if constexpr (kW == Weight::kEdge) return s.edge_weight[e];
    return T(1);
  }
  __attribute__((always_inline)) void PrefetchAhead(int64_t e) const {
    if (e + kAhead < edge_end) PrefetchBytes(Row(e + kAhead), row_bytes);
  }
};

// 32 bytes of T, loaded and stored unaligned. Explicit vectors keep the
// accumulators in registers: written as arrays, -O3 interchanged the loops
// and summed each column in memory (4x slower than the plain loop).
template <typename T>
using Vec __attribute__((vector_size(32), aligned(sizeof(T)))) = T;

// Columns [j0, j0 + V * kLanes) of one output row, summed in registers
// over the row's edges. Always inlined, so each target's copy of the
// caller gets its own code.
template <int V, typename T, Weight kW, Rows kR>
__attribute__((always_inline)) inline void SumChunk(const Edges<T, kW, kR>& ed, int64_t e0,
                                                    int64_t e1, int64_t j0, bool prefetch,
                                                    bool scaled, T scale, T* o) {
  using V8 = Vec<T>;
  constexpr int kLanes = static_cast<int>(sizeof(V8) / sizeof(T));
  V8 acc[V];
  for (int v = 0; v < V; ++v) {
    acc[v] = ed.s.accumulate ? *reinterpret_cast<const V8*>(o + j0 + v * kLanes) : V8{};
  }
  for (int64_t e = e0; e < e1; ++e) {
    if (prefetch) ed.PrefetchAhead(e);
    const T* r = ed.Row(e) + j0;
    if constexpr (kW == Weight::kNone) {
      for (int v = 0; v < V; ++v) acc[v] += *reinterpret_cast<const V8*>(r + v * kLanes);
    } else {
      const T w = ed.WeightOf(e);
      for (int v = 0; v < V; ++v) acc[v] += w * *reinterpret_cast<const V8*>(r + v * kLanes);
    }
  }
  for (int v = 0; v < V; ++v) {
    *reinterpret_cast<V8*>(o + j0 + v * kLanes) = scaled ? acc[v] * scale : acc[v];
  }
}

// The last d % 8 floats (d % 4 doubles), one column at a time.
template <typename T, Weight kW, Rows kR>
__attribute__((always_inline)) inline void SumTail(const Edges<T, kW, kR>& ed, int64_t e0,
                                                   int64_t e1, int64_t j0, int64_t d, bool prefetch,
                                                   bool scaled, T scale, T* o) {
  for (int64_t j = j0; j < d; ++j) {
    T acc = ed.s.accumulate ? o[j] : T(0);
    for (int64_t e = e0; e < e1; ++e) {
      if (prefetch && j == j0) ed.PrefetchAhead(e);
      if constexpr (kW == Weight::kNone) {
        acc += ed.Row(e)[j];
      } else {
        acc += ed.WeightOf(e) * ed.Row(e)[j];
      }
    }
    o[j] = scaled ? acc * scale : acc;
  }
}

template <typename T, Weight kW, Rows kR>
__attribute__((always_inline)) inline void SumRowsAs(const CsrSum<T>& s, int64_t r0, int64_t r1) {
  // Columns in chunks of 4, 2 and 1 vectors of 32 bytes (32, 16 and 8
  // floats): 8 registers of 16 bytes at most, 4 of 32.
  constexpr int64_t kLanes = static_cast<int64_t>(32 / sizeof(T));
  const Edges<T, kW, kR> ed{s, s.ptr[r1], static_cast<size_t>(s.d) * sizeof(T)};
  const int64_t d = s.d, out_stride = s.out_stride > 0 ? s.out_stride : d;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t e0 = s.ptr[r], e1 = s.ptr[r + 1];
    bool scaled = false;
    T scale = T(1);
    if (s.mean) {
      if (e1 > e0) {
        scaled = true;
        scale = T(1) / static_cast<T>(e1 - e0);
      }
    } else if (s.row_scale != nullptr) {
      scaled = true;
      scale = s.row_scale[r];
    }
    T* o = s.out + (s.out_at != nullptr ? static_cast<int64_t>(s.out_at[r]) : r) * out_stride;
    int64_t j = 0;
    for (; j + 4 * kLanes <= d; j += 4 * kLanes)
      SumChunk<4>(ed, e0, e1, j, j == 0, scaled, scale, o);
    if (j + 2 * kLanes <= d) {
      SumChunk<2>(ed, e0, e1, j, j == 0, scaled, scale, o);
      j += 2 * kLanes;
    }
    if (j + kLanes <= d) {
      SumChunk<1>(ed, e0, e1, j, j == 0, scaled, scale, o);
      j += kLanes;
    }
    SumTail(ed, e0, e1, j, d, j == 0, scaled, scale, o);
  }
}

template <typename T>
__attribute__((always_inline)) inline void SumRows(const CsrSum<T>& s, int64_t r0, int64_t r1) {
  if (r1 <= r0 || s.d <= 0) return;
  if (s.row_ptrs != nullptr) {
    // Rows in several arrays: unweighted only (the owners' remote sums).
    SumRowsAs<T, Weight::kNone, Rows::kPointers>(s, r0, r1);
    return;
  }
  const bool mapped = s.row_of != nullptr;
  if (s.col_weight != nullptr) {
    mapped ? SumRowsAs<T, Weight::kColumn, Rows::kMapped>(s, r0, r1)
           : SumRowsAs<T, Weight::kColumn, Rows::kDirect>(s, r0, r1);
  } else if (s.edge_weight != nullptr) {
    mapped ? SumRowsAs<T, Weight::kEdge, Rows::kMapped>(s, r0, r1)
           : SumRowsAs<T, Weight::kEdge, Rows::kDirect>(s, r0, r1);
  } else {
    mapped ? SumRowsAs<T, Weight::kNone, Rows::kMapped>(s, r0, r1)
           : SumRowsAs<T, Weight::kNone, Rows::kDirect>(s, r0, r1);
  }
}

}  // namespace

// One copy per target, picked once at load time by the CPU's features.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GNN_ROW_SUM_TARGETS __attribute__((target_clones("avx2", "default")))
#else
#define GNN_ROW_SUM_TARGETS
#endif

GNN_ROW_SUM_TARGETS void SumCsrRows(const CsrSum<float>& s, int64_t r0, int64_t r1) {
  SumRows(s, r0, r1);
}

GNN_ROW_SUM_TARGETS void SumCsrRows(const CsrSum<double>& s, int64_t r0, int64_t r1) {
  SumRows(s, r0, r1);
}

}  // namespace gnn
