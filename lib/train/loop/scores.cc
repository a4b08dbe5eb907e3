#include "train/loop/scores.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace gnn {

double RocAucColumn(const float* scores, const float* labels, int64_t n, int64_t w, int64_t col) {
  // A diverged model's NaN or infinite outputs have no order: no figure.
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(scores[i * w + col])) return std::numeric_limits<double>::quiet_NaN();
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return scores[a * w + col] < scores[b * w + col]; });
  // The Mann-Whitney statistic: the positives' ranks (1-based, ties given
  // their mean rank) less the least they could sum to.
  double positive_ranks = 0;
  int64_t positives = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i + 1;
    while (j < n && scores[order[j] * w + col] == scores[order[i] * w + col]) ++j;
    const double mean_rank = 0.5 * static_cast<double>(i + 1 + j);
    for (int64_t k = i; k < j; ++k) {
      if (labels[order[k] * w + col] > 0.5f) {
        positive_ranks += mean_rank;
        ++positives;
      }
    }
    i = j;
  }
  const int64_t negatives = n - positives;
  if (positives == 0 || negatives == 0) return -1;
  const double p = static_cast<double>(positives);
  return (positive_ranks - p * (p + 1) / 2) / (p * static_cast<double>(negatives));
}

double MeanRocAuc(const float* scores, const float* labels, int64_t n, int64_t w, int64_t* used) {
  double sum = 0;
  int64_t counted = 0;
  for (int64_t col = 0; col < w; ++col) {
    const double auc = RocAucColumn(scores, labels, n, w, col);
    if (std::isnan(auc)) return auc;
    if (auc < 0) continue;
    sum += auc;
    ++counted;
  }
  if (used) *used = counted;
  return counted ? sum / static_cast<double>(counted) : 0.0;
}

double Rmse(const float* pred, const float* target, int64_t n, int64_t w) {
  const int64_t cells = n * w;
  if (cells == 0) return 0;
  double sum = 0;
  for (int64_t i = 0; i < cells; ++i) {
    const double d = static_cast<double>(pred[i]) - static_cast<double>(target[i]);
    sum += d * d;
  }
  return std::sqrt(sum / static_cast<double>(cells));
}

}  // namespace gnn
