#include "train/options/train_flags.h"

#include <CLI/CLI.hpp>

#include "common/cli.h"
#include "common/error.h"
#include "common/launch_env.h"

namespace gnn {

void RegisterRunFlags(CLI::App& app, RunOptions* o) {
  app.add_option("--graph_name", o->graph_name, "graph name (checked against the config)");
  app.add_option("--part_config", o->part_config,
                 "partition config JSON (required: here, in --config, or from gnn-launch)");
  app.add_flag("--standalone", o->standalone, "train on one partition without servers");
  app.add_option("--num_epochs", o->num_epochs, "epochs")->capture_default_str();
  app.add_option("--batch_size", o->batch_size, "seeds per mini-batch")->capture_default_str();
  app.add_option("--batch_size_eval", o->batch_size_eval, "nodes per inference batch")
      ->capture_default_str();
  app.add_option("--log_every", o->log_every, "log every N steps")->capture_default_str();
  app.add_option("--eval_every", o->eval_every,
                 "evaluate every N epochs and at the end (0 = never)")
      ->capture_default_str();
  app.add_option("--seed", o->seed, "random seed")->capture_default_str();
  app.add_option("--num_omp_threads", o->num_omp_threads,
                 "LibTorch threads (0 = the cores the sampling threads leave)")
      ->capture_default_str();
  app.add_option("--num_gpus", o->num_gpus, "GPUs to use (-1 = CPU)")->capture_default_str();
  app.add_option("--gpu_cache_mb", o->gpu_cache_mb,
                 "MiB of the hottest feature rows kept on the GPU (--standalone --num_gpus; "
                 "0 = none, -1 = up to half the GPU's free memory)")
      ->capture_default_str();
  app.add_option("--num_workers", o->num_workers, "sampling threads (0 = in the training loop)")
      ->capture_default_str();
  app.add_option("--prefetch", o->prefetch, "mini-batches sampled ahead")->capture_default_str();
  app.add_flag("--sample_replace", o->sample_replace, "sample neighbours with replacement");
  app.add_option("--metrics_file", o->metrics_file, "write metrics as JSON lines here");
  app.add_option(
      "--tensorboard_dir", o->tensorboard_dir,
      "write loss, accuracy, speed, epoch time and evaluation as TensorBoard scalars here");
  app.add_option("--checkpoint_dir", o->checkpoint_dir,
                 "rank 0 keeps a checkpoint here every epoch (gnn-launch --max_restarts resumes "
                 "from it)");
  app.add_option("--checkpoint_every", o->checkpoint_every,
                 "also checkpoint every N steps within an epoch (0 = at epoch ends only)")
      ->capture_default_str();
  app.add_flag("--resume", o->resume, "continue from the checkpoint in --checkpoint_dir");
  app.add_option("--save_model", o->save_model,
                 "write the weights of the best validation's epoch (the summary's test_acc), "
                 "loadable by Python's torch.load and DGL 2.x's modules");
  app.add_flag("--save_model_last", o->save_model_last,
               "--save_model (and --save_embeddings) the last epoch instead of the best");
  app.add_option("--save_embeddings", o->save_embeddings,
                 "write the final layer output of every node (.npy, input node order)");
}

void RegisterModelFlags(CLI::App& app, ModelOptions* o) {
  app.add_option("--model", o->model,
                 "graphsage, gat or gcn (DGL's SAGEConv, GATConv, GraphConv), or rgcn for "
                 "heterogeneous graphs")
      ->capture_default_str();
  app.add_option("--edge_weight", o->edge_weight,
                 "auto: gcn and graphsage weigh messages by the partitions' 1-wide edge data "
                 "when they have it (DGL's edge_weight: GraphConv after EdgeWeightNorm('both'), "
                 "SAGEConv's weighted mean); on: it must be there; none: never read")
      ->check(CLI::IsMember({"auto", "on", "none"}))
      ->capture_default_str();
  app.add_option("--edge_feat_mp_op", o->edge_feat_mp_op,
                 "graphsage's and gat's message from an edge's features (GraphStorm's): "
                 "concat (graphsage: the source's row beside a learned projection of them), add, "
                 "sub or mul (combined element-wise); none: not read")
      ->check(CLI::IsMember({"none", "concat", "add", "sub", "mul"}))
      ->capture_default_str();
  app.add_option("--fan_out", o->fan_out,
                 "neighbours per layer, input layer first (-1 = all neighbours; typed models "
                 "also take REL:n per relation)")
      ->capture_default_str();
  app.add_option("--num_hidden", o->num_hidden, "hidden size")->capture_default_str();
  app.add_option("--num_layers", o->num_layers, "GraphSAGE layers")->capture_default_str();
  app.add_option("--lr", o->lr, "Adam learning rate")->capture_default_str();
  app.add_option("--dropout", o->dropout, "dropout between layers")->capture_default_str();
  app.add_option("--weight_decay", o->weight_decay, "Adam weight decay")->capture_default_str();
  app.add_option("--n_classes", o->n_classes,
                 "DGL's flag: checked against the partition config's class count");
  app.add_option("--num_heads", o->num_heads,
                 "gat: attention heads of the hidden layers (concatenated; they must divide "
                 "--num_hidden)")
      ->capture_default_str();
  app.add_option("--num_out_heads", o->num_out_heads, "gat: heads of the last layer (averaged)")
      ->capture_default_str();
  app.add_option("--attn_drop", o->attn_drop, "gat: dropout on the attention")
      ->capture_default_str();
  app.add_option("--negative_slope", o->negative_slope, "gat: LeakyReLU slope of the attention")
      ->capture_default_str();
  app.add_flag("--residual", o->residual, "gat: residual connections");
  app.add_option("--num_bases", o->num_bases, "rgcn: bases of the relation weights (<= 0: none)")
      ->capture_default_str();
  app.add_flag_callback(
      "--no_self_loop", [o] { o->self_loop = false; }, "rgcn: no self-loop weight");
  app.add_option("--predict_category", o->predict_category,
                 "rgcn: the labelled node type (default: the config's target_ntype)");
  app.add_option("--sparse_optimizer", o->sparse_optimizer,
                 "rgcn: adagrad or adam for the node embeddings")
      ->capture_default_str();
  app.add_option("--sparse_lr", o->sparse_lr, "rgcn: learning rate of the node embeddings")
      ->capture_default_str();
}

void RegisterTaskFlags(CLI::App& app, TaskOptions* o) {
  app.add_option("--task", o->task,
                 "node (classification; a multi-label or regression partitioning's own task), link "
                 "(unsupervised link prediction), multilabel, node_regression, edge_class or "
                 "edge_regression (labelled edges: gnn-partition keeps edge labels)")
      ->capture_default_str();
  app.add_option("--exclude_target_edges", o->exclude_target_edges,
                 "edge tasks: keep a batch's labelled edges (and their reverses) out of its "
                 "sampled neighbourhoods (true|false)")
      ->capture_default_str();
  app.add_option("--decoder_edge_feat", o->decoder_edge_feat,
                 "edge tasks on a graph with edge features: the decoder reads each edge's own "
                 "features beside its ends' embeddings (true|false)")
      ->capture_default_str();
  app.add_option("--target_etype", o->target_etype,
                 "typed edge tasks: the labelled relation, src:rel:dst or its name (default: the "
                 "partitioning's)");
  app.add_option("--num_negs", o->num_negs, "--task link: negative tails per positive edge")
      ->capture_default_str();
  app.add_flag(
      "--remove_edge", o->remove_edge,
      "--task link: keep a batch's edges (and reverses) out of its sampled neighbourhoods");
}

void RegisterClusterFlags(CLI::App& app, ClusterOptions* o) {
  app.add_option("--ip_config", o->ip_config, "machines, one 'IP [PORT]' per line (distributed)");
  app.add_option("--machine_id", o->machine_id, "this machine's line in ip_config")
      ->capture_default_str();
  app.add_option("--trainer_id", o->trainer_id, "index among this machine's trainers")
      ->capture_default_str();
  app.add_option("--num_trainers", o->num_trainers, "trainers per machine")->capture_default_str();
  app.add_option("--num_servers", o->num_servers, "servers per machine")->capture_default_str();
  app.add_option("--num_samplers", o->num_samplers,
                 "gnn-sampler processes per trainer (0 = in-process)")
      ->capture_default_str();
  app.add_option("--master_addr", o->master_addr, "rendezvous host (default: machine 0)");
  app.add_option("--master_port", o->master_port, "rendezvous port")->capture_default_str();
  app.add_option("--job_id", o->job_id, "job id shared with servers and samplers")
      ->capture_default_str();
  AddJobSecretFlags(app, &o->secret_file, &o->insecure);
  app.add_option("--aggregate_at_owner", o->aggregate_at_owner,
                 "distributed: sample and aggregate each batch's last hop where its nodes live "
                 "(1; RGCN: each relation's source rows, features and embeddings, summed where "
                 "they live), or ship neighbour lists and every neighbour's row as DGL does (0)")
      ->capture_default_str();
  app.add_option(
         "--remote_sums", o->remote_sums,
         "distributed, with --aggregate_at_owner 1: sum the sampled neighbours a "
         "destination's owner does not hold at their own owners (1), or pull their rows (0)")
      ->capture_default_str();
  AddWireFlags(app, &o->wire);
  app.add_option("--cache_mb", o->cache_mb,
                 "distributed: MB of other partitions' most-read feature rows cached once per "
                 "machine in shared memory (0: none; -1: 5% of the graph's feature bytes)")
      ->capture_default_str();
  app.add_option_function<int64_t>(
         "--rendezvous_timeout_s",
         [o](int64_t s) { o->rendezvous_timeout = std::chrono::seconds(s); },
         "wait this long for all trainers")
      ->default_str(std::to_string(o->rendezvous_timeout.count()));
  app.add_option_function<int64_t>(
         "--request_timeout_ms",
         [o](int64_t ms) { o->request_timeout = std::chrono::milliseconds(ms); },
         "deadline per server request")
      ->default_str(std::to_string(o->request_timeout.count()));
}

void RegisterInferenceFlags(CLI::App& app, InferenceOptions* o) {
  app.add_flag("--inference", o->inference,
               "apply the model of --restore_model_path to the graph instead of training "
               "(standalone, or through gnn-launch as training is)");
  app.add_option("--restore_model_path", o->restore_model_path,
                 "--inference: a file --save_model wrote (its model, sizes and weights)");
  app.add_option("--save_prediction_path", o->save_prediction_path,
                 "--inference: write part<i>/{ids,logits,pred}.npy per partition and "
                 "manifest.json here");
  app.add_option("--save_embed_path", o->save_embed_path,
                 "--inference: write part<i>/{ids,emb}.npy per partition (layer --embed_layer's "
                 "output) and manifest.json here");
  app.add_option("--embed_layer", o->embed_layer,
                 "--inference: the layer whose output --save_embed_path writes (1-based; "
                 "default the last hidden layer)");
  app.add_option("--nodes", o->nodes,
                 "--inference: only these nodes (a .npy of int64 ids of the input dataset)");
  app.add_option("--edge_ids", o->edge_ids,
                 "--inference of an edge model: predictions for these edges, labelled or not (a "
                 ".npy of int64 input edge ids: lines of edge.csv.gz)");
  app.add_option("--node_mask", o->node_mask,
                 "--inference: only the train, valid or test nodes, or all")
      ->capture_default_str();
}

void RegisterTrainFlags(CLI::App& app, TrainOptions* o) {
  RegisterRunFlags(app, o);
  RegisterModelFlags(app, o);
  RegisterTaskFlags(app, o);
  RegisterClusterFlags(app, o);
  RegisterInferenceFlags(app, o);
}

void FinishTrainFlags(const CLI::App& app, TrainOptions* o) {
  if (o->Kind() != TaskKind::kLink && (app.count("--num_negs") > 0 || o->remove_edge)) {
    throw ConfigError("--num_negs and --remove_edge apply only to --task link");
  }
  for (const char* flag : {"--exclude_target_edges", "--decoder_edge_feat", "--target_etype"}) {
    if (!o->EdgeTask() && app.count(flag) > 0) {
      throw ConfigError(std::string(flag) +
                        " applies only to --task edge_class and edge_regression");
    }
  }
  ClusterFlagsFromEnv(app, o);
  namespace env = launch_env;
  FlagFromEnv(app, nullptr, env::kRestart, &o->restart);
  FlagFromEnv(app, nullptr, env::kReportProgress, &o->report_progress);
  int resume_step = -2;
  FlagFromEnv(app, nullptr, env::kResumeStep, &resume_step);
  o->resume_step = resume_step;
  o->ApplyModelDefaults([&](const std::string& flag) { return app.count(flag) > 0; });
}

void ClusterFlagsFromEnv(const CLI::App& app, TrainOptions* o) {
  namespace env = launch_env;
  FlagFromEnv(app, "--ip_config", env::kIpConfig, &o->ip_config);
  FlagFromEnv(app, "--part_config", env::kPartConfig, &o->part_config);
  FlagFromEnv(app, "--master_addr", env::kMasterAddr, &o->master_addr);
  FlagFromEnv(app, "--job_id", env::kJobId, &o->job_id);
  FlagFromEnv(app, "--machine_id", env::kMachineId, &o->machine_id);
  FlagFromEnv(app, "--trainer_id", env::kTrainerId, &o->trainer_id);
  FlagFromEnv(app, "--num_trainers", env::kNumTrainers, &o->num_trainers);
  FlagFromEnv(app, "--num_servers", env::kNumServers, &o->num_servers);
  FlagFromEnv(app, "--num_samplers", env::kNumSamplers, &o->num_samplers);
  FlagFromEnv(app, "--master_port", env::kMasterPort, &o->master_port);
  FlagFromEnv(app, "--num_omp_threads", env::kNumOmpThreads, &o->num_omp_threads);
  FlagFromEnv(app, nullptr, env::kMachinesOnHost, &o->machines_on_host);
  JobSecretFromEnv(app, &o->secret_file, &o->insecure);
}

}  // namespace gnn
