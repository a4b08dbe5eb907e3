// Where a trainer's mini-batches, gradient averaging and evaluation come
// from: one partition in this process (standalone), or the cluster
// (servers, samplers and the other trainers).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "partition/config.h"
#include "sampling/block.h"
#include "train/sage.h"
#include "train/trainer.h"

namespace gnn {

class TrainEnv {
 public:
  virtual ~TrainEnv() = default;
  virtual int rank() const { return 0; }
  virtual int world() const { return 1; }
  // "Part 0" (DGL's log prefix), with the rank in distributed mode.
  virtual std::string Label() const = 0;
  // Every rank runs the same number of batches per epoch.
  virtual int64_t NumBatches() const = 0;
  virtual void StartEpoch(int epoch) = 0;
  // The next batch of this epoch, or nullopt after NumBatches(). Blocking,
  // with the configured timeouts; throws on sampler/server failures.
  virtual std::optional<MiniBatch> Next() = 0;
  // Averages gradients across ranks; returns bytes all-reduced (0 alone).
  virtual int64_t AllreduceGrads(GraphSage& /*model*/) { return 0; }
  // Makes every rank's parameters equal rank 0's.
  virtual void SyncParams(GraphSage& /*model*/) {}
  // Validation and test accuracy over the whole graph (layer-wise
  // full-neighbour inference), identical on every rank.
  virtual std::pair<double, double> Evaluate(GraphSage& model) = 0;
  // Final-layer output of every node in input-dataset order [N, C]
  // (standalone only; throws ConfigError otherwise).
  virtual torch::Tensor Embeddings(GraphSage& model) = 0;
  // Sum over ranks (identity alone).
  virtual double SumOverRanks(double v) { return v; }
};

// Loads partition 0 of a 1-partition config.
std::unique_ptr<TrainEnv> MakeStandaloneEnv(const TrainOptions& o, const PartitionConfig& config);
// Joins the cluster: rendezvous, servers, samplers.
std::unique_ptr<TrainEnv> MakeDistEnv(const TrainOptions& o, const PartitionConfig& config);

}  // namespace gnn
