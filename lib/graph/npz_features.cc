#include "graph/npz_features.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "common/error.h"
#include "common/npy.h"
#include "common/npz.h"

namespace gnn {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

// Entries (row, col, value), any order and repeats, as CSR rows sorted by
// column with repeats added up; a value array only when one is not 1.
SparseRows RowsOfEntries(int64_t rows, int64_t cols, const std::vector<int64_t>& r,
                         const std::vector<int64_t>& c, const std::vector<float>& v) {
  SparseRows s;
  s.cols = cols;
  std::vector<int64_t> start(static_cast<size_t>(rows + 1), 0);
  for (int64_t x : r) ++start[static_cast<size_t>(x + 1)];
  for (int64_t i = 0; i < rows; ++i) start[i + 1] += start[i];
  std::vector<std::pair<int64_t, float>> e(r.size());
  std::vector<int64_t> at(start.begin(), start.end() - 1);
  for (size_t k = 0; k < r.size(); ++k) e[static_cast<size_t>(at[r[k]]++)] = {c[k], v[k]};
  s.indptr.assign(static_cast<size_t>(rows + 1), 0);
  std::vector<float> values;
  for (int64_t i = 0; i < rows; ++i) {
    std::sort(e.begin() + start[i], e.begin() + start[i + 1],
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (int64_t k = start[i]; k < start[i + 1]; ++k) {
      if (k > start[i] && e[k].first == e[k - 1].first) {
        values.back() += e[k].second;
        continue;
      }
      s.indices.push_back(static_cast<int32_t>(e[k].first));
      values.push_back(e[k].second);
    }
    s.indptr[i + 1] = static_cast<int64_t>(s.indices.size());
  }
  if (!std::all_of(values.begin(), values.end(), [](float x) { return x == 1.0f; }))
    s.values = std::move(values);
  return s;
}

}  // namespace

NpzFeatures ReadNpzFeatures(const std::string& path, bool keep_sparse) {
  const std::map<std::string, std::string> members = ReadNpz(path);
  const std::string what = "--node_feat " + path;
  auto array = [&](const std::string& name, NpyHeader* h) -> const char* {
    const auto it = members.find(name);
    if (it == members.end()) throw DataError(what + ": has no member '" + name + ".npy'");
    *h = ParseNpyHeader(it->second.data(), it->second.size(), it->second.size(),
                        what + " member " + name);
    return it->second.data() + h->data_offset;
  };
  NpzFeatures out;
  NpyHeader h;
  const auto format = members.find("format");
  if (format == members.end()) {
    if (members.size() != 1) {
      throw DataError(what + ": holds " + S(static_cast<int64_t>(members.size())) +
                      " arrays; features are one array (np.savez) or a SciPy sparse matrix "
                      "(scipy.sparse.save_npz)");
    }
    const char* data = array(members.begin()->first, &h);
    if (h.shape.size() != 2) {
      throw DataError(what + ": its array has " + S(static_cast<int64_t>(h.shape.size())) +
                      " dimensions; features are [N, F]");
    }
    out.rows = h.shape[0];
    out.cols = h.shape[1];
    out.values = NpyToFloats(h, data);
    return out;
  }
  // SciPy's format.npy: a 0-d bytes array ('|S3'), its 3 bytes last.
  const std::string& fmt_npy = format->second;
  const std::string kind = fmt_npy.size() >= 3 ? fmt_npy.substr(fmt_npy.size() - 3) : "";
  if (fmt_npy.find("'|S3'") == std::string::npos ||
      (kind != "csr" && kind != "csc" && kind != "coo")) {
    throw DataError(what + ": a SciPy sparse matrix of a format other than csr, csc or coo " +
                    "(convert it with m.tocsr() before scipy.sparse.save_npz)");
  }
  std::vector<int64_t> shape = NpyToInts(h, array("shape", &h), what + " member shape");
  if (shape.size() != 2 || shape[0] < 0 || shape[1] < 0) {
    throw DataError(what + ": member shape is not [rows, cols]");
  }
  out.rows = shape[0];
  out.cols = shape[1];
  int64_t cells = 0;
  if (__builtin_mul_overflow(out.rows, out.cols, &cells) || cells > (int64_t{1} << 40)) {
    throw DataError(what + ": " + S(out.rows) + " x " + S(out.cols) + " is too large to densify");
  }
  const std::vector<float> data = NpyToFloats(h, array("data", &h));
  if (keep_sparse && out.cols > std::numeric_limits<int32_t>::max()) {
    throw DataError(what + ": " + S(out.cols) + " columns do not fit sparse rows' int32 ids");
  }
  if (keep_sparse && kind == "csr") {
    // The CSR as it is, checked as every reader of sparse rows checks it.
    const std::vector<int64_t> ptr = NpyToInts(h, array("indptr", &h), what + " member indptr");
    const std::vector<int64_t> idx = NpyToInts(h, array("indices", &h), what + " member indices");
    if (static_cast<int64_t>(ptr.size()) != out.rows + 1 || idx.size() != data.size()) {
      throw DataError(what + ": indptr must have " + S(out.rows + 1) + " entries from 0 to nnz (" +
                      S(static_cast<int64_t>(data.size())) + "), and indices nnz");
    }
    SparseView v;
    v.rows = out.rows;
    v.cols = out.cols;
    v.indptr = ptr.data();
    std::vector<int32_t> narrow(idx.size());
    for (size_t k = 0; k < idx.size(); ++k) {
      narrow[k] = idx[k] < 0 || idx[k] >= out.cols ? -1 : static_cast<int32_t>(idx[k]);
    }
    v.indices = narrow.data();
    v.values = data.data();
    for (size_t k = 0; k < idx.size() && k < narrow.size(); ++k) {
      if (narrow[k] < 0) {
        const int64_t row =
            std::upper_bound(ptr.begin(), ptr.end(), static_cast<int64_t>(k)) - ptr.begin() - 1;
        throw DataError(what + ": entry " + S(static_cast<int64_t>(k)) + " at (" + S(row) + ", " +
                        S(idx[k]) + ") is outside the " + S(out.rows) + " x " + S(out.cols) +
                        " matrix");
      }
    }
    CheckSparse(v, static_cast<int64_t>(idx.size()), static_cast<int64_t>(data.size()), what);
    out.is_sparse = true;
    out.sparse.cols = out.cols;
    out.sparse.indptr = ptr;
    out.sparse.indices = std::move(narrow);
    if (!std::all_of(data.begin(), data.end(), [](float x) { return x == 1.0f; }))
      out.sparse.values = data;
    return out;
  }
  if (keep_sparse) {
    // csc or coo: every entry checked, then sorted into rows.
    std::vector<int64_t> rows, cols;
    if (kind == "coo") {
      rows = NpyToInts(h, array("row", &h), what + " member row");
      cols = NpyToInts(h, array("col", &h), what + " member col");
      if (rows.size() != data.size() || cols.size() != data.size())
        throw DataError(what + ": row, col and data differ in length");
    } else {
      const std::vector<int64_t> ptr = NpyToInts(h, array("indptr", &h), what + " member indptr");
      rows = NpyToInts(h, array("indices", &h), what + " member indices");
      if (static_cast<int64_t>(ptr.size()) != out.cols + 1 || ptr.front() != 0 ||
          ptr.back() != static_cast<int64_t>(data.size()) || rows.size() != data.size()) {
        throw DataError(what + ": indptr must have " + S(out.cols + 1) +
                        " entries from 0 to nnz (" + S(static_cast<int64_t>(data.size())) +
                        "), and indices nnz");
      }
      cols.resize(rows.size());
      for (int64_t j = 0; j < out.cols; ++j) {
        if (ptr[j + 1] < ptr[j]) throw DataError(what + ": indptr decreases at " + S(j));
        for (int64_t k = ptr[j]; k < ptr[j + 1]; ++k) cols[static_cast<size_t>(k)] = j;
      }
    }
    for (size_t k = 0; k < data.size(); ++k) {
      if (rows[k] < 0 || rows[k] >= out.rows || cols[k] < 0 || cols[k] >= out.cols) {
        throw DataError(what + ": entry " + S(static_cast<int64_t>(k)) + " at (" + S(rows[k]) +
                        ", " + S(cols[k]) + ") is outside the " + S(out.rows) + " x " +
                        S(out.cols) + " matrix");
      }
    }
    out.is_sparse = true;
    out.sparse = RowsOfEntries(out.rows, out.cols, rows, cols, data);
    return out;
  }
  out.values.assign(static_cast<size_t>(cells), 0.f);
  auto add = [&](int64_t r, int64_t c, size_t k) {
    if (r < 0 || r >= out.rows || c < 0 || c >= out.cols) {
      throw DataError(what + ": entry " + S(static_cast<int64_t>(k)) + " at (" + S(r) + ", " +
                      S(c) + ") is outside the " + S(out.rows) + " x " + S(out.cols) + " matrix");
    }
    out.values[static_cast<size_t>(r * out.cols + c)] += data[k];
  };
  if (kind == "coo") {
    const std::vector<int64_t> row = NpyToInts(h, array("row", &h), what + " member row");
    const std::vector<int64_t> col = NpyToInts(h, array("col", &h), what + " member col");
    if (row.size() != data.size() || col.size() != data.size())
      throw DataError(what + ": row, col and data differ in length");
    for (size_t k = 0; k < data.size(); ++k) add(row[k], col[k], k);
    return out;
  }
  const std::vector<int64_t> ptr = NpyToInts(h, array("indptr", &h), what + " member indptr");
  const std::vector<int64_t> idx = NpyToInts(h, array("indices", &h), what + " member indices");
  const int64_t major = kind == "csr" ? out.rows : out.cols;
  if (static_cast<int64_t>(ptr.size()) != major + 1 || ptr.front() != 0 ||
      ptr.back() != static_cast<int64_t>(data.size()) || idx.size() != data.size()) {
    throw DataError(what + ": indptr must have " + S(major + 1) + " entries from 0 to nnz (" +
                    S(static_cast<int64_t>(data.size())) + "), and indices nnz");
  }
  for (int64_t i = 0; i < major; ++i) {
    if (ptr[i + 1] < ptr[i]) throw DataError(what + ": indptr decreases at " + S(i));
    for (int64_t k = ptr[i]; k < ptr[i + 1]; ++k) {
      if (kind == "csr") {
        add(i, idx[k], static_cast<size_t>(k));
      } else {
        add(idx[k], i, static_cast<size_t>(k));
      }
    }
  }
  return out;
}

}  // namespace gnn
