#include "partition/partition_flags.h"

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "graph/plain_files.h"

namespace gnn {

void AddPartitionFlags(CLI::App& app, PartitionCommand* c) {
  PartitionOptions* o = &c->options;
  app.add_option(
      "--dataset", o->data.dataset,
      "ogbn-* name under --root, a path to an OGB raw folder (homogeneous or "
      "heterogeneous), or synthetic:<preset>: tiny (2k nodes), small (100k), products "
      "(2.4M, ogbn-products' shape), mag-small, mag (ogbn-mag's types and relations), or "
      "synthetic:nodes=N,edges=E,feat=F,classes=C; or, in its place, plain files: --edges, "
      "--node_feat, --labels, --train_ids (README: Your own files)");
  AddPlainFileFlags(app, &o->data.files);
  app.add_option("--root", o->data.root, "folder holding OGB datasets")->capture_default_str();
  app.add_option("--dataset_dir", o->data.root, "DGL's partition_graph.py name for --root");
  app.add_option("--split", o->data.split, "split folder under split/ (default: the only one)");
  app.add_option("--cache_dir", o->data.cache_dir,
                 "where parsed arrays are cached (default: <dataset>/processed)");
  app.add_flag(
      "--no_cache", [o](int64_t) { o->data.use_cache = false; },
      "do not read or write the parse cache");
  app.add_flag("--ignore_edge_data", o->data.ignore_edge_data,
               "drop the input's edge data: edge features (edge-feat.csv.gz, chunked edge_data, "
               "extra CSV columns) are otherwise carried into part<i>/edge_feat.npy; other edge "
               "data (weights or labels files, a typed graph's) is refused without this flag");
  app.add_option("--node_feat_from_edges", o->node_feat_from_edges,
                 "auto: a graph with edge features and no node features gets each node's mean "
                 "in-edge features as node features (as ogbn-proteins examples do); mean: "
                 "append them to the node features too; none: never")
      ->capture_default_str();
  app.add_option("--edge_weight", o->edge_weight,
                 "keep one number per edge, gnn-train's edge weight: NAME (a chunked edge_data "
                 "array of one column), a 0-based column of the edge features, or mean (each "
                 "edge's mean feature); --node_feat_from_edges still sees every column");
  o->data.feature_format = "auto";
  app.add_option("--feature_format", o->data.feature_format,
                 "node features on disk: sparse (CSR: feat_indptr/feat_indices[/feat_values].npy; "
                 "bag-of-words, one-hot), dense (feat.npy), or auto: sparse when at most 10 % of "
                 "the entries are non-zero")
      ->capture_default_str();
  app.add_option("--task", o->task,
                 "what the node labels are: auto (one column of integers: class ids; several "
                 "of 0/1: multilabel; real values: node_regression), node, multilabel or "
                 "node_regression")
      ->capture_default_str();
  app.add_option_function<std::string>(
      "--label_dtype",
      [o](const std::string& v) {
        if (v == "float")
          o->task = "node_regression";
        else if (v == "int")
          o->task = "node";
        else if (v != "auto")
          throw CLI::ValidationError("--label_dtype", "auto, int or float, got '" + v + "'");
      },
      "float: the labels are real values (as --task node_regression); int: class ids");
  app.add_option("--num_parts", o->num_parts, "number of partitions")->capture_default_str();
  app.add_option("--part_method", o->part_method,
                 "metis, stream (one-pass greedy, any size) or random")
      ->capture_default_str();
  app.add_flag("--balance_train", o->balance_train, "balance train nodes across partitions");
  app.add_flag("--balance_edges", o->balance_edges, "balance in-edges across partitions");
  app.add_flag("--undirected", o->undirected,
               "add the reverse of every edge (the default for known undirected datasets: "
               "ogbn-products, ogbn-proteins, Cora, CiteSeer, PubMed, synthetic:)");
  app.add_flag("--directed", o->directed,
               "keep the edges as listed, even for a known undirected dataset");
  app.add_option("--output", o->output, "output folder")->capture_default_str();
  app.add_option("--graph_name", o->graph_name, "graph name (default: the dataset's)");
  app.add_option("--seed", o->data.seed, "random seed")->capture_default_str();
  app.add_option("--num_trainers_per_machine", o->num_trainers_per_machine,
                 "accepted for DGL compatibility")
      ->capture_default_str();
  app.add_option("--num_threads", o->num_threads, "threads (0 = all cores)")->capture_default_str();
  app.add_option(
         "--val_edges", o->val_edges,
         "fraction of undirected edges held out for link evaluation (gnn-train --task link)")
      ->capture_default_str();
  app.add_flag("--overwrite", o->overwrite, "replace an existing output folder");
  app.add_flag("--distributed", c->distributed,
               "partition across machines (one process per machine, under mpirun or Slurm, or "
               "started here with --ip_config): each reads its chunks of a chunked dataset and "
               "writes its own part<i>/ (PT-Scotch)");
  app.add_option("--ip_config", c->ip_config,
                 "with --distributed: the machines, one per line (mpirun is started over them "
                 "unless already under an MPI launcher)");
  app.add_option("--wait_timeout", c->wait_timeout,
                 "with --distributed: seconds to wait for the other machines at each step")
      ->capture_default_str();
  app.add_option("--sparsify", c->sparsify,
                 "the partitioner (METIS, or PT-Scotch with --distributed) sees each edge {u,v} "
                 "with probability min(1, K / max(deg u, deg v)), so hubs bring ~K edges and "
                 "its memory shrinks with them (0 = every edge; the cut is counted on the whole "
                 "graph). Default: 16 with --distributed; otherwise every edge, or the largest K "
                 "of 64, 32, ..., 1 whose METIS fits in memory (said in one line)");
  app.add_option("--max_memory_gb", c->options.max_memory_gb,
                 "the most memory gnn-partition may hold, GiB (0: what the machine or its cgroup "
                 "has available); METIS is kept within it")
      ->capture_default_str();
  app.add_flag("--quiet", c->quiet, "no progress lines on stderr");
}

void FinishPartitionFlags(const CLI::App& app, PartitionCommand* c) {
  PartitionOptions& o = c->options;
  o.data.num_threads = o.num_threads;
  o.data.files.graph_name = o.graph_name;
  c->num_parts_given = app.count("--num_parts") > 0;
  if (!c->distributed) {
    if (!c->ip_config.empty()) throw ConfigError("--ip_config is for --distributed");
    if (app.count("--sparsify")) o.sparsify = c->sparsify;
    o.sparsify_given = app.count("--sparsify") > 0;
    return;
  }
  if (o.data.feature_format == "sparse") {
    throw ConfigError(
        "--feature_format sparse with --distributed: the distributed partitioner writes dense "
        "features so far; partition on one machine");
  }
  if (app.count("--sparsify") == 0) c->sparsify = 16;
  if (app.count("--max_memory_gb")) {
    throw ConfigError(
        "--max_memory_gb bounds METIS on one machine; --distributed partitions with "
        "PT-Scotch (bound its memory with --sparsify)");
  }
}

}  // namespace gnn
