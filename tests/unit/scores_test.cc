// The figures of multi-label and regression evaluation against cases
// computed by hand (and scikit-learn's documented example).
#include "train/loop/scores.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

using namespace gnn;

TEST_CASE("ROC-AUC per label as scikit-learn computes it, ties counting half", "[unit]") {
  // roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75 (its docs).
  const std::vector<float> y = {0, 0, 1, 1}, s = {0.1f, 0.4f, 0.35f, 0.8f};
  CHECK(RocAucColumn(s.data(), y.data(), 4, 1, 0) == Approx(0.75));
  // Ties: positives 0.5 and 0.9 against negatives 0.5 and 0.5:
  // (0.5 + 0.5 + 1 + 1) / 4.
  const std::vector<float> y2 = {0, 1, 0, 1}, s2 = {0.5f, 0.5f, 0.5f, 0.9f};
  CHECK(RocAucColumn(s2.data(), y2.data(), 4, 1, 0) == Approx(0.75));
  // Perfect and reversed orderings.
  const std::vector<float> y3 = {0, 0, 1}, up = {1, 2, 3}, down = {3, 2, 1};
  CHECK(RocAucColumn(up.data(), y3.data(), 3, 1, 0) == 1.0);
  CHECK(RocAucColumn(down.data(), y3.data(), 3, 1, 0) == 0.0);
  // A column without negatives does not count.
  const std::vector<float> ones = {1, 1, 1};
  CHECK(RocAucColumn(up.data(), ones.data(), 3, 1, 0) == -1);
}

TEST_CASE("the mean ROC-AUC skips labels without both classes, as OGB's evaluator", "[unit]") {
  // Four rows of three labels (row-major), read by column:
  //   col 0: labels 0 0 1 1, scores 1 2 3 4 -> 1.0
  //   col 1: labels 1 1 1 1 -> skipped
  //   col 2: labels 1 0 1 0, scores 4 3 2 1 -> positives at 4, 2 against 3, 1: (1 + 0 + 1 + 1)/4
  const std::vector<float> y = {0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 0};
  const std::vector<float> s = {1, 9, 4, 2, 9, 3, 3, 9, 2, 4, 9, 1};
  int64_t used = 0;
  CHECK(MeanRocAuc(s.data(), y.data(), 4, 3, &used) == Approx((1.0 + 0.75) / 2));
  CHECK(used == 2);
  CHECK(MeanRocAuc(s.data(), y.data(), 0, 3, &used) == 0.0);
  CHECK(used == 0);
}

TEST_CASE("RMSE over every value", "[unit]") {
  const std::vector<float> p = {1, 2, 3, 4}, t = {1, 0, 3, 8};
  CHECK(Rmse(p.data(), t.data(), 2, 2) == Approx(std::sqrt((4.0 + 16.0) / 4)));
  CHECK(Rmse(p.data(), t.data(), 0, 2) == 0.0);
}
