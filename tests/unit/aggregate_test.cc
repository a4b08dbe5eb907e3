// The fused mean aggregation against the plain LibTorch formulation
// (index_select + index_add_), values and gradients, in double; and its
// gradient against central finite differences (gradcheck-style).
#include "train/models/aggregate.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <random>

#include "kernels/csr_row_sum.h"
#include "random_block.h"
#include "sampling/sampler.h"
#include "test_util.h"
#include "train/loop/device.h"
#include "train/models/sage.h"

namespace gnn {
namespace {

using test::RandomBlock;

// The formulation the fused op replaces.
torch::Tensor ReferenceMean(const Block& b, const torch::Tensor& h) {
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  torch::Tensor indptr = torch::tensor(b.indptr, i64);
  torch::Tensor indices = torch::tensor(b.indices, i64);
  torch::Tensor deg = indptr.slice(0, 1) - indptr.slice(0, 0, b.num_dst);
  torch::Tensor dst_of = torch::repeat_interleave(deg);
  torch::Tensor sum = torch::zeros({b.num_dst, h.size(1)}, h.options())
                          .index_add(0, dst_of, h.index_select(0, indices));
  return sum / deg.clamp_min(1).to(h.scalar_type()).unsqueeze(1);
}

torch::Tensor Dbl(torch::IntArrayRef shape, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn(shape, torch::kFloat64);
}

}  // namespace

TEST_CASE("TransposeCsr lists each column's rows in row order", "[unit]") {
  // rows: 0 -> {2, 0}, 1 -> {}, 2 -> {2, 2, 1}
  std::vector<int64_t> ptr{0, 2, 2, 5}, idx{2, 0, 2, 2, 1};
  std::vector<int64_t> tp(4), ti(5);
  TransposeCsr(ptr.data(), idx.data(), 3, 3, tp.data(), ti.data());
  CHECK(tp == std::vector<int64_t>{0, 1, 2, 5});
  CHECK(ti == std::vector<int64_t>{0, 2, 0, 2, 2});
  std::vector<int64_t> te(5);  // each slot's edge, in edge order within a column
  TransposeCsr(ptr.data(), idx.data(), 3, 3, tp.data(), ti.data(), te.data());
  CHECK(te == std::vector<int64_t>{1, 4, 0, 2, 3});
  idx[1] = 3;
  CHECK_THROWS_WITH(TransposeCsr(ptr.data(), idx.data(), 3, 3, tp.data(), ti.data()),
                    Catch::Contains("column 3 is outside [0, 3)"));
}

TEST_CASE("MeanAggregate equals index_select + index_add_, values and gradients", "[unit]") {
  torch::set_num_threads(2);
  for (uint32_t seed : {1u, 2u, 3u}) {
    Block b = RandomBlock(300, 900, 12, seed);
    if (seed == 2) BuildTranspose(&b);  // the sampler's transpose and MeanAggregate's own
    BlockTensors bt = ToTensors(b);
    for (int64_t d : {1, 7, 16, 33}) {
      torch::Tensor h = Dbl({b.num_src(), d}, seed * 100 + d).requires_grad_(true);
      torch::Tensor h_ref = h.detach().clone().requires_grad_(true);
      torch::Tensor upstream = Dbl({b.num_dst, d}, seed * 100 + d + 1);
      torch::Tensor out = MeanAggregate(bt, h);
      torch::Tensor ref = ReferenceMean(b, h_ref);
      REQUIRE(out.sizes() == ref.sizes());
      CHECK(torch::allclose(out, ref, 1e-12, 1e-12));
      (out * upstream).sum().backward();
      (ref * upstream).sum().backward();
      CHECK(torch::allclose(h.grad(), h_ref.grad(), 1e-12, 1e-12));
    }
  }
}

TEST_CASE("MeanAggregate's gradient matches finite differences", "[unit]") {
  Block b = RandomBlock(9, 14, 4, 7);
  BlockTensors bt = ToTensors(b);
  torch::Tensor h = Dbl({b.num_src(), 3}, 11).requires_grad_(true);
  torch::Tensor w = Dbl({b.num_dst, 3}, 12);
  auto f = [&](const torch::Tensor& x) { return (MeanAggregate(bt, x) * w).sum(); };
  f(h).backward();
  torch::Tensor analytic = h.grad().clone();
  torch::NoGradGuard no_grad;
  const double eps = 1e-6;
  torch::Tensor x = h.detach().clone();
  auto xa = x.accessor<double, 2>();
  for (int64_t i = 0; i < x.size(0); ++i) {
    for (int64_t k = 0; k < x.size(1); ++k) {
      const double keep = xa[i][k];
      xa[i][k] = keep + eps;
      const double up = f(x).item<double>();
      xa[i][k] = keep - eps;
      const double down = f(x).item<double>();
      xa[i][k] = keep;
      CHECK(analytic[i][k].item<double>() == Approx((up - down) / (2 * eps)).margin(1e-7));
    }
  }
}

TEST_CASE("MeanAggregate reads strided rows and refuses a mismatched input", "[unit]") {
  Block b = RandomBlock(50, 80, 6, 5);
  BlockTensors bt = ToTensors(b);
  torch::Tensor wide = Dbl({b.num_src(), 10}, 3);
  torch::Tensor cols = wide.slice(1, 2, 6);  // row stride 10, 4 columns
  CHECK(
      torch::allclose(MeanAggregate(bt, cols), ReferenceMean(b, cols.contiguous()), 1e-12, 1e-12));
  CHECK_THROWS_WITH(MeanAggregate(bt, Dbl({b.num_src() - 1, 4}, 1)),
                    Catch::Contains("the block has 80 sources"));
  // No gradient wanted: no transpose is built, and none is needed.
  torch::Tensor h = Dbl({b.num_src(), 2}, 4);
  {
    torch::NoGradGuard no_grad;
    CHECK(torch::allclose(MeanAggregate(bt, h), ReferenceMean(b, h), 1e-12, 1e-12));
  }
}

TEST_CASE("DestinationsAndMean equals a slice and MeanAggregate bit for bit, with gradients",
          "[unit]") {
  torch::set_num_threads(2);
  for (uint32_t seed : {4u, 5u}) {
    Block b = RandomBlock(200, 700, 10, seed);
    if (seed == 5) BuildTranspose(&b);  // the sampler's transpose and the op's own
    BlockTensors bt = ToTensors(b);
    for (int64_t d : {1, 16, 33}) {
      torch::manual_seed(seed * 10 + d);
      torch::Tensor h = torch::randn({b.num_src(), d}).requires_grad_(true);
      torch::Tensor h_ref = h.detach().clone().requires_grad_(true);
      torch::Tensor up_self = torch::randn({b.num_dst, d}), up_mean = torch::randn({b.num_dst, d});
      const auto [self, mean] = DestinationsAndMean(bt, h);
      torch::Tensor self_ref = h_ref.slice(0, 0, b.num_dst), mean_ref = MeanAggregate(bt, h_ref);
      CHECK(torch::equal(self, self_ref));
      CHECK(torch::equal(mean, mean_ref));
      ((self * up_self).sum() + (mean * up_mean).sum()).backward();
      ((self_ref * up_self).sum() + (mean_ref * up_mean).sum()).backward();
      CHECK(torch::equal(h.grad(), h_ref.grad()));
      // Only the mean used: the destinations' rows get the mean's gradient alone.
      h.grad().zero_();
      h_ref.grad().zero_();
      (DestinationsAndMean(bt, h).second * up_mean).sum().backward();
      (MeanAggregate(bt, h_ref) * up_mean).sum().backward();
      CHECK(torch::equal(h.grad(), h_ref.grad()));
    }
  }
  Block b = RandomBlock(20, 30, 4, 6);
  CHECK_THROWS_WITH(DestinationsAndMean(ToTensors(b), torch::zeros({29, 2})),
                    Catch::Contains("DestinationsAndMean: input has 29 rows, the block has 30"));
}

TEST_CASE("SAGEConv with the fused mean equals DGL's formula, both projection orders", "[unit]") {
  // Many edges over few sources favour projecting first; wide inputs over
  // many sources favour aggregating first.
  struct Case {
    Block block;
    int64_t in, out;
    bool input_grad, project_first;
  };
  for (Case c : {Case{RandomBlock(20, 24, 30, 9), 64, 2, true, true},
                 Case{RandomBlock(40, 120, 8, 9), 12, 5, true, false},
                 Case{RandomBlock(40, 120, 8, 9), 5, 12, false, false}}) {
    const Block& b = c.block;
    BlockTensors bt = ToTensors(b);
    REQUIRE(ProjectFirst(bt, c.in, c.out, true, c.input_grad) == c.project_first);
    torch::manual_seed(0);
    SAGEConv conv(c.in, c.out);
    conv->to(torch::kFloat64);
    torch::Tensor h = Dbl({b.num_src(), c.in}, 21).requires_grad_(c.input_grad);
    torch::Tensor got = conv->forward(bt, h);
    torch::Tensor upstream = Dbl({b.num_dst, c.out}, 22);
    (got * upstream).sum().backward();
    std::vector<torch::Tensor> grads;
    for (const auto& p : conv->parameters()) grads.push_back(p.grad().clone());

    conv->zero_grad();
    torch::Tensor h2 = h.detach().clone().requires_grad_(c.input_grad);
    auto params = conv->named_parameters();
    torch::Tensor want = torch::matmul(h2.slice(0, 0, b.num_dst), params["fc_self.weight"].t()) +
                         torch::matmul(ReferenceMean(b, h2), params["fc_neigh.weight"].t()) +
                         params["bias"];
    CHECK(torch::allclose(got, want, 1e-10, 1e-12));
    (want * upstream).sum().backward();
    size_t i = 0;
    for (const auto& p : conv->parameters()) {
      CHECK(torch::allclose(p.grad(), grads[i++], 1e-10, 1e-12));
    }
    if (c.input_grad) CHECK(torch::allclose(h2.grad(), h.grad(), 1e-10, 1e-12));
  }
}

TEST_CASE("GraphSage from the sampler's means equals GraphSage over every input row", "[unit]") {
  Block b0 = RandomBlock(60, 150, 7, 31), b1 = RandomBlock(10, 60, 5, 32);
  for (int64_t& v : b1.src_nodes) v = b0.src_nodes[&v - b1.src_nodes.data()];
  const int64_t dim = 6;
  std::vector<float> rows(static_cast<size_t>(b0.num_src() * dim));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>((i * 37) % 101) / 50.0f;
  // [dst rows | means], as a loader with input_means hands them over.
  std::vector<float> packed(static_cast<size_t>(2 * b0.num_dst * dim));
  std::copy(rows.begin(), rows.begin() + b0.num_dst * dim, packed.begin());
  Block local = b0;  // MeanOfSources reads src_nodes as rows of `rows`
  for (int64_t i = 0; i < local.num_src(); ++i) local.src_nodes[i] = i;
  MeanOfSources(rows.data(), 0, dim, local, packed.data() + b0.num_dst * dim, 1);

  torch::manual_seed(3);
  GraphSage model(dim, 8, 3, 2, 0.0);
  std::vector<BlockTensors> blocks = {ToTensors(b0), ToTensors(b1)};
  torch::Tensor full = model->forward(blocks, torch::from_blob(rows.data(), {b0.num_src(), dim}));
  torch::Tensor from_means =
      model->ForwardFromMeans(blocks, torch::from_blob(packed.data(), {2 * b0.num_dst, dim}));
  CHECK(torch::allclose(full, from_means, 1e-5, 1e-6));
}

}  // namespace gnn

namespace gnn {
namespace {

// kernels::CsrRowSumRow over every row, the columns dealt to `threads`
// workers as a CUDA block deals them (worker t: columns t, t + threads, ...).
template <typename T>
torch::Tensor KernelRowSum(const Block& b, const torch::Tensor& x, bool mean,
                           const torch::Tensor& col_weight, const torch::Tensor& row_scale,
                           int threads) {
  torch::Tensor out = torch::full({b.num_dst, x.size(1)}, 7.0, x.options());
  kernels::CsrRowSumArgs<T> a;
  a.ptr = b.indptr.data();
  a.idx = b.indices.data();
  a.x = x.data_ptr<T>();
  a.x_stride = x.stride(0);
  a.d = x.size(1);
  a.mean = mean;
  a.col_weight = col_weight.defined() ? col_weight.data_ptr<T>() : nullptr;
  a.row_scale = row_scale.defined() ? row_scale.data_ptr<T>() : nullptr;
  a.out = out.data_ptr<T>();
  for (int64_t r = 0; r < b.num_dst; ++r) {
    for (int t = 0; t < threads; ++t) kernels::CsrRowSumRow(a, r, t, threads);
  }
  return out;
}

}  // namespace
}  // namespace gnn

TEST_CASE("the CUDA kernels' row function equals the CPU aggregations bit for bit", "[unit]") {
  using namespace gnn;
  const int threads = GENERATE(1, 32, 128);
  const Block b = RandomBlock(57, 90, 12, 5);
  const BlockTensors t = ToTensors(b);
  // Float, 37 wide (fewer columns than some thread counts), strided rows.
  torch::manual_seed(3);
  const torch::Tensor wide = torch::randn({90, 45});
  const torch::Tensor x = wide.slice(1, 2, 39);
  CHECK(torch::equal(KernelRowSum<float>(b, x, true, {}, {}, threads), MeanAggregate(t, x)));
  const torch::Tensor src_w = torch::rand({90}) + 0.5, dst_w = torch::rand({57}) + 0.5;
  CHECK(torch::equal(KernelRowSum<float>(b, x, false, src_w, dst_w, threads),
                     WeightedAggregate(t, x, src_w, dst_w)));
  // Double.
  const torch::Tensor xd = Dbl({90, 16}, 9);
  CHECK(torch::equal(KernelRowSum<double>(b, xd, true, {}, {}, threads), MeanAggregate(t, xd)));
  // The same op on a block moved with To (here: to the CPU it is on).
  const BlockTensors moved = t.To(torch::Device(torch::kCPU));
  CHECK(torch::equal(MeanAggregate(moved, x), MeanAggregate(t, x)));
}

TEST_CASE("the CUDA aggregations equal the CPU's in values and gradients (GPU)", "[unit]") {
  using namespace gnn;
  if (!BuiltWithCuda()) GNN_SKIP("this build has no CUDA kernels (scripts/build-cuda.sh)");
  if (!torch::cuda::is_available()) GNN_SKIP("no CUDA device visible");
  const torch::Device gpu(torch::kCUDA, 0);
  const Block b = RandomBlock(300, 500, 20, 8);
  const BlockTensors cpu = ToTensors(b);
  const BlockTensors dev = cpu.To(gpu);
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    torch::manual_seed(4);
    const torch::Tensor h = torch::randn({500, 70}, dtype);
    const torch::Tensor src_w = torch::rand({500}, dtype) + 0.5;
    const torch::Tensor dst_w = torch::rand({300}, dtype) + 0.5;
    const torch::Tensor hc = h.clone().requires_grad_(true);
    const torch::Tensor hg = h.to(gpu).requires_grad_(true);
    // The same operations in the same order on both devices.
    const torch::Tensor oc = MeanAggregate(cpu, hc) + WeightedAggregate(cpu, hc, src_w, dst_w);
    const torch::Tensor og =
        MeanAggregate(dev, hg) + WeightedAggregate(dev, hg, src_w.to(gpu), dst_w.to(gpu));
    const torch::Tensor g = torch::randn({300, 70}, dtype);
    oc.backward(g);
    og.backward(g.to(gpu));
    CHECK(torch::equal(og.cpu(), oc.detach()));
    CHECK(torch::equal(hg.grad().cpu(), hc.grad()));
    // Per-edge coefficients (edge weights: GCN's normalised ones,
    // GraphSAGE's weighted mean): LibTorch's ops on the GPU, the CSR loop
    // on the CPU, so equal up to the order of the sums.
    const torch::Tensor coef = torch::rand({cpu.indices.numel()}, dtype) + 0.1;
    const torch::Tensor ec = hc.detach().clone().requires_grad_(true);
    const torch::Tensor eg = hg.detach().clone().requires_grad_(true);
    const torch::Tensor wc = EdgeWeightedAggregate(cpu, ec, coef);
    const torch::Tensor wg = EdgeWeightedAggregate(dev, eg, coef.to(gpu));
    wc.backward(g);
    wg.backward(g.to(gpu));
    const double rtol = dtype == torch::kFloat64 ? 1e-12 : 1e-5;
    const double atol = dtype == torch::kFloat64 ? 1e-12 : 1e-5;
    CHECK(torch::allclose(wg.cpu(), wc.detach(), rtol, atol));
    CHECK(torch::allclose(eg.grad().cpu(), ec.grad(), rtol, atol));
  }
  // A block's edge data goes with it to the device and back.
  BlockTensors with = cpu;
  with.edge_data = torch::rand({cpu.indices.numel(), 3});
  const BlockTensors there = with.To(gpu);
  CHECK(there.edge_data.is_cuda());
  CHECK(torch::equal(there.edge_data.cpu(), with.edge_data));
}
