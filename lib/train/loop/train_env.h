// Where a trainer's mini-batches, gradient averaging and evaluation come
// from: one partition in this process (standalone), or the cluster
// (servers, samplers and the other trainers).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "partition/config.h"
#include "partition/local_partition.h"
#include "sampling/block.h"
#include "train/models/node_model.h"
#include "train/options/train_options.h"

namespace gnn {

// Node ids and labels of the train, valid and test splits.
struct LabeledSplits {
  std::vector<int64_t> nodes[3];
  std::vector<int64_t> labels[3];
};

// A multi-label or regression model's output rows and the label rows of
// every valid (0) and test (1) node, in the same order, the same on every
// rank: what their figures (ROC-AUC, RMSE) are computed from.
struct EvalRows {
  torch::Tensor out[2];     // [n_k, label width] float32
  torch::Tensor target[2];  // [n_k, label width] float32
};

// The edge tasks' labelled edges of one split, this rank's share: each
// edge's ends in global (new) ids, source first as the input lists it, and
// its class (`labels`) or value (`targets`).
struct LabeledEdges {
  std::vector<int64_t> heads, tails;
  std::vector<int64_t> labels;
  std::vector<float> targets;
  std::vector<float> features;  // a decoder that reads them: [size, decoder_edge_dim]
  int64_t size() const { return static_cast<int64_t>(heads.size()); }
};

// --inference: one partition's nodes, held by the rank that writes its
// files (the first trainer of the first machine serving it).
struct InferenceShard {
  int part = -1;                  // the partition this rank writes; -1: none
  int64_t node_start = 0;         // its nodes' global ids: [node_start, node_start + n)
  std::vector<int64_t> orig_ids;  // [n]: their ids in the input dataset
  std::vector<int64_t> labels;    // [n]: -1 where none (class ids)
  std::vector<float> targets;     // [n, label width]: multi-label / regression label rows
  std::vector<uint8_t> masks[3];  // [n]: in the train, valid, test split
  torch::Tensor logits;           // [n, C]: the last layer's rows (InferShard)
  torch::Tensor emb;              // [n, d]: the captured layer's rows, if one was asked
  int64_t size() const { return static_cast<int64_t>(orig_ids.size()); }
};

class TrainEnv {
 public:
  virtual ~TrainEnv() = default;
  virtual int rank() const { return 0; }
  virtual int world() const { return 1; }
  // "Part <rank>": DGL's log prefix (train_dist.py prints g.rank()).
  virtual std::string Label() const = 0;
  // Every rank runs the same number of batches per epoch (0 under --inference). With --task link
  // and the edge tasks the batches are edge batches (MiniBatch::pos_head... are set; the edge
  // tasks' carry each positive's label in labels or targets, and no negatives).
  virtual int64_t NumBatches() const = 0;
  // Batches of `epoch` from `first_batch` on (a run resumed mid-epoch skips
  // the ones before it: batch b of an epoch is the same whatever came first).
  virtual void StartEpoch(int epoch, int64_t first_batch) = 0;
  // The next batch of this epoch, or nullopt after NumBatches(). Blocking,
  // with the configured timeouts; throws on sampler/server failures.
  virtual std::optional<MiniBatch> Next() = 0;
  // Averages gradients across ranks; returns bytes all-reduced (0 alone).
  virtual int64_t AllreduceGrads(NodeModel& /*model*/) { return 0; }
  // Makes every rank's parameters equal rank 0's.
  virtual void SyncParams(NodeModel& /*model*/) {}
  // Makes every rank's `bytes` equal rank 0's (a checkpoint read by rank 0).
  virtual void BroadcastBytes(std::string* /*bytes*/) {}
  // Validation and test accuracy over the whole graph (layer-wise
  // full-neighbour inference), identical on every rank.
  virtual std::pair<double, double> Evaluate(NodeModel& model) = 0;
  // The same layer-wise inference for a multi-label or regression graph:
  // the valid and test rows for the task to score (every rank calls).
  virtual EvalRows EvaluateRows(NodeModel& model) = 0;
  // Final-layer output of every node in input-dataset order [N, C]; every
  // rank calls it (distributed: a collective).
  virtual torch::Tensor Embeddings(NodeModel& model) = 0;
  // Sum over ranks (identity alone).
  virtual double SumOverRanks(double v) { return v; }

  // --inference: the partition this rank writes (part -1: none), without
  // its rows; then layer-wise inference of every node with each
  // partition's rows brought to its writer (every rank calls: a
  // collective). `capture_layer` (0-based, -1: none) fills shard->emb.
  virtual InferenceShard Shard() = 0;
  virtual void InferShard(NodeModel& model, int capture_layer, InferenceShard* shard) = 0;
  // Samples carry the edges' data from now on (--inference: the model
  // file, read after the environment is up, weighs messages).
  virtual void ReadEdgeData() {}
  // The machine whose trainer writes partition `part` (its files' place).
  virtual int WriterMachine(int /*part*/) const { return 0; }

  // For --task link's evaluation (every rank calls them together):
  // Full-neighbour output of every node [num_nodes, d] in global (new) id
  // order, the same on every rank.
  virtual torch::Tensor AllNodeOutputs(NodeModel& model) = 0;
  // Train/valid/test nodes of the whole graph and their labels, the same on
  // every rank.
  virtual const LabeledSplits& Labeled() = 0;
  // This rank's share of the held-out edges (empty without --val_edges).
  virtual HeldOutEdges HeldOut() = 0;
  // The edge tasks: this rank's share of the valid (k = 0) or test (1)
  // labelled edges; every labelled edge is in exactly one rank's share.
  virtual LabeledEdges EvalEdges(int /*k*/) { return {}; }
  // Rows of every rank concatenated in rank order (identity alone).
  virtual torch::Tensor GatherRows(const torch::Tensor& rows) { return rows; }

  // A GPU trainer's hook, run on each batch by the thread that made it
  // (standalone: the loader's sampling threads), off the training loop's
  // critical path. Envs whose batches arrive otherwise ignore it.
  virtual void SetStager(std::function<void(MiniBatch&)> /*stage*/) {}
  // --gpu_cache_mb: the hottest feature rows on the trainer's GPU [rows,
  // feature_dim], which batches then leave out (MiniBatch::split_rows);
  // undefined without a cache.
  virtual torch::Tensor DeviceCache() const { return {}; }
};

// Loads partition 0 of a 1-partition config.
std::unique_ptr<TrainEnv> MakeStandaloneEnv(const TrainOptions& o, const PartitionConfig& config);
// Joins the cluster: rendezvous, servers, samplers.
std::unique_ptr<TrainEnv> MakeDistEnv(const TrainOptions& o, const PartitionConfig& config);

}  // namespace gnn
