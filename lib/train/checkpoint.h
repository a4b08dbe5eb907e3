// Checkpoints: the model, the optimizer and where training stands, in one
// LibTorch archive (CHECKPOINT_DIR/checkpoint.pt, written atomically), with
// the model's signature so a checkpoint of another model or task is refused.
#pragma once

#include <torch/torch.h>

#include <string>

#include "partition/config.h"
#include "train/sage.h"
#include "train/task.h"
#include "train/trainer.h"

namespace gnn {

struct TrainState {
  int epochs_done = 0;
  double best_val = -1, test_at_best = 0, final_test = 0;
  int best_epoch = 0;
};

// Order-sensitive checksum of every parameter's bytes: equal on every rank
// after every step when the all-reduce keeps the replicas identical.
std::string ParamChecksum(GraphSage& model);

// "graphsage graph=... in=... hidden=... classes=... layers=..." plus the
// task's part: what a checkpoint must match to be resumed.
std::string ModelSignature(const TrainOptions& o, const PartitionConfig& c, const Task& task);

void SaveCheckpoint(const std::string& dir, GraphSage& model, torch::optim::Adam& opt,
                    const TrainState& st, const std::string& signature);

// DataError naming the file when it is missing, unreadable, or for another
// model (signature).
TrainState LoadCheckpoint(const std::string& dir, GraphSage& model, torch::optim::Adam& opt,
                          const std::string& signature);

}  // namespace gnn
