#include "graph/csr.h"

#include <algorithm>

#include "common/parallel.h"

namespace gnn {

namespace {

// Groups the pairs of several (rows, cols) vector lists.
template <typename Index>
CsrT<Index> Group(int64_t num_rows, const std::vector<const std::vector<int64_t>*>& rows,
                  const std::vector<const std::vector<int64_t>*>& cols, bool dedup,
                  bool drop_self_loops, int threads) {
  auto each = [&](auto emit) {
    for (size_t k = 0; k < rows.size(); ++k) {
      const auto& r = *rows[k];
      const auto& c = *cols[k];
      for (size_t i = 0; i < r.size(); ++i) emit(r[i], c[i]);
    }
  };
  return GroupPairs<Index>(num_rows, each, dedup, drop_self_loops, threads);
}

}  // namespace

template <typename Index>
void SortRows(CsrT<Index>* csr, bool dedup, int threads) {
  const int64_t num_rows = csr->num_rows();
  // Sort each row; with dedup record the unique length of each row.
  std::vector<int64_t> kept(dedup ? num_rows : 0);
  ParallelFor(num_rows, threads, [&](int64_t b, int64_t e) {
    for (int64_t v = b; v < e; ++v) {
      auto first = csr->indices.begin() + csr->indptr[v];
      auto last = csr->indices.begin() + csr->indptr[v + 1];
      std::sort(first, last);
      if (dedup) kept[v] = std::unique(first, last) - first;
    }
  });
  if (!dedup) return;
  int64_t out = 0;
  for (int64_t v = 0; v < num_rows; ++v) {
    int64_t start = csr->indptr[v];
    for (int64_t j = 0; j < kept[v]; ++j) csr->indices[out + j] = csr->indices[start + j];
    csr->indptr[v] = out;
    out += kept[v];
  }
  csr->indptr[num_rows] = out;
  csr->indices.resize(out);
  csr->indices.shrink_to_fit();
}

template <typename Index>
CsrT<Index> BuildCsr(int64_t num_rows, const std::vector<int64_t>& row,
                     const std::vector<int64_t>& col, bool dedup, bool drop_self_loops,
                     int threads) {
  return Group<Index>(num_rows, {&row}, {&col}, dedup, drop_self_loops, threads);
}

template <typename Index>
CsrT<Index> Symmetrize(int64_t num_nodes, const std::vector<int64_t>& src,
                       const std::vector<int64_t>& dst, int threads) {
  return Group<Index>(num_nodes, {&src, &dst}, {&dst, &src}, /*dedup=*/true,
                      /*drop_self_loops=*/true, threads);
}

template void SortRows(Csr*, bool, int);
template void SortRows(Csr32*, bool, int);
template Csr BuildCsr<int64_t>(int64_t, const std::vector<int64_t>&, const std::vector<int64_t>&,
                               bool, bool, int);
template Csr32 BuildCsr<int32_t>(int64_t, const std::vector<int64_t>&, const std::vector<int64_t>&,
                                 bool, bool, int);
template Csr Symmetrize<int64_t>(int64_t, const std::vector<int64_t>&, const std::vector<int64_t>&,
                                 int);
template Csr32 Symmetrize<int32_t>(int64_t, const std::vector<int64_t>&,
                                   const std::vector<int64_t>&, int);

}  // namespace gnn
