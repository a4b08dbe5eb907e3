// Edge weights in the models, against dense formulas computed here in
// double: the per-edge weighted sum (values and gradients), GCN with DGL's
// EdgeWeightNorm('both') recipe and GraphSAGE's weighted mean (DGL's
// SAGEConv with edge_weight), both projection orders.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <random>

#include "common/error.h"
#include "random_block.h"
#include "sampling/sampler.h"
#include "train/models/aggregate.h"
#include "train/models/gat.h"
#include "train/models/gcn.h"
#include "train/models/sage.h"

namespace gnn {
namespace {

using test::RandomBlock;

torch::Tensor Dbl(torch::IntArrayRef shape, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn(shape, torch::kFloat64);
}

// Positive weights in [0.25, 2.25) per edge, as a block's 1-wide edge data.
void GiveWeights(Block* b, uint32_t seed) {
  std::mt19937 rng(seed);
  b->edge_dim = 1;
  b->edge_data.resize(b->indices.size());
  for (float& w : b->edge_data) w = 0.25f + static_cast<float>(rng() % 1000) / 500.0f;
}

// Features in [-2, 2) per edge, `width` wide, as a block's edge data.
void GiveFeatures(Block* b, int64_t width, uint32_t seed) {
  std::mt19937 rng(seed);
  b->edge_dim = width;
  b->edge_data.resize(b->indices.size() * static_cast<size_t>(width));
  for (float& x : b->edge_data) x = static_cast<float>(rng() % 1000) / 250.0f - 2.0f;
}

// A[i][s] = sum of the weights of the edges s -> i (double).
torch::Tensor DenseWeights(const Block& b) {
  torch::Tensor a = torch::zeros({b.num_dst, b.num_src()}, torch::kFloat64);
  auto acc = a.accessor<double, 2>();
  for (int64_t i = 0; i < b.num_dst; ++i) {
    for (int64_t e = b.indptr[i]; e < b.indptr[i + 1]; ++e) {
      acc[i][b.indices[e]] += static_cast<double>(b.edge_data[e]);
    }
  }
  return a;
}

}  // namespace

TEST_CASE("EdgeWeightedAggregate equals the dense weighted sum, values and gradients", "[unit]") {
  for (uint32_t seed : {1u, 2u}) {
    Block b = RandomBlock(120, 300, 9, seed);
    GiveWeights(&b, seed);
    if (seed == 2) BuildTranspose(&b);  // the sampler's transpose, and the op's own
    const BlockTensors bt = ToTensors(b);
    const torch::Tensor coef = torch::rand({b.num_edges()}, torch::kFloat64);
    // The dense matrix of these coefficients.
    torch::Tensor a = torch::zeros({b.num_dst, b.num_src()}, torch::kFloat64);
    for (int64_t i = 0; i < b.num_dst; ++i) {
      for (int64_t e = b.indptr[i]; e < b.indptr[i + 1]; ++e) {
        a[i][b.indices[e]] += coef[e];
      }
    }
    for (int64_t d : {1, 5, 32}) {
      torch::Tensor h = Dbl({b.num_src(), d}, seed + d).requires_grad_(true);
      torch::Tensor h_ref = h.detach().clone().requires_grad_(true);
      const torch::Tensor up = Dbl({b.num_dst, d}, seed + d + 7);
      const torch::Tensor got = EdgeWeightedAggregate(bt, h, coef);
      const torch::Tensor want = torch::mm(a, h_ref);
      CHECK(torch::allclose(got, want, 1e-12, 1e-12));
      (got * up).sum().backward();
      (want * up).sum().backward();
      CHECK(torch::allclose(h.grad(), h_ref.grad(), 1e-12, 1e-12));
    }
  }
  const Block b = RandomBlock(10, 20, 3, 3);
  CHECK_THROWS_WITH(EdgeWeightedAggregate(ToTensors(b), Dbl({20, 2}, 1),
                                          torch::ones({b.num_edges() + 1}, torch::kFloat64)),
                    Catch::Contains("coefficients for a block of"));
}

TEST_CASE("GraphConv with edge weights is DGL's EdgeWeightNorm('both') then a weighted sum",
          "[unit]") {
  // Many edges over few sources favour projecting first; wide inputs over
  // many sources favour aggregating first: both orders, one function.
  struct Case {
    Block block;
    int64_t in, out;
  };
  for (Case c :
       {Case{RandomBlock(20, 24, 30, 9), 64, 2}, Case{RandomBlock(40, 120, 8, 9), 5, 12}}) {
    Block& b = c.block;
    GiveWeights(&b, 4);
    AddSelfLoops(&b);  // each self-loop weighs 1.0, as dgl.add_self_loop fills it
    const BlockTensors bt = ToTensors(b);
    torch::manual_seed(0);
    GraphConv conv(c.in, c.out);
    conv->to(torch::kFloat64);
    torch::Tensor h = Dbl({b.num_src(), c.in}, 21).requires_grad_(true);
    const torch::Tensor got = conv->forward(bt, h);
    // Dense: W_norm[i][s] = A[i][s] / sqrt(out_w(s) in_w(i)).
    const torch::Tensor a = DenseWeights(b);
    const torch::Tensor out_w = a.sum(0), in_w = a.sum(1);
    const torch::Tensor norm =
        a * out_w.clamp_min(1e-300).rsqrt().unsqueeze(0) * in_w.rsqrt().unsqueeze(1);
    auto params = conv->named_parameters();
    torch::Tensor h2 = h.detach().clone().requires_grad_(true);
    const torch::Tensor want = torch::mm(torch::mm(norm, h2), params["weight"]) + params["bias"];
    CHECK(torch::allclose(got, want, 1e-10, 1e-12));
    const torch::Tensor up = Dbl({b.num_dst, c.out}, 5);
    (got * up).sum().backward();
    (want * up).sum().backward();
    CHECK(torch::allclose(h.grad(), h2.grad(), 1e-10, 1e-12));
  }
  // A zero weight sends nothing (DGL refuses it); a negative one is one
  // error.
  Block b = RandomBlock(10, 20, 4, 8);
  GiveWeights(&b, 8);
  torch::manual_seed(0);
  GraphConv conv(3, 2);
  const torch::Tensor x = torch::randn({20, 3});
  for (float& w : b.edge_data) w = 0.0f;
  CHECK(torch::equal(conv->forward(ToTensors(b), x),
                     conv->named_parameters()["bias"].expand({b.num_dst, 2})));
  b.edge_data[0] = -1.0f;
  CHECK_THROWS_AS(conv->forward(ToTensors(b), x), DataError);
}

TEST_CASE("SAGEConv with edge weights takes sum(w h) / deg, DGL's SAGEConv with edge_weight",
          "[unit]") {
  for (int64_t out : {2, 40}) {
    Block b = RandomBlock(30, 90, 7, 11);
    GiveWeights(&b, 12);
    const BlockTensors bt = ToTensors(b);
    torch::manual_seed(1);
    SAGEConv conv(16, out);
    conv->to(torch::kFloat64);
    torch::Tensor h = Dbl({b.num_src(), 16}, 3).requires_grad_(true);
    const torch::Tensor got = conv->forward(bt, h);
    const torch::Tensor a = DenseWeights(b);
    torch::Tensor deg = torch::zeros({b.num_dst}, torch::kFloat64);
    for (int64_t i = 0; i < b.num_dst; ++i)
      deg[i] = std::max<int64_t>(1, b.indptr[i + 1] - b.indptr[i]);
    auto params = conv->named_parameters();
    torch::Tensor h2 = h.detach().clone().requires_grad_(true);
    const torch::Tensor want =
        torch::mm(h2.slice(0, 0, b.num_dst), params["fc_self.weight"].t()) +
        torch::mm(torch::mm(a, h2) / deg.unsqueeze(1), params["fc_neigh.weight"].t()) +
        params["bias"];
    CHECK(torch::allclose(got, want, 1e-10, 1e-12));
    const torch::Tensor up = Dbl({b.num_dst, out}, 4);
    (got * up).sum().backward();
    (want * up).sum().backward();
    CHECK(torch::allclose(h.grad(), h2.grad(), 1e-10, 1e-12));
  }
}

TEST_CASE("SAGEConv with edge features: each op's message averaged over the in-edges", "[unit]") {
  Block b = RandomBlock(25, 70, 6, 21);
  GiveFeatures(&b, 3, 5);
  const BlockTensors bt = ToTensors(b);
  const int64_t in = 6, out = 4;
  for (const std::string op : {"concat", "add", "sub", "mul"}) {
    INFO(op);
    torch::manual_seed(2);
    SAGEConv conv(in, out, 3, op);
    conv->to(torch::kFloat64);
    torch::Tensor h = Dbl({b.num_src(), in}, 8).requires_grad_(true);
    const torch::Tensor got = conv->forward(bt, h);
    // Per edge: the message, then the mean over each destination's edges.
    auto params = conv->named_parameters();
    torch::Tensor h2 = h.detach().clone().requires_grad_(true);
    const torch::Tensor x =
        torch::from_blob(b.edge_data.data(), {b.num_edges(), 3}, torch::kFloat32)
            .to(torch::kFloat64);
    const torch::Tensor proj = torch::mm(x, params["fc_edge.weight"].t());
    const torch::Tensor src = h2.index_select(0, torch::tensor(b.indices));
    const torch::Tensor msg = op == "concat" ? torch::cat({src, proj}, 1)
                              : op == "add"  ? src + proj
                              : op == "sub"  ? src - proj
                                             : src * proj;
    std::vector<torch::Tensor> rows;
    for (int64_t i = 0; i < b.num_dst; ++i) {
      rows.push_back(b.indptr[i + 1] > b.indptr[i]
                         ? msg.slice(0, b.indptr[i], b.indptr[i + 1]).mean(0)
                         : torch::zeros({msg.size(1)}, torch::kFloat64));
    }
    const torch::Tensor want = torch::mm(h2.slice(0, 0, b.num_dst), params["fc_self.weight"].t()) +
                               torch::mm(torch::stack(rows), params["fc_neigh.weight"].t()) +
                               params["bias"];
    CHECK(params["fc_neigh.weight"].size(1) == (op == "concat" ? 2 * in : in));
    CHECK(torch::allclose(got, want, 1e-10, 1e-12));
    const torch::Tensor up = Dbl({b.num_dst, out}, 9);
    (got * up).sum().backward();
    (want * up).sum().backward();
    CHECK(torch::allclose(h.grad(), h2.grad(), 1e-10, 1e-12));
  }
}

}  // namespace gnn

namespace gnn {
namespace {

TEST_CASE(
    "GATConv with edge features: each op's message weighted by the attention over the "
    "in-edges",
    "[unit]") {
  Block b = RandomBlock(20, 60, 5, 33);
  GiveFeatures(&b, 3, 7);
  const BlockTensors bt = ToTensors(b);
  const int64_t in = 6, width = 3;
  const int heads = 2;
  for (const std::string op : {"add", "sub", "mul"}) {
    INFO(op);
    GatOptions o;
    o.attn_drop = 0;
    o.edge_dim = 3;
    o.edge_op = op;
    torch::manual_seed(4);
    GATConv conv(in, width, heads, o);
    conv->to(torch::kFloat64);
    conv->eval();
    torch::Tensor h = Dbl({b.num_src(), in}, 8).requires_grad_(true);
    const torch::Tensor got = conv->forward(bt, h);
    REQUIRE(got.sizes() == torch::IntArrayRef({b.num_dst, heads, width}));
    // Destination by destination: the softmax of its in-edges' logits,
    // then the weighted sum of their messages.
    auto params = conv->named_parameters();
    CHECK(params["fc_edge.weight"].sizes() == torch::IntArrayRef({heads * width, 3}));
    torch::Tensor h2 = h.detach().clone().requires_grad_(true);
    const torch::Tensor feat = torch::mm(h2, params["fc.weight"].t()).view({-1, heads, width});
    const torch::Tensor x =
        torch::from_blob(b.edge_data.data(), {b.num_edges(), 3}, torch::kFloat32)
            .to(torch::kFloat64);
    const torch::Tensor edge = torch::mm(x, params["fc_edge.weight"].t()).view({-1, heads, width});
    const torch::Tensor el = (feat * params["attn_l"]).sum(-1);
    const torch::Tensor er = (feat * params["attn_r"]).sum(-1);
    std::vector<torch::Tensor> rows;
    for (int64_t i = 0; i < b.num_dst; ++i) {
      torch::Tensor sum = torch::zeros({heads, width}, torch::kFloat64);
      if (b.indptr[i + 1] > b.indptr[i]) {
        std::vector<torch::Tensor> logit, msg;
        for (int64_t k = b.indptr[i]; k < b.indptr[i + 1]; ++k) {
          const int64_t s = b.indices[k];
          logit.push_back(torch::leaky_relu(el[s] + er[i], o.negative_slope));
          const torch::Tensor e = edge[k];
          msg.push_back(op == "add" ? feat[s] + e : op == "sub" ? feat[s] - e : feat[s] * e);
        }
        const torch::Tensor alpha = torch::softmax(torch::stack(logit), 0);  // [k, H]
        sum = (alpha.unsqueeze(-1) * torch::stack(msg)).sum(0);
      }
      rows.push_back(sum);
    }
    const torch::Tensor want = torch::stack(rows) + params["bias"].view({1, heads, width});
    CHECK(torch::allclose(got, want, 1e-10, 1e-12));
    const torch::Tensor up = Dbl({b.num_dst, heads, width}, 9);
    (got * up).sum().backward();
    (want * up).sum().backward();
    CHECK(torch::allclose(h.grad(), h2.grad(), 1e-10, 1e-12));
  }
  // concat is graphsage's: one line.
  GatOptions o;
  o.edge_dim = 3;
  o.edge_op = "concat";
  CHECK_THROWS_AS(GATConv(in, width, heads, o), ConfigError);
}

}  // namespace
}  // namespace gnn
