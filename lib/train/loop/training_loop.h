// The one training loop of gnn-train, whatever the model: epochs of steps
// (each step reseeded, so a run resumed anywhere is the one never stopped),
// DGL's log lines, evaluation every --eval_every epochs with the best
// validation's test accuracy kept, checkpoints (every epoch and every
// --checkpoint_every steps) and --resume / restarts, the final outputs and
// the JSON summary. A model plugs in as a Learner: its batches, its
// forward pass and loss, its collectives, its evaluation and what it saves.
// GraphSAGE (node and link tasks) and RGCN are the Learners today; the next
// model is one more Learner and one more case in MakeLearner.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "partition/config.h"
#include "train/loop/metrics.h"
#include "train/options/train_options.h"

namespace gnn {

// What a model brings to the loop. The loop owns the schedule, the
// optimizer (Adam over module()'s parameters), the metrics and the
// checkpoint files; a Learner owns its model, its data source and the
// other trainers' group. Every method is called by every rank at the same
// point of the schedule (several are collectives), from the main thread.
class Learner {
 public:
  virtual ~Learner() = default;

  // The trainers' group: this rank, how many, DGL's log prefix ("Part 0").
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual std::string Label() const = 0;
  // The model whose parameters the loop optimizes and checkpoints.
  virtual torch::nn::Module& module() = 0;
  // What a checkpoint must match to be resumed (model, graph, widths...).
  virtual std::string Signature() const = 0;
  // Batches per epoch, the same on every rank.
  virtual int64_t NumBatches() const = 0;

  // Epoch `epoch` starts at batch `first` (> 0 when resumed mid-epoch).
  virtual void StartEpoch(int epoch, int64_t first) = 0;
  // Samples (or receives) batch `batch` of the epoch; false after the last.
  virtual bool NextBatch(int epoch, int64_t batch) = 0;
  // The current batch's loss (forward pass), undefined for an empty batch
  // (a rank whose share is one short still joins the collectives).
  virtual torch::Tensor Loss() = 0;
  // After backward, before the all-reduce: RGCN's sparse embedding update.
  // Returns true when it did something worth timing ("sparse update").
  virtual bool AfterBackward() { return false; }
  // Averages dense gradients across ranks; returns bytes all-reduced.
  virtual int64_t AllreduceGrads() = 0;
  // Training examples and layer-0 inputs of the current batch, and the
  // share of its examples the model got right (only at log steps).
  virtual int64_t BatchExamples() const = 0;
  virtual int64_t BatchInputs() const = 0;
  virtual double TrainAccuracy() = 0;
  // How the evaluation's figures are named and compared (and what
  // TrainAccuracy is): accuracy unless the task says otherwise.
  virtual EvalMetric Metric() const { return {}; }
  // Bytes this rank sent and received over sockets so far, when the
  // Learner counts them (CountsWire); the loop reports them per step.
  virtual bool CountsWire() const { return false; }
  virtual uint64_t WireBytes() const { return 0; }

  // Validation and test accuracy after `epoch` (1-based); tasks with more
  // figures log them and `record` them.
  virtual std::pair<double, double> Evaluate(int epoch, const RecordFn& record) = 0;

  // Checkpoint state beyond the model and optimizer (RGCN: the embedding
  // tables); every rank calls (a collective), rank 0's bytes are stored.
  virtual std::string CheckpointExtra() { return ""; }
  virtual void RestoreExtra(const std::string& /*bytes*/, const std::string& /*source*/) {}

  // Rank 0's parameters to every rank; rank 0's bytes to every rank; sums.
  virtual void SyncParams() = 0;
  virtual void BroadcastBytes(std::string* bytes) = 0;
  virtual double SumOverRanks(double v) = 0;

  // --save_model (rank 0, `lead`) and --save_embeddings (every rank
  // calls: a collective) of the module's parameters, which are those of
  // epoch `saved_epoch`; DataError when a file cannot be written.
  virtual void SaveOutputs(bool lead, int epochs_done, int saved_epoch) = 0;
  // Whether the loop keeps the best validation's parameters for the
  // outputs (false: its last epoch is saved).
  virtual bool SavesBestEpoch() const { return true; }
  // The epoch just evaluated is the best so far (every rank calls, after
  // the loop kept module()'s parameters): keep what the outputs need
  // beyond them (RGCN: its embedding tables, from the servers).
  virtual void OnBestEpoch() {}
  // Model-specific entries of the final summary (every rank calls).
  virtual void Summarize(nlohmann::json* summary) = 0;
};

// The Learner of o.model (GraphSAGE, GAT, GCN for --task node and link; RGCN).
std::unique_ptr<Learner> MakeLearner(const TrainOptions& o, const PartitionConfig& config);
std::unique_ptr<Learner> MakeNodeLearner(const TrainOptions& o, const PartitionConfig& config);
std::unique_ptr<Learner> MakeRgcnLearner(const TrainOptions& o, const PartitionConfig& config);

// Runs the loop over `learner`; returns the summary (RunTrain's).
nlohmann::json RunTrainingLoop(const TrainOptions& o, const PartitionConfig& config,
                               Learner& learner);

// The trainer's whole core share for LibTorch while nothing samples beside
// it (evaluation, embeddings), unless the user fixed --num_omp_threads.
class AllCoresWhileIdle {
 public:
  explicit AllCoresWhileIdle(const TrainOptions& o);
  ~AllCoresWhileIdle();

 private:
  int before_;
};

}  // namespace gnn
