#include "common/sparse_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "common/error.h"
#include "common/parallel.h"

namespace gnn {

double SparseRows::density() const {
  const double cells = static_cast<double>(rows()) * static_cast<double>(cols);
  return cells > 0 ? static_cast<double>(nnz()) / cells : 0.0;
}

SparseView SparseRows::view() const {
  SparseView v;
  v.rows = rows();
  v.cols = cols;
  v.indptr = indptr.data();
  v.indices = indices.data();
  v.values = values.empty() ? nullptr : values.data();
  return v;
}

void CheckSparse(const SparseView& v, int64_t indices_size, int64_t values_size,
                 const std::string& what) {
  if (v.rows < 0 || v.indptr == nullptr) throw DataError(what + ": no row pointers");
  if (v.indptr[0] != 0) {
    throw DataError(what + ": row pointers start at " + std::to_string(v.indptr[0]) + ", not 0");
  }
  for (int64_t r = 0; r < v.rows; ++r) {
    if (v.indptr[r + 1] < v.indptr[r]) {
      throw DataError(what + ": row pointers decrease at row " + std::to_string(r) + " (" +
                      std::to_string(v.indptr[r]) + " then " + std::to_string(v.indptr[r + 1]) +
                      ")");
    }
  }
  if (v.indptr[v.rows] != indices_size) {
    throw DataError(what + ": row pointers end at " + std::to_string(v.indptr[v.rows]) +
                    ", but there are " + std::to_string(indices_size) + " column ids");
  }
  if (v.values != nullptr && values_size != indices_size) {
    throw DataError(what + ": " + std::to_string(values_size) + " values for " +
                    std::to_string(indices_size) + " column ids");
  }
  // Rows are independent: checked in parallel, the lowest bad row named.
  std::mutex mu;
  int64_t bad_row = v.rows;
  std::string message;
  ParallelFor(v.rows, 0, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      for (int64_t k = v.indptr[r]; k < v.indptr[r + 1]; ++k) {
        const int64_t c = v.indices[k];
        std::string bad;
        if (c < 0 || c >= v.cols) {
          bad = "column id " + std::to_string(c) + " is outside 0.." + std::to_string(v.cols - 1);
        } else if (k > v.indptr[r] && c <= v.indices[k - 1]) {
          bad = c == v.indices[k - 1]
                    ? "column id " + std::to_string(c) + " appears twice"
                    : "column ids are not sorted (" + std::to_string(v.indices[k - 1]) + " then " +
                          std::to_string(c) + ")";
        } else if (v.values != nullptr && !std::isfinite(v.values[k])) {
          bad = "value " + std::to_string(v.values[k]) + " at column " + std::to_string(c) +
                " is not finite";
        }
        if (!bad.empty()) {
          std::lock_guard<std::mutex> lock(mu);
          if (r < bad_row) bad_row = r, message = what + ": row " + std::to_string(r) + ": " + bad;
          return;
        }
      }
    }
  });
  if (!message.empty()) throw DataError(message);
}

void Densify(const SparseView& v, float* out, int threads) {
  ParallelFor(v.rows, threads, [&](int64_t b, int64_t e) {
    std::memset(out + b * v.cols, 0, static_cast<size_t>((e - b) * v.cols) * sizeof(float));
    for (int64_t r = b; r < e; ++r) {
      float* row = out + r * v.cols;
      for (int64_t k = v.indptr[r]; k < v.indptr[r + 1]; ++k)
        row[v.indices[k]] = v.values ? v.values[k] : 1.0f;
    }
  });
}

int64_t CountNonZero(const float* dense, int64_t rows, int64_t cols, int threads) {
  std::atomic<int64_t> total{0};
  ParallelFor(rows, threads, [&](int64_t b, int64_t e) {
    int64_t n = 0;
    for (int64_t i = b * cols; i < e * cols; ++i) n += dense[i] != 0.0f;
    total += n;
  });
  return total.load();
}

SparseRows SparsifyDense(const float* dense, int64_t rows, int64_t cols, int threads) {
  SparseRows s;
  s.cols = cols;
  s.indptr.assign(static_cast<size_t>(rows + 1), 0);
  bool binary = true;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t n = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const float x = dense[r * cols + c];
      n += x != 0.0f;
      binary &= x == 0.0f || x == 1.0f;
    }
    s.indptr[r + 1] = s.indptr[r] + n;
  }
  s.indices.resize(static_cast<size_t>(s.indptr[rows]));
  if (!binary) s.values.resize(s.indices.size());
  ParallelFor(rows, threads, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t k = s.indptr[r];
      for (int64_t c = 0; c < cols; ++c) {
        const float x = dense[r * cols + c];
        if (x == 0.0f) continue;
        s.indices[k] = static_cast<int32_t>(c);
        if (!binary) s.values[k] = x;
        ++k;
      }
    }
  });
  return s;
}

void GatherSparseRows(const SparseView& v, const int64_t* ids, int64_t n, int64_t base,
                      SparseRows* out, int threads) {
  out->cols = v.cols;
  const size_t first = out->indptr.size() - 1;
  out->indptr.resize(first + 1 + static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = ids[i] - base;
    out->indptr[first + 1 + i] = out->indptr[first + i] + v.indptr[r + 1] - v.indptr[r];
  }
  const int64_t end = out->indptr.back();
  out->indices.resize(static_cast<size_t>(end));
  if (v.values) out->values.resize(static_cast<size_t>(end));
  ParallelFor(n, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t r = ids[i] - base, from = v.indptr[r], len = v.indptr[r + 1] - from;
      const int64_t to = out->indptr[first + i];
      std::memcpy(out->indices.data() + to, v.indices + from, static_cast<size_t>(len) * 4);
      if (v.values)
        std::memcpy(out->values.data() + to, v.values + from, static_cast<size_t>(len) * 4);
    }
  });
}

void AppendSparseRows(const SparseRows& rows, SparseRows* out) {
  const int64_t base = out->nnz();
  const bool values = !out->values.empty() || !rows.values.empty();
  if (values && out->values.empty()) out->values.assign(static_cast<size_t>(base), 1.0f);
  for (int64_t r = 0; r < rows.rows(); ++r) out->indptr.push_back(base + rows.indptr[r + 1]);
  out->indices.insert(out->indices.end(), rows.indices.begin(), rows.indices.end());
  if (!values) return;
  if (rows.values.empty()) {
    out->values.resize(out->values.size() + rows.indices.size(), 1.0f);
  } else {
    out->values.insert(out->values.end(), rows.values.begin(), rows.values.end());
  }
}

}  // namespace gnn
