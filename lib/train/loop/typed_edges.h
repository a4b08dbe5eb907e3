// A typed graph's edge task (gnn-train --model rgcn|rgat --task
// edge_class|edge_regression [--target_etype src:rel:dst]), GraphStorm's
// edge classification and regression on a heterogeneous graph: the
// labelled relation's edges are the seeds, split across trainers evenly;
// a batch samples both ends' typed neighbourhoods with the batch's own
// edges (and their reverses, any relation between the same two nodes)
// kept out (--exclude_target_edges, GraphStorm's remove_target_edge_type);
// RGCN's last layer gives each end a num_hidden-wide embedding and the
// homogeneous edge tasks' decoder (an MLP over the two, source first)
// scores the pair. Cross-entropy or mean squared error; valid and test
// edges are judged on sampled neighbourhoods, as RGCN's node task is.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "partition/config.h"
#include "train/loop/hetero_source.h"
#include "train/loop/metrics.h"
#include "train/loop/train_env.h"
#include "train/loop/typed_model.h"
#include "train/options/train_options.h"

namespace gnn {

// This rank's labelled edges of the train, valid and test splits (ends in
// global new ids, source first), and the most train edges any rank takes
// (every rank runs that many edges' batches).
struct TypedEdgeSplits {
  LabeledEdges split[3];
  int64_t max_train_share = 0;
};

// Partition `part`'s labelled edges (its files), shared evenly by the
// trainers of the machines serving it: `num_machines` machines of
// `num_trainers` trainers each, this rank trainer `trainer_id` of machine
// `machine_id` (standalone: 1, 1, 0, 0). DataError naming a file when the
// partition's edge files are bad; DataError when no rank has a train edge.
TypedEdgeSplits ReadTypedEdgeSplits(const TrainOptions& o, const PartitionConfig& config, int part,
                                    int num_machines, int num_trainers, int machine_id,
                                    int trainer_id);

class TypedEdgeTask {
 public:
  TypedEdgeTask(const TrainOptions& o, const PartitionConfig& config, TypedEdgeSplits splits);
  // Registers the decoder in `model` (it trains, averages and saves with it).
  void Attach(torch::nn::Module& model);
  int64_t NumBatches() const { return num_batches_; }
  // Edges of the current batch.
  int64_t Examples() const { return static_cast<int64_t>(current_.heads.size()); }
  bool classes() const { return classes_; }
  int64_t out_dim() const { return out_; }
  // The plans of epoch `epoch`'s batches from `first` on: each batch's
  // edges (shuffled from MixSeed(seed, epoch)), its seeds (the ends, unique,
  // first seen first) and, with --exclude_target_edges, its edges as pairs
  // to keep out; remembered until the next plans.
  std::vector<TypedBatchPlan> EpochPlans(int epoch, int64_t first);
  // The plans of split k's (1 valid, 2 test) edges, batch_size_eval at a
  // time, nothing excluded, a fixed seed per batch.
  std::vector<TypedBatchPlan> EvalPlans(int k);
  // Batch `index` of the current plans is the one in use (its seeds must
  // be the plan's).
  void Use(int64_t index, const std::vector<int64_t>& seeds);
  // The current batch's loss from the model's rows for its seeds, and the
  // share of its edges classed right (classes) or its RMSE (values).
  torch::Tensor Loss(const torch::Tensor& out);
  double last_figure() const { return last_figure_; }
  // Right answers (classes) or squared errors (values) of the current batch.
  double Score(const torch::Tensor& out);
  // Figures of split k from Score's sum over its `n` edges (every rank's).
  double Figure(double sum, double n) const;
  double EvalCount(int k) const { return static_cast<double>(splits_.split[k].size()); }
  EvalMetric Metric() const;
  std::string Signature() const;

 private:
  struct Batch {
    std::vector<int64_t> seeds;
    std::vector<int64_t> heads, tails;  // positions in seeds
    std::vector<int64_t> labels;
    std::vector<float> targets;
    std::vector<float> features;  // the decoder's edge features, [edges, decoder_edge_dim]
  };
  // Plans batch `index` of edges `which` of `edges` into batches_.
  TypedBatchPlan Plan(int64_t index, const LabeledEdges& edges, const std::vector<int64_t>& which,
                      uint64_t rng_seed, bool exclude);
  torch::Tensor Decode(const torch::Tensor& out);
  torch::Tensor Truth(const torch::Device& device);

  const TrainOptions& o_;
  const PartitionConfig& config_;
  TypedEdgeSplits splits_;
  bool classes_;
  int64_t out_;
  int64_t num_batches_ = 0;
  torch::nn::Module* model_ = nullptr;  // holds the decoder (Attach)
  std::map<int64_t, Batch> batches_;    // the current plans'
  Batch current_;
  double last_figure_ = 0;
};

// gnn-train --inference of a typed edge model (`model` built from the file,
// its parameters and embedding tables in place): each partition's writer
// (the first trainer of the machine serving it) decodes the labelled
// relation's edges its partition stores (--node_mask picks them by split;
// --edge_ids lists input edge ids, lines of the relation's input) from
// both ends' embeddings over full neighbourhoods (--fan_out samples them),
// batch_size_eval edges at a time, and writes
// DIR/part<i>/edge_ids.npy, logits.npy and pred.npy (int64 class), or
// pred.npy (float32 value), as the homogeneous edge inference does;
// manifest.json by rank 0. Returns the summary (edges_written, the written
// valid and test edges' figures). Every rank calls.
nlohmann::json RunTypedEdgeInference(TypedModel& model, const TrainOptions& o,
                                     const PartitionConfig& config, const nlohmann::json& meta,
                                     const std::vector<std::vector<int>>& fanouts);

}  // namespace gnn
