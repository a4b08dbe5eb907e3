// The figures multi-label and regression tasks are judged by, on plain
// arrays (no LibTorch): OGB's ogbn-proteins evaluator (ROC-AUC per label,
// averaged over the labels that have both classes among the rows) and the
// root mean squared error.
#pragma once

#include <cstdint>

namespace gnn {

// Area under the ROC curve of column `col` of `scores` [n, w] against the 0/1
// column of `labels` [n, w] (tied scores count half, as scikit-learn's
// roc_auc_score does); -1 when the column lacks positives or negatives, NaN
// when a score is not finite.
double RocAucColumn(const float* scores, const float* labels, int64_t n, int64_t w, int64_t col);

// OGB's proteins evaluator: the mean of RocAucColumn over the columns that
// have both classes; 0 when none does (or n is 0); NaN when a score is not
// finite. `used` (optional) gets
// how many columns counted.
double MeanRocAuc(const float* scores, const float* labels, int64_t n, int64_t w,
                  int64_t* used = nullptr);

// sqrt(mean((pred - target)^2)) over all n*w values; 0 for none.
double Rmse(const float* pred, const float* target, int64_t n, int64_t w);

}  // namespace gnn
