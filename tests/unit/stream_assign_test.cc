// The streaming assignment (--part_method stream): valid, balanced parts on
// any shape, including chains that fill parts one after another.
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
