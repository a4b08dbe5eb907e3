#include "train/trainer.h"

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/npy.h"
#include "common/parallel.h"
#include "common/sha256.h"
#include "common/timer.h"
#include "partition/config.h"
#include "partition/local_partition.h"
#include "sampling/loader.h"
#include "sampling/sampler.h"
#include "train/checkpoint.h"
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
  if (static_cast<int>(Fanouts().size()) != num_layers) {
    throw ConfigError("--fan_out '" + fan_out + "' has " + std::to_string(Fanouts().size()) +
                      " entries but --num_layers is " + std::to_string(num_layers));
  }
  if (resume && checkpoint_dir.empty()) throw ConfigError("--resume needs --checkpoint_dir");
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
  const int samplers = o.standalone ? o.num_workers : (o.num_samplers == 0 ? 1 : o.num_samplers);
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

// Appends JSON lines to the metrics file (if any), flushing each line.
class MetricsWriter {
 public:
  MetricsWriter(const std::string& path, bool append) {
    if (path.empty()) return;
    file_ = std::fopen(path.c_str(), append ? "a" : "w");
    if (!file_) throw DataError("cannot write --metrics_file " + path);
  }
  ~MetricsWriter() {
    if (file_) std::fclose(file_);
  }
  void Write(const json& j) {
    if (!file_) return;
    std::string line = j.dump() + "\n";
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
  }

 private:
  FILE* file_ = nullptr;
};

}  // namespace

json RunTrain(const TrainOptions& o) {
  o.Validate();
  if (o.num_gpus > 0 && !torch::cuda::is_available()) {
    throw ConfigError("--num_gpus " + std::to_string(o.num_gpus) +
                      " requested, but this gnn-train has no CUDA device (LibTorch " +
                      std::string(torch::cuda::is_available() ? "with" : "without") +
                      " CUDA); use --num_gpus -1 for CPU");
  }
  torch::set_num_threads(DefaultTorchThreads(o));
  PartitionConfig config = LoadPartitionConfig(o.part_config);
  if (!o.graph_name.empty() && o.graph_name != config.graph_name) {
    throw ConfigError("--graph_name " + o.graph_name + " does not match " + o.part_config +
                      " (graph_name " + config.graph_name + ")");
  }
  if (config.num_classes < 1) throw DataError(o.part_config + ": num_classes is 0");
  std::unique_ptr<TrainEnv> env =
      o.standalone ? MakeStandaloneEnv(o, config) : MakeDistEnv(o, config);
  const bool lead = env->rank() == 0;  // writes metrics, checkpoints, the model
  const std::string label = env->Label();

  torch::manual_seed(o.seed);
  std::unique_ptr<Task> task = MakeTask(o, config);
  GraphSage model(config.feature_dim, o.num_hidden, task->OutputDim(), o.num_layers, o.dropout);
  torch::optim::Adam opt(model->parameters(),
                         torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));
  const std::string signature = ModelSignature(o, config, *task);
  TrainState st;
  if (o.resume) {
    // Every rank reads the same checkpoint (a shared or copied folder).
    st = LoadCheckpoint(o.checkpoint_dir, model, opt, signature);
    GNN_LOG(kInfo) << "resumed from " << o.checkpoint_dir << " after epoch " << st.epochs_done;
  }
  env->SyncParams(model);
  MetricsWriter metrics(lead ? o.metrics_file : std::string(), o.resume);

  double train_seconds = 0, allreduce_seconds = 0;
  int64_t seeds_seen = 0, allreduce_bytes = 0, steps_total = 0;
  int epochs_run = 0;
  for (int epoch = st.epochs_done; epoch < o.num_epochs; ++epoch) {
    // Dropout draws from LibTorch's generator: reseeding per epoch makes a
    // resumed run identical to an uninterrupted one.
    torch::manual_seed(MixSeed(MixSeed(o.seed, static_cast<uint64_t>(epoch) + 1), env->rank()));
    model->train();
    Stopwatch epoch_watch;
    double t_sample = 0, t_fwd = 0, t_bwd = 0, t_ar = 0, t_upd = 0;
    int64_t epoch_seeds = 0, epoch_inputs = 0;
    env->StartEpoch(epoch);
    Stopwatch step_watch;
    int64_t step = 0, seeds_at_log = 0;
    while (true) {
      Stopwatch t;
      std::optional<MiniBatch> mb = env->Next();
      t_sample += t.Seconds();
      if (!mb) break;
      t.Reset();
      opt.zero_grad();
      torch::Tensor loss, out;
      // An empty batch (a rank whose share is one short) still joins the
      // all-reduce with zero gradients.
      if (!mb->seeds.empty()) {
        std::vector<BlockTensors> blocks;
        for (const Block& b : mb->blocks) blocks.push_back(ToTensors(b));
        const int64_t rows =
            mb->input_means ? 2 * mb->blocks.front().num_dst : mb->blocks.front().num_src();
        torch::Tensor x =
            torch::from_blob(mb->features.data(), {rows, mb->feature_dim}, torch::kFloat32);
        out = mb->input_means ? model->ForwardFromMeans(blocks, x) : model->forward(blocks, x);
        loss = task->Loss(out, *mb);
        t_fwd += t.Seconds();
        t.Reset();
        loss.backward();
        t_bwd += t.Seconds();
      }
      t.Reset();
      allreduce_bytes += env->AllreduceGrads(model);
      t_ar += t.Seconds();
      t.Reset();
      opt.step();
      t_upd += t.Seconds();
      epoch_seeds += task->Examples(*mb);
      if (!mb->blocks.empty()) epoch_inputs += mb->blocks.front().num_src();
      ++step;
      ++steps_total;
      if (step % o.log_every == 0 && loss.defined()) {
        const double acc = task->TrainAccuracy(out, *mb);
        double speed = static_cast<double>(epoch_seeds - seeds_at_log) / step_watch.Seconds();
        step_watch.Reset();
        seeds_at_log = epoch_seeds;
        GNN_LOG(kInfo) << label << " | Epoch " << std::setw(5) << std::setfill('0') << epoch + 1
                       << " | Step " << std::setw(5) << step << std::setfill(' ') << std::fixed
                       << " | Loss " << std::setprecision(4) << loss.item<double>()
                       << " | Train Acc " << acc << " | Speed (samples/sec) "
                       << std::setprecision(1) << speed;
        metrics.Write({{"type", "step"},
                       {"epoch", epoch + 1},
                       {"step", step},
                       {"loss", loss.item<double>()},
                       {"train_acc", acc},
                       {"samples_per_s", speed}});
      }
    }
    double epoch_s = epoch_watch.Seconds();
    train_seconds += epoch_s;
    allreduce_seconds += t_ar;
    seeds_seen += epoch_seeds;
    ++epochs_run;
    GNN_LOG(kInfo) << label << ", Epoch Time(s): " << std::fixed << std::setprecision(4) << epoch_s
                   << ", sample+data_copy: " << t_sample << ", forward: " << t_fwd
                   << ", backward: " << t_bwd << ", allreduce: " << t_ar << ", update: " << t_upd
                   << ", #seeds: " << epoch_seeds << ", #inputs: " << epoch_inputs;
    metrics.Write({{"type", "epoch"},
                   {"epoch", epoch + 1},
                   {"epoch_time_s", epoch_s},
                   {"sample_s", t_sample},
                   {"forward_s", t_fwd},
                   {"backward_s", t_bwd},
                   {"allreduce_s", t_ar},
                   {"update_s", t_upd},
                   {"seeds", epoch_seeds},
                   {"inputs", epoch_inputs},
                   {"param_checksum", ParamChecksum(model)}});
    st.epochs_done = epoch + 1;
    if (o.eval_every > 0 && ((epoch + 1) % o.eval_every == 0 || epoch + 1 == o.num_epochs)) {
      Stopwatch ev;
      AllCoresWhileIdle all_cores(o);
      const auto [val, test] =
          task->Evaluate(*env, model, epoch + 1, label, [&](const json& j) { metrics.Write(j); });
      st.final_test = test;
      if (val > st.best_val) {
        st.best_val = val;
        st.test_at_best = test;
        st.best_epoch = epoch + 1;
      }
      GNN_LOG(kInfo) << label << ", Val Acc " << std::fixed << std::setprecision(4) << val
                     << ", Test Acc " << test << ", time: " << ev.Seconds();
      metrics.Write({{"type", "eval"},
                     {"epoch", epoch + 1},
                     {"val_acc", val},
                     {"test_acc", test},
                     {"eval_time_s", ev.Seconds()}});
    }
    if (lead && !o.checkpoint_dir.empty()) {
      SaveCheckpoint(o.checkpoint_dir, model, opt, st, signature);
    }
  }

  if (lead && !o.save_model.empty()) {
    c10::Dict<std::string, torch::Tensor> dict;
    for (const auto& p : model->named_parameters())
      dict.insert(p.key(), p.value().detach().clone());
    std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
    AtomicFile f(o.save_model);
    f.Write(bytes.data(), bytes.size());
    f.Commit();
  }
  if (!o.save_embeddings.empty()) {
    AllCoresWhileIdle all_cores(o);
    torch::Tensor emb = env->Embeddings(model).contiguous();
    if (lead) WriteNpy(o.save_embeddings, emb.data_ptr<float>(), {emb.size(0), emb.size(1)});
  }

  if (o.eval_every > 0 && st.best_epoch > 0) {
    GNN_LOG(kInfo) << label << ", test_acc " << std::fixed << std::setprecision(4)
                   << st.test_at_best << " is from epoch " << st.best_epoch
                   << " (best validation accuracy " << st.best_val << "); after the last epoch ("
                   << st.epochs_done << "): final_test_acc " << st.final_test;
  }
  // Throughput of the whole job: every rank's seeds over the slowest clock.
  const double all_seeds = env->SumOverRanks(static_cast<double>(seeds_seen));
  json summary = {
      {"graph_name", config.graph_name},
      {"best_val_acc", st.best_val < 0 ? 0.0 : st.best_val},
      {"test_acc", st.test_at_best},
      {"final_test_acc", st.final_test},
      {"best_epoch", st.best_epoch},
      // Which evaluation each accuracy comes from (0: none ran).
      {"test_acc_epoch", st.best_epoch},
      {"final_test_acc_epoch", o.eval_every > 0 ? st.epochs_done : 0},
      {"epochs", st.epochs_done},
      {"epochs_run", epochs_run},
      {"mean_epoch_time_s", epochs_run ? train_seconds / epochs_run : 0.0},
      {"seeds_per_s", train_seconds > 0 ? all_seeds / train_seconds : 0.0},
      {"num_trainers", env->world()},
      {"rank", env->rank()},
      {"allreduce_time_s", epochs_run ? allreduce_seconds / epochs_run : 0.0},
      {"allreduce_bytes_per_step", steps_total ? allreduce_bytes / steps_total : 0},
      {"param_checksum", ParamChecksum(model)},
  };
  summary["task"] = o.task;
  task->Summarize(&summary);
  metrics.Write({{"type", "summary"}, {"summary", summary}});
  return summary;
}

}  // namespace gnn
