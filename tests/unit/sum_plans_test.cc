// The rules of DistGraph's sum plans (client/sum_plans.h) on small hand-made
// cases: what is pulled whole, what is summed at which owner.
#include "client/sum_plans.h"

#include <catch2/catch.hpp>

using namespace gnn;

TEST_CASE(
    "PlanRemoteSums: rows held here and a destination's only one at an owner are pulled once, "
    "two or more at an owner are summed there",
    "[unit]") {
  // unique rows 100..105; owners: 100-102 at 1, 103-104 at 2, 105 here.
  const std::vector<int64_t> unique = {100, 101, 102, 103, 104, 105};
  const std::vector<int64_t> owner = {1, 1, 1, 2, 2, 0};
  const std::vector<uint8_t> near = {0, 0, 0, 0, 0, 1};
  // Destination 0: 100, 101, 103, 105. Destination 1: 103 only.
  // Destination 2: 102, 101, 104, 103. Destination 3: none.
  const std::vector<int64_t> rptr = {0, 4, 5, 9, 9};
  const std::vector<int64_t> row_of = {0, 1, 3, 5, 3, 2, 1, 4, 3};
  const RemoteSumsPlan plan = PlanRemoteSums(4, rptr, unique, row_of, owner, near, 3, 100);
  // 105 (near) first, then 103 (destination 0's only one at owner 2; also
  // destination 1's): each once.
  CHECK(plan.pulled == std::vector<int64_t>{105, 103});
  CHECK(plan.groups[0].ids.empty());
  CHECK(plan.groups[1].ids == std::vector<int64_t>{100, 101, 101, 102});
  CHECK(plan.groups[1].group_ptr == std::vector<int64_t>{0, 2, 4});
  CHECK(plan.groups[2].ids == std::vector<int64_t>{103, 104});
  CHECK(plan.groups[2].group_ptr == std::vector<int64_t>{0, 2});
  // Rows: 105, 103 pulled (0, 1), owner 1's two sums (2, 3), owner 2's
  // one (4). Destination 0 adds 105 and 103, then its sum at owner 1;
  // destination 1 adds 103; destination 2 its sums at owners 1 and 2.
  CHECK(plan.add_ptr == std::vector<int64_t>{0, 3, 4, 6, 6});
  CHECK(plan.add == std::vector<int64_t>{0, 1, 2, 1, 3, 4});
  // 100, 101, 102, 104 are only summed; 103 is pulled too.
  CHECK(plan.summed_only == 4);
  // With at most one id a group, every summed row is a group of its own.
  const RemoteSumsPlan one = PlanRemoteSums(4, rptr, unique, row_of, owner, near, 3, 1);
  CHECK(one.groups[1].group_ptr == std::vector<int64_t>{0, 1, 2, 3, 4});
  // 2 pulled, then owner 1's 4 sums (2-5) and owner 2's 2 (6, 7).
  CHECK(one.add_ptr == std::vector<int64_t>{0, 4, 5, 9, 9});
  CHECK(one.add == std::vector<int64_t>{0, 1, 2, 3, 1, 4, 5, 6, 7});
}

TEST_CASE(
    "PlanTypedSums: shares of one row and owners where a sum saves nothing are pulled, each row "
    "once, the rest summed in group order",
    "[unit]") {
  std::vector<std::vector<TypedShare>> shares(3);
  // Owner 0: a share of one row (pulled) and two of two distinct rows each
  // (4 distinct rows > 2 shares: summed).
  shares[0] = {{0, {7}}, {1, {9, 8}}, {2, {10, 11}}};
  // Owner 1: two shares naming the same two rows (2 distinct <= 2 shares:
  // rows pulled, once each).
  shares[1] = {{0, {20, 21}}, {3, {21, 20}}};
  // Owner 2: none.
  const TypedSumsPlan plan = PlanTypedSums(shares, true);
  CHECK(plan.pulled == std::vector<int64_t>{7, 20, 21});
  using Row = std::pair<size_t, int64_t>;
  CHECK(plan.add_rows == std::vector<Row>{{0, 0}, {0, 1}, {0, 2}, {3, 2}, {3, 1}});
  CHECK(plan.asked[0].ids == std::vector<int64_t>{8, 9, 10, 11});
  CHECK(plan.asked[0].group_ptr == std::vector<int64_t>{0, 2, 4});
  CHECK(plan.summed_groups[0] == std::vector<size_t>{1, 2});
  CHECK(plan.asked[1].ids.empty());
  CHECK(plan.summed_groups[1].empty());
  CHECK(plan.asked[2].group_ptr == std::vector<int64_t>{0});
  // Without remote sums every row is pulled.
  const TypedSumsPlan rows = PlanTypedSums(shares, false);
  CHECK(rows.pulled == std::vector<int64_t>{7, 9, 8, 10, 11, 20, 21});
  CHECK(rows.asked[0].ids.empty());
}
