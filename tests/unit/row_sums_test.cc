// SumCsrRows, the one CPU loop behind the input means, the aggregations
// and the owners' sums: bit for bit the plain per-edge loop it replaced
// (each column summed in edge order, then scaled), for every width from 1
// to past two register chunks, every weighting, mapped and offset rows,
// rows by pointer, sums added to the output, empty rows, scattered output
// rows, and float and double.
#include "common/row_sums.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <vector>

namespace gnn {
namespace {

// The loop SumCsrRows replaced, written plainly.
template <typename T>
void PlainSum(const CsrSum<T>& s, int64_t rows) {
  const int64_t out_stride = s.out_stride > 0 ? s.out_stride : s.d;
  for (int64_t r = 0; r < rows; ++r) {
    T* o = s.out + (s.out_at ? static_cast<int64_t>(s.out_at[r]) : r) * out_stride;
    if (!s.accumulate) {
      for (int64_t j = 0; j < s.d; ++j) o[j] = T(0);
    }
    for (int64_t e = s.ptr[r]; e < s.ptr[r + 1]; ++e) {
      const int64_t c = s.idx[e];
      const T* x = s.row_ptrs ? s.row_ptrs[c]
                              : s.x + ((s.row_of ? s.row_of[c] : c) - s.row_start) * s.x_stride;
      if (s.col_weight) {
        for (int64_t j = 0; j < s.d; ++j) o[j] += s.col_weight[c] * x[j];
      } else if (s.edge_weight) {
        for (int64_t j = 0; j < s.d; ++j) o[j] += s.edge_weight[e] * x[j];
      } else {
        for (int64_t j = 0; j < s.d; ++j) o[j] += x[j];
      }
    }
    if (s.mean && s.ptr[r + 1] > s.ptr[r]) {
      const T scale = T(1) / static_cast<T>(s.ptr[r + 1] - s.ptr[r]);
      for (int64_t j = 0; j < s.d; ++j) o[j] *= scale;
    } else if (!s.mean && s.row_scale) {
      for (int64_t j = 0; j < s.d; ++j) o[j] *= s.row_scale[r];
    }
  }
}

template <typename T>
void CheckEveryShape() {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> value(-2.0, 2.0);
  const int64_t rows = 37, cols = 50, row_start = 1000;
  std::vector<int64_t> ptr{0}, idx;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t len = r % 5 == 0 ? 0 : static_cast<int64_t>(rng() % 30);  // empty rows too
    for (int64_t k = 0; k < len; ++k) idx.push_back(static_cast<int64_t>(rng() % cols));
    ptr.push_back(static_cast<int64_t>(idx.size()));
  }
  std::vector<int64_t> row_of(cols);
  for (int64_t c = 0; c < cols; ++c) row_of[c] = row_start + (c * 7) % cols;
  std::vector<T> col_weight(cols), edge_weight(idx.size()), row_scale(rows);
  for (T& w : col_weight) w = static_cast<T>(value(rng));
  for (T& w : edge_weight) w = static_cast<T>(value(rng));
  for (T& w : row_scale) w = static_cast<T>(value(rng));
  std::vector<size_t> out_at(rows);
  for (int64_t r = 0; r < rows; ++r) out_at[r] = static_cast<size_t>((r * 11) % rows);

  for (int64_t d : {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 64, 71}) {
    const int64_t stride = d + 3;  // rows of x are wider than the columns summed
    std::vector<T> x(cols * stride);
    for (T& v : x) v = static_cast<T>(value(rng));
    // Rows in two arrays, reached by pointers (the remote sums' rows where
    // they lie: the partition, the cache, the pulled buffer).
    std::vector<T> other(cols * stride);
    for (T& v : other) v = static_cast<T>(value(rng));
    std::vector<const T*> row_ptrs(cols);
    for (int64_t c = 0; c < cols; ++c) {
      row_ptrs[c] = (c % 3 == 0 ? other.data() : x.data()) + ((c * 7) % cols) * stride;
    }
    for (int weighting = 0; weighting < 4; ++weighting) {
      for (int variant = 0; variant < 8; ++variant) {
        // Pointers to rows: unweighted sums only.
        const bool by_pointer = variant == 4 || variant == 7;
        if (by_pointer && (weighting == 1 || weighting == 2)) continue;
        CsrSum<T> s;
        s.ptr = ptr.data();
        s.idx = idx.data();
        s.x = x.data();
        s.x_stride = stride;
        s.d = d;
        if (weighting == 1) s.col_weight = col_weight.data();
        if (weighting == 2) s.edge_weight = edge_weight.data();
        if (weighting == 3) s.row_scale = row_scale.data();
        s.mean = variant == 1;
        if (variant == 2) {
          s.row_of = row_of.data();
          s.row_start = row_start;
        }
        if (variant == 3) {
          s.out_at = out_at.data();
          s.out_stride = d + 1;
        }
        if (by_pointer) s.row_ptrs = row_ptrs.data();
        // Added to what the out rows hold (as the remote sums are: by
        // pointer, then scaled).
        s.accumulate = variant >= 5;
        if (variant == 6) s.mean = true;
        const int64_t out_stride = s.out_stride > 0 ? s.out_stride : d;
        std::vector<T> want(rows * out_stride, T(-7)), got(rows * out_stride, T(-7));
        if (s.accumulate) {
          for (size_t k = 0; k < want.size(); ++k) want[k] = got[k] = static_cast<T>(value(rng));
        }
        s.out = want.data();
        PlainSum(s, rows);
        s.out = got.data();
        SumCsrRows(s, 0, 20);  // two ranges, as threads split them
        SumCsrRows(s, 20, rows);
        INFO("d " << d << " weighting " << weighting << " variant " << variant);
        REQUIRE(std::memcmp(want.data(), got.data(), want.size() * sizeof(T)) == 0);
      }
    }
  }
}

TEST_CASE("SumCsrRows equals the plain per-edge loop bit for bit (float)", "[row_sums]") {
  CheckEveryShape<float>();
}

TEST_CASE("SumCsrRows equals the plain per-edge loop bit for bit (double)", "[row_sums]") {
  CheckEveryShape<double>();
}

TEST_CASE("SumCsrRows leaves out rows outside its range and sums nothing for d = 0", "[row_sums]") {
  const std::vector<int64_t> ptr{0, 1, 2}, idx{0, 1};
  const std::vector<float> x{1, 2, 3, 4};
  std::vector<float> out(4, -1.0f);
  CsrSum<float> s;
  s.ptr = ptr.data();
  s.idx = idx.data();
  s.x = x.data();
  s.x_stride = 2;
  s.d = 2;
  s.out = out.data();
  SumCsrRows(s, 1, 2);
  CHECK(out == std::vector<float>{-1, -1, 3, 4});
  s.d = 0;
  SumCsrRows(s, 0, 2);
  CHECK(out == std::vector<float>{-1, -1, 3, 4});
}

}  // namespace
}  // namespace gnn
