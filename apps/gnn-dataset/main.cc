// gnn-dataset: load any dataset gnn understands, print its statistics, and
// optionally write it in OGB's raw layout (e.g. to benchmark the reader on a
// products-size synthetic graph).
#include <CLI/CLI.hpp>
#include <iostream>

#include "common/cli.h"
#include "common/log.h"
#include "graph/dataset_tool.h"
#include "graph/plain_files.h"

int main(int argc, char** argv) {
  gnn::DatasetToolOptions o;
  bool quiet = false;
  CLI::App app{"Inspect a dataset or write it in OGB raw layout.", "gnn-dataset"};
  app.add_option(
      "--dataset", o.data.dataset,
      "ogbn-* name under --root, a path to an OGB raw folder (homogeneous or "
      "heterogeneous), or synthetic:<preset> (tiny, small, products, mag, mag-small); or "
      "plain files: --edges, --node_feat, --labels, --train_ids, --graph_name");
  gnn::AddPlainFileFlags(app, &o.data.files);
  app.add_option("--graph_name", o.data.files.graph_name, "with --edges: the graph's name");
  app.add_option("--root", o.data.root, "folder holding OGB datasets")->capture_default_str();
  app.add_option("--split", o.data.split, "split folder under split/ (default: the only one)");
  app.add_option("--cache_dir", o.data.cache_dir,
                 "parse cache folder (default: <dataset>/processed)");
  app.add_flag(
      "--no_cache", [&](int64_t) { o.data.use_cache = false; }, "do not use the parse cache");
  app.add_flag("--ignore_edge_data", o.data.ignore_edge_data,
               "go on without the input's edge data (edge-feat.csv.gz, edge-label.csv.gz, "
               "chunked edge_data); without this flag what gnn does not carry is refused");
  app.add_option("--seed", o.data.seed, "seed for synthetic datasets")->capture_default_str();
  app.add_option("--num_threads", o.data.num_threads, "threads (0 = all cores)")
      ->capture_default_str();
  app.add_option("--write_ogb", o.write_ogb, "write the dataset as an OGB raw folder here");
  app.add_option("--write_split", o.write_split, "split name used with --write_ogb")
      ->capture_default_str();
  app.add_option("--write_chunked", o.write_chunked,
                 "write the dataset as N chunks in DGL's chunked graph format (to --output)");
  app.add_option("--output", o.output, "folder for --write_chunked (must not exist)");
  app.add_flag("--undirected", o.undirected,
               "heterogeneous datasets: add a reverse relation (dst, rev-REL, src) for each "
               "(DGL's RGCN example)");
  app.add_flag("--quiet", quiet, "no progress lines on stderr");

  return gnn::RunMain(app, argc, argv, [&] {
    gnn::SetLogRole("dataset");
    if (quiet) gnn::SetLogLevel(gnn::LogLevel::kWarn);
    std::cout << gnn::RunDatasetTool(o).dump() << std::endl;
  });
}
