// gnn-kernel-bench: the fused aggregation ops alone, on a random block of
// a chosen shape (by default the input layer of a GAT batch on
// synthetic:small: 11,000 destinations x 25 sampled in-neighbours plus a
// self-loop, out of 56,000 sources, 4 heads of 16).
//
//   gnn-kernel-bench --reps 20 --num_omp_threads 1
//
// Prints milliseconds per call (median and least over --reps) of GatAggregate's
// forward and backward (separate inputs, and GATConv's one projection), of MeanAggregate's and of
// the hashed dropout (the sources' rows; KeepMask: an attention mask [edges, heads]), and
// the bytes and multiply-adds they cannot avoid, so a change to train/attention.cc or
// train/aggregate.cc is timed without a whole training run around it.
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "common/cli.h"
#include "train/models/aggregate.h"
#include "train/models/attention.h"
#include "train/models/dropout.h"

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double Millis(const F& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t dst = 11000, src = 56000, degree = 25, heads = 4, width = 16;
  int reps = 20, threads = 1;
  double attn_drop = 0.1;
  CLI::App app{"Times the fused aggregation ops on a random block.", "gnn-kernel-bench"};
  app.add_option("--num_dst", dst, "destinations")->capture_default_str();
  app.add_option("--num_src", src, "sources (destinations first)")->capture_default_str();
  app.add_option("--degree", degree, "sampled in-edges per destination")->capture_default_str();
  app.add_option("--heads", heads, "attention heads")->capture_default_str();
  app.add_option("--width", width, "per-head width")->capture_default_str();
  app.add_option("--attn_drop", attn_drop, "attention dropout (0: none)")->capture_default_str();
  app.add_option("--reps", reps, "timed calls per op")->capture_default_str();
  app.add_option("--num_omp_threads", threads, "LibTorch threads")->capture_default_str();
  return gnn::RunMain(app, argc, argv, [&] {
    torch::set_num_threads(threads);
    torch::manual_seed(0);
    src = std::max(src, dst);
    gnn::Block block;
    block.num_dst = dst;
    std::mt19937_64 rng(0);
    std::uniform_int_distribution<int64_t> pick(0, src - 1);
    block.indptr.push_back(0);
    for (int64_t i = 0; i < dst; ++i) {
      for (int64_t k = 0; k < degree; ++k) block.indices.push_back(pick(rng));
      block.indptr.push_back(static_cast<int64_t>(block.indices.size()));
    }
    block.src_nodes.resize(static_cast<size_t>(src));
    gnn::BlockTensors bt = gnn::WithSelfLoops(gnn::ToTensors(block));
    const int64_t edges = bt.indices.numel();
    torch::Tensor feat = torch::randn({src, heads, width}).requires_grad_();
    torch::Tensor el = torch::randn({src, heads}).requires_grad_();
    torch::Tensor er = torch::randn({dst, heads}).requires_grad_();
    torch::Tensor mask;
    if (attn_drop > 0) mask = gnn::KeepMask({edges, heads}, attn_drop, feat.options());
    torch::Tensor g = torch::randn({dst, heads, width});
    // GATConv's layout: one projection [src, heads x width + 2 heads].
    torch::Tensor proj = torch::randn({src, heads * width + 2 * heads}).requires_grad_();
    std::vector<double> fwd, bwd, proj_fwd, proj_bwd, mean_fwd, mean_bwd, drop_fwd, drop_bwd, keep;
    for (int r = 0; r <= reps; ++r) {  // the first call warms up, untimed
      torch::Tensor out;
      const double f = Millis([&] { out = gnn::GatAggregate(bt, feat, el, er, 0.2, mask); });
      const double b = Millis([&] { out.backward(g); });
      torch::Tensor pout;
      const double pf =
          Millis([&] { pout = gnn::GatAggregateProjected(bt, proj, heads, 0.2, mask); });
      const double pb = Millis([&] { pout.backward(g); });
      torch::Tensor flat = feat.view({src, heads * width});
      torch::Tensor m;
      const double mf = Millis([&] { m = gnn::MeanAggregate(bt, flat); });
      const double mb = Millis([&] { m.backward(g.view({dst, heads * width})); });
      // Feature dropout over the sources' projected rows, and an attention
      // dropout mask [edges, heads].
      torch::Tensor d;
      const double df = Millis([&] { d = gnn::Dropout(flat, 0.5, /*training=*/true); });
      const double db = Millis([&] { d.sum().backward(); });
      const double km = Millis([&] { gnn::KeepMask({edges, heads}, 0.1, feat.options()); });
      if (r == 0) continue;
      drop_fwd.push_back(df);
      drop_bwd.push_back(db);
      keep.push_back(km);
      fwd.push_back(f);
      bwd.push_back(b);
      proj_fwd.push_back(pf);
      proj_bwd.push_back(pb);
      mean_fwd.push_back(mf);
      mean_bwd.push_back(mb);
    }
    const double row_bytes = static_cast<double>(heads * width) * 4;
    std::printf(
        "block: %lld destinations, %lld sources, %lld edges (self-loops included), "
        "%lld heads x %lld, torch threads %d\n",
        static_cast<long long>(dst), static_cast<long long>(src), static_cast<long long>(edges),
        static_cast<long long>(heads), static_cast<long long>(width), torch::get_num_threads());
    std::printf("edge rows read per pass: %.1f MB, multiply-adds per pass: %.1f M\n",
                static_cast<double>(edges) * row_bytes / 1e6,
                static_cast<double>(edges * heads * width) / 1e6);
    std::printf("%-16s %16s %16s\n", "ms per call", "forward med/min", "backward med/min");
    auto row = [](const char* name, const std::vector<double>& f, const std::vector<double>& b) {
      std::printf("%-16s %8.2f %7.2f %8.2f %7.2f\n", name, Median(f),
                  *std::min_element(f.begin(), f.end()), Median(b),
                  *std::min_element(b.begin(), b.end()));
    };
    row("GatAggregate", fwd, bwd);
    row("GatProjected", proj_fwd, proj_bwd);
    row("MeanAggregate", mean_fwd, mean_bwd);
    row("Dropout", drop_fwd, drop_bwd);
    row("KeepMask", keep, keep);
  });
}
