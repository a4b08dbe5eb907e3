// Evaluation of unsupervised (link prediction) embeddings, as DGL's
// train_dist_unsupervised: a multinomial logistic regression trained on the
// train nodes' standardized embeddings and scored on valid/test labels, and
// ranking quality (AUC, MRR) of held-out edges against corrupted tails.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace gnn {

struct LabeledSplits;

// Fits softmax regression (L2 as scikit-learn's default C = 1, full-batch
// L-BFGS) on rows `splits.nodes[0]` of `emb` [N, d], standardized with the
// mean/std of all rows; returns (valid accuracy, test accuracy). Nodes with
// a negative label are ignored. Deterministic for a given input.
std::pair<double, double> EmbeddingLogRegAccuracy(const torch::Tensor& emb,
                                                  const LabeledSplits& splits, int64_t num_classes);

struct LinkMetrics {
  double auc = 0;  // P(score of a positive > score of a negative), ties half
  double mrr = 0;  // mean over positives of 1 / rank among its own negatives
};

// `scores` [K, 1 + M]: column 0 the positive edge's score, then its M
// negatives. Plain C++ over the values; K == 0 gives zeros.
LinkMetrics RankMetrics(const torch::Tensor& scores);

}  // namespace gnn
