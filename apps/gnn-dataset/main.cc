// gnn-dataset: load any dataset gnn understands, print its statistics, and
// optionally write it in OGB's raw layout (e.g. to benchmark the reader on a
// products-size synthetic graph).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/cli.h"
#include "common/error.h"
#include "common/log.h"
#include "common/timer.h"
#include "graph/chunked.h"
#include "graph/dataset.h"
#include "graph/hetero.h"
#include "graph/ogb_hetero.h"
#include "graph/ogb_reader.h"

namespace {

// --write_chunked: writes `d` as `chunks` chunks into `output` and says so
// in the statistics.
template <typename D>
void WriteChunkedTimed(const D& d, int chunks, const std::string& output, nlohmann::json* stats) {
  gnn::Stopwatch w;
  gnn::WriteChunked(d, chunks, output);
  (*stats)["chunked_seconds"] = w.Seconds();
  (*stats)["chunks"] = chunks;
  (*stats)["chunked_to"] = output;
}

}  // namespace

int main(int argc, char** argv) {
  gnn::DatasetOptions o;
  std::string write_ogb, write_split = "random";
  bool quiet = false;
  CLI::App app{"Inspect a dataset or write it in OGB raw layout.", "gnn-dataset"};
  app.add_option("--dataset", o.dataset,
                 "ogbn-* name under --root, a path to an OGB raw folder (homogeneous or "
                 "heterogeneous), or synthetic:<preset> (tiny, small, products, mag, mag-small)")
      ->required();
  app.add_option("--root", o.root, "folder holding OGB datasets")->capture_default_str();
  app.add_option("--split", o.split, "split folder under split/ (default: the only one)");
  app.add_option("--cache_dir", o.cache_dir, "parse cache folder (default: <dataset>/processed)");
  app.add_flag(
      "--no_cache", [&](int64_t) { o.use_cache = false; }, "do not use the parse cache");
  app.add_option("--seed", o.seed, "seed for synthetic datasets")->capture_default_str();
  app.add_option("--num_threads", o.num_threads, "threads (0 = all cores)")->capture_default_str();
  app.add_option("--write_ogb", write_ogb, "write the dataset as an OGB raw folder here");
  app.add_option("--write_split", write_split, "split name used with --write_ogb")
      ->capture_default_str();
  int write_chunked = 0;
  std::string output;
  app.add_option("--write_chunked", write_chunked,
                 "write the dataset as N chunks in DGL's chunked graph format (to --output)");
  app.add_option("--output", output, "folder for --write_chunked (must not exist)");
  bool undirected = false;
  app.add_flag("--undirected", undirected,
               "heterogeneous datasets: add a reverse relation (dst, rev-REL, src) for each "
               "(DGL's RGCN example)");
  app.add_flag("--quiet", quiet, "no progress lines on stderr");

  return gnn::RunMain(app, argc, argv, [&] {
    gnn::SetLogRole("dataset");
    if ((write_chunked != 0) != !output.empty()) {
      throw gnn::ConfigError("--write_chunked N and --output DIR go together");
    }
    if (quiet) gnn::SetLogLevel(gnn::LogLevel::kWarn);
    gnn::Stopwatch load;
    if (gnn::IsHeteroDataset(o)) {
      // Heterogeneous: per node type and per relation.
      gnn::HeteroDataset h = gnn::LoadHeteroDataset(o);
      if (undirected) gnn::AddReverseRelations(&h);
      nlohmann::json types = nlohmann::json::object(), relations = nlohmann::json::object();
      for (const auto& t : h.node_types)
        types[t.name] = {{"num_nodes", t.num_nodes}, {"feature_dim", t.feature_dim}};
      for (const auto& r : h.relations) relations[r.Key()] = r.num_edges();
      nlohmann::json stats = {{"name", h.name},
                              {"num_nodes", h.num_nodes()},
                              {"num_edges", h.num_edges()},
                              {"node_types", types},
                              {"relations", relations},
                              {"target", h.target},
                              {"num_classes", h.num_classes},
                              {"train", h.train_idx.size()},
                              {"valid", h.valid_idx.size()},
                              {"test", h.test_idx.size()},
                              {"load_seconds", load.Seconds()}};
      if (!write_ogb.empty()) {
        gnn::Stopwatch w;
        gnn::WriteOgbHeteroFolder(h, write_ogb, write_split);
        stats["write_seconds"] = w.Seconds();
        stats["written_to"] = write_ogb;
      }
      if (write_chunked != 0) WriteChunkedTimed(h, write_chunked, output, &stats);
      std::cout << stats.dump() << std::endl;
      return;
    }
    if (undirected) throw gnn::ConfigError("--undirected applies to heterogeneous datasets");
    gnn::Dataset d = gnn::LoadDataset(o);
    double load_s = load.Seconds();
    std::vector<int64_t> degree(d.num_nodes, 0);
    for (size_t i = 0; i < d.src.size(); ++i) {
      ++degree[d.src[i]];
      ++degree[d.dst[i]];
    }
    int64_t max_degree = d.num_nodes ? *std::max_element(degree.begin(), degree.end()) : 0;
    int64_t isolated = std::count(degree.begin(), degree.end(), 0);
    nlohmann::json stats = {
        {"name", d.name},
        {"num_nodes", d.num_nodes},
        {"num_edges", d.num_edges()},
        {"known_undirected", d.known_undirected()},
        {"feature_dim", d.feature_dim},
        {"num_classes", d.num_classes},
        {"train", d.train_idx.size()},
        {"valid", d.valid_idx.size()},
        {"test", d.test_idx.size()},
        {"max_degree", max_degree},
        {"isolated_nodes", isolated},
        {"load_seconds", load_s},
    };
    if (write_chunked != 0) WriteChunkedTimed(d, write_chunked, output, &stats);
    if (!write_ogb.empty()) {
      gnn::Stopwatch w;
      gnn::WriteOgbFolder(d, write_ogb, write_split);
      stats["write_seconds"] = w.Seconds();
      stats["written_to"] = write_ogb;
    }
    std::cout << stats.dump() << std::endl;
  });
}
