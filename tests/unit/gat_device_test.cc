// GAT's attention op off the CPU: the per-row functions the CUDA kernels
// run (kernels/gat_rows.h), run here on the CPU in the CUDA kernels' order
// against the CPU op, values and gradients; and, where a GPU is visible in
// a CUDA build, the op on the GPU against the op on the CPU.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <random>

#include "kernels/gat_rows.h"
#include "random_block.h"
#include "sampling/sampler.h"
#include "test_util.h"
#include "train/loop/device.h"
#include "train/models/attention.h"
#include "train/models/dropout.h"

namespace gnn {
namespace {

// A block with self-loops (GAT's convention) and random in-edges, some
// destinations with none besides their own; sources repeat.
Block LoopBlock(int64_t num_dst, int64_t num_src, int max_deg, uint32_t seed) {
  Block b = test::RandomBlock(num_dst, num_src, max_deg, seed);
  AddSelfLoops(&b);
  BuildTranspose(&b);
  return b;
}

struct RowResults {
  torch::Tensor out, attn, grad;  // out [D, H, F], attn [E, H], grad like proj
};

// The kernels' functions over the projection layout (feat | el | er), in
// the CUDA kernels' order: forward per destination row (softmaxes, then
// the columns dealt to `threads` workers); backward per destination row
// (d attention of each edge and head, then the softmaxes), then per source
// row (d feat's columns, d el).
template <typename T>
RowResults RunRows(const Block& b, const torch::Tensor& proj, int64_t heads, double slope,
                   const torch::Tensor& mask, const torch::Tensor& g, int threads) {
  const int64_t S = proj.size(0), D = b.num_dst, E = static_cast<int64_t>(b.indices.size());
  const int64_t HF = proj.size(1) - 2 * heads, F = HF / heads;
  kernels::GatRowArgs<T> a;
  a.ptr = b.indptr.data();
  a.idx = b.indices.data();
  a.num_dst = D;
  a.num_src = S;
  a.heads = heads;
  a.width = F;
  const T* p = proj.data_ptr<T>();
  a.feat = p;
  a.el = p + HF;
  a.er = p + HF + heads;
  a.fs = a.ls = a.rs = HF + 2 * heads;
  a.mask = mask.defined() ? mask.data_ptr<T>() : nullptr;
  a.slope = static_cast<T>(slope);
  a.t_ptr = b.t_indptr.data();
  a.t_eid = b.t_eids.data();
  a.t_dst = b.t_indices.data();
  RowResults r{torch::full({D, HF}, 7.0, proj.options()),
               torch::full({E, heads}, 7.0, proj.options()), torch::full_like(proj, 7.0)};
  T* attn = r.attn.data_ptr<T>();
  for (int64_t i = 0; i < D; ++i) {
    for (int64_t h = 0; h < heads; ++h) kernels::GatRowSoftmax(a, i, h, attn);
    for (int t = 0; t < threads; ++t)
      kernels::GatRowForward(a, i, t, threads, attn, r.out.data_ptr<T>());
  }
  torch::Tensor d_logit = torch::empty({E, heads}, proj.options());
  T* dl = d_logit.data_ptr<T>();
  T* gp = r.grad.data_ptr<T>();
  const T* gg = g.data_ptr<T>();
  for (int64_t i = 0; i < D; ++i) {
    for (int64_t e = b.indptr[i]; e < b.indptr[i + 1]; ++e) {
      for (int64_t h = 0; h < heads; ++h) kernels::GatEdgeGrad(a, i, e, h, gg, dl);
    }
    for (int64_t h = 0; h < heads; ++h)
      kernels::GatRowSoftmaxGrad(a, i, h, attn, dl, gp + HF + heads);
  }
  for (int64_t s = 0; s < S; ++s) {
    for (int t = 0; t < threads; ++t) kernels::GatSourceFeatGrad(a, s, t, threads, attn, gg, gp);
    for (int64_t h = 0; h < heads; ++h) kernels::GatSourceLogitGrad(a, s, h, dl, gp + HF);
  }
  // As the op: er's columns of the sources that are not destinations get zeros.
  r.grad.slice(0, D).slice(1, HF + heads).zero_();
  r.out = r.out.view({D, heads, F});
  return r;
}

}  // namespace

TEST_CASE("GAT's CUDA row functions equal the CPU attention op in values and gradients", "[unit]") {
  const int threads = GENERATE(1, 32, 128);
  for (auto dtype : {torch::kFloat64, torch::kFloat32}) {
    for (auto [heads, width] : {std::pair{1, 7}, std::pair{4, 16}, std::pair{3, 50}}) {
      const Block blk = LoopBlock(120, 300, 10, static_cast<uint32_t>(heads * 100 + width));
      const BlockTensors b = ToTensors(blk);
      const int64_t HF = heads * width;
      torch::manual_seed(heads + width);
      const torch::Tensor proj = torch::randn({b.num_src, HF + 2 * heads}, dtype);
      const torch::Tensor mask =
          heads == 4 ? KeepMask({b.indices.numel(), heads}, 0.3, proj.options()) : torch::Tensor();
      const torch::Tensor g = torch::randn({b.num_dst, heads, width}, dtype);
      const double slope = heads == 3 ? 0.0 : 0.2;
      const torch::Tensor p = proj.clone().requires_grad_(true);
      const torch::Tensor want = GatAggregateProjected(b, p, heads, slope, mask);
      want.backward(g);
      RowResults got;
      if (dtype == torch::kFloat64) {
        got = RunRows<double>(blk, proj, heads, slope, mask, g, threads);
      } else {
        got = RunRows<float>(blk, proj, heads, slope, mask, g, threads);
      }
      const double rtol = dtype == torch::kFloat64 ? 1e-12 : 1e-5;
      const double atol = dtype == torch::kFloat64 ? 1e-13 : 1e-6;
      INFO("dtype " << dtype << " heads " << heads << " width " << width << " threads " << threads);
      CHECK(torch::allclose(got.out, want.detach(), rtol, atol));
      const torch::Tensor el = proj.slice(1, HF, HF + heads).contiguous();
      const torch::Tensor er = proj.slice(1, HF + heads).slice(0, 0, b.num_dst).contiguous();
      CHECK(torch::allclose(got.attn, GatAttention(b, el, er, slope), rtol, atol));
      CHECK(torch::allclose(got.grad, p.grad(), rtol, atol));
    }
  }
}

TEST_CASE("GAT's attention op on the GPU equals the CPU's in values and gradients (GPU)",
          "[unit]") {
  if (!BuiltWithCuda()) GNN_SKIP("this build has no CUDA kernels (scripts/build-cuda.sh)");
  if (!torch::cuda::is_available()) GNN_SKIP("no CUDA device visible");
  const torch::Device gpu(torch::kCUDA, 0);
  for (auto dtype : {torch::kFloat64, torch::kFloat32}) {
    for (auto [heads, width] : {std::pair{1, 7}, std::pair{4, 64}}) {
      Block blk = LoopBlock(400, 900, 20, static_cast<uint32_t>(heads + width));
      const BlockTensors cpu = ToTensors(blk);  // with the sampler's transpose
      const BlockTensors dev = cpu.To(gpu);
      const int64_t HF = heads * width;
      torch::manual_seed(heads * 7 + width);
      const torch::Tensor proj = torch::randn({cpu.num_src, HF + 2 * heads}, dtype);
      const torch::Tensor mask = KeepMask({cpu.indices.numel(), heads}, 0.25, proj.options());
      const torch::Tensor g = torch::randn({cpu.num_dst, heads, width}, dtype);
      const double rtol = dtype == torch::kFloat64 ? 1e-10 : 1e-4;
      const double atol = dtype == torch::kFloat64 ? 1e-12 : 1e-5;
      INFO("dtype " << dtype << " heads " << heads << " width " << width);
      // The projection layout, on the sampler's transpose.
      const torch::Tensor pc = proj.clone().requires_grad_(true);
      const torch::Tensor pg = proj.to(gpu).requires_grad_(true);
      const torch::Tensor oc = GatAggregateProjected(cpu, pc, heads, 0.2, mask);
      const torch::Tensor og = GatAggregateProjected(dev, pg, heads, 0.2, mask.to(gpu));
      oc.backward(g);
      og.backward(g.to(gpu));
      CHECK(torch::allclose(og.cpu(), oc.detach(), rtol, atol));
      CHECK(torch::allclose(pg.grad().cpu(), pc.grad(), rtol, atol));
      // Separate feat, el, er, on a block without a transpose (built on
      // the host), no dropout.
      BlockTensors bare = dev;
      bare.t_indptr = bare.t_indices = bare.t_eids = torch::Tensor();
      const torch::Tensor feat = torch::randn({cpu.num_src, heads, width}, dtype);
      const torch::Tensor el = torch::randn({cpu.num_src, heads}, dtype);
      const torch::Tensor er = torch::randn({cpu.num_dst, heads}, dtype);
      std::vector<torch::Tensor> on_cpu, on_gpu;
      for (const torch::Tensor& t : {feat, el, er}) {
        on_cpu.push_back(t.clone().requires_grad_(true));
        on_gpu.push_back(t.to(gpu).requires_grad_(true));
      }
      const torch::Tensor sc = GatAggregate(cpu, on_cpu[0], on_cpu[1], on_cpu[2], 0.2, {});
      const torch::Tensor sg = GatAggregate(bare, on_gpu[0], on_gpu[1], on_gpu[2], 0.2, {});
      sc.backward(g);
      sg.backward(g.to(gpu));
      CHECK(torch::allclose(sg.cpu(), sc.detach(), rtol, atol));
      for (int k = 0; k < 3; ++k) {
        INFO("input " << k);
        CHECK(torch::allclose(on_gpu[k].grad().cpu(), on_cpu[k].grad(), rtol, atol));
      }
    }
  }
}

}  // namespace gnn
