#include "train/loop/training_loop.h"

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/progress.h"
#include "common/random.h"
#include "common/timer.h"
#include "train/loop/checkpoint.h"

namespace gnn {

namespace fs = std::filesystem;
using nlohmann::json;

AllCoresWhileIdle::AllCoresWhileIdle(const TrainOptions& o) : before_(torch::get_num_threads()) {
  if (o.num_omp_threads == 0) torch::set_num_threads(CoreShare(o));
}

AllCoresWhileIdle::~AllCoresWhileIdle() { torch::set_num_threads(before_); }

std::unique_ptr<Learner> MakeLearner(const TrainOptions& o, const PartitionConfig& config) {
  if (o.Typed()) return MakeRgcnLearner(o, config);
  return MakeNodeLearner(o, config);
}

namespace {

// Where an epoch's time went, and what it saw.
struct EpochStats {
  double sample_s = 0, forward_s = 0, backward_s = 0, sparse_s = 0, allreduce_s = 0, update_s = 0;
  int64_t examples = 0, inputs = 0, steps = 0;
  bool sparse = false;  // the Learner has a sparse update
};

// Figures since the last log line.
struct SinceLog {
  Stopwatch watch;
  int64_t examples = 0, steps = 0;
  uint64_t wire = 0;
};

class TrainingLoop {
 public:
  TrainingLoop(const TrainOptions& o, const PartitionConfig& config, Learner& learner)
      : o_(o),
        config_(config),
        l_(learner),
        lead_(learner.rank() == 0),
        label_(learner.Label()),
        metric_(learner.Metric()),
        opt_(learner.module().parameters(),
             torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay)),
        signature_(learner.Signature()),
        metrics_(lead_ ? o.metrics_file : std::string(), o.resume || o.restart > 0,
                 lead_ ? o.tensorboard_dir : std::string()) {
    // Rank 0 writes the outputs: their folders are checked before training,
    // as --metrics_file and --checkpoint_dir are.
    if (lead_) {
      CheckCanWriteFile("--save_model", o.save_model);
      CheckCanWriteFile("--save_embeddings", o.save_embeddings);
    }
    Resume();
    l_.SyncParams();
  }

  json Run() {
    for (int epoch = st_.epochs_done; epoch < o_.num_epochs; ++epoch) {
      RunEpoch(epoch, epoch == st_.epochs_done ? st_.batches_done : 0);
      st_.epochs_done = epoch + 1;
      st_.batches_done = 0;
      if (o_.eval_every > 0 && ((epoch + 1) % o_.eval_every == 0 || epoch + 1 == o_.num_epochs)) {
        Evaluate(epoch + 1);
      }
      Checkpoint();
    }
    // A final write that fails still leaves the summary (gnn-train prints
    // it, then the error line).
    // The outputs are of the epoch the summary's test_acc is from (the best
    // validation), unless --save_model_last or nothing was evaluated.
    const std::string last_checksum = ParamChecksum(l_.module());
    int saved_epoch = st_.epochs_done;
    if (!best_params_.empty() && !o_.save_model_last) {
      torch::NoGradGuard no_grad;
      std::vector<torch::Tensor> params = l_.module().parameters();
      for (size_t i = 0; i < params.size(); ++i) params[i].copy_(best_params_[i]);
      saved_epoch = st_.best_epoch;
    }
    std::string output_error;
    try {
      l_.SaveOutputs(lead_, st_.epochs_done, saved_epoch);
    } catch (const DataError& e) {
      output_error = e.what();
    }
    json summary = Summary(last_checksum);
    summary["saved_model_epoch"] = saved_epoch;
    if (!output_error.empty()) summary["output_error"] = output_error;
    return summary;
  }

 private:
  // --resume, or a restart by gnn-launch: rank 0 reads the checkpoint and
  // every rank restores its bytes, so only rank 0's folder needs one.
  void Resume() {
    if (lead_ && !o_.checkpoint_dir.empty()) RemoveCheckpointTemporaries(o_.checkpoint_dir);
    if (!o_.resume && o_.restart == 0) return;
    std::string bytes = lead_ ? ReadResumeBytes(o_) : std::string();
    l_.BroadcastBytes(&bytes);
    if (bytes.empty()) {
      GNN_LOG(kWarn) << "restart " << o_.restart << ": no checkpoint"
                     << (o_.checkpoint_dir.empty() ? " (no --checkpoint_dir)" : " of this job yet")
                     << "; training from the start";
    } else {
      const std::string path = CheckpointPath(o_.checkpoint_dir);
      std::string extra;
      st_ = RestoreCheckpoint(bytes, path, l_.module(), opt_, signature_, &extra, &best_params_);
      l_.RestoreExtra(extra, path);
      GNN_LOG(kInfo) << "resumed from " << path << " at epoch " << st_.epochs_done + 1 << " batch "
                     << st_.batches_done << " (step " << st_.global_step << ")";
      // A position inside an epoch holds only for the same cut of it.
      if (st_.batches_done > 0 && (st_.world != l_.world() || st_.num_batches != l_.NumBatches())) {
        GNN_LOG(kWarn) << "the checkpoint's epoch was cut for " << st_.world << " trainers in "
                       << st_.num_batches << " batches, now " << l_.world() << " in "
                       << l_.NumBatches() << ": epoch " << st_.epochs_done + 1
                       << " starts again at batch 0";
        st_.batches_done = 0;
      }
    }
    metrics_.Rewind(st_.global_step);
    Report("resumed " + std::to_string(st_.global_step));
  }

  // Every rank gives the Learner's extra state (a collective for RGCN's
  // tables); rank 0 writes the checkpoint (atomically) and tells gnn-launch.
  void Checkpoint() {
    if (o_.checkpoint_dir.empty()) return;
    const std::string extra = l_.CheckpointExtra();
    if (!lead_) return;
    st_.world = l_.world();
    st_.num_batches = l_.NumBatches();
    metrics_.Flush();
    SaveCheckpoint(o_.checkpoint_dir, l_.module(), opt_, st_, signature_, extra, best_params_);
    Report("checkpoint " + std::to_string(st_.global_step) + " " +
           fs::absolute(CheckpointPath(o_.checkpoint_dir)).lexically_normal().string());
  }

  // A progress line for gnn-launch (which keeps it out of the logs).
  void Report(const std::string& what) const {
    if (o_.report_progress) std::cout << "@gnn " << what << std::endl;
  }

  // Epoch `epoch` from batch `first` on (> 0 when resumed mid-epoch).
  void RunEpoch(int epoch, int64_t first) {
    l_.module().train();
    Stopwatch epoch_watch;
    EpochStats es;
    SinceLog since;
    since.wire = wire_bytes_;
    l_.StartEpoch(epoch, first);
    Progress progress("epoch " + std::to_string(epoch + 1), l_.NumBatches() - first, "batches");
    for (int64_t batch = first;; ++batch) {
      // Dropout draws from LibTorch's generator: reseeding per step makes a
      // run resumed at any step identical to an uninterrupted one.
      torch::manual_seed(
          MixSeed(MixSeed(MixSeed(o_.seed, static_cast<uint64_t>(epoch) + 1), l_.rank()),
                  static_cast<uint64_t>(batch)));
      const uint64_t wire_before = l_.WireBytes();
      Stopwatch t;
      const bool more = l_.NextBatch(epoch, batch);
      es.sample_s += t.Seconds();
      if (!more) break;
      const torch::Tensor loss = Step(&es, wire_before);
      st_.batches_done = batch + 1;
      ++st_.global_step;
      Report("step " + std::to_string(st_.global_step));
      progress.Add();
      if (es.steps % o_.log_every == 0 && loss.defined()) LogStep(epoch, es, loss, &since);
      // After the step's metrics: a checkpoint covers everything logged.
      if (o_.checkpoint_every > 0 && st_.global_step % o_.checkpoint_every == 0 &&
          st_.batches_done < l_.NumBatches()) {
        Checkpoint();
      }
    }
    progress.Done();
    const double epoch_s = epoch_watch.Seconds();
    train_s_ += epoch_s;
    allreduce_s_ += es.allreduce_s;
    examples_ += es.examples;
    ++epochs_run_;
    LogEpoch(epoch, epoch_s, es);
  }

  // One step: forward, loss and backward (skipped for an empty batch: a
  // rank whose share is one short still joins the all-reduce with zero
  // gradients), the Learner's sparse update, all-reduce, update.
  torch::Tensor Step(EpochStats* es, uint64_t wire_before) {
    Stopwatch t;
    opt_.zero_grad();
    torch::Tensor loss = l_.Loss();
    es->forward_s += t.Seconds();
    t.Reset();
    if (loss.defined()) loss.backward();
    es->backward_s += t.Seconds();
    t.Reset();
    es->sparse |= l_.AfterBackward();
    es->sparse_s += t.Seconds();
    wire_bytes_ += l_.WireBytes() - wire_before;
    t.Reset();
    allreduce_bytes_ += l_.AllreduceGrads();
    es->allreduce_s += t.Seconds();
    t.Reset();
    opt_.step();
    es->update_s += t.Seconds();
    es->examples += l_.BatchExamples();
    es->inputs += l_.BatchInputs();
    ++es->steps;
    ++steps_;
    return loss;
  }

  void LogStep(int epoch, const EpochStats& es, const torch::Tensor& loss_tensor, SinceLog* since) {
    const double loss = loss_tensor.item<double>();
    const double acc = l_.TrainAccuracy();
    const double speed =
        static_cast<double>(es.examples - since->examples) / since->watch.Seconds();
    // Sampling, feature and embedding traffic of this rank per step.
    const double wire_mb = static_cast<double>(wire_bytes_ - since->wire) / 1e6 /
                           static_cast<double>(std::max<int64_t>(1, es.steps - since->steps));
    since->watch.Reset();
    since->examples = es.examples;
    since->steps = es.steps;
    since->wire = wire_bytes_;
    const bool wire = l_.CountsWire() && (l_.world() > 1 || !o_.standalone);
    GNN_LOG(kInfo) << label_ << " | Epoch " << std::setw(5) << std::setfill('0') << epoch + 1
                   << " | Step " << std::setw(5) << es.steps << std::setfill(' ') << std::fixed
                   << " | Loss " << std::setprecision(4) << loss << " | " << metric_.train_title
                   << " " << acc << " | Speed (samples/sec) " << std::setprecision(1) << speed
                   << (wire ? " | Wire (MB/step) " + std::to_string(wire_mb) : std::string());
    json record = {{"type", "step"}, {"epoch", epoch + 1},     {"step", es.steps},
                   {"loss", loss},   {metric_.train_key, acc}, {"samples_per_s", speed}};
    if (l_.CountsWire()) record["wire_mb_per_step"] = wire_mb;
    metrics_.Write(record, st_.global_step);
  }

  void LogEpoch(int epoch, double epoch_s, const EpochStats& es) {
    std::ostringstream sparse;
    if (es.sparse)
      sparse << ", sparse update: " << std::fixed << std::setprecision(4) << es.sparse_s;
    GNN_LOG(kInfo) << label_ << ", Epoch Time(s): " << std::fixed << std::setprecision(4) << epoch_s
                   << ", sample+data_copy: " << es.sample_s << ", forward: " << es.forward_s
                   << ", backward: " << es.backward_s << sparse.str()
                   << ", allreduce: " << es.allreduce_s << ", update: " << es.update_s
                   << ", #seeds: " << es.examples << ", #inputs: " << es.inputs;
    json record = {{"type", "epoch"},
                   {"epoch", epoch + 1},
                   {"epoch_time_s", epoch_s},
                   {"sample_s", es.sample_s},
                   {"forward_s", es.forward_s},
                   {"backward_s", es.backward_s},
                   {"allreduce_s", es.allreduce_s},
                   {"update_s", es.update_s},
                   {"seeds", es.examples},
                   {"inputs", es.inputs},
                   {"param_checksum", ParamChecksum(l_.module())}};
    if (es.sparse) record["sparse_update_s"] = es.sparse_s;
    metrics_.Write(record, st_.global_step);
  }

  // Validation and test after `epoch` (1-based); the best validation's test
  // accuracy is kept.
  void Evaluate(int epoch) {
    Stopwatch ev;
    AllCoresWhileIdle all_cores(o_);
    const auto [val, test] =
        l_.Evaluate(epoch, [&](const json& j) { metrics_.Write(j, st_.global_step); });
    l_.module().train();
    st_.final_test = test;
    // A diverged model's NaN figure never stays the best.
    if (st_.best_epoch == 0 || (std::isnan(st_.best_val) && !std::isnan(val)) ||
        metric_.Better(val, st_.best_val)) {
      st_.best_val = val;
      st_.test_at_best = test;
      st_.best_epoch = epoch;
      // What --save_model writes.
      if (l_.SavesBestEpoch()) {
        torch::NoGradGuard no_grad;
        best_params_.clear();
        for (const torch::Tensor& p : l_.module().parameters())
          best_params_.push_back(p.detach().clone());
        l_.OnBestEpoch();
      }
    }
    GNN_LOG(kInfo) << label_ << ", Val " << metric_.title << " " << std::fixed
                   << std::setprecision(4) << val << ", Test " << metric_.title << " " << test
                   << ", time: " << ev.Seconds();
    metrics_.Write({{"type", "eval"},
                    {"epoch", epoch},
                    {"val_" + metric_.key, val},
                    {"test_" + metric_.key, test},
                    {"eval_time_s", ev.Seconds()}},
                   st_.global_step);
  }

  json Summary(const std::string& last_checksum) {
    if (o_.eval_every > 0 && st_.best_epoch > 0) {
      const std::string& k = metric_.key;
      GNN_LOG(kInfo) << label_ << ", test_" << k << " " << std::fixed << std::setprecision(4)
                     << st_.test_at_best << " is from epoch " << st_.best_epoch << " (best "
                     << (k == "acc" ? std::string("validation accuracy") : "val_" + k) << " "
                     << st_.best_val << "); after the last epoch (" << st_.epochs_done
                     << "): final_test_" << k << " " << st_.final_test;
    }
    // Throughput of the whole job: every rank's examples over the slowest clock.
    const double all_examples = l_.SumOverRanks(static_cast<double>(examples_));
    json summary = {
        {"graph_name", config_.graph_name},
        {"model", o_.model},
        {"task", o_.task},
        // No evaluation: accuracy says 0 (as always), other figures null.
        {"best_val_" + metric_.key, st_.best_epoch > 0     ? json(st_.best_val)
                                    : metric_.key == "acc" ? json(0.0)
                                                           : json(nullptr)},
        {"test_" + metric_.key, st_.test_at_best},
        {"final_test_" + metric_.key, st_.final_test},
        {"best_epoch", st_.best_epoch},
        // Which evaluation each figure comes from (0: none ran).
        {"test_" + metric_.key + "_epoch", st_.best_epoch},
        {"final_test_" + metric_.key + "_epoch", o_.eval_every > 0 ? st_.epochs_done : 0},
        {"epochs", st_.epochs_done},
        {"epochs_run", epochs_run_},
        {"steps", st_.global_step},
        {"mean_epoch_time_s", epochs_run_ ? train_s_ / epochs_run_ : 0.0},
        {"seeds_per_s", train_s_ > 0 ? all_examples / train_s_ : 0.0},
        {"num_trainers", l_.world()},
        {"rank", l_.rank()},
        {"allreduce_time_s", epochs_run_ ? allreduce_s_ / epochs_run_ : 0.0},
        {"allreduce_bytes_per_step", steps_ ? allreduce_bytes_ / steps_ : 0},
        {"param_checksum", last_checksum},  // after the last step
    };
    if (l_.CountsWire()) {
      // Sampling, feature and embedding traffic of this rank per training
      // step (requests and replies; 0 standalone).
      summary["wire_bytes_per_step"] = steps_ ? static_cast<double>(wire_bytes_) / steps_ : 0.0;
    }
    l_.Summarize(&summary);
    metrics_.Write({{"type", "summary"}, {"summary", summary}}, st_.global_step);
    return summary;
  }

  const TrainOptions& o_;
  const PartitionConfig& config_;
  Learner& l_;
  const bool lead_;  // rank 0 writes metrics, checkpoints, the model
  const std::string label_;
  const EvalMetric metric_;
  torch::optim::Adam opt_;
  const std::string signature_;
  MetricsWriter metrics_;
  TrainState st_;
  std::vector<torch::Tensor> best_params_;  // the best validation's (--save_model's)
  double train_s_ = 0, allreduce_s_ = 0;
  int64_t examples_ = 0, allreduce_bytes_ = 0, steps_ = 0;
  uint64_t wire_bytes_ = 0;
  int epochs_run_ = 0;
};

}  // namespace

json RunTrainingLoop(const TrainOptions& o, const PartitionConfig& config, Learner& learner) {
  return TrainingLoop(o, config, learner).Run();
}

}  // namespace gnn
