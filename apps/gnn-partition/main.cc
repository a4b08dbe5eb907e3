// gnn-partition: split a graph into partitions for distributed training
// (flags as DGL's partition_graph.py).
#include <CLI/CLI.hpp>
#include <iostream>

#include "common/cli.h"
#include "common/log.h"
#include "partition/partition.h"

int main(int argc, char** argv) {
  gnn::PartitionOptions o;
  bool quiet = false;
  CLI::App app{"Partition a graph for distributed GNN training.", "gnn-partition"};
  app.add_option("--dataset", o.data.dataset,
                 "ogbn-* name under --root, a path to an OGB raw folder, or synthetic:<preset>")
      ->required();
  app.add_option("--root", o.data.root, "folder holding OGB datasets")->capture_default_str();
  app.add_option("--split", o.data.split, "split folder under split/ (default: the only one)");
  app.add_option("--cache_dir", o.data.cache_dir,
                 "where parsed arrays are cached (default: <dataset>/processed)");
  app.add_flag(
      "--no_cache", [&](int64_t) { o.data.use_cache = false; },
      "do not read or write the parse cache");
  app.add_option("--num_parts", o.num_parts, "number of partitions")->capture_default_str();
  app.add_option("--part_method", o.part_method,
                 "metis, stream (one-pass greedy, any size) or random")
      ->capture_default_str();
  app.add_flag("--balance_train", o.balance_train, "balance train nodes across partitions");
  app.add_flag("--balance_edges", o.balance_edges, "balance in-edges across partitions");
  app.add_flag("--undirected", o.undirected, "add the reverse of every edge");
  app.add_option("--output", o.output, "output folder")->capture_default_str();
  app.add_option("--graph_name", o.graph_name, "graph name (default: the dataset's)");
  app.add_option("--seed", o.data.seed, "random seed")->capture_default_str();
  app.add_option("--num_trainers_per_machine", o.num_trainers_per_machine,
                 "accepted for DGL compatibility")
      ->capture_default_str();
  app.add_option("--num_threads", o.num_threads, "threads (0 = all cores)")->capture_default_str();
  app.add_option(
         "--val_edges", o.val_edges,
         "fraction of undirected edges held out for link evaluation (gnn-train --task link)")
      ->capture_default_str();
  app.add_flag("--overwrite", o.overwrite, "replace an existing output folder");
  app.add_flag("--quiet", quiet, "no progress lines on stderr");

  return gnn::RunMain(app, argc, argv, [&] {
    gnn::SetLogRole("partition");
    if (quiet) gnn::SetLogLevel(gnn::LogLevel::kWarn);
    o.data.num_threads = o.num_threads;
    gnn::PartitionResult r = gnn::RunPartition(o);
    std::cout << gnn::FormatPartitionReport(r.report) << "partition config: " << r.config_path
              << std::endl;
  });
}
