#include "train/loop/link_eval.h"

#include <algorithm>
#include <numeric>

#include "train/loop/train_env.h"

namespace gnn {

namespace {

torch::Tensor Ids(const std::vector<int64_t>& v) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::kInt64);
}

// Keeps the labelled entries of a split.
std::pair<torch::Tensor, torch::Tensor> Labelled(const LabeledSplits& s, int k) {
  torch::Tensor nodes = Ids(s.nodes[k]), labels = Ids(s.labels[k]);
  torch::Tensor keep = labels.ge(0);
  return {nodes.masked_select(keep), labels.masked_select(keep)};
}

}  // namespace

std::pair<double, double> EmbeddingLogRegAccuracy(const torch::Tensor& emb_in,
                                                  const LabeledSplits& splits,
                                                  int64_t num_classes) {
  torch::AutoGradMode grad(true);
  torch::Tensor emb = emb_in.to(torch::kFloat64);
  emb = (emb - emb.mean(0, true)) / (emb.std(0, true, true) + 1e-12);
  auto [train_nodes, train_y] = Labelled(splits, 0);
  if (train_nodes.numel() == 0) return {0.0, 0.0};
  torch::Tensor x = emb.index_select(0, train_nodes);
  const int64_t d = emb.size(1);
  torch::Tensor w = torch::zeros({d, num_classes}, torch::kFloat64).requires_grad_(true);
  torch::Tensor b = torch::zeros({num_classes}, torch::kFloat64).requires_grad_(true);
  // scikit-learn minimises sum(loss) + ||w||^2 / (2C); divided by n here.
  const double l2 = 0.5 / static_cast<double>(train_nodes.numel());
  torch::optim::LBFGS opt({w, b}, torch::optim::LBFGSOptions(1.0)
                                      .max_iter(1000)
                                      .tolerance_grad(1e-7)
                                      .tolerance_change(1e-10)
                                      .history_size(20)
                                      .line_search_fn("strong_wolfe"));
  auto closure = [&] {
    opt.zero_grad();
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(x.matmul(w) + b, train_y) + l2 * w.pow(2).sum();
    loss.backward();
    return loss;
  };
  opt.step(closure);
  torch::NoGradGuard no_grad;
  auto acc = [&](int k) {
    auto [nodes, y] = Labelled(splits, k);
    if (nodes.numel() == 0) return 0.0;
    torch::Tensor pred = (emb.index_select(0, nodes).matmul(w) + b).argmax(1);
    return pred.eq(y).to(torch::kFloat64).mean().item<double>();
  };
  return {acc(1), acc(2)};
}

LinkMetrics RankMetrics(const torch::Tensor& scores_in) {
  LinkMetrics m;
  torch::Tensor scores = scores_in.to(torch::kFloat64).contiguous();
  const int64_t k = scores.size(0), cols = scores.size(1);
  if (k == 0 || cols < 2) return m;
  const double* s = scores.data_ptr<double>();
  // MRR: rank of each positive among its own negatives (ties count half).
  double rr = 0;
  for (int64_t i = 0; i < k; ++i) {
    const double pos = s[i * cols];
    double above = 0;
    for (int64_t j = 1; j < cols; ++j) {
      const double v = s[i * cols + j];
      above += v > pos ? 1.0 : (v == pos ? 0.5 : 0.0);
    }
    rr += 1.0 / (1.0 + above);
  }
  m.mrr = rr / static_cast<double>(k);
  // AUC (Mann-Whitney): every positive against every negative, from the
  // rank sum of the positives with ties given their average rank.
  const int64_t n = k * cols;
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return s[a] < s[b]; });
  double pos_rank_sum = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j < n && s[order[j]] == s[order[i]]) ++j;
    const double avg_rank = 0.5 * static_cast<double>(i + 1 + j);  // ranks i+1..j
    for (int64_t q = i; q < j; ++q) {
      if (order[q] % cols == 0) pos_rank_sum += avg_rank;
    }
    i = j;
  }
  const double p = static_cast<double>(k), neg = static_cast<double>(k * (cols - 1));
  m.auc = (pos_rank_sum - p * (p + 1) / 2) / (p * neg);
  return m;
}

}  // namespace gnn
