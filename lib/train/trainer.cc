#include "train/trainer.h"

#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <sstream>

#include "common/cli.h"
#include "common/error.h"
#include "common/log.h"
#include "common/memory.h"
#include "common/parallel.h"
#include "net/messages.h"
#include "partition/config.h"
#include "sampling/sampler.h"
#include "train/blas_kernels.h"
#include "train/loop/device.h"
#include "train/loop/predict.h"
#include "train/loop/training_loop.h"
#include "train/options/train_flags.h"

namespace gnn {

using nlohmann::json;

namespace {

// The checks that need the partition config.
PartitionConfig LoadCheckedConfig(const TrainOptions& o) {
  CheckDevice(o);
  PartitionConfig config = LoadPartitionConfig(o.part_config);
  // --inference takes the model from its file (checked against the graph
  // there).
  if (!o.inference && o.Typed() && !config.hetero()) {
    throw ConfigError("--model " + o.model + " needs a heterogeneous partitioning; " +
                      o.part_config + " has one node type (use --model graphsage, gat or gcn)");
  }
  if (!o.inference && !o.Typed()) {
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
  if (config.label_kind == LabelKind::kClass && config.num_classes < 1)
    throw DataError(o.part_config + ": num_classes is 0");
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

// The middle of "src:rel:dst".
std::string RelationName(const std::string& key) {
  const size_t a = key.find(':'), b = key.rfind(':');
  return a == std::string::npos || a == b ? key : key.substr(a + 1, b - a - 1);
}

// --task against the partitioning's labels: `node` trains what its labels
// are (class ids, or a multi-label / regression partitioning's own task);
// a task the labels cannot give is one line.
std::string TaskFor(const TrainOptions& o, const PartitionConfig& config) {
  const TaskKind kind = o.Kind();
  if (o.EdgeTask()) {
    if (!config.edge_labels) {
      throw ConfigError("--task " + o.task + ": " + o.part_config +
                        " has no edge labels (gnn-partition keeps OGB's raw/edge-label.csv.gz "
                        "with split/<name>/edge_{train,valid,test}.csv.gz, or synthetic etask=)");
    }
    if (!o.target_etype.empty() && o.target_etype != config.target_etype &&
        RelationName(config.target_etype) != o.target_etype) {
      throw ConfigError("--target_etype " + o.target_etype + ": " + o.part_config + " labels " +
                        (config.target_etype.empty()
                             ? std::string("the edges of a homogeneous graph")
                             : config.target_etype + "'s edges"));
    }
    const bool classes = config.edge_label_kind == LabelKind::kClass;
    if (classes != (kind == TaskKind::kEdgeClass)) {
      throw ConfigError(
          "--task " + o.task + ": " + o.part_config + "'s edge labels are " +
          (classes ? "class ids: --task edge_class" : "values: --task edge_regression"));
    }
    return o.task;
  }
  if (config.label_kind == LabelKind::kClass) {
    if (kind == TaskKind::kMultilabel || kind == TaskKind::kRegression) {
      throw ConfigError("--task " + o.task + ": " + o.part_config +
                        " holds one class id per node (gnn-partition --task " + o.task +
                        " makes label rows of them)");
    }
    return o.task;
  }
  const std::string own = LabelTaskName(config.label_kind);
  if (kind == TaskKind::kNode || o.task == own) return own;
  throw ConfigError("--task " + o.task + ": " + o.part_config + " holds " +
                    std::to_string(config.label_width) + " " + LabelKindName(config.label_kind) +
                    " label column(s) per node: --task " + own);
}

// --edge_weight against the partitioning (training; --inference takes the
// model file's): sets o->use_edge_weight and says what happens to edge data
// in one line.
// A typed graph's edge features: RGCN's and RGAT's messages read them
// with --edge_feat_mp_op; said in one line either way.
void ResolveTypedEdgeData(const PartitionConfig& config, TrainOptions* o) {
  const int64_t width = config.edge_feature_dim;
  const std::string& op = o->edge_feat_mp_op;
  o->use_edge_weight = false;
  o->edge_feat_dim = 0;
  if (o->edge_weight == "on") {
    throw ConfigError(
        "--edge_weight on: typed graphs take edge features (--edge_feat_mp_op), "
        "not weights");
  }
  int64_t featured = 0;
  for (int64_t d : config.etype_edge_feature_dims) featured += d > 0;
  const std::string what = std::to_string(featured) + " of " +
                           std::to_string(config.etypes.size()) + " relations' edges carry up to " +
                           std::to_string(width) + " features";
  if (op == "none") {
    if (width > 0) {
      GNN_LOG(kWarn) << o->part_config << ": " << what << ", which --model " << o->model
                     << " does not read (rgcn reads them with --edge_feat_mp_op concat, add, sub "
                        "or mul, rgat with add, sub or mul)";
    }
    return;
  }
  if (o->model != "rgcn" && o->model != "rgat") {
    throw ConfigError("--edge_feat_mp_op " + op + ": --model " + o->model +
                      " does not read a typed graph's edge features (rgcn and rgat do)");
  }
  if (o->model == "rgat" && op == "concat") {
    throw ConfigError(
        "--edge_feat_mp_op concat: rgat combines a message's projected row with its edge's "
        "projected features element-wise (add, sub or mul); concat is rgcn's");
  }
  if (width == 0) {
    throw ConfigError("--edge_feat_mp_op " + op + ": " + o->part_config + " has no edge features");
  }
  o->edge_feat_dim = width;  // samples carry the edge rows (no first-layer sums at the owners)
  GNN_LOG(kInfo) << "edge features: " << what << "; " << o->model
                 << "'s messages take them (--edge_feat_mp_op " << op << ": "
                 << (op == "concat" ? "beside" : "combined with")
                 << " the source's row, through a learned projection per relation)";
}

void ResolveEdgeData(const PartitionConfig& config, TrainOptions* o) {
  if (config.hetero()) return ResolveTypedEdgeData(config, o);
  const bool takes = o->model == "gcn" || o->model == "graphsage";
  const int64_t width = config.hetero() ? 0 : config.edge_feature_dim;
  const std::string& op = o->edge_feat_mp_op;
  if (op != "none") {
    if (o->model != "graphsage" && o->model != "gat") {
      throw ConfigError("--edge_feat_mp_op " + op + ": --model " + o->model +
                        " does not read edge features (graphsage and gat do)");
    }
    if (o->model == "gat" && op == "concat") {
      throw ConfigError(
          "--edge_feat_mp_op concat: gat combines a message's projected row with its edge's "
          "projected features element-wise (add, sub or mul); concat is graphsage's");
    }
    if (width == 0) {
      throw ConfigError("--edge_feat_mp_op " + op + ": " + o->part_config +
                        " has no edge features");
    }
    if (o->edge_weight == "on") {
      throw ConfigError("--edge_weight on with --edge_feat_mp_op " + op +
                        ": the edge data is read as weights or as features, not both");
    }
    o->use_edge_weight = false;
    o->edge_feat_dim = width;
    GNN_LOG(kInfo) << "edge features: " << o->model << "'s messages take each edge's " << width
                   << " feature" << (width == 1 ? "" : "s") << " (--edge_feat_mp_op " << op << ": "
                   << (op == "concat" ? "beside" : "combined with")
                   << " the source's row, through a learned projection)";
    return;
  }
  o->edge_feat_dim = 0;
  if (o->edge_weight == "on") {
    if (width != 1) {
      throw ConfigError(
          "--edge_weight on: " + o->part_config +
          (width == 0 ? std::string(" has no edge data")
                      : " has " + std::to_string(width) + " features per edge, not one weight"));
    }
    if (!takes) {
      throw ConfigError("--edge_weight on: --model " + o->model +
                        " takes no edge weights (gcn and graphsage do)");
    }
  }
  o->use_edge_weight = o->edge_weight != "none" && width == 1 && takes;
  if (o->use_edge_weight) {
    GNN_LOG(kInfo) << "edge weights: " << o->model << " weighs each message by its edge's "
                   << "weight (" << o->part_config << "'s 1-wide edge data; "
                   << (o->model == "gcn" ? "EdgeWeightNorm('both')" : "a weighted mean")
                   << "; --edge_weight none ignores it)";
  } else if (width > 0 && o->edge_weight == "auto" && !(o->EdgeTask() && o->decoder_edge_feat)) {
    GNN_LOG(kWarn) << o->part_config << ": the partitions carry " << width
                   << (width == 1 ? " weight" : " features") << " per edge, which --model "
                   << o->model << " does not read"
                   << (width == 1 ? " (gcn and graphsage take it as edge weights)"
                                  : " (graphsage reads them with --edge_feat_mp_op concat, add, "
                                    "sub or mul, gat with add, sub or mul)");
  }
}

// The edge tasks' decoder reads each edge's own features when the graph
// has some (--decoder_edge_feat true, the default); says so in one line.
void ResolveDecoderEdgeFeatures(const PartitionConfig& config, TrainOptions* o) {
  o->decoder_edge_dim = 0;
  const int64_t width = config.LabelledEdgeFeatureDim();
  if (!o->EdgeTask() || width == 0) return;
  if (!o->decoder_edge_feat) {
    GNN_LOG(kInfo) << "edge task: the decoder reads the ends' embeddings only "
                   << "(--decoder_edge_feat false; the edges carry " << width << " features)";
    return;
  }
  o->decoder_edge_dim = width;
  GNN_LOG(kInfo) << "edge task: the decoder reads each edge's " << width << " feature"
                 << (width == 1 ? "" : "s")
                 << " beside its ends' embeddings (--decoder_edge_feat false: the embeddings "
                    "only)";
}

}  // namespace

void CheckTrain(const TrainOptions& given) {
  given.Validate();
  const PartitionConfig config = LoadCheckedConfig(given);
  TaskFor(given, config);
  TrainOptions o = given;
  if (!o.inference) ResolveEdgeData(config, &o);
}

json RunTrain(const TrainOptions& given) {
  given.Validate();
  const PartitionConfig config = LoadCheckedConfig(given);
  TrainOptions o = given;
  if (!o.inference) {
    o.task = TaskFor(given, config);
    ResolveEdgeData(config, &o);
    ResolveDecoderEdgeFeatures(config, &o);
  }
  torch::set_num_threads(DefaultTorchThreads(o));
  GNN_LOG(kInfo) << "LibTorch threads: " << torch::get_num_threads()
                 << (o.num_omp_threads > 0 ? " (--num_omp_threads; " : " (") << UsableCores()
                 << " usable cores"
                 << (!o.standalone && o.machines_on_host > 1
                         ? ", shared by the job's " + std::to_string(o.machines_on_host) +
                               " machines on this host"
                         : std::string())
                 << ")";
  if (o.inference) {
    return config.hetero() ? RunTypedInference(o, config) : RunInference(o, config);
  }
  std::unique_ptr<Learner> learner = MakeLearner(o, config);
  return RunTrainingLoop(o, config, *learner);
}

namespace {

// DGL's --backend, checked (gnn picks the all-reduce by --num_gpus: the
// CURVE mesh on the CPU, NCCL on GPUs; nccl needs the GPU build).
void CheckBackend(const std::string& backend, const TrainOptions& o) {
  if (backend != "gloo" && backend != "nccl") {
    throw ConfigError("--backend must be gloo or nccl, got '" + backend + "'");
  }
#if GNN_CUDA_KERNELS
  if (backend == "nccl" && o.num_gpus <= 0) {
    throw ConfigError(
        "--backend nccl needs --num_gpus >= 1 (GPU trainers sum gradients with NCCL): on the "
        "CPU use --backend gloo");
  }
#else
  if (backend == "nccl") {
    throw ConfigError(
        "--backend nccl needs the GPU path, which this build does not have (no CUDA): use "
        "--backend gloo");
  }
#endif
}

}  // namespace

int TrainMain(int argc, char** argv) {
  UseBestBlasKernels(argv);
  TrainOptions o;
  CLI::App app{
      "Train a GNN (GraphSAGE, GAT, GCN; RGCN, RGAT on typed graphs) on partitioned graph data.",
      "gnn-train"};
  app.set_config("--config", "", "read flags from a config file (TOML/INI, see configs/)");
  RegisterTrainFlags(app, &o);
  // DGL's train_dist.py flags, with their meaning where gnn has one.
  std::string backend = "gloo";
  app.add_option("--backend", backend,
                 "DGL's flag, checked: gloo or nccl. CPU trainers sum gradients over the job's "
                 "CURVE mesh, GPU trainers (--num_gpus) with NCCL, whatever it says")
      ->capture_default_str();
  int local_rank = -1;
  app.add_option(
      "--local_rank", local_rank,
      "accepted from DGL's launcher and ignored: gnn-launch gives each trainer its rank");
  bool pad_data = false;
  app.add_flag("--pad_data", pad_data,
               "DGL's flag; always on in gnn (every trainer runs the same number of batches)");
  bool quiet = false;
  app.add_flag("--quiet", quiet, "only warnings and errors on stderr");
  bool check_only = false;
  app.add_flag("--check_only", check_only,
               "check the flags and the partition config, then exit (gnn-launch does this "
               "before it starts anything)");

  KeepFreedMemoryForReuse();  // batch buffers are reused, not re-faulted, every step
  return RunMain(app, argc, argv, [&] {
    FinishTrainFlags(app, &o);
    SetLogRole(o.standalone
                   ? std::string("trainer 0")
                   : "trainer " + std::to_string(o.machine_id * o.num_trainers + o.trainer_id));
    if (quiet) SetLogLevel(LogLevel::kWarn);
    if (!BlasKernelsNote().empty()) {
      GNN_LOG(kInfo) << BlasKernelsNote();
    }
    CheckBackend(backend, o);
    if (app.count("--local_rank") > 0) {
      GNN_LOG(kWarn) << "--local_rank " << local_rank
                     << " is ignored: gnn-launch gives each trainer its rank";
    }
    if (check_only) {
      CheckTrain(o);
      std::cout << "gnn-train: the flags and " << o.part_config << " check out" << std::endl;
      return;
    }
    const nlohmann::json summary = RunTrain(o);
    std::cout << summary.dump() << std::endl;
    // The summary first (the training happened), then the failed write.
    if (summary.contains("output_error")) {
      throw DataError(summary["output_error"].get<std::string>());
    }
  });
}

}  // namespace gnn
