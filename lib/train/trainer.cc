#include "train/trainer.h"

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>
#include <tuple>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/npy.h"
#include "common/parallel.h"
#include "common/progress.h"
#include "common/sha256.h"
#include "common/tensorboard.h"
#include "common/timer.h"
#include "partition/config.h"
#include "partition/local_partition.h"
#include "sampling/loader.h"
#include "sampling/sampler.h"
#include "train/checkpoint.h"
#include "train/hetero_trainer.h"
#include "train/metrics.h"
#include "train/sage.h"
#include "train/task.h"
#include "train/train_env.h"

namespace gnn {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<int> TrainOptions::Fanouts() const {
  std::vector<int> out;
  std::stringstream ss(fan_out);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    try {
      size_t used = 0;
      int v = std::stoi(tok, &used);
      if (used != tok.size() || v < -1) throw std::invalid_argument(tok);
      out.push_back(v);
    } catch (const std::exception&) {
      throw ConfigError("--fan_out must be comma-separated integers >= -1, got '" + fan_out + "'");
    }
  }
  return out;
}

void TrainOptions::Validate() const {
  if (part_config.empty()) throw ConfigError("--part_config is required");
  if (num_epochs < 1) throw ConfigError("--num_epochs must be >= 1");
  if (batch_size < 1) throw ConfigError("--batch_size must be >= 1");
  if (batch_size_eval < 1) throw ConfigError("--batch_size_eval must be >= 1");
  if (num_hidden < 1) throw ConfigError("--num_hidden must be >= 1");
  if (num_layers < 1) throw ConfigError("--num_layers must be >= 1");
  if (!(lr > 0)) throw ConfigError("--lr must be > 0");
  if (dropout < 0 || dropout >= 1) throw ConfigError("--dropout must be in [0, 1)");
  if (weight_decay < 0) throw ConfigError("--weight_decay must be >= 0");
  if (log_every < 1) throw ConfigError("--log_every must be >= 1");
  if (eval_every < 0) throw ConfigError("--eval_every must be >= 0 (0 = no evaluation)");
  if (num_workers < 0) throw ConfigError("--num_workers must be >= 0");
  if (prefetch < 1) throw ConfigError("--prefetch must be >= 1");
  if (model != "graphsage" && model != "rgcn") {
    throw ConfigError("--model must be graphsage or rgcn, got '" + model + "'");
  }
  if (Rgcn()) {
    if (Kind() != TaskKind::kNode) throw ConfigError("--model rgcn trains --task node only");
    if (!save_embeddings.empty()) {
      throw ConfigError(
          "--save_embeddings writes GraphSAGE outputs; --model rgcn has --save_model");
    }
    if (!(sparse_lr > 0)) throw ConfigError("--sparse_lr must be > 0");
    if (sparse_optimizer != "adagrad" && sparse_optimizer != "adam") {
      throw ConfigError("--sparse_optimizer must be adagrad or adam, got '" + sparse_optimizer +
                        "'");
    }
    // Its --fan_out names relations: checked against the config (ParseTypedFanouts).
  } else if (static_cast<int>(Fanouts().size()) != num_layers) {
    throw ConfigError("--fan_out '" + fan_out + "' has " + std::to_string(Fanouts().size()) +
                      " entries but --num_layers is " + std::to_string(num_layers));
  }
  if (resume && checkpoint_dir.empty()) throw ConfigError("--resume needs --checkpoint_dir");
  if (checkpoint_every < 0) throw ConfigError("--checkpoint_every must be >= 0");
  if (checkpoint_every > 0 && checkpoint_dir.empty())
    throw ConfigError("--checkpoint_every needs --checkpoint_dir");
  if (Kind() == TaskKind::kLink && num_negs < 1) {
    throw ConfigError("--num_negs must be >= 1, got " + std::to_string(num_negs));
  }
  if (!standalone) {
    if (ip_config.empty()) {
      throw ConfigError("--ip_config is required without --standalone (or set GNN_IP_CONFIG)");
    }
    if (num_trainers < 1) throw ConfigError("--num_trainers must be >= 1");
    if (num_servers < 1) throw ConfigError("--num_servers must be >= 1");
    if (num_samplers < 0) throw ConfigError("--num_samplers must be >= 0");
    if (master_port < 1 || master_port > 65535) throw ConfigError("--master_port out of range");
    if (rendezvous_timeout_s < 1) throw ConfigError("--rendezvous_timeout_s must be >= 1");
    if (request_timeout_ms < 1) throw ConfigError("--request_timeout_ms must be >= 1");
  }
}

TaskKind TrainOptions::Kind() const {
  if (task == "node") return TaskKind::kNode;
  if (task == "link") return TaskKind::kLink;
  throw ConfigError("--task must be node or link, got '" + task + "'");
}

int DefaultTorchThreads(const TrainOptions& o) {
  if (o.num_omp_threads > 0) return o.num_omp_threads;
  // Debian's LibTorch starts with one OpenMP thread whatever the core count,
  // so "default" is set here: this trainer's share of the machine's cores
  // (DGL's launcher gives each of num_trainers an equal share), less the
  // sampling that runs beside the model (standalone: --num_workers
  // threads; distributed: the in-process sampling thread, or this
  // trainer's gnn-sampler processes). OpenMP threads that share a core with
  // a sampler spin while it runs, and both slow down.
  // --model rgcn samples inside its training loop, between steps.
  const int samplers = o.Rgcn()       ? 0
                       : o.standalone ? o.num_workers
                                      : (o.num_samplers == 0 ? 1 : o.num_samplers);
  return std::max(1, CoreShare(o) - samplers);
}

int CoreShare(const TrainOptions& o) {
  const int cores = ResolveThreads(0);
  return o.standalone ? cores : std::max(1, cores / std::max(1, o.num_trainers));
}

namespace {

// The trainer's whole core share for LibTorch while nothing samples beside
// it (evaluation, embeddings), unless the user fixed --num_omp_threads.
class AllCoresWhileIdle {
 public:
  explicit AllCoresWhileIdle(const TrainOptions& o) : before_(torch::get_num_threads()) {
    if (o.num_omp_threads == 0) torch::set_num_threads(CoreShare(o));
  }
  ~AllCoresWhileIdle() { torch::set_num_threads(before_); }

 private:
  int before_;
};

}  // namespace

namespace {

// Where an epoch's time went, and what it saw.
struct EpochStats {
  double sample_s = 0, forward_s = 0, backward_s = 0, allreduce_s = 0, update_s = 0;
  int64_t examples = 0, inputs = 0, steps = 0;
};

// The checks that need the partition config.
PartitionConfig LoadCheckedConfig(const TrainOptions& o) {
  if (o.num_gpus > 0 && !torch::cuda::is_available()) {
    throw ConfigError("--num_gpus " + std::to_string(o.num_gpus) +
                      " requested, but this gnn-train has no CUDA device (LibTorch without CUDA); "
                      "use --num_gpus -1 for CPU");
  }
  PartitionConfig config = LoadPartitionConfig(o.part_config);
  if (o.Rgcn() && !config.hetero()) {
    throw ConfigError("--model rgcn needs a heterogeneous partitioning; " + o.part_config +
                      " has one node type (use --model graphsage)");
  }
  if (!o.Rgcn()) config.RequireHomogeneous("gnn-train --model graphsage (use --model rgcn)");
  if (o.Rgcn() && !o.predict_category.empty() && o.predict_category != config.target_ntype) {
    throw ConfigError("--predict_category " + o.predict_category + ": " + o.part_config +
                      " was partitioned with labels on '" + config.target_ntype + "'");
  }
  if (!o.graph_name.empty() && o.graph_name != config.graph_name) {
    throw ConfigError("--graph_name " + o.graph_name + " does not match " + o.part_config +
                      " (graph_name " + config.graph_name + ")");
  }
  if (config.num_classes < 1) throw DataError(o.part_config + ": num_classes is 0");
  if (o.standalone && config.num_parts != 1) {
    throw ConfigError("--standalone needs a 1-partition config, but " + o.part_config + " has " +
                      std::to_string(config.num_parts) +
                      " partitions (re-run gnn-partition with --num_parts 1)");
  }
  return config;
}

// One training run: the environment, the task, the model and optimizer,
// and what has been measured so far. Run() is the loop: epochs of steps,
// evaluation, checkpoints, outputs, summary.
class Training {
 public:
  Training(const TrainOptions& o, const PartitionConfig& config)
      : o_(o),
        config_(config),
        env_(o.standalone ? MakeStandaloneEnv(o, config) : MakeDistEnv(o, config)),
        lead_(env_->rank() == 0),
        label_(env_->Label()),
        task_((torch::manual_seed(o.seed), MakeTask(o, config))),
        model_(config.feature_dim, o.num_hidden, task_->OutputDim(), o.num_layers, o.dropout),
        opt_(model_->parameters(), torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay)),
        signature_(ModelSignature(o, config, *task_)),
        metrics_(lead_ ? o.metrics_file : std::string(), o.resume || o.restart > 0,
                 lead_ ? o.tensorboard_dir : std::string()) {
    Resume();
    env_->SyncParams(model_);
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
    SaveOutputs();
    return Summary();
  }

 private:
  // --resume, or a restart by gnn-launch: rank 0 reads the checkpoint and
  // every rank restores its bytes, so only rank 0's folder needs one.
  void Resume() {
    if (lead_ && !o_.checkpoint_dir.empty()) RemoveCheckpointTemporaries(o_.checkpoint_dir);
    if (!o_.resume && o_.restart == 0) return;
    std::string bytes = lead_ ? ReadResumeBytes(o_) : std::string();
    env_->BroadcastBytes(&bytes);
    if (bytes.empty()) {
      GNN_LOG(kWarn) << "restart " << o_.restart << ": no checkpoint"
                     << (o_.checkpoint_dir.empty() ? " (no --checkpoint_dir)" : " of this job yet")
                     << "; training from the start";
    } else {
      st_ = RestoreCheckpoint(bytes, CheckpointPath(o_.checkpoint_dir), model_, opt_, signature_);
      GNN_LOG(kInfo) << "resumed from " << CheckpointPath(o_.checkpoint_dir) << " at epoch "
                     << st_.epochs_done + 1 << " batch " << st_.batches_done << " (step "
                     << st_.global_step << ")";
      // A position inside an epoch holds only for the same cut of it.
      if (st_.batches_done > 0 &&
          (st_.world != env_->world() || st_.num_batches != env_->NumBatches())) {
        GNN_LOG(kWarn) << "the checkpoint's epoch was cut for " << st_.world << " trainers in "
                       << st_.num_batches << " batches, now " << env_->world() << " in "
                       << env_->NumBatches() << ": epoch " << st_.epochs_done + 1
                       << " starts again at batch 0";
        st_.batches_done = 0;
      }
    }
    metrics_.Rewind(st_.global_step);
    Report("resumed " + std::to_string(st_.global_step));
  }

  // Rank 0 writes the checkpoint (atomically) and tells gnn-launch.
  void Checkpoint() {
    if (!lead_ || o_.checkpoint_dir.empty()) return;
    st_.world = env_->world();
    st_.num_batches = env_->NumBatches();
    metrics_.Flush();
    SaveCheckpoint(o_.checkpoint_dir, model_, opt_, st_, signature_);
    Report("checkpoint " + std::to_string(st_.global_step) + " " +
           fs::absolute(CheckpointPath(o_.checkpoint_dir)).lexically_normal().string());
  }

  // A progress line for gnn-launch (which keeps it out of the logs).
  void Report(const std::string& what) const {
    if (o_.report_progress) std::cout << "@gnn " << what << std::endl;
  }

  // Epoch `epoch` from batch `first` on (> 0 when resumed mid-epoch).
  void RunEpoch(int epoch, int64_t first) {
    model_->train();
    Stopwatch epoch_watch, log_watch;
    EpochStats es;
    int64_t examples_at_log = 0;
    env_->StartEpoch(epoch, first);
    Progress progress("epoch " + std::to_string(epoch + 1), env_->NumBatches() - first, "batches");
    for (int64_t batch = first;; ++batch) {
      // Dropout draws from LibTorch's generator: reseeding per step makes a
      // run resumed at any step identical to an uninterrupted one.
      torch::manual_seed(
          MixSeed(MixSeed(MixSeed(o_.seed, static_cast<uint64_t>(epoch) + 1), env_->rank()),
                  static_cast<uint64_t>(batch)));
      Stopwatch t;
      std::optional<MiniBatch> mb = env_->Next();
      es.sample_s += t.Seconds();
      if (!mb) break;
      torch::Tensor out, loss;
      Step(*mb, &es, &out, &loss);
      st_.batches_done = batch + 1;
      ++st_.global_step;
      Report("step " + std::to_string(st_.global_step));
      progress.Add();
      if (es.steps % o_.log_every == 0 && loss.defined()) {
        const double speed =
            static_cast<double>(es.examples - examples_at_log) / log_watch.Seconds();
        log_watch.Reset();
        examples_at_log = es.examples;
        LogStep(epoch, es.steps, loss.item<double>(), task_->TrainAccuracy(out, *mb), speed);
      }
      // After the step's metrics: a checkpoint covers everything logged.
      if (o_.checkpoint_every > 0 && st_.global_step % o_.checkpoint_every == 0 &&
          st_.batches_done < env_->NumBatches()) {
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
  // gradients), all-reduce, update.
  void Step(MiniBatch& mb, EpochStats* es, torch::Tensor* out, torch::Tensor* loss) {
    Stopwatch t;
    opt_.zero_grad();
    if (!mb.seeds.empty()) {
      std::vector<BlockTensors> blocks;
      for (const Block& b : mb.blocks) blocks.push_back(ToTensors(b));
      const int64_t rows =
          mb.input_means ? 2 * mb.blocks.front().num_dst : mb.blocks.front().num_src();
      torch::Tensor x =
          torch::from_blob(mb.features.data(), {rows, mb.feature_dim}, torch::kFloat32);
      *out = mb.input_means ? model_->ForwardFromMeans(blocks, x) : model_->forward(blocks, x);
      *loss = task_->Loss(*out, mb);
      es->forward_s += t.Seconds();
      t.Reset();
      loss->backward();
      es->backward_s += t.Seconds();
    }
    t.Reset();
    allreduce_bytes_ += env_->AllreduceGrads(model_);
    es->allreduce_s += t.Seconds();
    t.Reset();
    opt_.step();
    es->update_s += t.Seconds();
    es->examples += task_->Examples(mb);
    if (!mb.blocks.empty()) es->inputs += mb.blocks.front().num_src();
    ++es->steps;
    ++steps_;
  }

  void LogStep(int epoch, int64_t step, double loss, double acc, double speed) {
    GNN_LOG(kInfo) << label_ << " | Epoch " << std::setw(5) << std::setfill('0') << epoch + 1
                   << " | Step " << std::setw(5) << step << std::setfill(' ') << std::fixed
                   << " | Loss " << std::setprecision(4) << loss << " | Train Acc " << acc
                   << " | Speed (samples/sec) " << std::setprecision(1) << speed;
    metrics_.Write({{"type", "step"},
                    {"epoch", epoch + 1},
                    {"step", step},
                    {"loss", loss},
                    {"train_acc", acc},
                    {"samples_per_s", speed}},
                   st_.global_step);
  }

  void LogEpoch(int epoch, double epoch_s, const EpochStats& es) {
    GNN_LOG(kInfo) << label_ << ", Epoch Time(s): " << std::fixed << std::setprecision(4) << epoch_s
                   << ", sample+data_copy: " << es.sample_s << ", forward: " << es.forward_s
                   << ", backward: " << es.backward_s << ", allreduce: " << es.allreduce_s
                   << ", update: " << es.update_s << ", #seeds: " << es.examples
                   << ", #inputs: " << es.inputs;
    metrics_.Write({{"type", "epoch"},
                    {"epoch", epoch + 1},
                    {"epoch_time_s", epoch_s},
                    {"sample_s", es.sample_s},
                    {"forward_s", es.forward_s},
                    {"backward_s", es.backward_s},
                    {"allreduce_s", es.allreduce_s},
                    {"update_s", es.update_s},
                    {"seeds", es.examples},
                    {"inputs", es.inputs},
                    {"param_checksum", ParamChecksum(model_)}},
                   st_.global_step);
  }

  // Validation and test after `epoch` (1-based); the best validation's test
  // accuracy is kept.
  void Evaluate(int epoch) {
    Stopwatch ev;
    AllCoresWhileIdle all_cores(o_);
    const auto [val, test] = task_->Evaluate(
        *env_, model_, epoch, label_, [&](const json& j) { metrics_.Write(j, st_.global_step); });
    st_.final_test = test;
    if (val > st_.best_val) {
      st_.best_val = val;
      st_.test_at_best = test;
      st_.best_epoch = epoch;
    }
    GNN_LOG(kInfo) << label_ << ", Val Acc " << std::fixed << std::setprecision(4) << val
                   << ", Test Acc " << test << ", time: " << ev.Seconds();
    metrics_.Write({{"type", "eval"},
                    {"epoch", epoch},
                    {"val_acc", val},
                    {"test_acc", test},
                    {"eval_time_s", ev.Seconds()}},
                   st_.global_step);
  }

  // --save_model (a torch.load-able dict) and --save_embeddings.
  void SaveOutputs() {
    if (lead_ && !o_.save_model.empty()) {
      c10::Dict<std::string, torch::Tensor> dict;
      for (const auto& p : model_->named_parameters())
        dict.insert(p.key(), p.value().detach().clone());
      std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
      AtomicFile f(o_.save_model);
      f.Write(bytes.data(), bytes.size());
      f.Commit();
    }
    if (!o_.save_embeddings.empty()) {
      AllCoresWhileIdle all_cores(o_);
      torch::Tensor emb = env_->Embeddings(model_).contiguous();
      if (lead_) WriteNpy(o_.save_embeddings, emb.data_ptr<float>(), {emb.size(0), emb.size(1)});
    }
  }

  json Summary() {
    if (o_.eval_every > 0 && st_.best_epoch > 0) {
      GNN_LOG(kInfo) << label_ << ", test_acc " << std::fixed << std::setprecision(4)
                     << st_.test_at_best << " is from epoch " << st_.best_epoch
                     << " (best validation accuracy " << st_.best_val << "); after the last epoch ("
                     << st_.epochs_done << "): final_test_acc " << st_.final_test;
    }
    // Throughput of the whole job: every rank's examples over the slowest clock.
    const double all_examples = env_->SumOverRanks(static_cast<double>(examples_));
    json summary = {
        {"graph_name", config_.graph_name},
        {"best_val_acc", st_.best_val < 0 ? 0.0 : st_.best_val},
        {"test_acc", st_.test_at_best},
        {"final_test_acc", st_.final_test},
        {"best_epoch", st_.best_epoch},
        // Which evaluation each accuracy comes from (0: none ran).
        {"test_acc_epoch", st_.best_epoch},
        {"final_test_acc_epoch", o_.eval_every > 0 ? st_.epochs_done : 0},
        {"epochs", st_.epochs_done},
        {"epochs_run", epochs_run_},
        {"steps", st_.global_step},
        {"mean_epoch_time_s", epochs_run_ ? train_s_ / epochs_run_ : 0.0},
        {"seeds_per_s", train_s_ > 0 ? all_examples / train_s_ : 0.0},
        {"num_trainers", env_->world()},
        {"rank", env_->rank()},
        {"allreduce_time_s", epochs_run_ ? allreduce_s_ / epochs_run_ : 0.0},
        {"allreduce_bytes_per_step", steps_ ? allreduce_bytes_ / steps_ : 0},
        {"param_checksum", ParamChecksum(model_)},
    };
    summary["task"] = o_.task;
    task_->Summarize(&summary);
    metrics_.Write({{"type", "summary"}, {"summary", summary}}, st_.global_step);
    return summary;
  }

  const TrainOptions& o_;
  const PartitionConfig& config_;
  std::unique_ptr<TrainEnv> env_;
  const bool lead_;  // rank 0 writes metrics, checkpoints, the model
  const std::string label_;
  std::unique_ptr<Task> task_;
  GraphSage model_;
  torch::optim::Adam opt_;
  const std::string signature_;
  MetricsWriter metrics_;
  TrainState st_;
  double train_s_ = 0, allreduce_s_ = 0;
  int64_t examples_ = 0, allreduce_bytes_ = 0, steps_ = 0;
  int epochs_run_ = 0;
};

}  // namespace

json RunTrain(const TrainOptions& o) {
  o.Validate();
  const PartitionConfig config = LoadCheckedConfig(o);
  torch::set_num_threads(DefaultTorchThreads(o));
  if (o.Rgcn()) return RunHeteroTrain(o, config);
  return Training(o, config).Run();
}

}  // namespace gnn
