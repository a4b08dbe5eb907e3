// Rows of a mostly-zero matrix kept as CSR (bag-of-words, one-hot and
// multi-hot features): row pointers, int32 column ids sorted within a row,
// and float32 values, left out when every value is 1. What the OGB reader,
// the partition files (feature_format "sparse"), a standalone trainer's
// partition and its mini-batches hold instead of dense float rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gnn {

// Borrowed CSR arrays of `rows` rows (a partition file in memory, a
// segment). values == nullptr: every stored value is 1.
struct SparseView {
  int64_t rows = 0, cols = 0;
  const int64_t* indptr = nullptr;   // [rows + 1], indptr[0] == 0
  const int32_t* indices = nullptr;  // [indptr[rows]]
  const float* values = nullptr;     // [indptr[rows]] or nullptr
  int64_t nnz() const { return rows > 0 ? indptr[rows] : 0; }
};

struct SparseRows {
  int64_t cols = 0;
  std::vector<int64_t> indptr{0};  // [rows + 1]
  std::vector<int32_t> indices;    // [nnz], sorted and distinct within a row
  std::vector<float> values;       // [nnz]; empty: every value is 1 (binary)

  int64_t rows() const { return static_cast<int64_t>(indptr.size()) - 1; }
  int64_t nnz() const { return indptr.back(); }
  bool binary() const { return values.empty(); }
  // Stored entries over rows x cols (0 for an empty matrix).
  double density() const;
  SparseView view() const;
};

// The checks every reader of sparse rows makes before any other work:
// indptr starts at 0, never decreases and ends at the number of column
// ids; column ids in [0, cols), strictly increasing within a row; values
// (when present) one per id and finite. Throws DataError "<what>: ..."
// naming the first bad row.
void CheckSparse(const SparseView& v, int64_t indices_size, int64_t values_size,
                 const std::string& what);

// The dense matrix [rows, cols] (row-major) into `out`, which must hold
// rows x cols floats; zeros where nothing is stored.
void Densify(const SparseView& v, float* out, int threads = 0);

// Adds row `row` of `v` into the dense row `out` (v.cols floats).
inline void AddSparseRow(const SparseView& v, int64_t row, float* out) {
  for (int64_t k = v.indptr[row]; k < v.indptr[row + 1]; ++k)
    out[v.indices[k]] += v.values ? v.values[k] : 1.0f;
}

// Rows of a dense row-major [rows, cols] matrix kept sparse: zeros are
// dropped, and values too when every stored one is 1.
SparseRows SparsifyDense(const float* dense, int64_t rows, int64_t cols, int threads = 0);

// Count of non-zero entries of a dense [rows, cols] matrix.
int64_t CountNonZero(const float* dense, int64_t rows, int64_t cols, int threads = 0);

// Appends every row of `rows` to `out` (same cols; values kept when either
// has them, ones filled in for a binary side).
void AppendSparseRows(const SparseRows& rows, SparseRows* out);

// Appends rows `ids[i] - base` of `v` to `out` (its cols set to v.cols),
// in order; `out` keeps values when v has them.
void GatherSparseRows(const SparseView& v, const int64_t* ids, int64_t n, int64_t base,
                      SparseRows* out, int threads = 0);

// At most this fraction of stored entries, feature_format auto keeps
// features sparse: the partition files then take at most 2 x density of
// the dense bytes (id and value per entry; half that when every value is
// 1), and standalone training measured 2.0-2.5x the dense path's speed at
// 8.6 % (1.3-1.5x at 15 %; docs/PERFORMANCE.md, "Sparse features").
constexpr double kSparseFeatureDensity = 0.10;

}  // namespace gnn
