#include "graph/csr.h"

#include <catch2/catch.hpp>
#include <set>

using namespace gnn;

TEST_CASE("BuildCsr groups, sorts and optionally dedups", "[unit]") {
  std::vector<int64_t> row = {2, 0, 2, 1, 2, 0};
  std::vector<int64_t> col = {1, 3, 0, 1, 1, 2};
  Csr a = BuildCsr(4, row, col, false, false, 2);
  CHECK(a.indptr == std::vector<int64_t>{0, 2, 3, 6, 6});
  CHECK(a.indices == std::vector<int64_t>{2, 3, 1, 0, 1, 1});
  Csr b = BuildCsr(4, row, col, true, true, 1);
  CHECK(b.indptr == std::vector<int64_t>{0, 2, 2, 4, 4});
  CHECK(b.indices == std::vector<int64_t>{2, 3, 0, 1});
}

TEST_CASE("Symmetrize gives both directions without duplicates or self-loops", "[unit]") {
  std::vector<int64_t> src = {0, 1, 2, 2, 3, 1};
  std::vector<int64_t> dst = {1, 0, 2, 3, 2, 3};
  Csr s = Symmetrize(5, src, dst, 2);
  std::set<std::pair<int64_t, int64_t>> got;
  for (int64_t v = 0; v < s.num_rows(); ++v) {
    for (int64_t k = s.indptr[v]; k < s.indptr[v + 1]; ++k) got.insert({v, s.indices[k]});
  }
  std::set<std::pair<int64_t, int64_t>> want = {{0, 1}, {1, 0}, {2, 3}, {3, 2}, {1, 3}, {3, 1}};
  CHECK(got == want);
  CHECK(s.num_entries() == 6);
  CHECK(s.Degree(4) == 0);
}

TEST_CASE("GroupPairs over a callback equals BuildCsr and Symmetrize over vectors", "[unit]") {
  std::vector<int64_t> src = {0, 1, 2, 2, 3, 1, 3, 0, 2};
  std::vector<int64_t> dst = {1, 0, 2, 3, 2, 3, 1, 1, 0};
  auto forward = [&](auto emit) {
    for (size_t i = src.size(); i-- > 0;) emit(dst[i], src[i]);  // any order
  };
  for (bool dedup : {false, true}) {
    for (bool drop : {false, true}) {
      const Csr want = BuildCsr(5, dst, src, dedup, drop, 1);
      const Csr32 got = GroupPairs<int32_t>(5, forward, dedup, drop, 2);
      CHECK(got.indptr == want.indptr);
      CHECK(std::vector<int64_t>(got.indices.begin(), got.indices.end()) == want.indices);
    }
  }
  auto both = [&](auto emit) {
    for (size_t i = 0; i < src.size(); ++i) {
      emit(src[i], dst[i]);
      emit(dst[i], src[i]);
    }
  };
  const Csr sym = Symmetrize(5, src, dst, 1);
  const Csr got = GroupPairs<int64_t>(5, both, true, true, 1);
  CHECK(got.indptr == sym.indptr);
  CHECK(got.indices == sym.indices);
}
