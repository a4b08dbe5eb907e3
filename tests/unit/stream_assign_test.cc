// The streaming assignment (--part_method stream): valid, balanced parts on
// any shape, including chains that fill parts one after another.
#include <algorithm>
#include <catch2/catch.hpp>

#include "graph/csr.h"
#include "partition/assign.h"

using namespace gnn;

namespace {

Csr Path(int64_t n) {
  std::vector<int64_t> rows, cols;
  for (int64_t v = 0; v + 1 < n; ++v) {
    rows.insert(rows.end(), {v, v + 1});
    cols.insert(cols.end(), {v + 1, v});
  }
  return BuildCsr<int64_t>(n, rows, cols, true, true, 1);
}

}  // namespace

TEST_CASE("streaming assignment: no part left empty, within the slack, on chains and grids",
          "[unit]") {
  for (int parts : {2, 16, 21, 32, 64}) {
    INFO(parts);
    const int64_t n = 3000;
    const Csr g = Path(n);
    const std::vector<int32_t> part = StreamAssign(g, {std::vector<int32_t>(n, 1)}, parts);
    std::vector<int64_t> size(static_cast<size_t>(parts), 0);
    for (int32_t p : part) {
      REQUIRE(p >= 0);
      REQUIRE(p < parts);
      ++size[static_cast<size_t>(p)];
    }
    const double share = static_cast<double>(n) / parts;
    for (int64_t s : size) {
      CHECK(s > 0);
      CHECK(s <= 1.05 * share + 1);
    }
    // A chain cut into runs: about one cut edge per part boundary.
    CHECK(EdgeCut(g, part) < 4 * parts);
  }
  // Two constraints (all nodes; "train" = every third): both near even.
  const int64_t n = 4000;
  const Csr g = Path(n);
  std::vector<int32_t> train(n, 0);
  for (int64_t v = 0; v < n; v += 3) train[static_cast<size_t>(v)] = 1;
  const std::vector<int32_t> part = StreamAssign(g, {std::vector<int32_t>(n, 1), train}, 4);
  std::vector<int64_t> nodes(4, 0), trains(4, 0);
  for (int64_t v = 0; v < n; ++v) {
    ++nodes[static_cast<size_t>(part[static_cast<size_t>(v)])];
    trains[static_cast<size_t>(part[static_cast<size_t>(v)])] += train[static_cast<size_t>(v)];
  }
  for (int p = 0; p < 4; ++p) {
    CHECK(nodes[p] <= 1.05 * n / 4 + 1);
    CHECK(trains[p] <= 1.05 * (n / 3 + 1) / 4 + 1);
    CHECK(trains[p] > 0);
  }
}

TEST_CASE(
    "the graph --sparsify gives: a symmetric, seeded subset that keeps low-degree pairs and thins "
    "hubs",
    "[unit]") {
  // A star of 400 leaves around node 0, plus a ring over the leaves.
  const int64_t n = 401;
  std::vector<int64_t> rows, cols;
  auto link = [&](int64_t a, int64_t b) {
    rows.insert(rows.end(), {a, b});
    cols.insert(cols.end(), {b, a});
  };
  for (int32_t v = 1; v < n; ++v) {
    link(0, v);
    link(v, v + 1 < n ? v + 1 : 1);
  }
  const Csr32 g = BuildCsr<int32_t>(n, rows, cols, true, true, 1);
  const Csr32 s = SparsifySymmetric(g, 16, 7);
  auto has = [](const Csr32& c, int64_t a, int64_t b) {
    return std::binary_search(c.indices.begin() + c.indptr[a], c.indices.begin() + c.indptr[a + 1],
                              static_cast<int32_t>(b));
  };
  int64_t hub = 0;
  for (int64_t a = 0; a < n; ++a) {
    for (int64_t k = s.indptr[a]; k < s.indptr[a + 1]; ++k) {
      const int64_t b = s.indices[k];
      REQUIRE(has(g, a, b));  // a subset
      REQUIRE(has(s, b, a));  // symmetric
    }
  }
  for (int64_t v = 1; v < n; ++v) {
    CHECK(has(s, v, v + 1 < n ? v + 1 : 1));  // leaf pairs (degree 3 <= 16) all kept
    hub += has(s, 0, v);
  }
  // The hub keeps about 16 of its 400 edges (each with probability 16/400).
  CHECK(hub >= 4);
  CHECK(hub <= 40);
  CHECK(s.num_entries() < g.num_entries());
  // Deterministic per seed; another seed draws other hub edges.
  CHECK(SparsifySymmetric(g, 16, 7).indices == s.indices);
  CHECK(SparsifySymmetric(g, 16, 8).indices != s.indices);
  // A cap above every degree keeps the graph whole.
  CHECK(SparsifySymmetric(g, 400, 7).indices == g.indices);
}
