// gnn-train: train GraphSAGE on partitioned data (flags as DGL's
// train_dist.py). The last stdout line is a JSON summary.
#include <CLI/CLI.hpp>
#include <iostream>

#include "common/cli.h"
#include "common/log.h"
#include "train/trainer.h"

int main(int argc, char** argv) {
  gnn::TrainOptions o;
  CLI::App app{"Train a GraphSAGE model on partitioned graph data.", "gnn-train"};
  app.set_config("--config", "", "read flags from a config file (TOML/INI, see configs/)");
  app.add_option("--graph_name", o.graph_name, "graph name (checked against the config)");
  app.add_option("--part_config", o.part_config, "partition config JSON")->required();
  app.add_flag("--standalone", o.standalone, "train on one partition without servers");
  app.add_option("--num_epochs", o.num_epochs, "epochs")->capture_default_str();
  app.add_option("--batch_size", o.batch_size, "seeds per mini-batch")->capture_default_str();
  app.add_option("--batch_size_eval", o.batch_size_eval, "nodes per inference batch")
      ->capture_default_str();
  app.add_option("--fan_out", o.fan_out, "neighbours per layer, input layer first")
      ->capture_default_str();
  app.add_option("--num_hidden", o.num_hidden, "hidden size")->capture_default_str();
  app.add_option("--num_layers", o.num_layers, "GraphSAGE layers")->capture_default_str();
  app.add_option("--lr", o.lr, "Adam learning rate")->capture_default_str();
  app.add_option("--dropout", o.dropout, "dropout between layers")->capture_default_str();
  app.add_option("--weight_decay", o.weight_decay, "Adam weight decay")->capture_default_str();
  app.add_option("--log_every", o.log_every, "log every N steps")->capture_default_str();
  app.add_option("--eval_every", o.eval_every, "evaluate every N epochs")->capture_default_str();
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  app.add_option("--num_omp_threads", o.num_omp_threads, "LibTorch threads (0 = all cores)")
      ->capture_default_str();
  app.add_option("--num_gpus", o.num_gpus, "GPUs to use (-1 = CPU)")->capture_default_str();
  app.add_option("--num_workers", o.num_workers, "sampling threads (0 = in the training loop)")
      ->capture_default_str();
  app.add_option("--prefetch", o.prefetch, "mini-batches sampled ahead")->capture_default_str();
  app.add_flag("--sample_replace", o.sample_replace, "sample neighbours with replacement");
  app.add_option("--metrics_file", o.metrics_file, "write metrics as JSON lines here");
  app.add_option("--checkpoint_dir", o.checkpoint_dir, "keep a checkpoint here every epoch");
  app.add_flag("--resume", o.resume, "continue from the checkpoint in --checkpoint_dir");
  app.add_option("--save_model", o.save_model, "write weights loadable by Python's torch.load");
  app.add_option("--save_embeddings", o.save_embeddings,
                 "write the final layer output of every node (.npy, input node order)");
  bool quiet = false;
  app.add_flag("--quiet", quiet, "only warnings and errors on stderr");

  return gnn::RunMain(app, argc, argv, [&] {
    gnn::SetLogRole("trainer 0");
    if (quiet) gnn::SetLogLevel(gnn::LogLevel::kWarn);
    nlohmann::json summary = gnn::RunTrain(o);
    std::cout << summary.dump() << std::endl;
  });
}
