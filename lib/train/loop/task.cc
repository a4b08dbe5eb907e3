#include "train/loop/task.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "train/loop/link_eval.h"
#include "train/loop/scores.h"

namespace gnn {

namespace {

torch::Tensor IdTensor(std::vector<int64_t>& v) {
  return torch::from_blob(v.data(), {static_cast<int64_t>(v.size())}, torch::kInt64);
}

torch::Tensor Labels(MiniBatch& mb) {
  return torch::from_blob(mb.labels.data(), {static_cast<int64_t>(mb.labels.size())},
                          torch::kInt64);
}

class NodeTask : public Task {
 public:
  explicit NodeTask(const PartitionConfig& config) : classes_(config.num_classes) {}
  int64_t OutputDim() const override { return classes_; }
  std::string Signature() const override { return ""; }
  int64_t Examples(const MiniBatch& mb) const override {
    return static_cast<int64_t>(mb.seeds.size());
  }
  torch::Tensor Loss(const torch::Tensor& out, MiniBatch& mb) override {
    return torch::nn::functional::cross_entropy(out, Labels(mb).to(out.device()));
  }
  double TrainAccuracy(const torch::Tensor& out, MiniBatch& mb) override {
    return out.argmax(1).eq(Labels(mb).to(out.device())).to(torch::kFloat64).mean().item<double>();
  }
  std::pair<double, double> Evaluate(TrainEnv& env, NodeModel& model, int, const std::string&,
                                     const RecordFn&) override {
    return env.Evaluate(model);
  }

 private:
  int64_t classes_;
};

torch::Tensor Targets(MiniBatch& mb) {
  return torch::from_blob(mb.targets.data(),
                          {static_cast<int64_t>(mb.seeds.size()), mb.label_width}, torch::kFloat32);
}

// Label rows per node: multi-label classification (binary cross-entropy
// with logits per label, judged by OGB's proteins evaluator: ROC-AUC per
// label averaged over labels with both classes) or regression (mean squared
// error, judged by RMSE; the best epoch is the lowest validation RMSE).
class RowTask : public Task {
 public:
  explicit RowTask(const PartitionConfig& config)
      : multilabel_(config.label_kind == LabelKind::kMultilabel), width_(config.label_width) {}
  int64_t OutputDim() const override { return width_; }
  std::string Signature() const override {
    return std::string(" task=") + (multilabel_ ? "multilabel" : "node_regression") +
           " out=" + std::to_string(width_);
  }
  int64_t Examples(const MiniBatch& mb) const override {
    return static_cast<int64_t>(mb.seeds.size());
  }
  torch::Tensor Loss(const torch::Tensor& out, MiniBatch& mb) override {
    CheckRows(mb);
    const torch::Tensor y = Targets(mb).to(out.device());
    if (multilabel_) return torch::nn::functional::binary_cross_entropy_with_logits(out, y);
    return torch::nn::functional::mse_loss(out, y);
  }
  // Multi-label: the share of labels on the right side of 0.5; regression:
  // the batch's RMSE.
  double TrainAccuracy(const torch::Tensor& out, MiniBatch& mb) override {
    torch::NoGradGuard no_grad;
    const torch::Tensor y = Targets(mb).to(out.device());
    if (multilabel_) return out.gt(0).eq(y.gt(0.5)).to(torch::kFloat64).mean().item<double>();
    return (out - y).pow(2).mean().sqrt().item<double>();
  }
  std::pair<double, double> Evaluate(TrainEnv& env, NodeModel& model, int, const std::string&,
                                     const RecordFn&) override {
    const EvalRows rows = env.EvaluateRows(model);
    double figure[2];
    for (int k = 0; k < 2; ++k) {
      const torch::Tensor out = rows.out[k].to(torch::kFloat32).contiguous();
      const torch::Tensor y = rows.target[k].contiguous();
      const int64_t n = out.size(0);
      figure[k] = multilabel_ ? MeanRocAuc(out.data_ptr<float>(), y.data_ptr<float>(), n, width_)
                              : Rmse(out.data_ptr<float>(), y.data_ptr<float>(), n, width_);
    }
    return {figure[0], figure[1]};
  }
  EvalMetric Metric() const override {
    if (!multilabel_) return RmseMetric();
    EvalMetric m;
    m.key = "rocauc";
    m.title = "ROC-AUC";
    return m;
  }

 private:
  void CheckRows(const MiniBatch& mb) const {
    if (mb.label_width != width_ ||
        mb.targets.size() != mb.seeds.size() * static_cast<size_t>(width_)) {
      throw DataError("a batch brought " + std::to_string(mb.targets.size()) +
                      " label values for " + std::to_string(mb.seeds.size()) + " seeds of " +
                      std::to_string(width_) + " labels each");
    }
  }

  bool multilabel_;
  int64_t width_;
};

// Dot-product scores of positive and negative pairs, binary cross-entropy
// against 1 and 0; judged by a logistic regression on the embeddings and by
// ranking held-out edges against corrupted tails.
class LinkTask : public Task {
 public:
  LinkTask(const TrainOptions& o, const PartitionConfig& config) : o_(o), config_(config) {}
  // Unsupervised GraphSAGE outputs num_hidden-wide embeddings (DGL's
  // DistSAGE(in, hidden, hidden, ...)).
  int64_t OutputDim() const override { return o_.num_hidden; }
  std::string Signature() const override {
    return " task=link out=" + std::to_string(o_.num_hidden);
  }
  int64_t Examples(const MiniBatch& mb) const override {
    return static_cast<int64_t>(mb.pos_head.size());
  }

  torch::Tensor Loss(const torch::Tensor& out, MiniBatch& mb) override {
    torch::Tensor ps, ns;
    Scores(out, mb, &ps, &ns);
    return torch::nn::functional::binary_cross_entropy_with_logits(
        torch::cat({ps, ns}), torch::cat({torch::ones_like(ps), torch::zeros_like(ns)}));
  }

  // The share of pairs whose score has the right sign.
  double TrainAccuracy(const torch::Tensor& out, MiniBatch& mb) override {
    torch::NoGradGuard no_grad;
    torch::Tensor ps, ns;
    Scores(out, mb, &ps, &ns);
    const double right = ps.gt(0).sum().item<double>() + ns.le(0).sum().item<double>();
    return right / static_cast<double>(ps.size(0) + ns.size(0));
  }

  std::pair<double, double> Evaluate(TrainEnv& env, NodeModel& model, int epoch,
                                     const std::string& label, const RecordFn& record) override {
    torch::Tensor emb = env.AllNodeOutputs(model);
    std::tie(lr_val_, lr_test_) = EmbeddingLogRegAccuracy(emb, env.Labeled(), config_.num_classes);
    has_link_eval_ = config_.val_edges_fraction > 0;
    if (has_link_eval_) RankHeldOut(env, emb);
    GNN_LOG(kInfo) << label << ", Link AUC " << std::fixed << std::setprecision(4) << auc_
                   << ", Link MRR " << mrr_
                   << (has_link_eval_ ? "" : " (no held-out edges: gnn-partition --val_edges)");
    record({{"type", "link_eval"}, {"epoch", epoch}, {"link_auc", auc_}, {"link_mrr", mrr_}});
    return {lr_val_, lr_test_};
  }

  void Summarize(nlohmann::json* summary) const override {
    using nlohmann::json;
    (*summary)["embedding_lr_val_acc"] = lr_val_;
    (*summary)["embedding_lr_test_acc"] = lr_test_;
    (*summary)["link_auc"] = has_link_eval_ ? json(auc_) : json(nullptr);
    (*summary)["link_mrr"] = has_link_eval_ ? json(mrr_) : json(nullptr);
    (*summary)["edges_per_s"] = (*summary)["seeds_per_s"];
  }

 private:
  static void Scores(const torch::Tensor& out, MiniBatch& mb, torch::Tensor* ps,
                     torch::Tensor* ns) {
    auto rows = [&](std::vector<int64_t>& ids) {
      return out.index_select(0, IdTensor(ids).to(out.device()));
    };
    *ps = (rows(mb.pos_head) * rows(mb.pos_tail)).sum(1);
    *ns = (rows(mb.neg_head) * rows(mb.neg_tail)).sum(1);
  }

  // The held-out edges (this rank's share) scored against their corrupted
  // tails; the score rows of every rank gathered for one AUC/MRR.
  void RankHeldOut(TrainEnv& env, const torch::Tensor& emb) {
    HeldOutEdges he = env.HeldOut();
    const int64_t k = he.size(), m = config_.val_negatives;
    torch::Tensor scores = torch::zeros({k, 1 + m}, torch::kFloat32);
    if (k > 0) {
      torch::NoGradGuard no_grad;
      torch::Tensor h = emb.index_select(0, IdTensor(he.heads));
      torch::Tensor t = emb.index_select(0, IdTensor(he.tails));
      torch::Tensor neg = emb.index_select(0, IdTensor(he.negatives)).view({k, m, emb.size(1)});
      scores.select(1, 0).copy_((h * t).sum(1));
      scores.slice(1, 1).copy_((h.unsqueeze(1) * neg).sum(2));
    }
    LinkMetrics lm = RankMetrics(env.GatherRows(scores));
    auc_ = lm.auc;
    mrr_ = lm.mrr;
  }

  const TrainOptions& o_;
  const PartitionConfig& config_;
  // The last evaluation (not checkpointed: a resumed run evaluates again).
  double lr_val_ = 0, lr_test_ = 0, auc_ = 0, mrr_ = 0;
  bool has_link_eval_ = false;
};

// Labelled edges (GraphStorm's edge classification and regression): the
// model's rows are node embeddings (num_hidden wide), and a decoder, an
// MLP over the two ends' embeddings concatenated, source first (GraphStorm's
// MLPEdgeDecoder with one hidden layer: Linear(2h, h), ReLU, Linear(h, C)),
// gives each edge's class logits or its value. Cross-entropy or mean
// squared error; judged by accuracy or RMSE over the valid and test edges,
// decoded from every node's full-neighbour embedding.
class EdgeTask : public Task {
 public:
  EdgeTask(const TrainOptions& o, const PartitionConfig& config)
      : o_(o),
        classes_(config.edge_label_kind == LabelKind::kClass),
        out_(classes_ ? config.num_edge_classes : 1) {}
  int64_t OutputDim() const override { return o_.num_hidden; }
  void Attach(NodeModel& model) override {
    AttachEdgeDecoder(model, o_.num_hidden, out_, o_.decoder_edge_dim);
    model_ = &model;
  }
  std::string Signature() const override {
    return " task=" + o_.task + " out=" + std::to_string(out_) +
           (o_.exclude_target_edges ? "" : " keep_targets");
  }
  int64_t Examples(const MiniBatch& mb) const override {
    return static_cast<int64_t>(mb.pos_head.size());
  }
  torch::Tensor Loss(const torch::Tensor& out, MiniBatch& mb) override {
    const torch::Tensor y = Decode(out, IdTensor(mb.pos_head), IdTensor(mb.pos_tail), Inputs(mb));
    if (classes_) return torch::nn::functional::cross_entropy(y, Truth(mb, y.device()));
    return torch::nn::functional::mse_loss(y, Truth(mb, y.device()));
  }
  // Classes: the share of edges whose class is right; values: the batch's RMSE.
  double TrainAccuracy(const torch::Tensor& out, MiniBatch& mb) override {
    torch::NoGradGuard no_grad;
    const torch::Tensor y = Decode(out, IdTensor(mb.pos_head), IdTensor(mb.pos_tail), Inputs(mb));
    const torch::Tensor t = Truth(mb, y.device());
    if (classes_) return y.argmax(1).eq(t).to(torch::kFloat64).mean().item<double>();
    return (y - t).pow(2).mean().sqrt().item<double>();
  }
  std::pair<double, double> Evaluate(TrainEnv& env, NodeModel& model, int, const std::string&,
                                     const RecordFn&) override {
    const torch::Tensor emb = env.AllNodeOutputs(model);
    double figure[2];
    for (int k = 0; k < 2; ++k) {
      LabeledEdges le = env.EvalEdges(k);
      // Right answers (classes) or squared errors (values), in slices.
      double sum = 0;
      {
        torch::NoGradGuard no_grad;
        const int64_t n = le.size(), slice = 1 << 16;
        for (int64_t b = 0; b < n; b += slice) {
          const int64_t e = std::min(n, b + slice);
          const int64_t w = o_.decoder_edge_dim;
          const torch::Tensor x =
              w == 0 ? torch::Tensor()
                     : torch::from_blob(le.features.data(), {n, w}, torch::kFloat32).slice(0, b, e);
          const torch::Tensor y =
              Decode(emb, IdTensor(le.heads).slice(0, b, e), IdTensor(le.tails).slice(0, b, e), x);
          if (classes_) {
            sum += y.argmax(1).eq(IdTensor(le.labels).slice(0, b, e)).sum().item<double>();
          } else {
            const torch::Tensor t =
                torch::from_blob(le.targets.data(), {n}, torch::kFloat32).slice(0, b, e);
            sum += (y - t).to(torch::kFloat64).pow(2).sum().item<double>();
          }
        }
      }
      const double total = env.SumOverRanks(static_cast<double>(le.size()));
      sum = env.SumOverRanks(sum);
      figure[k] = total == 0 ? 0.0 : classes_ ? sum / total : std::sqrt(sum / total);
    }
    return {figure[0], figure[1]};
  }
  EvalMetric Metric() const override { return classes_ ? EvalMetric() : RmseMetric(); }
  void Summarize(nlohmann::json* summary) const override {
    (*summary)["edges_per_s"] = (*summary)["seeds_per_s"];
    (*summary)["exclude_target_edges"] = o_.exclude_target_edges;
  }

 private:
  // [k, out_] (regression: squeezed to [k]) for the edges heads[i] -> tails[i].
  torch::Tensor Decode(const torch::Tensor& out, const torch::Tensor& heads,
                       const torch::Tensor& tails, const torch::Tensor& edge_inputs) {
    return DecodeEdges(*model_, out, heads, tails, classes_, edge_inputs);
  }
  // The batch's edges' own features for the decoder (undefined without).
  torch::Tensor Inputs(MiniBatch& mb) const {
    const int64_t w = o_.decoder_edge_dim, n = static_cast<int64_t>(mb.pos_head.size());
    if (w == 0) return {};
    if (mb.edge_input_dim != w || static_cast<int64_t>(mb.edge_inputs.size()) != n * w) {
      throw DataError("an edge batch brought " + std::to_string(mb.edge_inputs.size()) +
                      " edge feature values for " + std::to_string(n) + " edges of " +
                      std::to_string(w));
    }
    return torch::from_blob(mb.edge_inputs.data(), {n, w}, torch::kFloat32);
  }
  torch::Tensor Truth(MiniBatch& mb, const torch::Device& device) const {
    const int64_t n = static_cast<int64_t>(mb.pos_head.size());
    if (classes_) {
      if (static_cast<int64_t>(mb.labels.size()) != n) {
        throw DataError("an edge batch brought " + std::to_string(mb.labels.size()) +
                        " labels for " + std::to_string(n) + " edges");
      }
      return Labels(mb).to(device);
    }
    if (static_cast<int64_t>(mb.targets.size()) != n) {
      throw DataError("an edge batch brought " + std::to_string(mb.targets.size()) +
                      " values for " + std::to_string(n) + " edges");
    }
    return torch::from_blob(mb.targets.data(), {n}, torch::kFloat32).to(device);
  }

  const TrainOptions& o_;
  bool classes_;
  int64_t out_;
  NodeModel* model_ = nullptr;  // holds the decoder (Attach)
};

}  // namespace

EvalMetric RmseMetric() {
  EvalMetric m;
  m.key = "rmse";
  m.title = "RMSE";
  m.lower_is_better = true;
  m.train_key = "train_rmse";
  m.train_title = "Train RMSE";
  return m;
}

void AttachEdgeDecoder(torch::nn::Module& model, int64_t hidden, int64_t out, int64_t edge_dim) {
  model.register_module("decoder",
                        torch::nn::Sequential(torch::nn::Linear(2 * hidden + edge_dim, hidden),
                                              torch::nn::ReLU(), torch::nn::Linear(hidden, out)));
}

torch::Tensor DecodeEdges(torch::nn::Module& model, const torch::Tensor& emb,
                          const torch::Tensor& heads, const torch::Tensor& tails, bool classes,
                          const torch::Tensor& edge_inputs) {
  std::shared_ptr<torch::nn::Module> found;
  for (const auto& child : model.named_children()) {
    if (child.key() == "decoder") found = child.value();
  }
  auto* decoder = found ? found->as<torch::nn::SequentialImpl>() : nullptr;
  if (decoder == nullptr) throw Error("the model has no edge decoder");
  std::vector<torch::Tensor> parts = {emb.index_select(0, heads.to(emb.device())),
                                      emb.index_select(0, tails.to(emb.device()))};
  if (edge_inputs.defined()) parts.push_back(edge_inputs.to(emb.device()));
  const torch::Tensor y = decoder->forward(torch::cat(parts, 1));
  return classes ? y : y.squeeze(1);
}

std::unique_ptr<Task> MakeTask(const TrainOptions& o, const PartitionConfig& config) {
  switch (o.Kind()) {
    case TaskKind::kLink:
      if (config.label_kind != LabelKind::kClass) {
        throw ConfigError("--task link: " + o.part_config + " has " +
                          LabelKindName(config.label_kind) +
                          " label rows; link prediction's evaluation reads class ids");
      }
      return std::make_unique<LinkTask>(o, config);
    case TaskKind::kMultilabel:
    case TaskKind::kRegression:
      return std::make_unique<RowTask>(config);
    case TaskKind::kEdgeClass:
    case TaskKind::kEdgeRegression:
      return std::make_unique<EdgeTask>(o, config);
    case TaskKind::kNode:
      break;
  }
  return std::make_unique<NodeTask>(config);
}

}  // namespace gnn
