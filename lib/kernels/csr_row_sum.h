// The per-row arithmetic of the CSR aggregations (train/aggregate: the
// mean, GCN's weighted sum, and their backward passes over the transpose),
// written once for the CPU and for CUDA: a plain C++ function when a C++
// compiler reads this header, a __host__ __device__ one under nvcc. The
// CUDA kernels (csr_row_sum_cuda.cu) run it with one thread block per
// destination row and the row's columns spread over the block's threads;
// CPU unit tests run the same function over every row and compare it with
// the CPU op.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GNN_HD __host__ __device__
#else
#define GNN_HD
#endif

namespace gnn::kernels {

// out[r, k] = scale_r * sum over e in [ptr[r], ptr[r+1]) of w_e * x[idx[e], k]
// where w_e = col_weight[idx[e]] when given, else 1, and scale_r =
// 1/(row length) when `mean` (the row is 0 when empty), else row_scale[r]
// when given, else 1. x rows are x_stride apart; out is dense [rows, d].
template <typename T>
struct CsrRowSumArgs {
  const int64_t* ptr = nullptr;
  const int64_t* idx = nullptr;
  const T* x = nullptr;
  int64_t x_stride = 0;
  int64_t d = 0;
  bool mean = false;
  const T* col_weight = nullptr;  // optional, per source row
  const T* row_scale = nullptr;   // optional, per destination row
  T* out = nullptr;
};

// Row r's columns first, first + step, ... (< d): each column summed over
// the row's edges in edge order, then scaled, as the CPU op does (the same
// floating-point operations in the same order).
template <typename T>
GNN_HD inline void CsrRowSumRow(const CsrRowSumArgs<T>& a, int64_t r, int64_t first, int64_t step) {
  const int64_t e0 = a.ptr[r], e1 = a.ptr[r + 1];
  const bool by_mean = a.mean && e1 > e0;
  const bool scaled = by_mean || a.row_scale != nullptr;
  const T scale = by_mean                  ? T(1) / static_cast<T>(e1 - e0)
                  : a.row_scale != nullptr ? a.row_scale[r]
                                           : T(1);
  for (int64_t k = first; k < a.d; k += step) {
    T acc = T(0);
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t c = a.idx[e];
      const T v = a.x[c * a.x_stride + k];
      if (a.col_weight != nullptr) {
        acc += a.col_weight[c] * v;
      } else {
        acc += v;
      }
    }
    a.out[r * a.d + k] = scaled ? acc * scale : acc;
  }
}

}  // namespace gnn::kernels
