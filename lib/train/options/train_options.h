// gnn-train's settings, one struct per concern, each field with its flag
// and its default stated once here. TrainOptions is all of them; code that
// needs one concern takes that struct. The flags are registered by
// train_flags.h, next to these structs, and read back nowhere else.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "client/wire_settings.h"
#include "net/ip_config.h"

namespace gnn {

// --task: what is learnt (loop/task.h).
// kNode: class ids (cross-entropy); kMultilabel: 0/1 label rows (binary
// cross-entropy, ROC-AUC); kRegression: real label rows (MSE, RMSE).
enum class TaskKind { kNode, kLink, kMultilabel, kRegression, kEdgeClass, kEdgeRegression };

// What to run and what to keep: the loop's settings.
struct RunOptions {
  std::string graph_name;   // --graph_name; must match the config when set
  std::string part_config;  // --part_config path to <graph>.json
  bool standalone = false;  // --standalone: one partition, no servers
  int num_epochs = 20;
  int64_t batch_size = 1000;
  int64_t batch_size_eval = 100000;
  int log_every = 20;
  int eval_every = 5;
  uint64_t seed = 0;
  int num_omp_threads = 0;    // 0 = DefaultTorchThreads
  int num_gpus = -1;          // -1/0 = CPU
  int64_t gpu_cache_mb = -1;  // GPU-resident hot feature rows (standalone, --num_gpus; -1 = auto)
  int num_workers = 2;        // sampling threads (standalone)
  int prefetch = 2;           // batches sampled ahead
  bool sample_replace = false;
  std::string metrics_file;      // JSON lines
  std::string tensorboard_dir;   // TensorBoard scalar event files (rank 0)
  std::string checkpoint_dir;    // model + optimizer + position, every epoch (rank 0 writes)
  int64_t checkpoint_every = 0;  // also every N steps within an epoch (0 = at epoch ends only)
  bool resume = false;           // continue from checkpoint_dir (it must hold one)
  // Set by gnn-launch (GNN_RESTART, GNN_REPORT_PROGRESS): the job's restart
  // generation (> 0: continue from checkpoint_dir if it holds a checkpoint,
  // else from the start), and "@gnn ..." progress lines on stdout for it.
  int restart = 0;
  bool report_progress = false;
  // GNN_RESUME_STEP: the newest checkpoint step gnn-launch saw this job
  // write (-1: none); a restart takes only a checkpoint at least that far
  // (an older or foreign file is ignored). -2: not told.
  int64_t resume_step = -2;
  std::string save_model;        // torch.load-able dict of named tensors (the best validation's)
  bool save_model_last = false;  // --save_model_last: the last epoch's instead
  std::string save_embeddings;   // .npy of the final layer output, input node order
  bool verify_checksums = true;
};

// The model and its optimizer.
struct ModelOptions {
  // --model graphsage|gat|gcn (homogeneous graphs), rgcn|rgat (typed graphs).
  std::string model = "graphsage";
  std::string fan_out = "10,25";  // per layer, input layer first (typed: also REL:n)
  int64_t num_hidden = 16;
  int num_layers = 2;
  double lr = 0.003;  // Adam
  double dropout = 0.5;
  double weight_decay = 0.0;
  int64_t n_classes = -1;  // --n_classes (DGL's): must match the config when given

  // --model rgcn (heterogeneous graphs, DGL's entity_classify_dist.py):
  // relation weights with num_bases bases (<= 0: one full weight per
  // relation), a self-loop, embeddings of num_hidden for featureless node
  // types stored where their nodes live and updated by a sparse optimizer.
  int num_bases = 2;                      // --num_bases
  bool self_loop = true;                  // --no_self_loop clears it
  std::string predict_category;           // --predict_category: must be the config's target
  std::string sparse_optimizer = "adam";  // --sparse_optimizer adagrad|adam
  double sparse_lr = 0.06;                // --sparse_lr

  // --model gat (DGL's GATConv and GAT example): attention heads of the
  // hidden layers (concatenated: --num_hidden is their total width, so
  // the heads must divide it) and of the last layer (averaged), attention
  // dropout, LeakyReLU slope, residual connections. --dropout is GATConv's
  // feat_drop.
  int num_heads = 8;            // --num_heads
  int num_out_heads = 1;        // --num_out_heads
  double attn_drop = 0.6;       // --attn_drop
  double negative_slope = 0.2;  // --negative_slope
  bool residual = false;        // --residual

  // The relational models of typed graphs (RGCN, RGAT): RgcnLearner's.
  bool Typed() const { return model == "rgcn" || model == "rgat"; }
  // Whether the model's first layer can start from the neighbours' means
  // (GraphSAGE's mean; GAT's attention and GCN's source degrees cannot):
  // the samplers then aggregate layer 0 (standalone) and, with
  // --aggregate_at_owner, the owners do (cluster).
  // --edge_weight auto|on|none: whether GCN and GraphSAGE weigh messages by
  // a graph's 1-wide edge data (DGL's edge_weight: GraphConv after
  // EdgeWeightNorm('both'), SAGEConv's weighted mean). auto: when the
  // partitions have it; on: they must; none: never read. Resolved against
  // the partition config into use_edge_weight (ResolveEdgeWeight), or
  // with --inference from the model file.
  std::string edge_weight = "auto";
  bool use_edge_weight = false;
  // --edge_feat_mp_op none|concat|add|sub|mul: how graphsage puts an edge's
  // features into its message (GraphStorm's edge_feat_mp_op): the source's
  // row and a learned projection of the edge's features, side by side or
  // combined element-wise; none: the features are not read. Resolved
  // against the config into edge_feat_dim (their width; 0: not read).
  std::string edge_feat_mp_op = "none";
  int64_t edge_feat_dim = 0;
  // Whether samples carry the sampled edges' data for the model.
  bool ReadsEdgeData() const { return use_edge_weight || edge_feat_dim > 0; }
  // Weighted or edge-featured means are not the samplers' plain ones:
  // such models ship rows.
  bool TakesMeans() const { return model == "graphsage" && !ReadsEdgeData(); }
  std::vector<int> Fanouts() const;  // parsed fan_out (homogeneous); throws ConfigError
  void ValidateGat() const;
};

// What is learnt.
struct TaskOptions {
  // --task node|link|multilabel|node_regression|edge_class|edge_regression
  std::string task = "node";
  // Link prediction (unsupervised GraphSAGE, DGL's train_dist_unsupervised).
  int num_negs = 1;          // --num_negs: uniform negative tails per positive edge
  bool remove_edge = false;  // --remove_edge: keep batch edges out of their blocks
  // The edge tasks: a batch's labelled edges (and their reverses) stay out
  // of its sampled neighbourhoods (GraphStorm's remove_target_edge_type,
  // DGL's exclude='reverse_id').
  bool exclude_target_edges = true;  // --exclude_target_edges true|false
  // The edge tasks on a graph with edge features: the decoder reads each
  // edge's own features beside its ends' embeddings (GraphStorm's
  // decoder_edge_feat). decoder_edge_dim: their width when it does (set
  // from the partitioning, or --inference's model file), else 0.
  bool decoder_edge_feat = true;  // --decoder_edge_feat true|false
  int64_t decoder_edge_dim = 0;
  // A typed graph's edge task: the labelled relation (--target_etype
  // src:rel:dst or its name; empty: the partitioning's edge_labels.etype).
  std::string target_etype;

  TaskKind Kind() const;  // parsed task; throws ConfigError
  bool EdgeTask() const {
    const TaskKind k = Kind();
    return k == TaskKind::kEdgeClass || k == TaskKind::kEdgeRegression;
  }
};

// Distributed mode: the job this trainer is one of (also from the
// launcher's GNN_* environment, read once where the flags enter).
struct ClusterOptions {
  std::string ip_config;                 // --ip_config
  int machine_id = 0;                    // --machine_id: this machine's line = its partition
  int trainer_id = 0;                    // --trainer_id: index among this machine's trainers
  int num_trainers = 1;                  // --num_trainers per machine
  int num_servers = 1;                   // --num_servers per machine
  int num_samplers = 0;                  // --num_samplers per trainer (0 = sample in-process)
  std::string master_addr;               // --master_addr: rendezvous host (default: machine 0)
  int master_port = kDefaultMasterPort;  // --master_port
  std::string job_id = "gnn";            // --job_id: shared with servers and samplers
  std::string secret_file;  // --secret_file: the job's secret (keys derive from it and job_id)
  bool insecure = false;    // --insecure: plaintext, unauthenticated
  // The job's machines on this host (gnn-launch's GNN_MACHINES_ON_HOST):
  // their trainers split the host's cores (CoreShare).
  int machines_on_host = 1;
  // --aggregate_at_owner: a batch's last hop sampled and aggregated where
  // its nodes live (sampling/owner_aggregate.h); false: neighbour lists
  // and every neighbour's row cross the network, as DGL ships them.
  bool aggregate_at_owner = true;
  // --remote_sums: with aggregate_at_owner, the sampled neighbours a
  // destination's owner does not hold are summed at their own owners
  // (PullSums) instead of shipped as rows (DistGraphOptions::remote_sums).
  bool remote_sums = true;
  // --wire_dtype, --wire_ids: how rows, sums and ids cross the network.
  WireSettings wire;
  // --cache_mb: MB of other partitions' rows this machine's trainers and
  // samplers read most, cached once per machine in shared memory
  // (store/row_cache.h); 0: none; -1: 5% of the graph's feature bytes.
  int64_t cache_mb = -1;
  std::chrono::seconds rendezvous_timeout{60};       // --rendezvous_timeout_s
  std::chrono::milliseconds request_timeout{30000};  // --request_timeout_ms: per server request
};

// --inference: apply a saved model to the graph instead of training
// (GraphStorm's flag names). The model's kind and sizes come from the file.
struct InferenceOptions {
  bool inference = false;            // --inference
  std::string restore_model_path;    // --restore_model_path: a --save_model file
  std::string save_prediction_path;  // --save_prediction_path DIR: ids, logits, pred per partition
  std::string save_embed_path;       // --save_embed_path DIR: ids, emb per partition
  int embed_layer = -1;              // --embed_layer L: layer L's output (1-based; -1: last hidden)
  std::string nodes;                 // --nodes FILE.npy: the input ids to write (int64)
  std::string node_mask = "all";     // --node_mask train|valid|test|all
  std::string edge_ids;              // --edge_ids FILE.npy: an edge model's input edge ids to write
  // --fan_out given with --inference: each node's prediction from its
  // neighbourhood sampled with these fan-outs (DGL's sampled evaluation);
  // empty: every neighbour, layer by layer. (fan_out itself then holds
  // the model file's, which it was trained with.)
  std::string infer_fan_out;
};

struct TrainOptions : RunOptions, ModelOptions, TaskOptions, ClusterOptions, InferenceOptions {
  // RGCN's first layer is summed at the owners unless it reads the edges'
  // features (their rows travel with the sample instead).
  bool AggregatesAtOwner() const {
    return aggregate_at_owner && (TakesMeans() || (model == "rgcn" && !ReadsEdgeData()));
  }
  // The model's own defaults for what the user left unset (`given(flag)`:
  // whether the flag was on the command line or in the config): RGCN takes
  // DGL's distributed RGCN command's (fan_out 25,10, batch 1024, hidden 64,
  // lr 0.01); GraphSAGE keeps train_dist.py's, the struct's own.
  void ApplyModelDefaults(const std::function<bool(const std::string&)>& given);
  // Throws ConfigError naming the first bad field.
  void Validate() const;
  void ValidateInference() const;
};

// LibTorch's intra-op threads when --num_omp_threads is 0: this trainer's
// share of the cores (cores / num_trainers in a cluster) less the sampling
// threads or gnn-sampler processes that run beside it (at least 1).
int DefaultTorchThreads(const TrainOptions& o);
// This trainer's share of the cores it may use: all of them standalone,
// cores / num_trainers in a cluster, and / machines_on_host more when
// several machines of the job share the host unbound (at least 1).
int CoreShare(const TrainOptions& o);

}  // namespace gnn
