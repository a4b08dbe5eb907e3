// gnn-sampling-bench: throughput of neighbour sampling, block building and
// feature gathering on one in-memory graph (standalone, no servers).
//
//   gnn-sampling-bench --dataset synthetic:small
//   gnn-sampling-bench --dataset synthetic:products     # ~1 min to generate
//
// Figures: sampled edges per second (total and per thread) for DGL's
// fan-outs, the split between sampling and block building, the loader's
// end-to-end batch rate, and GatherRows' GB/s against a plain single-thread
// row-copy loop over the same ids.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <sstream>

#include "common/cli.h"
#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/timer.h"
#include "graph/csr.h"
#include "graph/dataset.h"
#include "sampling/loader.h"
#include "sampling/sampler.h"

namespace {

struct BenchOptions {
  std::string dataset = "synthetic:small";
  std::string root = "dataset";
  std::string fanouts = "10,25";
  int64_t batch_size = 1000;
  int batches = 40;  // sampled batches per measurement
  int threads = 2;   // the multi-threaded configuration
  int gather_batches = 8;
  int gather_repeats = 3;
  uint64_t seed = 0;
};

int64_t Edges(const std::vector<gnn::Block>& blocks) {
  int64_t e = 0;
  for (const auto& b : blocks) e += b.num_edges();
  return e;
}

void Row(const char* what, int threads, double value, const char* unit, const char* note = "") {
  std::printf("  %-44s %7d %12.2f %-8s %s\n", what, threads, value, unit, note);
}

void Run(const BenchOptions& o) {
  gnn::SetLogRole("sampling-bench");
  std::vector<int> fanouts = gnn::ParseFanouts(o.fanouts, "--fanouts");
  if (o.batch_size <= 0 || o.batches <= 0 || o.threads <= 0 || o.gather_batches <= 0 ||
      o.gather_repeats <= 0) {
    throw gnn::ConfigError("--batch_size, --batches, --threads, --gather_* must be positive");
  }

  gnn::Stopwatch load_watch;
  gnn::DatasetOptions dopt;
  dopt.dataset = o.dataset;
  dopt.root = o.root;
  dopt.seed = o.seed;
  gnn::Dataset d = gnn::LoadDataset(dopt);
  double load_s = load_watch.Seconds();
  gnn::Stopwatch csc_watch;
  // In-edges: an undirected graph's adjacency, else rows = dst, entries = src.
  gnn::Csr csc = d.known_undirected() ? gnn::Symmetrize(d.num_nodes, d.src, d.dst)
                                      : gnn::BuildCsr(d.num_nodes, d.dst, d.src, false, false);
  double csc_s = csc_watch.Seconds();
  gnn::FreeVector(d.src);
  gnn::FreeVector(d.dst);
  gnn::CscView view{csc.indptr.data(), csc.indices.data(), 0, csc.num_rows()};

  // Seeds: the training nodes in a fixed shuffled order (the loader's
  // epoch-0 order), cycled if there are fewer than --batches batches.
  std::vector<int64_t> seeds = d.train_idx;
  if (seeds.empty()) throw gnn::DataError(d.name + " has no training nodes");
  for (int64_t i = static_cast<int64_t>(seeds.size()) - 1; i > 0; --i) {
    std::swap(seeds[i], seeds[gnn::MixSeed(o.seed, i) % static_cast<uint64_t>(i + 1)]);
  }
  const int64_t per_epoch = std::max<int64_t>(1, static_cast<int64_t>(seeds.size()) / o.batch_size);
  auto batch_seeds = [&](int k) {
    int64_t b = (k % per_epoch) * o.batch_size;
    int64_t e = std::min<int64_t>(b + o.batch_size, seeds.size());
    return std::vector<int64_t>(seeds.begin() + b, seeds.begin() + e);
  };

  std::printf("gnn-sampling-bench: %s, %" PRId64 " nodes, %" PRId64
              " in-edges, feature_dim %" PRId64 ", %zu train nodes\n",
              d.name.c_str(), d.num_nodes, csc.num_entries(), d.feature_dim, d.train_idx.size());
  std::printf("  load %.1f s, CSC %.1f s; fanouts %s (input layer first), batch %" PRId64
              ", %d batches per figure, %d hardware threads\n\n",
              load_s, csc_s, o.fanouts.c_str(), o.batch_size, o.batches, gnn::ResolveThreads(0));
  std::printf("  %-44s %7s %12s %-8s\n", "measurement", "threads", "value", "unit");

  // 1. SampleBlocks throughput. A warm-up batch first: the thread-local
  // block map and the page cache settle.
  std::vector<std::vector<int64_t>> inputs;  // input nodes for the gather figures
  for (int threads : {1, o.threads}) {
    gnn::SampleBlocks(view, batch_seeds(0), fanouts, false, 1, threads);
    int64_t edges = 0, input_nodes = 0;
    gnn::Stopwatch w;
    for (int k = 0; k < o.batches; ++k) {
      std::vector<gnn::Block> blocks =
          gnn::SampleBlocks(view, batch_seeds(k), fanouts, false, gnn::MixSeed(1, k), threads);
      edges += Edges(blocks);
      input_nodes += blocks.front().num_src();
      if (threads == 1 && static_cast<int>(inputs.size()) < o.gather_batches) {
        inputs.push_back(blocks.front().src_nodes);
      }
    }
    double s = w.Seconds();
    if (threads == 1) {
      std::printf("  (per batch: %.0f sampled edges, %.0f input nodes)\n",
                  static_cast<double>(edges) / o.batches,
                  static_cast<double>(input_nodes) / o.batches);
    }
    Row("SampleBlocks: sampled edges/s", threads, edges / s / 1e6, "M/s");
    Row("SampleBlocks: sampled edges/s per thread", threads, edges / s / 1e6 / threads, "M/s",
        "target >= 10");
    Row("SampleBlocks: batches/s", threads, o.batches / s, "1/s");
  }

  // 2. Where the time goes (single thread): SampleNeighbors vs ToBlock.
  {
    double sample_s = 0, block_s = 0;
    int64_t edges = 0;
    std::vector<int64_t> indptr, indices;
    for (int k = 0; k < o.batches; ++k) {
      std::vector<int64_t> frontier = batch_seeds(k);
      for (int l = static_cast<int>(fanouts.size()) - 1; l >= 0; --l) {
        gnn::Stopwatch w;
        gnn::SampleNeighbors(view, frontier.data(), frontier.size(), fanouts[l], false,
                             gnn::MixSeed(gnn::MixSeed(1, k), l), 1, &indptr, &indices);
        sample_s += w.Seconds();
        w.Reset();
        gnn::Block b = gnn::ToBlock(frontier, std::move(indptr), indices);
        block_s += w.Seconds();
        edges += b.num_edges();
        frontier = std::move(b.src_nodes);
      }
    }
    Row("SampleNeighbors only: edges/s", 1, edges / sample_s / 1e6, "M/s");
    Row("ToBlock (dedup + relabel) only: edges/s", 1, edges / block_s / 1e6, "M/s");
  }

  // 3. The loader end to end (sample + gather features and labels), one
  // batch per worker at a time.
  {
    gnn::LocalGraph g;
    g.csc = view;
    g.features = d.features.data();
    g.feature_dim = d.feature_dim;
    g.labels = d.labels.data();
    gnn::LoaderOptions lo;
    lo.fanouts = fanouts;
    lo.batch_size = o.batch_size;
    lo.num_workers = o.threads;
    lo.prefetch = 4;
    lo.seed = o.seed;
    std::vector<int64_t> loader_seeds;
    for (int k = 0; k < o.batches; ++k) {
      std::vector<int64_t> b = batch_seeds(k % per_epoch);
      if (k >= per_epoch) break;
      loader_seeds.insert(loader_seeds.end(), b.begin(), b.end());
    }
    for (int workers : {1, o.threads}) {
      lo.num_workers = workers;
      gnn::Stopwatch w;
      gnn::BatchLoader loader(g, loader_seeds, lo, 0);
      int64_t n = 0, edges = 0;
      double busy = 0;
      while (auto b = loader.Next()) {
        ++n;
        edges += Edges(b->blocks);
        busy += b->sample_seconds;
      }
      double s = w.Seconds();
      Row("BatchLoader (sample+gather): batches/s", workers, n / s, "1/s", "threads = workers");
      Row("BatchLoader: sampled edges per worker-second", workers, edges / busy / 1e6, "M/s",
          "busy time includes the gather");
    }
  }

  // 4. Feature gather: GatherRows vs a plain loop over the same ids.
  if (d.feature_dim > 0) {
    const int64_t dim = d.feature_dim;
    const float* rows = d.features.data();
    const size_t row_bytes = dim * sizeof(float);
    size_t max_rows = 0;
    double bytes = 0;
    for (const auto& ids : inputs) {
      max_rows = std::max(max_rows, ids.size());
      bytes += static_cast<double>(ids.size()) * row_bytes;
    }
    bytes *= o.gather_repeats;
    std::vector<float> plain_out(max_rows * dim, 0.0f);
    auto plain = [&] {
      for (const auto& ids : inputs) {
        float* out = plain_out.data();
        for (size_t i = 0; i < ids.size(); ++i) {
          std::memcpy(out + i * dim, rows + ids[i] * dim, row_bytes);
        }
      }
    };
    auto gather = [&](int threads, bool reuse) {
      std::vector<float> out;
      for (const auto& ids : inputs) {
        if (!reuse) std::vector<float>().swap(out);
        gnn::GatherRows(rows, 0, dim, ids, &out, threads);
      }
    };
    auto time = [&](auto fn) {
      fn();  // warm-up
      gnn::Stopwatch w;
      for (int r = 0; r < o.gather_repeats; ++r) fn();
      return bytes / w.Seconds() / 1e9;
    };
    double base = time(plain);
    Row("plain loop memcpy gather", 1, base, "GB/s", "baseline");
    for (int threads : {1, o.threads}) {
      double g = time([&] { gather(threads, true); });
      char note[64];
      std::snprintf(note, sizeof(note), "%.0f%% of baseline (target >= 70%%)", 100 * g / base);
      Row("GatherRows, reused buffer", threads, g, "GB/s", note);
      double f = time([&] { gather(threads, false); });
      std::snprintf(note, sizeof(note), "%.0f%% of baseline (includes zero-fill)", 100 * f / base);
      Row("GatherRows, fresh buffer (as the loader)", threads, f, "GB/s", note);
    }
  }
  std::printf("\n  peak RSS %.2f GB\n", gnn::PeakRssBytes() / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions o;
  CLI::App app{"Benchmark neighbour sampling and feature gathering.", "gnn-sampling-bench"};
  app.add_option("--dataset", o.dataset, "dataset (synthetic:<preset>, ogbn-* name, or path)")
      ->capture_default_str();
  app.add_option("--root", o.root, "folder holding OGB datasets")->capture_default_str();
  app.add_option("--fanouts", o.fanouts, "per-layer fan-outs, input layer first")
      ->capture_default_str();
  app.add_option("--batch_size", o.batch_size, "seeds per batch")->capture_default_str();
  app.add_option("--batches", o.batches, "batches per sampling figure")->capture_default_str();
  app.add_option("--threads", o.threads, "threads of the multi-threaded runs")
      ->capture_default_str();
  app.add_option("--gather_batches", o.gather_batches, "batches whose input rows are gathered")
      ->capture_default_str();
  app.add_option("--gather_repeats", o.gather_repeats, "timed repetitions of the gather")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "dataset and shuffle seed")->capture_default_str();
  return gnn::RunMain(app, argc, argv, [&] { Run(o); });
}
