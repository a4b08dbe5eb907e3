// gnn-train-bench: standalone training throughput on a 1-partition config.
//
//   gnn-train-bench --part_config data1/synthetic-products.json
//
// For each model (DGL's default and PyG's distributed-tutorial model) it
// trains `--steps` mini-batches and prints seeds/s and the split between
// waiting for sampled batches, forward, backward and update. It also counts
// the GEMM FLOPs of the model's linear layers and compares the rate reached
// inside forward+backward with a bare torch::mm of the same shapes.
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <thread>

#include "common/cli.h"
#include "common/log.h"
#include "common/timer.h"
#include "partition/config.h"
#include "partition/local_partition.h"
#include "sampling/loader.h"
#include "train/models/sage.h"

namespace {

struct Model {
  const char* name;
  std::vector<int> fanouts;
  int64_t batch_size;
  int64_t hidden;
};

// Multiply-adds of the linear layers for one batch (forward only), in the
// projection order SAGEConv picks.
double GemmFlops(const std::vector<gnn::Block>& blocks, const std::vector<int64_t>& dims) {
  double flops = 0;
  for (size_t l = 0; l < blocks.size(); ++l) {
    int64_t in = dims[l], out = dims[l + 1];
    gnn::BlockTensors bt = gnn::ToTensors(blocks[l]);
    // fc_self on the dst rows; fc_neigh on the src rows (projected first)
    // or on the dst rows after aggregation (always for layer 0, whose means
    // the sampler computes).
    int64_t neigh_rows = l > 0 && gnn::ProjectFirst(bt, in, out, true, true) ? blocks[l].num_src()
                                                                             : blocks[l].num_dst;
    flops += 2.0 * static_cast<double>(blocks[l].num_dst + neigh_rows) * in * out;
  }
  return flops;
}

// Bytes one training step cannot avoid moving through memory, whatever the
// implementation: every input row read once (layer 0's mean needs each
// sampled source's features), and for the layers above each sampled edge
// reading one row of the narrower width, forward and backward. Sampling's
// own reads (the CSC rows of the sampled nodes) and the GEMMs' operands,
// both far smaller here, are left out, so this is a lower bound.
double StepBytes(const std::vector<gnn::Block>& blocks, const std::vector<int64_t>& dims) {
  const double f = 4;  // float32
  double bytes = static_cast<double>(blocks[0].num_src()) * dims[0] * f;
  for (size_t l = 1; l < blocks.size(); ++l) {
    const double width = static_cast<double>(std::min(dims[l], dims[l + 1]));
    bytes += 2.0 * static_cast<double>(blocks[l].num_edges()) * width * f;
  }
  return bytes;
}

// Sequential read bandwidth (GB/s) over a 512 MiB buffer with `threads`.
double ReadBandwidth(int threads) {
  const size_t n = size_t{128} << 20;  // floats
  std::vector<float> data(n, 1.0f);
  std::vector<double> sums(threads);
  auto pass = [&] {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        float acc[16] = {};
        const size_t b = n * t / threads, e = n * (t + 1) / threads;
        for (size_t i = b; i + 16 <= e; i += 16) {
          for (int k = 0; k < 16; ++k) acc[k] += data[i + k];
        }
        double s = 0;
        for (float v : acc) s += v;
        sums[t] = s;
      });
    }
    for (auto& th : pool) th.join();
  };
  pass();  // warm: pages touched
  gnn::Stopwatch w;
  const int reps = 3;
  for (int r = 0; r < reps; ++r) pass();
  return reps * static_cast<double>(n) * sizeof(float) / w.Seconds() / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  std::string part_config;
  int steps = 30;
  int workers = 2;
  int threads = 0;
  CLI::App app{"Standalone training throughput.", "gnn-train-bench"};
  app.add_option("--part_config", part_config, "1-partition config")->required();
  app.add_option("--steps", steps, "mini-batches per model")->capture_default_str();
  app.add_option("--num_workers", workers, "sampling threads")->capture_default_str();
  app.add_option("--num_omp_threads", threads, "LibTorch threads (0 = all cores)");
  return gnn::RunMain(app, argc, argv, [&] {
    gnn::SetLogRole("train-bench");
    // As gnn-train: the cores the sampling workers leave.
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    torch::set_num_threads(threads > 0 ? threads : std::max(1, cores - workers));
    const double bandwidth = ReadBandwidth(cores);
    std::printf("memory: sequential read %.2f GB/s with %d threads, %.2f GB/s with 1\n", bandwidth,
                cores, ReadBandwidth(1));
    gnn::PartitionConfig config = gnn::LoadPartitionConfig(part_config);
    gnn::LocalPartition part = gnn::LoadLocalPartition(config, 0, false);
    std::vector<int64_t> train = part.Nodes(part.train_mask);
    gnn::LocalGraph graph;
    graph.csc = {part.indptr.data(), part.indices.data(), part.node_start, part.num_nodes};
    graph.features = part.features.data();
    graph.feature_dim = part.feature_dim;
    graph.labels = part.labels.data();
    std::printf("%s: %lld nodes, %lld in-edges, %lld train nodes, torch threads %d\n",
                config.graph_name.c_str(), static_cast<long long>(part.num_nodes),
                static_cast<long long>(part.indices.size()), static_cast<long long>(train.size()),
                torch::get_num_threads());
    std::printf("%-28s %9s %8s %8s %8s %8s %8s %10s %10s %6s\n", "model", "seeds/s", "wait_s",
                "fwd_s", "bwd_s", "upd_s", "inputs", "model GF/s", "bare GF/s", "ratio");
    for (const Model& m : {Model{"DGL (10,25 b1000 h16 L2)", {10, 25}, 1000, 16},
                           Model{"PyG (15,10,5 b1024 h256 L3)", {15, 10, 5}, 1024, 256}}) {
      torch::manual_seed(0);
      const int layers = static_cast<int>(m.fanouts.size());
      gnn::GraphSage model(config.feature_dim, m.hidden, config.num_classes, layers, 0.5);
      torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.003));
      std::vector<int64_t> dims = {config.feature_dim};
      for (int l = 0; l + 1 < layers; ++l) dims.push_back(m.hidden);
      dims.push_back(config.num_classes);
      gnn::LoaderOptions lo;
      lo.fanouts = m.fanouts;
      lo.batch_size = m.batch_size;
      lo.num_workers = workers;
      lo.prefetch = 4;
      lo.transpose = true;
      lo.input_means = true;  // as gnn-train --standalone
      gnn::BatchLoader loader(graph, train, lo, 0);
      double wait = 0, fwd = 0, bwd = 0, upd = 0, flops = 0, step_bytes = 0;
      int64_t seeds = 0, inputs = 0;
      // Largest GEMM shape seen, for the bare-mm comparison.
      int64_t big_rows = 0, big_in = 0, big_out = 0;
      gnn::Stopwatch total;
      for (int s = 0; s < steps; ++s) {
        gnn::Stopwatch t;
        auto mb = loader.Next();
        wait += t.Seconds();
        if (!mb) break;
        if (s == 1) {  // the first batch warms up allocators and threads
          total.Reset();
          wait = fwd = bwd = upd = flops = step_bytes = 0;
          seeds = inputs = 0;
        }
        t.Reset();
        std::vector<gnn::BlockTensors> blocks;
        for (const auto& b : mb->blocks) blocks.push_back(gnn::ToTensors(b));
        torch::Tensor x =
            torch::from_blob(mb->features.data(), {2 * mb->blocks[0].num_dst, mb->feature_dim});
        torch::Tensor y = torch::from_blob(
            mb->labels.data(), {static_cast<int64_t>(mb->labels.size())}, torch::kInt64);
        torch::Tensor loss =
            torch::nn::functional::cross_entropy(model->ForwardFromMeans(blocks, x), y);
        fwd += t.Seconds();
        t.Reset();
        opt.zero_grad();
        loss.backward();
        bwd += t.Seconds();
        t.Reset();
        opt.step();
        upd += t.Seconds();
        seeds += static_cast<int64_t>(mb->seeds.size());
        inputs += mb->blocks[0].num_src();
        flops += 3 * GemmFlops(mb->blocks, dims);  // backward ~ 2x forward
        step_bytes += StepBytes(mb->blocks, dims);
        int64_t rows = mb->blocks[0].num_dst;  // layer 0's GEMMs run over the destinations
        if (rows > big_rows) {
          big_rows = rows;
          big_in = dims[0];
          big_out = dims[1];
        }
      }
      double elapsed = total.Seconds();
      // Bare torch::mm on the largest layer-0 shape, forward + the two
      // backward products, as the model does.
      torch::Tensor a = torch::randn({big_rows, big_in});
      torch::Tensor w = torch::randn({big_in, big_out});
      torch::Tensor g = torch::randn({big_rows, big_out});
      torch::mm(a, w);
      gnn::Stopwatch bare;
      int reps = 5;
      for (int r = 0; r < reps; ++r) {
        torch::mm(a, w);
        torch::mm(g, w.t());
        torch::mm(a.t(), g);
      }
      double bare_gflops = reps * 3 * 2.0 * big_rows * big_in * big_out / bare.Seconds() / 1e9;
      double model_gflops = flops / (fwd + bwd) / 1e9;
      std::printf("%-28s %9.0f %8.2f %8.2f %8.2f %8.2f %8lld %10.2f %10.2f %6.2f\n", m.name,
                  seeds / elapsed, wait, fwd, bwd, upd,
                  static_cast<long long>(inputs / std::max(1, steps - 1)), model_gflops,
                  bare_gflops, model_gflops / bare_gflops);
      const double per_step = step_bytes / std::max(1, steps - 1);
      std::printf(
          "  %.1f MB/step must move; at %.2f GB/s that is >= %.4f s/step; measured %.4f "
          "s/step (%.1fx the limit)\n",
          per_step / 1e6, bandwidth, per_step / bandwidth / 1e9, elapsed / std::max(1, steps - 1),
          elapsed / std::max(1, steps - 1) / (per_step / bandwidth / 1e9));
    }
  });
}
