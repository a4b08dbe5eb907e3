// Sums of scattered rows along a CSR: the one loop behind every mean or
// weighted sum of neighbour rows on the CPU (the first layer's input means
// in lib/sampling, the aggregations and their backward passes in
// lib/train, the owners' sums of the rows they hold).
//
// Each destination row's columns are summed in chunks of up to 32 floats
// (16 doubles) held in registers over all of the row's edges, instead of
// adding every edge into the output row in memory: 2.5-4x a plain loop
// for rows of 8-100 floats. Each column is still summed over the edges in
// edge order and then scaled, so the result is bit for bit the plain
// loop's. An AVX2 copy is chosen at run time where the CPU has AVX2
// (without FMA: a product and a sum stay two roundings, as in the plain
// loop).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gnn {

// out[r, :] = scale_r * sum over e in [ptr[r], ptr[r+1]) of w_e * x[row_e, :]
// where
//   row_e   = (row_of ? row_of[idx[e]] : idx[e]) - row_start
//             (or, with row_ptrs, the row at row_ptrs[idx[e]]: rows that
//             live in several arrays, summed where they are; unweighted
//             sums only),
//   w_e     = col_weight[idx[e]] when given, edge_weight[e] when given,
//             else 1 (at most one of the two),
//   scale_r = 1 / (row length) when `mean` (an empty row stays 0),
//             else row_scale[r] when given, else 1.
// x rows are x_stride apart; row r's sum goes to out row out_at[r] when
// given, else r, and out rows are out_stride apart (d when 0). With
// `accumulate` the sum starts from what the out row holds (added to it in
// edge order, then scaled), as `out += rows; out *= scale` would.
template <typename T>
struct CsrSum {
  const int64_t* ptr = nullptr;
  const int64_t* idx = nullptr;
  const T* x = nullptr;
  int64_t x_stride = 0;
  int64_t d = 0;
  const int64_t* row_of = nullptr;
  const T* const* row_ptrs = nullptr;
  int64_t row_start = 0;
  const T* col_weight = nullptr;
  const T* edge_weight = nullptr;
  bool mean = false;
  const T* row_scale = nullptr;
  T* out = nullptr;
  int64_t out_stride = 0;
  const size_t* out_at = nullptr;
  bool accumulate = false;
};

// The plain sum of x's rows (x_stride apart, d columns) along (ptr, idx)
// into dense out rows; callers set the optional fields on the result.
template <typename T>
CsrSum<T> PlainCsrSum(const int64_t* ptr, const int64_t* idx, const T* x, int64_t x_stride,
                      int64_t d, T* out) {
  CsrSum<T> s;
  s.ptr = ptr;
  s.idx = idx;
  s.x = x;
  s.x_stride = x_stride;
  s.d = d;
  s.out = out;
  return s;
}

// Rows [r0, r1) of `s`. Prefetches the rows of the edges ahead, up to the
// last edge of row r1 - 1. Thread-safe for disjoint row ranges.
void SumCsrRows(const CsrSum<float>& s, int64_t r0, int64_t r1);
void SumCsrRows(const CsrSum<double>& s, int64_t r0, int64_t r1);

}  // namespace gnn
