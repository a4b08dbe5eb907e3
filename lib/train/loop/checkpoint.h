// Checkpoints: the model, the optimizer and where training stands (epoch,
// batch within it, global step), in one LibTorch archive
// (CHECKPOINT_DIR/checkpoint.pt, written atomically), with the model's
// signature so a checkpoint of another model or task is refused. Rank 0
// writes and reads it; the other ranks get its bytes over the collective.
#pragma once

#include <torch/torch.h>

#include <string>

#include "partition/config.h"
#include "train/loop/task.h"
#include "train/models/sage.h"
#include "train/options/train_options.h"

namespace gnn {

struct TrainState {
  int epochs_done = 0;       // whole epochs behind
  int64_t batches_done = 0;  // batches of epoch `epochs_done` behind (a mid-epoch checkpoint)
  int64_t global_step = 0;   // optimizer steps since training began
  double best_val = -1, test_at_best = 0, final_test = 0;
  int best_epoch = 0;
  // How epochs were cut when it was written (0: unknown, older files): a
  // mid-epoch position means something only for the same cut.
  int64_t world = 0, num_batches = 0;
};

// Order-sensitive checksum of every parameter's bytes: equal on every rank
// after every step when the all-reduce keeps the replicas identical.
std::string ParamChecksum(torch::nn::Module& model);
inline std::string ParamChecksum(GraphSage& model) { return ParamChecksum(*model); }

// "graphsage graph=... in=... hidden=... classes=... layers=..." plus the
// task's part: what a checkpoint must match to be resumed.
std::string ModelSignature(const TrainOptions& o, const PartitionConfig& c, const Task& task);

std::string CheckpointPath(const std::string& dir);

// `extra`: bytes stored beside the model (an RGCN's embedding tables and
// their sparse optimizer state); none when empty.
// `best`: the parameters of the best validation's epoch (--save_model's),
// in module order; none when empty.
void SaveCheckpoint(const std::string& dir, torch::nn::Module& model, torch::optim::Adam& opt,
                    const TrainState& st, const std::string& signature,
                    const std::string& extra = "", const std::vector<torch::Tensor>& best = {});
inline void SaveCheckpoint(const std::string& dir, GraphSage& model, torch::optim::Adam& opt,
                           const TrainState& st, const std::string& signature) {
  SaveCheckpoint(dir, *model, opt, st, signature);
}

// The bytes of DIR/checkpoint.pt; "" when there is none. DataError when it
// exists but cannot be read.
std::string ReadCheckpointBytes(const std::string& dir);

// The training state of a checkpoint's bytes, without the model (DataError
// when unreadable).
TrainState PeekCheckpointState(const std::string& bytes, const std::string& path);

// What rank 0 resumes from (--resume, or a restart by gnn-launch): the
// bytes of o.checkpoint_dir's checkpoint; DataError with --resume and none
// there. A restart takes only a checkpoint this job wrote: at least as far
// as the newest one gnn-launch saw (GNN_RESUME_STEP), none if it saw none;
// another is ignored with a warning and "" returned.
std::string ReadResumeBytes(const TrainOptions& o);

// Removes DIR/checkpoint.pt.tmp.* left by a writer that was killed.
void RemoveCheckpointTemporaries(const std::string& dir);

// Restores model, optimizer and state from a checkpoint's bytes (read from
// `path`, named in errors). DataError when they are unreadable or for
// another model (signature).
// With `extra`, the bytes SaveCheckpoint stored beside the model ("" when
// it stored none).
// With `best`, the best epoch's parameters it stored (empty when none).
TrainState RestoreCheckpoint(const std::string& bytes, const std::string& path,
                             torch::nn::Module& model, torch::optim::Adam& opt,
                             const std::string& signature, std::string* extra = nullptr,
                             std::vector<torch::Tensor>* best = nullptr);
inline TrainState RestoreCheckpoint(const std::string& bytes, const std::string& path,
                                    GraphSage& model, torch::optim::Adam& opt,
                                    const std::string& signature) {
  return RestoreCheckpoint(bytes, path, *model, opt, signature);
}

// ReadCheckpointBytes + RestoreCheckpoint; DataError when there is none.
TrainState LoadCheckpoint(const std::string& dir, torch::nn::Module& model, torch::optim::Adam& opt,
                          const std::string& signature);
inline TrainState LoadCheckpoint(const std::string& dir, GraphSage& model, torch::optim::Adam& opt,
                                 const std::string& signature) {
  return LoadCheckpoint(dir, *model, opt, signature);
}

}  // namespace gnn
