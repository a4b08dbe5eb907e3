// GAT's fused edge softmax + aggregation and GCN's weighted sum against
// plain LibTorch formulations (index_select + index_add_), values and
// gradients in double, and against central finite differences; GATConv
// and GraphConv against DGL's formulas under DGL's parameter names; the
// GAT and GCN models' forward against layer-wise inference.
#include "train/models/attention.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <random>
#include <set>

#include "common/error.h"
#include "random_block.h"
#include "sampling/sampler.h"
#include "train/loop/inference.h"
#include "train/models/aggregate.h"
#include "train/models/dropout.h"
#include "train/models/gat.h"
#include "train/models/gcn.h"

namespace gnn {
namespace {

using test::RandomBlock;

torch::Tensor Dbl(torch::IntArrayRef shape, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn(shape, torch::kFloat64);
}

torch::Tensor DstOf(const BlockTensors& b) {
  return torch::repeat_interleave(DestinationInDegrees(b));
}

// GAT's aggregation as DGL's message passing spells it out: per-edge
// logits, a scatter softmax, per-edge messages [E, H, F] summed by index_add.
torch::Tensor ReferenceGat(const BlockTensors& b, const torch::Tensor& feat,
                           const torch::Tensor& el, const torch::Tensor& er, double slope,
                           const torch::Tensor& mask) {
  torch::Tensor dst = DstOf(b);
  torch::Tensor z =
      torch::leaky_relu(el.index_select(0, b.indices) + er.index_select(0, dst), slope);
  torch::Tensor top = torch::full({b.num_dst, el.size(1)}, -1e300, el.options())
                          .scatter_reduce(0, dst.unsqueeze(1).expand_as(z), z, "amax");
  torch::Tensor p = torch::exp(z - top.index_select(0, dst));
  torch::Tensor sum = torch::zeros({b.num_dst, el.size(1)}, el.options()).index_add(0, dst, p);
  torch::Tensor a = p / sum.index_select(0, dst);
  if (mask.defined()) a = a * mask;
  torch::Tensor msg = a.unsqueeze(-1) * feat.index_select(0, b.indices);
  return torch::zeros({b.num_dst, feat.size(1), feat.size(2)}, feat.options())
      .index_add(0, dst, msg);
}

// f's gradient in x against central differences.
void CheckFiniteDifferences(const std::function<torch::Tensor(const torch::Tensor&)>& f,
                            torch::Tensor x) {
  x = x.detach().clone().requires_grad_(true);
  f(x).backward();
  torch::Tensor analytic = x.grad().clone();
  torch::NoGradGuard no_grad;
  const double eps = 1e-6;
  torch::Tensor flat = x.detach().view({-1});
  for (int64_t i = 0; i < flat.numel(); ++i) {
    const double keep = flat[i].item<double>();
    flat[i] = keep + eps;
    const double up = f(x.detach()).item<double>();
    flat[i] = keep - eps;
    const double down = f(x.detach()).item<double>();
    flat[i] = keep;
    CHECK(analytic.view({-1})[i].item<double>() == Approx((up - down) / (2 * eps)).margin(1e-6));
  }
}

}  // namespace

TEST_CASE("GatAggregate equals the scatter-softmax formulation, values and gradients", "[unit]") {
  torch::set_num_threads(2);
  for (uint32_t seed : {1u, 2u, 3u}) {
    Block blk = RandomBlock(200, 500, 12, seed);
    BlockTensors b = ToTensors(blk);
    for (auto [heads, width] : {std::pair{1, 5}, std::pair{4, 3}, std::pair{2, 16}}) {
      const double slope = seed == 3 ? 0.0 : 0.2;
      torch::Tensor feat = Dbl({b.num_src, heads, width}, seed + 10);
      torch::Tensor el = Dbl({b.num_src, heads}, seed + 20);
      torch::Tensor er = Dbl({b.num_dst, heads}, seed + 30);
      torch::Tensor mask;
      if (seed == 2)
        mask = torch::empty({b.indices.numel(), heads}, torch::kFloat64).bernoulli_(0.5).mul_(2.0);
      torch::Tensor upstream = Dbl({b.num_dst, heads, width}, seed + 40);
      std::vector<torch::Tensor> ours = {feat.clone().requires_grad_(true),
                                         el.clone().requires_grad_(true),
                                         er.clone().requires_grad_(true)};
      std::vector<torch::Tensor> ref = {feat.clone().requires_grad_(true),
                                        el.clone().requires_grad_(true),
                                        er.clone().requires_grad_(true)};
      torch::Tensor out = GatAggregate(b, ours[0], ours[1], ours[2], slope, mask);
      torch::Tensor want = ReferenceGat(b, ref[0], ref[1], ref[2], slope, mask);
      REQUIRE(out.sizes() == want.sizes());
      CHECK(torch::allclose(out, want, 1e-10, 1e-12));
      (out * upstream).sum().backward();
      (want * upstream).sum().backward();
      for (int k = 0; k < 3; ++k) {
        INFO("seed " << seed << " heads " << heads << " input " << k);
        CHECK(torch::allclose(ours[k].grad(), ref[k].grad(), 1e-9, 1e-11));
      }
    }
  }
}

TEST_CASE("GatAggregateProjected equals GatAggregate on the projection's columns bit for bit",
          "[unit]") {
  torch::set_num_threads(2);
  for (auto dtype : {torch::kFloat64, torch::kFloat32}) {
    for (auto [heads, width] : {std::pair{1, 7}, std::pair{4, 16}, std::pair{3, 2}}) {
      Block blk = RandomBlock(150, 400, 9, static_cast<uint32_t>(heads * 10 + width));
      BlockTensors b = WithSelfLoops(ToTensors(blk));
      const int64_t HF = heads * width;
      torch::Tensor proj = Dbl({b.num_src, HF + 2 * heads}, 5).to(dtype);
      torch::Tensor mask = KeepMask({b.indices.numel(), heads}, 0.3, proj.options());
      torch::Tensor upstream = Dbl({b.num_dst, heads, width}, 6).to(dtype);
      torch::Tensor p1 = proj.clone().requires_grad_(true);
      torch::Tensor out1 = GatAggregateProjected(b, p1, heads, 0.2, mask);
      (out1 * upstream).sum().backward();
      torch::Tensor feat = proj.slice(1, 0, HF).reshape({b.num_src, heads, width});
      torch::Tensor el = proj.slice(1, HF, HF + heads).contiguous();
      torch::Tensor er = proj.slice(1, HF + heads).slice(0, 0, b.num_dst).contiguous();
      std::vector<torch::Tensor> sep = {feat.clone().requires_grad_(true),
                                        el.clone().requires_grad_(true),
                                        er.clone().requires_grad_(true)};
      torch::Tensor out2 = GatAggregate(b, sep[0], sep[1], sep[2], 0.2, mask);
      (out2 * upstream).sum().backward();
      INFO("heads " << heads << " width " << width);
      CHECK(torch::equal(out1, out2));
      torch::Tensor g = p1.grad();
      CHECK(torch::equal(g.slice(1, 0, HF).reshape({b.num_src, heads, width}), sep[0].grad()));
      CHECK(torch::equal(g.slice(1, HF, HF + heads), sep[1].grad()));
      CHECK(torch::equal(g.slice(1, HF + heads).slice(0, 0, b.num_dst), sep[2].grad()));
      CHECK(g.slice(1, HF + heads).slice(0, b.num_dst).abs().sum().item<double>() == 0.0);
    }
  }
  Block blk = RandomBlock(5, 9, 3, 1);
  BlockTensors b = ToTensors(blk);
  CHECK_THROWS_WITH(GatAggregateProjected(b, Dbl({9, 7}, 1), 2, 0.2, {}),
                    Catch::Contains("heads x width + 2 x heads"));
  CHECK_THROWS_WITH(GatAggregateProjected(b, Dbl({8, 8}, 1), 2, 0.2, {}),
                    Catch::Contains("must be [9,"));
}

TEST_CASE("GatAggregate gradients match finite differences and its attention sums to 1 per row",
          "[unit]") {
  Block blk = RandomBlock(7, 11, 4, 9);
  BlockTensors b = ToTensors(blk);
  const int64_t H = 2, F = 3;
  torch::Tensor feat = Dbl({b.num_src, H, F}, 1), el = Dbl({b.num_src, H}, 2);
  torch::Tensor er = Dbl({b.num_dst, H}, 3), w = Dbl({b.num_dst, H, F}, 4);
  CheckFiniteDifferences(
      [&](const torch::Tensor& x) { return (GatAggregate(b, x, el, er, 0.2, {}) * w).sum(); },
      feat);
  CheckFiniteDifferences(
      [&](const torch::Tensor& x) { return (GatAggregate(b, feat, x, er, 0.2, {}) * w).sum(); },
      el);
  CheckFiniteDifferences(
      [&](const torch::Tensor& x) { return (GatAggregate(b, feat, el, x, 0.2, {}) * w).sum(); },
      er);
  torch::Tensor attn = GatAttention(b, el, er, 0.2);
  torch::Tensor row_sum =
      torch::zeros({b.num_dst, H}, torch::kFloat64).index_add(0, DstOf(b), attn);
  torch::Tensor has_edges = DestinationInDegrees(b).gt(0);
  for (int64_t i = 0; i < b.num_dst; ++i) {
    const double want = has_edges[i].item<bool>() ? 1.0 : 0.0;
    CHECK(row_sum[i][0].item<double>() == Approx(want));
    CHECK(row_sum[i][1].item<double>() == Approx(want));
  }
  CHECK_THROWS_WITH(GatAggregate(b, feat, el.slice(0, 1), er, 0.2, {}),
                    Catch::Contains("el has 10 rows, the block has 11 sources"));
}

TEST_CASE("WeightedAggregate equals the scaled index_add in values, gradients and degrees",
          "[unit]") {
  Block blk = RandomBlock(150, 400, 9, 4);
  BlockTensors b = ToTensors(blk);
  torch::Tensor src_w = Dbl({b.num_src}, 1).abs(), dst_w = Dbl({b.num_dst}, 2).abs();
  torch::Tensor h = Dbl({b.num_src, 6}, 3).requires_grad_(true);
  torch::Tensor h_ref = h.detach().clone().requires_grad_(true);
  torch::Tensor out = WeightedAggregate(b, h, src_w, dst_w);
  torch::Tensor msg = (h_ref * src_w.unsqueeze(1)).index_select(0, b.indices);
  torch::Tensor want = torch::zeros({b.num_dst, 6}, torch::kFloat64).index_add(0, DstOf(b), msg) *
                       dst_w.unsqueeze(1);
  CHECK(torch::allclose(out, want, 1e-12, 1e-12));
  torch::Tensor up = Dbl({b.num_dst, 6}, 4);
  (out * up).sum().backward();
  (want * up).sum().backward();
  CHECK(torch::allclose(h.grad(), h_ref.grad(), 1e-12, 1e-12));
  Block small = RandomBlock(5, 8, 3, 5);
  BlockTensors sb = ToTensors(small);
  CheckFiniteDifferences(
      [&](const torch::Tensor& x) {
        return (WeightedAggregate(sb, x, src_w.slice(0, 0, 8), dst_w.slice(0, 0, 5)) *
                up.slice(0, 0, 5).slice(1, 0, 2))
            .sum();
      },
      Dbl({8, 2}, 6));
  // Degrees as DGL's block.out_degrees() / in_degrees().
  torch::Tensor out_deg = SourceOutDegrees(sb), in_deg = DestinationInDegrees(sb);
  for (int64_t s = 0; s < 8; ++s) {
    CHECK(out_deg[s].item<int64_t>() == std::count(small.indices.begin(), small.indices.end(), s));
  }
  for (int64_t d = 0; d < 5; ++d) {
    CHECK(in_deg[d].item<int64_t>() == small.indptr[d + 1] - small.indptr[d]);
  }
}

TEST_CASE("WithSelfLoops puts each destination first in its own row", "[unit]") {
  Block blk;
  blk.num_dst = 2;
  blk.src_nodes = {10, 11, 12};
  blk.indptr = {0, 2, 2};
  blk.indices = {2, 1};
  BlockTensors b = WithSelfLoops(ToTensors(blk));
  CHECK(b.num_dst == 2);
  CHECK(b.num_src == 3);
  CHECK(torch::equal(b.indptr, torch::tensor({0, 3, 4}, torch::kInt64)));
  CHECK(torch::equal(b.indices, torch::tensor({0, 2, 1, 1}, torch::kInt64)));
}

TEST_CASE("AddSelfLoops in the sampler equals WithSelfLoops, and GAT and GCN give the same bits",
          "[unit]") {
  Block blk;
  blk.num_dst = 2;
  blk.src_nodes = {10, 11, 12};
  blk.indptr = {0, 2, 2};
  blk.indices = {2, 1};
  Block looped = blk;
  AddSelfLoops(&looped);
  CHECK(looped.self_loops);
  CHECK(looped.indptr == std::vector<int64_t>{0, 3, 4});
  CHECK(looped.indices == std::vector<int64_t>{0, 2, 1, 1});
  CHECK_THROWS_WITH(AddSelfLoops(&looped), Catch::Contains("already has self-loops"));
  Block transposed = blk;
  BuildTranspose(&transposed);
  CHECK_THROWS_WITH(AddSelfLoops(&transposed), Catch::Contains("has a transpose"));
  Block typed = blk;
  typed.etypes = {0, 1};
  CHECK_THROWS_WITH(AddSelfLoops(&typed), Catch::Contains("typed block"));

  // A sampled-looking block: the sampler's self-loops and transpose (edge
  // ids included) against the trainer's own, through GAT's and GCN's ops.
  torch::set_num_threads(2);
  Block plain = RandomBlock(120, 300, 9, 7);
  Block made = plain;
  AddSelfLoops(&made);
  BuildTranspose(&made);
  const BlockTensors mine = WithSelfLoops(ToTensors(plain));
  const BlockTensors from_sampler = WithSelfLoops(ToTensors(made));
  CHECK(from_sampler.t_eids.defined());
  CHECK(torch::equal(mine.indptr, from_sampler.indptr));
  CHECK(torch::equal(mine.indices, from_sampler.indices));
  const int64_t heads = 4, width = 3;
  torch::Tensor proj = Dbl({mine.num_src, heads * width + 2 * heads}, 11).to(torch::kFloat32);
  torch::Tensor mask = KeepMask({mine.indices.numel(), heads}, 0.2, proj.options());
  torch::Tensor up = Dbl({mine.num_dst, heads, width}, 12).to(torch::kFloat32);
  torch::Tensor a = proj.clone().requires_grad_(true), b = proj.clone().requires_grad_(true);
  torch::Tensor out_a = GatAggregateProjected(mine, a, heads, 0.2, mask);
  torch::Tensor out_b = GatAggregateProjected(from_sampler, b, heads, 0.2, mask);
  (out_a * up).sum().backward();
  (out_b * up).sum().backward();
  CHECK(torch::equal(out_a, out_b));
  CHECK(torch::equal(a.grad(), b.grad()));
  GraphConv gcn(heads * width + 2 * heads, 5);
  torch::Tensor x = proj.clone().requires_grad_(true), y = proj.clone().requires_grad_(true);
  torch::Tensor gx = gcn->forward(mine, x), gy = gcn->forward(from_sampler, y);
  CHECK(torch::equal(gx, gy));
  gx.sum().backward();
  gy.sum().backward();
  CHECK(torch::equal(x.grad(), y.grad()));
}

TEST_CASE("GATConv computes DGL's GATConv under its parameter names", "[unit]") {
  torch::manual_seed(3);
  for (bool residual : {false, true}) {
    for (int64_t in : {6, 8}) {  // in == heads x width: an identity residual
      GatOptions o;
      o.residual = residual;
      GATConv conv(in, 4, 2, o);
      conv->eval();  // no attention dropout
      auto params = conv->named_parameters();
      const bool linear_res = residual && in != 8;
      CHECK(params.contains("fc.weight"));
      CHECK(params["attn_l"].sizes() == torch::IntArrayRef({1, 2, 4}));
      CHECK(params["attn_r"].sizes() == torch::IntArrayRef({1, 2, 4}));
      CHECK(params.contains("bias") == !linear_res);
      CHECK(params.contains("res_fc.weight") == linear_res);
      CHECK(params.contains("res_fc.bias") == linear_res);
      Block blk = RandomBlock(5, 9, 4, static_cast<uint32_t>(in));
      BlockTensors b = ToTensors(blk);
      torch::Tensor h = torch::randn({9, in});
      torch::NoGradGuard no_grad;
      torch::Tensor out = conv->forward(b, h);
      // DGL's forward, spelled out.
      torch::Tensor feat = torch::matmul(h, params["fc.weight"].t()).view({9, 2, 4});
      torch::Tensor el = (feat * params["attn_l"]).sum(-1);
      torch::Tensor er = (feat.slice(0, 0, 5) * params["attn_r"]).sum(-1);
      torch::Tensor want = ReferenceGat(b, feat.to(torch::kFloat64), el.to(torch::kFloat64),
                                        er.to(torch::kFloat64), 0.2, {})
                               .to(torch::kFloat32);
      if (linear_res) {
        want +=
            (torch::matmul(h.slice(0, 0, 5), params["res_fc.weight"].t()) + params["res_fc.bias"])
                .view({5, 2, 4});
      } else if (residual) {
        want += h.slice(0, 0, 5).view({5, 2, 4});
      }
      if (!linear_res) want += params["bias"].view({1, 2, 4});
      CHECK(torch::allclose(out, want, 1e-4, 1e-5));
    }
  }
}

TEST_CASE("GraphConv computes DGL's norm='both' over the block with self-loops", "[unit]") {
  // Both orders (W before or after the sum, by cost), values and gradients.
  torch::manual_seed(4);
  std::set<bool> orders;
  for (auto [in, out] : {std::pair<int64_t, int64_t>{6, 3}, {3, 6}, {12, 2}}) {
    for (bool h_grad : {false, true}) {
      GraphConv conv(in, out);
      auto params = conv->named_parameters();
      CHECK(params["weight"].sizes() == torch::IntArrayRef({in, out}));  // DGL's [in, out]
      CHECK(params["bias"].sizes() == torch::IntArrayRef({out}));
      Block blk = RandomBlock(4, 7, 3, static_cast<uint32_t>(in));
      BlockTensors b = WithSelfLoops(ToTensors(blk));
      torch::Tensor h = torch::randn({7, in}).requires_grad_(h_grad);
      orders.insert(conv->ProjectFirst(b, h));
      torch::Tensor got = conv->forward(b, h);
      // Dense: A[i][s] = edges s -> i; D_out per source, D_in per destination.
      torch::Tensor a = torch::zeros({4, 7});
      for (int64_t i = 0; i < 4; ++i) {
        a[i][i] += 1;  // the self-loop
        for (int64_t e = blk.indptr[i]; e < blk.indptr[i + 1]; ++e) a[i][blk.indices[e]] += 1;
      }
      torch::Tensor d_out = a.sum(0).clamp_min(1).rsqrt(), d_in = a.sum(1).clamp_min(1).rsqrt();
      torch::Tensor w = params["weight"].detach().clone().requires_grad_(true);
      torch::Tensor h2 = h.detach().clone().requires_grad_(h_grad);
      torch::Tensor want =
          d_in.unsqueeze(1) * a.matmul(d_out.unsqueeze(1) * h2).matmul(w) + params["bias"];
      CHECK(torch::allclose(got, want, 1e-4, 1e-5));
      torch::Tensor up = torch::randn({4, out});
      (got * up).sum().backward();
      (want * up).sum().backward();
      CHECK(torch::allclose(params["weight"].grad(), w.grad(), 1e-4, 1e-5));
      if (h_grad) CHECK(torch::allclose(h.grad(), h2.grad(), 1e-4, 1e-5));
    }
  }
  {
    GraphConv conv(12, 2);
    BlockTensors b = WithSelfLoops(ToTensors(RandomBlock(4, 7, 3, 12)));
    torch::NoGradGuard no_grad;  // inference: no backward to pay for
    orders.insert(conv->ProjectFirst(b, torch::randn({7, 12})));
  }
  CHECK(orders == std::set<bool>{false, true});
}

TEST_CASE("GAT and GCN: forward over full blocks equals layer-wise inference", "[unit]") {
  // A 7-node graph's in-neighbourhoods (CSC over ids 0..6); node 3 has none.
  std::vector<int64_t> indptr = {0, 2, 3, 5, 5, 8, 9, 11};
  std::vector<int64_t> indices = {1, 2, 0, 0, 3, 0, 1, 2, 4, 5, 6};
  CscView csc{indptr.data(), indices.data(), 0, 7};
  auto full_block = [&](const std::vector<int64_t>& dst) {
    std::vector<int64_t> ptr, idx;
    SampleNeighbors(csc, dst.data(), static_cast<int64_t>(dst.size()), -1, false, 0, 1, &ptr, &idx);
    return ToBlock(dst, std::move(ptr), idx);
  };
  torch::manual_seed(7);
  torch::Tensor x = torch::randn({7, 5});
  auto rows = [&](const torch::Tensor& t, const std::vector<int64_t>& ids) {
    return t.index_select(0, torch::tensor(ids, torch::kInt64));
  };
  InferenceSource source;
  source.neighbors = [&](const std::vector<int64_t>& dst, std::vector<int64_t>* ptr,
                         std::vector<int64_t>* idx, std::vector<float>*) {
    SampleNeighbors(csc, dst.data(), static_cast<int64_t>(dst.size()), -1, false, 0, 1, ptr, idx);
  };
  source.features = [&](const std::vector<int64_t>& ids) { return rows(x, ids); };
  source.exchange = [](const torch::Tensor& r) { return r; };
  GatOptions go;
  go.in = 5, go.hidden = 8, go.classes = 3, go.heads = 4, go.out_heads = 2;
  std::shared_ptr<NodeModel> gat = std::make_shared<GatImpl>(go);
  std::shared_ptr<NodeModel> gcn = std::make_shared<GcnImpl>(5, 8, 3, 2, 0.5);
  CHECK(gat->OutDim(0) == 8);
  CHECK(gat->OutDim(1) == 3);
  for (auto& model : {gat, gcn}) {
    INFO(model->Name());
    model->eval();
    // GAT's layer reads only its destination's neighbourhood: any seeds'
    // blocks give the rows inference gives. GCN's norm reads the block's
    // source degrees: only blocks over every node do (inference's batch of
    // every node).
    std::vector<int64_t> seeds = model->Name() == "gat" ? std::vector<int64_t>{0, 4}
                                                        : std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6};
    Block top = full_block(seeds);
    Block bottom = full_block(top.src_nodes);
    torch::Tensor full;
    {
      torch::NoGradGuard no_grad;
      full = model->Forward({ToTensors(bottom), ToTensors(top)}, rows(x, bottom.src_nodes));
    }
    for (int64_t batch : {1, 3, 100}) {
      if (model->Name() == "gcn" && batch < 7) continue;
      torch::Tensor all = LayerwiseInference(*model, source, 0, 7, batch, true);
      CHECK(torch::allclose(rows(all, seeds), full, 1e-5, 1e-6));
    }
    CHECK(model->is_training());
    CHECK_FALSE(model->TakesMeans());
    CHECK_THROWS_WITH(model->ForwardLayerFromMeans(0, x), Catch::Contains("cannot start from"));
  }
}

}  // namespace gnn

namespace gnn {

TEST_CASE("KeepMask keeps 1 - p of the elements at 1 / (1 - p), reproducibly", "[unit]") {
  for (double p : {0.1, 0.5, 0.6}) {
    torch::manual_seed(3);
    torch::Tensor a = KeepMask({1001, 37}, p, torch::kFloat32);
    torch::manual_seed(3);
    torch::Tensor b = KeepMask({1001, 37}, p, torch::kFloat32);
    CHECK(torch::equal(a, b));
    torch::Tensor kept = a.ne(0);
    CHECK(kept.to(torch::kFloat64).mean().item<double>() == Approx(1 - p).margin(0.01));
    CHECK(torch::allclose(a.masked_select(kept),
                          torch::full({kept.sum().item<int64_t>()}, 1.0 / (1 - p))));
    // Neighbouring elements are not correlated.
    torch::Tensor even = kept.view({-1}).slice(0, 0, 37036, 2).to(torch::kFloat64);
    torch::Tensor odd = kept.view({-1}).slice(0, 1, 37037, 2).to(torch::kFloat64);
    CHECK((even * odd).mean().item<double>() == Approx((1 - p) * (1 - p)).margin(0.01));
  }
  torch::Tensor x = torch::ones({4, 4});
  CHECK(torch::equal(Dropout(x, 0.5, /*training=*/false), x));
}

TEST_CASE("Dropout is x * KeepMask in one pass, and its gradient is the same mask", "[unit]") {
  torch::Tensor x = torch::randn({333, 17}, torch::kFloat64).requires_grad_();
  for (double p : {0.2, 0.5}) {
    torch::manual_seed(11);
    torch::Tensor out = Dropout(x, p, /*training=*/true);
    torch::manual_seed(11);
    torch::Tensor mask = KeepMask({333, 17}, p, torch::kFloat64);
    CHECK(torch::equal(out, x.detach() * mask));  // the same bits, the same products
    torch::Tensor g = torch::randn({333, 17}, torch::kFloat64);
    x.mutable_grad() = torch::Tensor();
    out.backward(g);
    CHECK(torch::equal(x.grad(), g * mask));
  }
}

TEST_CASE("ReluDropout is Dropout(relu(x)): the same values, draw and gradient", "[unit]") {
  for (torch::ScalarType t : {torch::kFloat32, torch::kFloat64}) {
    torch::Tensor x = torch::randn({333, 17}, t).requires_grad_();
    torch::Tensor g = torch::randn({333, 17}, t);
    for (double p : {0.0, 0.5}) {
      torch::manual_seed(5);
      torch::Tensor fused = ReluDropout(x, p, /*training=*/true);
      const int64_t after_fused = torch::randint(1 << 30, {1}).item<int64_t>();
      fused.backward(g);
      const torch::Tensor fused_grad = x.grad().clone();
      x.mutable_grad() = torch::Tensor();
      torch::manual_seed(5);
      torch::Tensor plain = Dropout(torch::relu(x), p, /*training=*/true);
      // The generator moved alike: the next draws agree.
      CHECK(torch::randint(1 << 30, {1}).item<int64_t>() == after_fused);
      plain.backward(g);
      CHECK(torch::equal(fused, plain));
      CHECK(torch::equal(fused_grad, x.grad()));
      x.mutable_grad() = torch::Tensor();
    }
    CHECK(torch::equal(ReluDropout(x, 0.5, /*training=*/false), torch::relu(x)));
  }
}

}  // namespace gnn
