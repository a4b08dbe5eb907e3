// gnn-train: train GraphSAGE on partitioned data (flags as DGL's
// train_dist.py). The last stdout line is a JSON summary.
#include <CLI/CLI.hpp>
#include <iostream>

#include "common/cli.h"
#include "common/error.h"
#include "common/log.h"
#include "common/memory.h"
#include "train/blas_kernels.h"
#include "train/trainer.h"

int main(int argc, char** argv) {
  gnn::UseBestBlasKernels(argv);
  gnn::TrainOptions o;
  CLI::App app{
      "Train a GNN (GraphSAGE, GAT, GCN; RGCN, RGAT on typed graphs) on partitioned graph data.",
      "gnn-train"};
  app.set_config("--config", "", "read flags from a config file (TOML/INI, see configs/)");
  app.add_option("--graph_name", o.graph_name, "graph name (checked against the config)");
  app.add_option("--part_config", o.part_config,
                 "partition config JSON (required: here, in --config, or from gnn-launch)");
  app.add_flag("--standalone", o.standalone, "train on one partition without servers");
  app.add_option("--num_epochs", o.num_epochs, "epochs")->capture_default_str();
  app.add_option("--batch_size", o.batch_size, "seeds per mini-batch")->capture_default_str();
  app.add_option("--batch_size_eval", o.batch_size_eval, "nodes per inference batch")
      ->capture_default_str();
  app.add_option("--fan_out", o.fan_out,
                 "neighbours per layer, input layer first (-1 = all neighbours; typed models "
                 "also take REL:n per relation)")
      ->capture_default_str();
  app.add_option("--num_hidden", o.num_hidden, "hidden size")->capture_default_str();
  app.add_option("--num_layers", o.num_layers, "GraphSAGE layers")->capture_default_str();
  app.add_option("--lr", o.lr, "Adam learning rate")->capture_default_str();
  app.add_option("--dropout", o.dropout, "dropout between layers")->capture_default_str();
  app.add_option("--weight_decay", o.weight_decay, "Adam weight decay")->capture_default_str();
  app.add_option("--log_every", o.log_every, "log every N steps")->capture_default_str();
  app.add_option("--eval_every", o.eval_every, "evaluate every N epochs and at the end (0 = never)")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  app.add_option("--num_omp_threads", o.num_omp_threads,
                 "LibTorch threads (0 = the cores the sampling threads leave)")
      ->capture_default_str();
  app.add_option("--num_gpus", o.num_gpus, "GPUs to use (-1 = CPU)")->capture_default_str();
  app.add_option("--gpu_cache_mb", o.gpu_cache_mb,
                 "MiB of the hottest feature rows kept on the GPU (--standalone --num_gpus; "
                 "0 = none, -1 = up to half the GPU's free memory)")
      ->capture_default_str();
  // DGL's train_dist.py flags, with their meaning where gnn has one.
  app.add_option("--n_classes", o.n_classes,
                 "DGL's flag: checked against the partition config's class count");
  std::string backend = "gloo";
  app.add_option("--backend", backend, "the trainers' all-reduce: gloo (nccl needs a GPU build)")
      ->capture_default_str();
  int local_rank = -1;
  app.add_option(
      "--local_rank", local_rank,
      "accepted from DGL's launcher and ignored: gnn-launch gives each trainer its rank");
  bool pad_data = false;
  app.add_flag("--pad_data", pad_data,
               "DGL's flag; always on in gnn (every trainer runs the same number of batches)");
  app.add_option("--num_workers", o.num_workers, "sampling threads (0 = in the training loop)")
      ->capture_default_str();
  app.add_option("--prefetch", o.prefetch, "mini-batches sampled ahead")->capture_default_str();
  app.add_flag("--sample_replace", o.sample_replace, "sample neighbours with replacement");
  app.add_option("--metrics_file", o.metrics_file, "write metrics as JSON lines here");
  app.add_option(
      "--tensorboard_dir", o.tensorboard_dir,
      "write loss, accuracy, speed, epoch time and evaluation as TensorBoard scalars here");
  app.add_option("--checkpoint_dir", o.checkpoint_dir,
                 "rank 0 keeps a checkpoint here every epoch (gnn-launch --max_restarts resumes "
                 "from it)");
  app.add_option("--checkpoint_every", o.checkpoint_every,
                 "also checkpoint every N steps within an epoch (0 = at epoch ends only)")
      ->capture_default_str();
  app.add_flag("--resume", o.resume, "continue from the checkpoint in --checkpoint_dir");
  app.add_option("--save_model", o.save_model, "write weights loadable by Python's torch.load");
  app.add_option("--save_embeddings", o.save_embeddings,
                 "write the final layer output of every node (.npy, input node order)");
  app.add_option("--task", o.task, "node (classification) or link (unsupervised link prediction)")
      ->capture_default_str();
  app.add_option("--num_negs", o.num_negs, "--task link: negative tails per positive edge")
      ->capture_default_str();
  app.add_flag(
      "--remove_edge", o.remove_edge,
      "--task link: keep a batch's edges (and reverses) out of its sampled neighbourhoods");
  bool quiet = false;
  app.add_option("--model", o.model,
                 "graphsage, gat or gcn (DGL's SAGEConv, GATConv, GraphConv), or rgcn for "
                 "heterogeneous graphs")
      ->capture_default_str();
  app.add_option("--num_heads", o.num_heads,
                 "gat: attention heads of the hidden layers (concatenated; they must divide "
                 "--num_hidden)")
      ->capture_default_str();
  app.add_option("--num_out_heads", o.num_out_heads, "gat: heads of the last layer (averaged)")
      ->capture_default_str();
  app.add_option("--attn_drop", o.attn_drop, "gat: dropout on the attention")
      ->capture_default_str();
  app.add_option("--negative_slope", o.negative_slope, "gat: LeakyReLU slope of the attention")
      ->capture_default_str();
  app.add_flag("--residual", o.residual, "gat: residual connections");
  app.add_option("--num_bases", o.num_bases, "rgcn: bases of the relation weights (<= 0: none)")
      ->capture_default_str();
  bool no_self_loop = false;
  app.add_flag("--no_self_loop", no_self_loop, "rgcn: no self-loop weight");
  app.add_option("--predict_category", o.predict_category,
                 "rgcn: the labelled node type (default: the config's target_ntype)");
  app.add_option("--sparse_optimizer", o.sparse_optimizer,
                 "rgcn: adagrad or adam for the node embeddings")
      ->capture_default_str();
  app.add_option("--sparse_lr", o.sparse_lr, "rgcn: learning rate of the node embeddings")
      ->capture_default_str();
  app.add_flag("--quiet", quiet, "only warnings and errors on stderr");
  bool check_only = false;
  app.add_flag("--check_only", check_only,
               "check the flags and the partition config, then exit (gnn-launch does this "
               "before it starts anything)");
  app.add_option("--ip_config", o.ip_config, "machines, one 'IP [PORT]' per line (distributed)");
  app.add_option("--machine_id", o.machine_id, "this machine's line in ip_config")
      ->capture_default_str();
  app.add_option("--trainer_id", o.trainer_id, "index among this machine's trainers")
      ->capture_default_str();
  app.add_option("--num_trainers", o.num_trainers, "trainers per machine")->capture_default_str();
  app.add_option("--num_servers", o.num_servers, "servers per machine")->capture_default_str();
  app.add_option("--num_samplers", o.num_samplers,
                 "gnn-sampler processes per trainer (0 = in-process)")
      ->capture_default_str();
  app.add_option("--master_addr", o.master_addr, "rendezvous host (default: machine 0)");
  app.add_option("--master_port", o.master_port, "rendezvous port")->capture_default_str();
  app.add_option("--job_id", o.job_id, "job id shared with servers and samplers")
      ->capture_default_str();
  gnn::AddJobSecretFlags(app, &o.secret_file, &o.insecure);
  app.add_option("--aggregate_at_owner", o.aggregate_at_owner,
                 "distributed: sample and aggregate each batch's last hop where its nodes live "
                 "(1; RGCN: each relation's source rows, features and embeddings, summed where "
                 "they live), or ship neighbour lists and every neighbour's row as DGL does (0)")
      ->capture_default_str();
  app.add_option(
         "--remote_sums", o.remote_sums,
         "distributed, with --aggregate_at_owner 1: sum the sampled neighbours a "
         "destination's owner does not hold at their own owners (1), or pull their rows (0)")
      ->capture_default_str();
  app.add_option("--wire_dtype", o.wire_dtype,
                 "distributed: float32, or bfloat16 (half the bytes) for feature rows and partial "
                 "sums on the network")
      ->capture_default_str();
  app.add_option("--wire_ids", o.wire_ids,
                 "distributed: varint (1-3 bytes an id) or int64 for the batches' ids, offsets "
                 "and counts on the network")
      ->capture_default_str();
  app.add_option("--cache_mb", o.cache_mb,
                 "distributed: MB of other partitions' most-read feature rows cached once per "
                 "machine in shared memory (0: none; -1: 5% of the graph's feature bytes)")
      ->capture_default_str();
  app.add_option_function<int64_t>(
         "--rendezvous_timeout_s",
         [&](int64_t s) { o.rendezvous_timeout = std::chrono::seconds(s); },
         "wait this long for all trainers")
      ->default_str(std::to_string(o.rendezvous_timeout.count()));
  app.add_option_function<int64_t>(
         "--request_timeout_ms",
         [&](int64_t ms) { o.request_timeout = std::chrono::milliseconds(ms); },
         "deadline per server request")
      ->default_str(std::to_string(o.request_timeout.count()));

  gnn::KeepFreedMemoryForReuse();  // batch buffers are reused, not re-faulted, every step
  return gnn::RunMain(app, argc, argv, [&] {
    if (o.Kind() != gnn::TaskKind::kLink && (app.count("--num_negs") > 0 || o.remove_edge)) {
      throw gnn::ConfigError("--num_negs and --remove_edge apply only to --task link");
    }
    gnn::FlagFromEnv(app, "--ip_config", "GNN_IP_CONFIG", &o.ip_config);
    gnn::FlagFromEnv(app, "--part_config", "GNN_PART_CONFIG", &o.part_config);
    gnn::FlagFromEnv(app, "--master_addr", "GNN_MASTER_ADDR", &o.master_addr);
    gnn::FlagFromEnv(app, "--job_id", "GNN_JOB_ID", &o.job_id);
    gnn::FlagFromEnv(app, "--machine_id", "GNN_MACHINE_ID", &o.machine_id);
    gnn::FlagFromEnv(app, "--trainer_id", "GNN_TRAINER_ID", &o.trainer_id);
    gnn::FlagFromEnv(app, "--num_trainers", "GNN_NUM_TRAINERS", &o.num_trainers);
    gnn::FlagFromEnv(app, "--num_servers", "GNN_NUM_SERVERS", &o.num_servers);
    gnn::FlagFromEnv(app, "--num_samplers", "GNN_NUM_SAMPLERS", &o.num_samplers);
    gnn::FlagFromEnv(app, "--master_port", "GNN_MASTER_PORT", &o.master_port);
    gnn::FlagFromEnv(app, "--num_omp_threads", "GNN_NUM_OMP_THREADS", &o.num_omp_threads);
    gnn::JobSecretFromEnv(app, &o.secret_file, &o.insecure);
    gnn::FlagFromEnv(app, nullptr, "GNN_RESTART", &o.restart);
    gnn::FlagFromEnv(app, nullptr, "GNN_REPORT_PROGRESS", &o.report_progress);
    int resume_step = -2;
    gnn::FlagFromEnv(app, nullptr, "GNN_RESUME_STEP", &resume_step);
    o.resume_step = resume_step;
    gnn::SetLogRole(
        o.standalone ? std::string("trainer 0")
                     : "trainer " + std::to_string(o.machine_id * o.num_trainers + o.trainer_id));
    if (quiet) gnn::SetLogLevel(gnn::LogLevel::kWarn);
    if (!gnn::BlasKernelsNote().empty()) {
      GNN_LOG(kInfo) << gnn::BlasKernelsNote();
    }
    o.self_loop = !no_self_loop;
    o.ApplyModelDefaults([&](const std::string& flag) { return app.count(flag) > 0; });
#if GNN_CUDA_KERNELS
    if (backend == "nccl" && o.num_gpus <= 0) {
      throw gnn::ConfigError(
          "--backend nccl needs --num_gpus >= 1 (GPU trainers sum gradients with NCCL): on the "
          "CPU use --backend gloo");
    }
#else
    if (backend == "nccl") {
      throw gnn::ConfigError(
          "--backend nccl needs the GPU path, which this build does not have (no CUDA): use "
          "--backend gloo");
    }
#endif
    if (backend != "gloo" && backend != "nccl") {
      throw gnn::ConfigError("--backend must be gloo or nccl, got '" + backend + "'");
    }
    if (app.count("--local_rank") > 0) {
      GNN_LOG(kWarn) << "--local_rank " << local_rank
                     << " is ignored: gnn-launch gives each trainer its rank";
    }
    if (check_only) {
      gnn::CheckTrain(o);
      std::cout << "gnn-train: the flags and " << o.part_config << " check out" << std::endl;
      return;
    }
    nlohmann::json summary = gnn::RunTrain(o);
    std::cout << summary.dump() << std::endl;
    // The summary first (the training happened), then the failed write.
    if (summary.contains("output_error")) {
      throw gnn::DataError(summary["output_error"].get<std::string>());
    }
  });
}
