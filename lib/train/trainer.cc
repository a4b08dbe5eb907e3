#include "train/trainer.h"

#include <torch/torch.h>

#include <memory>
#include <sstream>

#include "common/error.h"
#include "common/parallel.h"
#include "net/messages.h"
#include "partition/config.h"
#include "sampling/sampler.h"
#include "train/device.h"
#include "train/training_loop.h"

namespace gnn {

using nlohmann::json;

void TrainOptions::ApplyModelDefaults(const std::function<bool(const std::string&)>& given) {
  if (num_gpus > 0 && standalone) {
    // The GPU does the model's arithmetic in a fraction of the CPU's time,
    // so the sampling threads are what feeds it: they get the cores, and
    // each may have a batch ready.
    if (!given("--num_workers")) num_workers = std::max(num_workers, CoreShare(*this) - 2);
    if (!given("--prefetch")) prefetch = std::max(prefetch, num_workers);
  }
  if (model == "gat") {
    // DGL's GAT example: 8 heads of 8 in the hidden layer.
    if (!given("--num_hidden")) num_hidden = 64;
    return;
  }
  if (!Typed()) return;
  // DGL's examples/pytorch/rgcn/experimental command.
  if (!given("--fan_out")) fan_out = "25,10";
  if (!given("--batch_size")) batch_size = 1024;
  if (!given("--batch_size_eval")) batch_size_eval = 1024;
  if (!given("--num_hidden")) num_hidden = 64;
  if (!given("--lr")) lr = 0.01;
}

std::vector<int> TrainOptions::Fanouts() const { return ParseFanouts(fan_out); }

void TrainOptions::Validate() const {
  if (part_config.empty()) throw ConfigError("--part_config is required");
  if (num_epochs < 1) throw ConfigError("--num_epochs must be >= 1");
  if (batch_size < 1) throw ConfigError("--batch_size must be >= 1");
  if (gpu_cache_mb < -1) {
    throw ConfigError("--gpu_cache_mb must be >= 0 (or -1: half the GPU's free memory)");
  }
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
  if (cache_mb < -1) throw ConfigError("--cache_mb must be >= 0, or -1 (5% of the feature bytes)");
  if (model != "graphsage" && model != "gat" && model != "gcn" && model != "rgcn" &&
      model != "rgat") {
    throw ConfigError("--model must be graphsage, gat, gcn, rgcn or rgat, got '" + model + "'");
  }
  if (model == "gat" || model == "rgat") ValidateGat();
  if (Typed()) {
    if (Kind() != TaskKind::kNode) {
      throw ConfigError("--model " + model + " trains --task node only");
    }
    if (!save_embeddings.empty()) {
      throw ConfigError("--save_embeddings writes homogeneous models' outputs; --model " + model +
                        " has --save_model");
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
  net::ParseRowFormat(wire_dtype, "--wire_dtype");
  net::ParseIdCoding(wire_ids, "--wire_ids");
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
    if (rendezvous_timeout < std::chrono::seconds(1)) {
      throw ConfigError("--rendezvous_timeout_s must be >= 1");
    }
    if (request_timeout < std::chrono::milliseconds(1)) {
      throw ConfigError("--request_timeout_ms must be >= 1");
    }
  }
}

void TrainOptions::ValidateGat() const {
  if (num_heads < 1) throw ConfigError("--num_heads must be >= 1");
  if (num_out_heads < 1) throw ConfigError("--num_out_heads must be >= 1");
  if (num_layers > 1 && num_hidden % num_heads != 0) {
    throw ConfigError("--num_hidden " + std::to_string(num_hidden) + " is the " +
                      std::to_string(num_heads) +
                      " heads' concatenated width: it must be a multiple of --num_heads");
  }
  if (attn_drop < 0 || attn_drop >= 1) throw ConfigError("--attn_drop must be in [0, 1)");
  if (!(negative_slope >= 0)) throw ConfigError("--negative_slope must be >= 0");
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
  // Typed models without gnn-sampler processes sample inside their
  // training loop, between steps.
  const int samplers = o.standalone ? (o.Typed() ? 0 : o.num_workers)
                       : o.Typed()  ? o.num_samplers
                                    : (o.num_samplers == 0 ? 1 : o.num_samplers);
  return std::max(1, CoreShare(o) - samplers);
}

int CoreShare(const TrainOptions& o) {
  const int cores = ResolveThreads(0);
  return o.standalone ? cores : std::max(1, cores / std::max(1, o.num_trainers));
}

namespace {

// The checks that need the partition config.
PartitionConfig LoadCheckedConfig(const TrainOptions& o) {
  CheckDevice(o);
  PartitionConfig config = LoadPartitionConfig(o.part_config);
  if (o.Typed() && !config.hetero()) {
    throw ConfigError("--model " + o.model + " needs a heterogeneous partitioning; " +
                      o.part_config + " has one node type (use --model graphsage, gat or gcn)");
  }
  if (!o.Typed()) {
    config.RequireHomogeneous("gnn-train --model " + o.model + " (use --model rgcn or rgat)");
  }
  if (o.Typed() && !o.predict_category.empty() && o.predict_category != config.target_ntype) {
    throw ConfigError("--predict_category " + o.predict_category + ": " + o.part_config +
                      " was partitioned with labels on '" + config.target_ntype + "'");
  }
  if (!o.graph_name.empty() && o.graph_name != config.graph_name) {
    throw ConfigError("--graph_name " + o.graph_name + " does not match " + o.part_config +
                      " (graph_name " + config.graph_name + ")");
  }
  if (config.num_classes < 1) throw DataError(o.part_config + ": num_classes is 0");
  if (o.n_classes > 0 && o.n_classes != config.num_classes) {
    throw ConfigError("--n_classes " + std::to_string(o.n_classes) + ", but " + o.part_config +
                      " has " + std::to_string(config.num_classes) + " classes");
  }
  if (o.standalone && config.num_parts != 1) {
    throw ConfigError("--standalone needs a 1-partition config, but " + o.part_config + " has " +
                      std::to_string(config.num_parts) +
                      " partitions (re-run gnn-partition with --num_parts 1)");
  }
  return config;
}

}  // namespace

void CheckTrain(const TrainOptions& o) {
  o.Validate();
  LoadCheckedConfig(o);
}

json RunTrain(const TrainOptions& o) {
  o.Validate();
  const PartitionConfig config = LoadCheckedConfig(o);
  torch::set_num_threads(DefaultTorchThreads(o));
  std::unique_ptr<Learner> learner = MakeLearner(o, config);
  return RunTrainingLoop(o, config, *learner);
}

}  // namespace gnn
