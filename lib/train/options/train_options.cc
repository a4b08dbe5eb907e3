#include "train/options/train_options.h"

#include <algorithm>

#include "common/error.h"
#include "common/parallel.h"
#include "sampling/sampler.h"

namespace gnn {

void TrainOptions::ApplyModelDefaults(const std::function<bool(const std::string&)>& given) {
  if (inference && given("--fan_out")) infer_fan_out = fan_out;
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

std::vector<int> ModelOptions::Fanouts() const { return ParseFanouts(fan_out); }

void TrainOptions::Validate() const {
  if (part_config.empty()) throw ConfigError("--part_config is required");
  if (inference) {
    ValidateInference();
  } else {
    for (const auto& [flag, given] :
         {std::pair<const char*, bool>{"--restore_model_path", !restore_model_path.empty()},
          {"--save_prediction_path", !save_prediction_path.empty()},
          {"--save_embed_path", !save_embed_path.empty()},
          {"--nodes", !nodes.empty()},
          {"--node_mask", node_mask != "all"},
          {"--embed_layer", embed_layer != -1}}) {
      if (given) throw ConfigError(std::string(flag) + " applies only with --inference");
    }
  }
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
    if (Kind() != TaskKind::kNode && !EdgeTask()) {
      throw ConfigError("--model " + model +
                        " trains --task node, edge_class or edge_regression so far");
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
  } else if (inference) {
    // The model file says how many layers it has: checked against it then.
    if (!infer_fan_out.empty()) ParseFanouts(infer_fan_out);
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
    if (rendezvous_timeout < std::chrono::seconds(1)) {
      throw ConfigError("--rendezvous_timeout_s must be >= 1");
    }
    if (request_timeout < std::chrono::milliseconds(1)) {
      throw ConfigError("--request_timeout_ms must be >= 1");
    }
  }
}

void TrainOptions::ValidateInference() const {
  if (restore_model_path.empty()) {
    throw ConfigError("--inference needs --restore_model_path (a file --save_model wrote)");
  }
  if (save_prediction_path.empty() && save_embed_path.empty() && save_embeddings.empty()) {
    throw ConfigError(
        "--inference writes --save_prediction_path DIR, --save_embed_path DIR or "
        "--save_embeddings FILE: give at least one");
  }
  if (node_mask != "all" && node_mask != "train" && node_mask != "valid" && node_mask != "test") {
    throw ConfigError("--node_mask must be train, valid, test or all, got '" + node_mask + "'");
  }
  if (!nodes.empty() && node_mask != "all") {
    throw ConfigError("--nodes and --node_mask each choose the nodes: give one");
  }
  if (!edge_ids.empty() && (node_mask != "all" || !nodes.empty())) {
    throw ConfigError("--edge_ids chooses the edges: give it without --nodes and --node_mask");
  }
  if (embed_layer == 0 || embed_layer < -1) {
    throw ConfigError("--embed_layer must be >= 1 (layer L's output; default the last hidden)");
  }
  if (!checkpoint_dir.empty() || resume) {
    throw ConfigError("--inference reads --restore_model_path, not --checkpoint_dir/--resume");
  }
}

void ModelOptions::ValidateGat() const {
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

TaskKind TaskOptions::Kind() const {
  if (task == "node") return TaskKind::kNode;
  if (task == "link") return TaskKind::kLink;
  if (task == "multilabel") return TaskKind::kMultilabel;
  if (task == "node_regression") return TaskKind::kRegression;
  if (task == "edge_class") return TaskKind::kEdgeClass;
  if (task == "edge_regression") return TaskKind::kEdgeRegression;
  throw ConfigError(
      "--task must be node, link, multilabel, node_regression, edge_class or edge_regression, "
      "got '" +
      task + "'");
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
  const int cores = UsableCores();
  if (o.standalone) return cores;
  // Machines of one job on one host split its cores, unless each is bound
  // to cores of its own (taskset, a cpuset): those are its share already.
  const int machines = cores < HostCores() ? 1 : std::max(1, o.machines_on_host);
  return std::max(1, cores / (std::max(1, o.num_trainers) * machines));
}

}  // namespace gnn
