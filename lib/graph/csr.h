// Compressed sparse rows over int64 node ids. Used both as CSR (row = source)
// and CSC (row = destination, entries = in-neighbours).
#pragma once

#include <cstdint>
#include <vector>

namespace gnn {

// Index is int64_t, or int32_t when every id fits (half the memory; it is
// also METIS's idx_t, so METIS reads the arrays without a copy).
template <typename Index>
struct CsrT {
  std::vector<int64_t> indptr;  // [num_rows + 1], indptr[0] == 0
  std::vector<Index> indices;   // [indptr.back()]
  int64_t num_rows() const { return static_cast<int64_t>(indptr.size()) - 1; }
  int64_t num_entries() const { return static_cast<int64_t>(indices.size()); }
  int64_t Degree(int64_t row) const { return indptr[row + 1] - indptr[row]; }
};
using Csr = CsrT<int64_t>;
using Csr32 = CsrT<int32_t>;

// Groups (row[i], col[i]) pairs by row; each row's columns are sorted.
// `dedup` removes repeated pairs, `drop_self_loops` pairs with row == col.
// Ids must be in [0, num_rows) (callers validate). Uses `threads` threads.
// Index = int32_t requires num_rows <= INT32_MAX (callers check).
template <typename Index = int64_t>
CsrT<Index> BuildCsr(int64_t num_rows, const std::vector<int64_t>& row,
                     const std::vector<int64_t>& col, bool dedup, bool drop_self_loops,
                     int threads = 0);

// The adjacency of the undirected graph over (src, dst): both directions,
// sorted, without duplicates or self-loops (what DGL hands to METIS).
template <typename Index = int64_t>
CsrT<Index> Symmetrize(int64_t num_nodes, const std::vector<int64_t>& src,
                       const std::vector<int64_t>& dst, int threads = 0);

// Sorts each row's entries (rows in parallel over `threads`); with `dedup`
// drops repeats and compacts the arrays to what is left.
template <typename Index>
void SortRows(CsrT<Index>* csr, bool dedup, int threads);

// Groups the pairs `for_each_pair` emits, as BuildCsr does, without the
// caller first copying them into row and column vectors: it is called twice
// (count, then fill) with an `emit(int64_t row, int64_t col)` callable and
// must emit the same pairs both times, in any order. Memory: the result and
// one int64 per row besides the caller's own.
template <typename Index, typename ForEachPair>
CsrT<Index> GroupPairs(int64_t num_rows, ForEachPair for_each_pair, bool dedup,
                       bool drop_self_loops, int threads = 0) {
  CsrT<Index> csr;
  csr.indptr.assign(num_rows + 1, 0);
  for_each_pair([&](int64_t r, int64_t c) {
    if (!drop_self_loops || r != c) ++csr.indptr[r + 1];
  });
  for (int64_t v = 0; v < num_rows; ++v) csr.indptr[v + 1] += csr.indptr[v];
  csr.indices.resize(csr.indptr[num_rows]);
  {
    std::vector<int64_t> fill(csr.indptr.begin(), csr.indptr.end() - 1);
    for_each_pair([&](int64_t r, int64_t c) {
      if (!drop_self_loops || r != c) csr.indices[fill[r]++] = static_cast<Index>(c);
    });
  }
  SortRows(&csr, dedup, threads);
  return csr;
}

// Releases a vector's memory now.
template <typename T>
void FreeVector(std::vector<T>& v) {
  std::vector<T>().swap(v);
}

}  // namespace gnn
