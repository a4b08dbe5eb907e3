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

// A .npz's members, read as .npy arrays; every error names the file.
class Members {
 public:
  explicit Members(const std::string& path) : all_(ReadNpz(path)), what_("--node_feat " + path) {}
  const std::string& what() const { return what_; }
  size_t size() const { return all_.size(); }
  const std::string* Raw(const std::string& name) const {
    const auto it = all_.find(name);
    return it == all_.end() ? nullptr : &it->second;
  }
  const std::string& First() const { return all_.begin()->first; }
  // Member `name` as float32 values (any float dtype), and its header.
  std::vector<float> Floats(const std::string& name, NpyHeader* h) const {
    return NpyToFloats(*h, Array(name, h));
  }
  std::vector<float> Floats(const std::string& name) const {
    NpyHeader h;
    return Floats(name, &h);
  }
  std::vector<int64_t> Ints(const std::string& name) const {
    NpyHeader h;
    const char* data = Array(name, &h);
    return NpyToInts(h, data, what_ + " member " + name);
  }

 private:
  const char* Array(const std::string& name, NpyHeader* h) const {
    const std::string* bytes = Raw(name);
    if (!bytes) throw DataError(what_ + ": has no member '" + name + ".npy'");
    *h = ParseNpyHeader(bytes->data(), bytes->size(), bytes->size(), what_ + " member " + name);
    return bytes->data() + h->data_offset;
  }

  std::map<std::string, std::string> all_;
  std::string what_;
};

[[noreturn]] void Outside(const Members& m, size_t k, int64_t r, int64_t c, int64_t rows,
                          int64_t cols) {
  throw DataError(m.what() + ": entry " + S(static_cast<int64_t>(k)) + " at (" + S(r) + ", " +
                  S(c) + ") is outside the " + S(rows) + " x " + S(cols) + " matrix");
}

// The (row, column) of each of the `nnz` stored entries of a SciPy matrix
// of `kind` (csr, csc, coo) and shape [rows, cols], in stored order, every
// one checked to lie inside it.
void EntriesOf(const Members& m, const std::string& kind, int64_t rows, int64_t cols, size_t nnz,
               std::vector<int64_t>* r, std::vector<int64_t>* c) {
  if (kind == "coo") {
    *r = m.Ints("row");
    *c = m.Ints("col");
    if (r->size() != nnz || c->size() != nnz)
      throw DataError(m.what() + ": row, col and data differ in length");
  } else {
    // csr: offsets over rows, indices are columns; csc the other way.
    const bool csr = kind == "csr";
    const std::vector<int64_t> ptr = m.Ints("indptr");
    std::vector<int64_t> idx = m.Ints("indices");
    const int64_t major = csr ? rows : cols;
    if (static_cast<int64_t>(ptr.size()) != major + 1 || ptr.front() != 0 ||
        ptr.back() != static_cast<int64_t>(nnz) || idx.size() != nnz) {
      throw DataError(m.what() + ": indptr must have " + S(major + 1) + " entries from 0 to nnz (" +
                      S(static_cast<int64_t>(nnz)) + "), and indices nnz");
    }
    // Offsets from 0 to nnz that never decrease: every run inside the entries.
    for (int64_t i = 0; i < major; ++i) {
      if (ptr[i + 1] < ptr[i]) throw DataError(m.what() + ": indptr decreases at " + S(i));
    }
    std::vector<int64_t> of_major(nnz);
    for (int64_t i = 0; i < major; ++i) {
      for (int64_t k = ptr[i]; k < ptr[i + 1]; ++k) of_major[static_cast<size_t>(k)] = i;
    }
    *r = csr ? std::move(of_major) : std::move(idx);
    *c = csr ? std::move(idx) : std::move(of_major);
  }
  for (size_t k = 0; k < nnz; ++k) {
    if ((*r)[k] < 0 || (*r)[k] >= rows || (*c)[k] < 0 || (*c)[k] >= cols) {
      Outside(m, k, (*r)[k], (*c)[k], rows, cols);
    }
  }
}

// A csr matrix kept as it is: checked as every reader of sparse rows
// checks it (columns sorted and distinct within a row).
SparseRows KeptCsr(const Members& m, int64_t rows, int64_t cols, const std::vector<float>& data) {
  const std::vector<int64_t> ptr = m.Ints("indptr");
  const std::vector<int64_t> idx = m.Ints("indices");
  if (static_cast<int64_t>(ptr.size()) != rows + 1 || idx.size() != data.size()) {
    throw DataError(m.what() + ": indptr must have " + S(rows + 1) + " entries from 0 to nnz (" +
                    S(static_cast<int64_t>(data.size())) + "), and indices nnz");
  }
  std::vector<int32_t> narrow(idx.size());
  for (size_t k = 0; k < idx.size(); ++k) {
    if (idx[k] < 0 || idx[k] >= cols) {
      const int64_t row =
          std::upper_bound(ptr.begin(), ptr.end(), static_cast<int64_t>(k)) - ptr.begin() - 1;
      Outside(m, k, row, idx[k], rows, cols);
    }
    narrow[k] = static_cast<int32_t>(idx[k]);
  }
  SparseView v;
  v.rows = rows;
  v.cols = cols;
  v.indptr = ptr.data();
  v.indices = narrow.data();
  v.values = data.data();
  CheckSparse(v, static_cast<int64_t>(idx.size()), static_cast<int64_t>(data.size()), m.what());
  SparseRows out;
  out.cols = cols;
  out.indptr = ptr;
  out.indices = std::move(narrow);
  if (!std::all_of(data.begin(), data.end(), [](float x) { return x == 1.0f; })) out.values = data;
  return out;
}

}  // namespace

NpzFeatures ReadNpzFeatures(const std::string& path, bool keep_sparse) {
  const Members m(path);
  const std::string& what = m.what();
  NpzFeatures out;
  const std::string* format = m.Raw("format");
  if (!format) {
    if (m.size() != 1) {
      throw DataError(what + ": holds " + S(static_cast<int64_t>(m.size())) +
                      " arrays; features are one array (np.savez) or a SciPy sparse matrix "
                      "(scipy.sparse.save_npz)");
    }
    NpyHeader h;
    out.values = m.Floats(m.First(), &h);
    if (h.shape.size() != 2) {
      throw DataError(what + ": its array has " + S(static_cast<int64_t>(h.shape.size())) +
                      " dimensions; features are [N, F]");
    }
    out.rows = h.shape[0];
    out.cols = h.shape[1];
    return out;
  }
  // SciPy's format.npy: a 0-d bytes array ('|S3'), its 3 bytes last.
  const std::string kind = format->size() >= 3 ? format->substr(format->size() - 3) : "";
  if (format->find("'|S3'") == std::string::npos ||
      (kind != "csr" && kind != "csc" && kind != "coo")) {
    throw DataError(what + ": a SciPy sparse matrix of a format other than csr, csc or coo " +
                    "(convert it with m.tocsr() before scipy.sparse.save_npz)");
  }
  const std::vector<int64_t> shape = m.Ints("shape");
  if (shape.size() != 2 || shape[0] < 0 || shape[1] < 0) {
    throw DataError(what + ": member shape is not [rows, cols]");
  }
  out.rows = shape[0];
  out.cols = shape[1];
  int64_t cells = 0;
  if (__builtin_mul_overflow(out.rows, out.cols, &cells) || cells > (int64_t{1} << 40)) {
    throw DataError(what + ": " + S(out.rows) + " x " + S(out.cols) + " is too large to densify");
  }
  const std::vector<float> data = m.Floats("data");
  if (keep_sparse && out.cols > std::numeric_limits<int32_t>::max()) {
    throw DataError(what + ": " + S(out.cols) + " columns do not fit sparse rows' int32 ids");
  }
  out.is_sparse = keep_sparse;
  if (keep_sparse && kind == "csr") {
    out.sparse = KeptCsr(m, out.rows, out.cols, data);
    return out;
  }
  std::vector<int64_t> rows, cols;
  EntriesOf(m, kind, out.rows, out.cols, data.size(), &rows, &cols);
  if (keep_sparse) {
    // csc or coo: sorted into rows.
    out.sparse = RowsOfEntries(out.rows, out.cols, rows, cols, data);
    return out;
  }
  // Densified; repeated entries add up, as SciPy's toarray adds them.
  out.values.assign(static_cast<size_t>(cells), 0.f);
  for (size_t k = 0; k < data.size(); ++k) {
    out.values[static_cast<size_t>(rows[k] * out.cols + cols[k])] += data[k];
  }
  return out;
}

}  // namespace gnn
