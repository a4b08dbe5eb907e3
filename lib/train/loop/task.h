// What a trainer learns from a batch and how the model is judged: node
// classification (--task node), multi-label node classification (--task
// multilabel), node regression (--task node_regression), unsupervised
// link prediction (--task link, DGL's train_dist_unsupervised), and edge
// classification and regression (--task edge_class, edge_regression). The training loop
// (trainer.cc) sees only this interface; the next tasks (RGCN's, other models') are one more
// subclass and one more case in MakeTask.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "partition/config.h"
#include "sampling/block.h"
#include "train/loop/metrics.h"
#include "train/loop/train_env.h"
#include "train/models/node_model.h"
#include "train/options/train_options.h"

namespace gnn {

class Task {
 public:
  virtual ~Task() = default;
  // The model's output width.
  virtual int64_t OutputDim() const = 0;
  // Registers what the task learns beside the model (the edge tasks'
  // decoder) as submodules of `model`, so its parameters train, average,
  // checkpoint and save with the model's. Called once, before training.
  virtual void Attach(NodeModel& /*model*/) {}
  // Added to the checkpoint's model signature ("" for the node task, so
  // its checkpoints stay readable).
  virtual std::string Signature() const = 0;
  // Training examples in a batch: its seeds, or its positive edges.
  virtual int64_t Examples(const MiniBatch& mb) const = 0;
  // The batch's loss from the model's output rows for its seeds.
  virtual torch::Tensor Loss(const torch::Tensor& out, MiniBatch& mb) = 0;
  // The share of the batch's examples the output gets right (log lines).
  virtual double TrainAccuracy(const torch::Tensor& out, MiniBatch& mb) = 0;
  // Validation and test accuracy after `epoch` (1-based); every rank calls
  // it together. Tasks with more figures log and record them.
  virtual std::pair<double, double> Evaluate(TrainEnv& env, NodeModel& model, int epoch,
                                             const std::string& label, const RecordFn& record) = 0;
  // How the evaluation's figures are named and compared.
  virtual EvalMetric Metric() const { return {}; }
  // Task-specific entries of the final summary.
  virtual void Summarize(nlohmann::json* /*summary*/) const {}
};

std::unique_ptr<Task> MakeTask(const TrainOptions& o, const PartitionConfig& config);

// Regression's figure: RMSE, lower is better (the best epoch has the
// lowest validation RMSE).
EvalMetric RmseMetric();

// The edge tasks' decoder: an MLP over the two ends' `hidden`-wide
// embeddings, concatenated source first, and the edge's own `edge_dim`
// features when edge_dim > 0 (Linear(2h + edge_dim, h), ReLU, Linear(h,
// out)), registered in `model` as "decoder" (out: the classes, or 1 value).
void AttachEdgeDecoder(torch::nn::Module& model, int64_t hidden, int64_t out, int64_t edge_dim = 0);
// The decoder's rows for the edges heads[i] -> tails[i] from node rows
// `emb` and, for a decoder that reads them, the edges' features
// `edge_inputs` [k, edge_dim] ([k, out]; a value per edge [k] when
// `classes` is false). Error when `model` has no decoder.
torch::Tensor DecodeEdges(torch::nn::Module& model, const torch::Tensor& emb,
                          const torch::Tensor& heads, const torch::Tensor& tails, bool classes,
                          const torch::Tensor& edge_inputs = {});

}  // namespace gnn
