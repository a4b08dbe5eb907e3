// RGCN: the relation-major regrouping of a block on a hand-made case,
// RelGraphConv against a per-edge double-precision reference (full weights
// and bases) and its gradients against plain LibTorch ops (index_add_ and
// division by counts), and the model's input embedding and layer stack.
#include "train/models/rgcn.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "test_util.h"
#include "train/loop/device.h"
#include "train/models/rgat.h"

namespace gnn {
namespace {

// dst 0 <- (src 3, rel 1), (src 1, rel 0), (src 4, rel 1)
// dst 1 <- nothing
// dst 2 <- (src 0, rel 2), (src 3, rel 0), (src 2, rel 2), (src 4, rel 0)
Block HandBlock() {
  Block b;
  b.num_dst = 3;
  b.src_nodes = {10, 11, 12, 13, 14};
  b.indptr = {0, 3, 3, 7};
  b.indices = {3, 1, 4, 0, 3, 2, 4};
  b.etypes = {1, 0, 1, 2, 0, 2, 0};
  return b;
}

// Random degrees in [0, max_deg] (some destinations have none), sources with
// repeats, relations uniform in [0, num_rels).
Block RandomHeteroBlock(int64_t num_dst, int64_t num_src, int max_deg, int64_t num_rels,
                        uint32_t seed) {
  std::mt19937 rng(seed);
  Block b;
  b.num_dst = num_dst;
  for (int64_t i = 0; i < num_src; ++i) b.src_nodes.push_back(100 + i);
  b.indptr.push_back(0);
  for (int64_t d = 0; d < num_dst; ++d) {
    const int deg = static_cast<int>(rng() % (max_deg + 1));
    for (int k = 0; k < deg; ++k) {
      b.indices.push_back(static_cast<int64_t>(rng() % num_src));
      b.etypes.push_back(static_cast<int64_t>(rng() % num_rels));
    }
    b.indptr.push_back(static_cast<int64_t>(b.indices.size()));
  }
  return b;
}

// The per-relation weights from the parameters by explicit loops:
// W_r = weight_r (full) or sum_b coeff[r, b] V_b (bases).
torch::Tensor NaiveWeights(RelGraphConv& conv, int64_t num_rels) {
  auto p = conv->named_parameters();
  torch::Tensor w = p["weight"].detach().to(torch::kFloat64);
  if (!p.contains("coeff")) return w;
  torch::Tensor c = p["coeff"].detach().to(torch::kFloat64);
  const int64_t bases = w.size(0), in = w.size(1), out = w.size(2);
  torch::Tensor eff = torch::zeros({num_rels, in, out}, torch::kFloat64);
  auto wa = w.accessor<double, 3>();
  auto ca = c.accessor<double, 2>();
  auto ea = eff.accessor<double, 3>();
  for (int64_t r = 0; r < num_rels; ++r)
    for (int64_t bb = 0; bb < bases; ++bb)
      for (int64_t i = 0; i < in; ++i)
        for (int64_t o = 0; o < out; ++o) ea[r][i][o] += ca[r][bb] * wa[bb][i][o];
  return eff;
}

// RGCN's formula edge by edge, in double: per (destination, relation) sums
// and counts, then sum_r (sum / count) W_r + h_dst W_loop + b.
torch::Tensor NaiveRelConv(const Block& b, int64_t num_rels, const torch::Tensor& h_in,
                           const torch::Tensor& w_in, const torch::Tensor& loop_in,
                           const torch::Tensor& bias_in) {
  torch::Tensor h = h_in.detach().to(torch::kFloat64);
  torch::Tensor w = w_in.detach().to(torch::kFloat64);
  torch::Tensor bias = bias_in.detach().to(torch::kFloat64);
  const int64_t in = h.size(1), out = w.size(2);
  auto ha = h.accessor<double, 2>();
  auto wa = w.accessor<double, 3>();
  auto ba = bias.accessor<double, 1>();
  // Without a self loop, a zero matrix stands in (its accessor needs a tensor).
  torch::Tensor loop = loop_in.defined() ? loop_in.detach().to(torch::kFloat64)
                                         : torch::zeros({in, out}, torch::kFloat64);
  auto la = loop.accessor<double, 2>();
  torch::Tensor result = torch::zeros({b.num_dst, out}, torch::kFloat64);
  auto ra = result.accessor<double, 2>();
  for (int64_t d = 0; d < b.num_dst; ++d) {
    std::vector<std::vector<double>> sum(num_rels, std::vector<double>(in, 0.0));
    std::vector<int64_t> count(num_rels, 0);
    for (int64_t e = b.indptr[d]; e < b.indptr[d + 1]; ++e) {
      const int64_t r = b.etypes[e];
      for (int64_t i = 0; i < in; ++i) sum[r][i] += ha[b.indices[e]][i];
      ++count[r];
    }
    for (int64_t o = 0; o < out; ++o) {
      double acc = ba[o];
      for (int64_t r = 0; r < num_rels; ++r) {
        if (count[r] == 0) continue;
        for (int64_t i = 0; i < in; ++i) acc += sum[r][i] / count[r] * wa[r][i][o];
      }
      if (loop_in.defined()) {
        for (int64_t i = 0; i < in; ++i) acc += ha[d][i] * la[i][o];
      }
      ra[d][o] = acc;
    }
  }
  return result;
}

// The same with differentiable LibTorch ops over the original block: a
// relation-major index_add_ of the source rows, divided by the counts.
torch::Tensor ReferenceRelConv(const Block& b, int64_t num_rels, const torch::Tensor& h,
                               const torch::Tensor& w, const torch::Tensor& loop,
                               const torch::Tensor& bias) {
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  torch::Tensor indptr = torch::tensor(b.indptr, i64);
  torch::Tensor indices = torch::tensor(b.indices, i64);
  torch::Tensor etypes = torch::tensor(b.etypes, i64);
  torch::Tensor dst_of = torch::repeat_interleave(indptr.slice(0, 1) - indptr.slice(0, 0, -1));
  torch::Tensor row = etypes * b.num_dst + dst_of;
  const int64_t rows = num_rels * b.num_dst;
  torch::Tensor sum =
      torch::zeros({rows, h.size(1)}, h.options()).index_add_(0, row, h.index_select(0, indices));
  torch::Tensor count =
      torch::zeros({rows}, h.options()).index_add_(0, row, torch::ones({row.size(0)}, h.options()));
  torch::Tensor mean = sum / count.clamp_min(1).unsqueeze(1);
  torch::Tensor out = bias.expand({b.num_dst, bias.size(0)});
  for (int64_t r = 0; r < num_rels; ++r) {
    out = out + mean.slice(0, r * b.num_dst, (r + 1) * b.num_dst).matmul(w[r]);
  }
  if (loop.defined()) out = out + h.slice(0, 0, b.num_dst).matmul(loop);
  return out;
}

torch::Tensor Dbl(torch::IntArrayRef shape, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn(shape, torch::kFloat64);
}

// A double-precision layer whose bias is not zero (so the test sees it).
RelGraphConv DoubleConv(int64_t in, int64_t out, int64_t num_rels, int64_t bases, bool loop,
                        uint64_t seed) {
  torch::manual_seed(seed);
  RelGraphConv conv(in, out, num_rels, bases, loop);
  conv->to(torch::kFloat64);
  torch::NoGradGuard no_grad;
  conv->named_parameters()["h_bias"].normal_();
  return conv;
}

}  // namespace

TEST_CASE("ToRelationBlock groups edges by (relation, destination) in block order",
          "[unit][rgcn]") {
  Block b = HandBlock();
  RelationBlock rb = ToRelationBlock(b, 3);
  CHECK(rb.num_dst == 3);
  CHECK(rb.num_src == 5);
  CHECK(rb.num_rels == 3);
  // rows r * 3 + d: (0,0) {1}; (0,2) {3, 4}; (1,0) {3, 4}; (2,2) {0, 2}
  CHECK(rb.indptr == std::vector<int64_t>{0, 1, 1, 3, 5, 5, 5, 5, 5, 7});
  CHECK(rb.indices == std::vector<int64_t>{1, 3, 4, 3, 4, 0, 2});
  // An unused relation adds empty rows.
  RelationBlock wide = ToRelationBlock(b, 4);
  CHECK(wide.indptr == std::vector<int64_t>{0, 1, 1, 3, 5, 5, 5, 5, 5, 7, 7, 7, 7});
  CHECK(wide.indices == rb.indices);

  BlockTensors t = ToTensors(rb);
  CHECK(t.num_dst == 9);
  CHECK(t.num_src == 5);
  CHECK(t.indptr.data_ptr<int64_t>() == rb.indptr.data());  // views, no copy
  CHECK(t.indices.numel() == 7);
  CHECK_FALSE(t.t_indptr.defined());

  // MeanAggregate over it: each (relation, destination) mean, zero when empty.
  torch::Tensor h = torch::arange(5, torch::kFloat64).unsqueeze(1);  // row s holds s
  torch::Tensor mean = MeanAggregate(t, h).squeeze(1);
  CHECK(torch::equal(
      mean, torch::tensor({1.0, 0.0, 3.5, 3.5, 0.0, 0.0, 0.0, 0.0, 1.0}, torch::kFloat64)));

  SECTION("a block without edges needs no relations") {
    Block empty;
    empty.num_dst = 2;
    empty.src_nodes = {1, 2, 3};
    empty.indptr = {0, 0, 0};
    RelationBlock e = ToRelationBlock(empty, 2);
    CHECK(e.indptr == std::vector<int64_t>(5, 0));
    CHECK(e.indices.empty());
  }
  SECTION("bad relations are refused") {
    Block missing = HandBlock();
    missing.etypes.clear();
    CHECK_THROWS_AS(ToRelationBlock(missing, 3), DataError);
    CHECK_THROWS_WITH(ToRelationBlock(missing, 3), Catch::Contains("0 edge relations for 7"));
    Block short_types = HandBlock();
    short_types.etypes.pop_back();
    CHECK_THROWS_AS(ToRelationBlock(short_types, 3), DataError);
    Block high = HandBlock();
    high.etypes[2] = 3;
    CHECK_THROWS_AS(ToRelationBlock(high, 3), DataError);
    CHECK_THROWS_WITH(ToRelationBlock(high, 3),
                      Catch::Contains("edge 2 has relation 3, outside [0, 3)"));
    Block negative = HandBlock();
    negative.etypes[5] = -1;
    CHECK_THROWS_WITH(ToRelationBlock(negative, 3), Catch::Contains("edge 5 has relation -1"));
    Block bad_ptr = HandBlock();
    bad_ptr.indptr = {0, 3, 7};
    CHECK_THROWS_AS(ToRelationBlock(bad_ptr, 3), DataError);
    CHECK_THROWS_AS(ToRelationBlock(b, 0), ConfigError);
  }
}

TEST_CASE("RelGraphConv equals the per-edge RGCN formula, full weights and bases", "[unit][rgcn]") {
  const int64_t num_rels = 3, in = 5, out = 4;
  Block b = RandomHeteroBlock(40, 70, 7, num_rels, 1);
  RelationBlock rb = ToRelationBlock(b, num_rels);
  torch::Tensor h = Dbl({b.num_src(), in}, 2);
  for (int64_t bases : {0, 3, 7, 2, 1}) {
    for (bool loop : {false, true}) {
      CAPTURE(bases, loop);
      RelGraphConv conv = DoubleConv(in, out, num_rels, bases, loop, 10 + bases);
      auto p = conv->named_parameters();
      const bool decomposed = bases > 0 && bases < num_rels;
      CHECK(conv->has_bases() == decomposed);
      std::vector<std::string> names;
      for (const auto& item : p) names.push_back(item.key());
      std::vector<std::string> want{"weight"};
      if (decomposed) want.push_back("coeff");
      want.push_back("h_bias");
      if (loop) want.push_back("loop_weight");
      CHECK(names == want);
      CHECK(p["weight"].sizes() == torch::IntArrayRef({decomposed ? bases : num_rels, in, out}));
      if (decomposed) CHECK(p["coeff"].sizes() == torch::IntArrayRef({num_rels, bases}));
      if (loop) CHECK(p["loop_weight"].sizes() == torch::IntArrayRef({in, out}));

      torch::Tensor w = NaiveWeights(conv, num_rels);  // coeff · V by loops
      CHECK(torch::allclose(conv->RelationWeight(), w, 1e-12, 1e-12));
      torch::Tensor got = conv->forward(ToTensors(rb), b.num_dst, h);
      torch::Tensor want_out =
          NaiveRelConv(b, num_rels, h, w, loop ? p["loop_weight"] : torch::Tensor(), p["h_bias"]);
      REQUIRE(got.sizes() == want_out.sizes());
      CHECK(torch::allclose(got, want_out, 1e-10, 1e-10));
    }
  }

  SECTION("in float, as trained") {
    torch::manual_seed(4);
    RelGraphConv conv(in, out, num_rels, 2, true);
    auto p = conv->named_parameters();
    torch::Tensor hf = h.to(torch::kFloat32);
    torch::Tensor got = conv->forward(ToTensors(rb), b.num_dst, hf);
    CHECK(got.scalar_type() == torch::kFloat32);
    torch::Tensor want_out =
        NaiveRelConv(b, num_rels, hf, NaiveWeights(conv, num_rels), p["loop_weight"], p["h_bias"]);
    CHECK(torch::allclose(got.to(torch::kFloat64), want_out, 1e-4, 1e-5));
  }
  SECTION("mismatched shapes are refused") {
    RelGraphConv conv = DoubleConv(in, out, num_rels, 0, true, 5);
    CHECK_THROWS_AS(conv->forward(ToTensors(rb), b.num_dst, Dbl({b.num_src(), in + 1}, 1)),
                    DataError);
    CHECK_THROWS_AS(conv->forward(ToTensors(rb), b.num_dst, Dbl({b.num_src() - 1, in}, 1)),
                    DataError);
    CHECK_THROWS_WITH(conv->forward(ToTensors(rb), b.num_dst + 1, h),
                      Catch::Contains("3 relations x 41 destinations"));
    CHECK_THROWS_AS(RelGraphConv(0, out, num_rels, 0, true), ConfigError);
    CHECK_THROWS_AS(RelGraphConv(in, out, 0, 0, true), ConfigError);
  }
}

TEST_CASE("RelGraphConv's gradients equal those of index_add_ and division by counts",
          "[unit][rgcn]") {
  torch::set_num_threads(2);
  const int64_t num_rels = 4, in = 6, out = 3;
  for (uint32_t seed : {1u, 2u}) {
    Block b = RandomHeteroBlock(60, 150, 9, num_rels, seed);
    RelationBlock rb = ToRelationBlock(b, num_rels);
    for (int64_t bases : {0, 2}) {
      for (bool loop : {false, true}) {
        CAPTURE(seed, bases, loop);
        RelGraphConv conv = DoubleConv(in, out, num_rels, bases, loop, seed * 10 + bases);
        auto p = conv->named_parameters();
        // The reference's own leaves: detached copies of every parameter.
        std::map<std::string, torch::Tensor> ref;
        for (const auto& item : p) {
          ref[item.key()] = item.value().detach().clone().requires_grad_(true);
        }
        torch::Tensor w_ref = bases > 0 ? ref["coeff"]
                                              .matmul(ref["weight"].reshape({bases, in * out}))
                                              .reshape({num_rels, in, out})
                                        : ref["weight"];
        torch::Tensor h = Dbl({b.num_src(), in}, seed + 7).requires_grad_(true);
        torch::Tensor h_ref = h.detach().clone().requires_grad_(true);
        torch::Tensor upstream = Dbl({b.num_dst, out}, seed + 8);

        torch::Tensor got = conv->forward(ToTensors(rb), b.num_dst, h);
        torch::Tensor want = ReferenceRelConv(
            b, num_rels, h_ref, w_ref, loop ? ref["loop_weight"] : torch::Tensor(), ref["h_bias"]);
        CHECK(torch::allclose(got, want, 1e-10, 1e-10));
        (got * upstream).sum().backward();
        (want * upstream).sum().backward();
        CHECK(torch::allclose(h.grad(), h_ref.grad(), 1e-10, 1e-10));
        for (const auto& item : p) {
          CAPTURE(item.key());
          REQUIRE(item.value().grad().defined());
          CHECK(torch::allclose(item.value().grad(), ref[item.key()].grad(), 1e-10, 1e-10));
        }
      }
    }
  }
}

TEST_CASE("RelGraphConv: a relation without edges at a destination contributes nothing",
          "[unit][rgcn]") {
  // dst 0 <- relation 0 only; dst 1 <- nothing; dst 2 <- relations 1 and 2.
  Block b;
  b.num_dst = 3;
  b.src_nodes = {0, 1, 2, 3, 4, 5};
  b.indptr = {0, 2, 2, 5};
  b.indices = {3, 4, 5, 0, 3};
  b.etypes = {0, 0, 1, 2, 2};
  RelationBlock rb = ToRelationBlock(b, 3);
  torch::Tensor h = Dbl({6, 4}, 3);
  RelGraphConv conv = DoubleConv(4, 2, 3, 0, false, 9);
  torch::Tensor bias = conv->named_parameters()["h_bias"];
  torch::Tensor weight = conv->named_parameters()["weight"];
  torch::NoGradGuard no_grad;
  torch::Tensor before = conv->forward(ToTensors(rb), 3, h).clone();
  CHECK(torch::equal(before[1], bias));  // no edges at all: the bias alone
  CHECK(torch::allclose(before[0] - bias, ((h[3] + h[4]) / 2).matmul(weight[0]), 1e-12, 1e-12));
  // Changing the weights of relations a destination lacks leaves it alone.
  weight[1].add_(Dbl({4, 2}, 4));
  weight[2].add_(Dbl({4, 2}, 5));
  torch::Tensor after = conv->forward(ToTensors(rb), 3, h);
  CHECK(torch::equal(after[0], before[0]));
  CHECK(torch::equal(after[1], before[1]));
  CHECK_FALSE(torch::allclose(after[2], before[2]));
  weight[0].add_(Dbl({4, 2}, 6));
  CHECK(torch::equal(conv->forward(ToTensors(rb), 3, h)[2], after[2]));
}

TEST_CASE("RGCN embeds typed inputs at their positions and stacks its layers", "[unit][rgcn]") {
  const int64_t num_rels = 3, embed = 4, hidden = 5, classes = 3;
  torch::manual_seed(5);
  RGCN model(std::vector<int64_t>{3, 0, 2}, embed, hidden, classes, num_rels, 2, 2, 0.5, true);
  CHECK(model->num_layers() == 2);
  std::vector<std::string> names;
  for (const auto& item : model->named_parameters()) names.push_back(item.key());
  CHECK(names == std::vector<std::string>{
                     "embed.proj_0", "embed.proj_2", "layers.0.weight", "layers.0.coeff",
                     "layers.0.h_bias", "layers.0.loop_weight", "layers.1.weight", "layers.1.coeff",
                     "layers.1.h_bias", "layers.1.loop_weight"});
  auto p = model->named_parameters();
  CHECK(p["embed.proj_0"].sizes() == torch::IntArrayRef({3, embed}));
  CHECK(p["embed.proj_2"].sizes() == torch::IntArrayRef({2, embed}));
  CHECK(p["layers.0.weight"].sizes() == torch::IntArrayRef({2, embed, hidden}));
  CHECK(p["layers.1.weight"].sizes() == torch::IntArrayRef({2, hidden, classes}));

  // Layer-0 input rows 0..8: type 0 at {0, 5, 7}, type 1 (featureless) at
  // {2, 8}, type 2 at {1, 4}; rows 3 and 6 uncovered.
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  torch::Tensor x0 = torch::randn({3, 3});
  torch::Tensor emb = torch::randn({2, embed}).requires_grad_(true);
  torch::Tensor x2 = torch::randn({2, 2});
  std::vector<TypedInput> inputs{{torch::tensor({0, 5, 7}, i64), x0},
                                 {torch::tensor({2, 8}, i64), emb},
                                 {torch::tensor({1, 4}, i64), x2}};
  torch::Tensor h0 = model->Embed(9, inputs);
  REQUIRE(h0.sizes() == torch::IntArrayRef({9, embed}));
  torch::Tensor proj0 = x0.matmul(p["embed.proj_0"]);
  CHECK(torch::allclose(h0[0], proj0[0]));
  CHECK(torch::allclose(h0[5], proj0[1]));
  CHECK(torch::allclose(h0[7], proj0[2]));
  CHECK(torch::equal(h0[2], emb[0]));
  CHECK(torch::equal(h0[8], emb[1]));
  torch::Tensor proj2 = x2.matmul(p["embed.proj_2"]);
  CHECK(torch::allclose(h0[1], proj2[0]));
  CHECK(torch::allclose(h0[4], proj2[1]));
  CHECK(torch::equal(h0[3], torch::zeros({embed})));
  CHECK(torch::equal(h0[6], torch::zeros({embed})));

  // Two layers: 9 sources -> 5 destinations -> 2 seeds.
  Block b0 = RandomHeteroBlock(5, 9, 4, num_rels, 11);
  Block b1 = RandomHeteroBlock(2, 5, 3, num_rels, 12);
  std::vector<RelationBlock> blocks{ToRelationBlock(b0, num_rels), ToRelationBlock(b1, num_rels)};

  SECTION("forward is the layers with relu between them (eval: no dropout)") {
    model->eval();
    torch::Tensor logits = model->forward(blocks, h0);
    REQUIRE(logits.sizes() == torch::IntArrayRef({2, classes}));
    auto& layers = *model->named_children()["layers"]->as<torch::nn::ModuleList>();
    torch::Tensor h1 =
        torch::relu(layers[0]->as<RelGraphConvImpl>()->forward(ToTensors(blocks[0]), 5, h0));
    torch::Tensor want = layers[1]->as<RelGraphConvImpl>()->forward(ToTensors(blocks[1]), 2, h1);
    CHECK(torch::allclose(logits, want));
  }
  SECTION("the gradient reaches the embedding rows and the projections") {
    model->train();
    h0.retain_grad();
    model->forward(blocks, h0).pow(2).sum().backward();
    REQUIRE(emb.grad().defined());
    REQUIRE(h0.grad().defined());
    CHECK(h0.grad().abs().sum().item<double>() > 0);
    CHECK(torch::equal(emb.grad(), h0.grad().index_select(0, inputs[1].positions)));
    REQUIRE(p["embed.proj_0"].grad().defined());
    CHECK(torch::allclose(p["embed.proj_0"].grad(),
                          x0.t().matmul(h0.grad().index_select(0, inputs[0].positions))));
  }
  SECTION("one layer maps embed straight to classes") {
    RGCN one(std::vector<int64_t>{0}, embed, hidden, classes, num_rels, 0, 1, 0.0, false);
    auto q = one->named_parameters();
    CHECK(q["layers.0.weight"].sizes() == torch::IntArrayRef({num_rels, embed, classes}));
    CHECK_FALSE(q.contains("embed.proj_0"));
    torch::Tensor e = torch::randn({9, embed}).requires_grad_(true);
    torch::Tensor hh = one->Embed(9, {{torch::arange(9, i64), e}});
    torch::Tensor logits = one->forward({blocks[0]}, hh);
    CHECK(logits.sizes() == torch::IntArrayRef({5, classes}));
    logits.sum().backward();
    REQUIRE(e.grad().defined());
    CHECK(e.grad().abs().sum().item<double>() > 0);
  }
  SECTION("bad inputs are refused") {
    CHECK_THROWS_AS(model->forward({blocks[0]}, h0), DataError);
    CHECK_THROWS_WITH(model->forward({blocks[0]}, h0), Catch::Contains("1 blocks for 2 layers"));
    std::vector<TypedInput> wide = inputs;
    wide[0].rows = torch::randn({3, 4});
    CHECK_THROWS_AS(model->Embed(9, wide), DataError);
    std::vector<TypedInput> outside = inputs;
    outside[2].positions = torch::tensor({1, 9}, i64);
    CHECK_THROWS_WITH(model->Embed(9, outside), Catch::Contains("outside [0, 9)"));
    CHECK_THROWS_AS(model->Embed(9, {inputs[0]}), DataError);
    // A type absent from the batch leaves its input undefined.
    std::vector<TypedInput> absent = inputs;
    absent[1] = TypedInput{};
    CHECK(torch::equal(model->Embed(9, absent)[2], torch::zeros({embed})));
    CHECK_THROWS_AS(
        RGCN(std::vector<int64_t>{3}, embed, hidden, classes, num_rels, 0, 0, 0.0, false),
        ConfigError);
    CHECK_THROWS_AS(
        RGCN(std::vector<int64_t>{3}, embed, hidden, classes, num_rels, 0, 2, 1.0, false),
        ConfigError);
  }
}

TEST_CASE("GroupSources lists each non-empty (relation, destination) group's source ids",
          "[unit][rgcn]") {
  const Block b = HandBlock();
  const RelationBlock rb = ToRelationBlock(b, 3);
  // rows r * 3 + d: (0,0) {1}; (0,2) {3, 4}; (1,0) {3, 4}; (2,2) {0, 2}
  const RelationGroups g = GroupSources(rb, b.src_nodes, {2, 0});
  CHECK(g.rows == std::vector<int64_t>{8, 0, 2});
  CHECK(g.ptr == std::vector<int64_t>{0, 2, 3, 5});
  CHECK(g.ids == std::vector<int64_t>{10, 12, 11, 13, 14});
  CHECK(GroupSources(rb, b.src_nodes, {}).size() == 0);
  CHECK_THROWS_WITH(GroupSources(rb, b.src_nodes, {3}), Catch::Contains("relation 3"));
  CHECK_THROWS_AS(GroupSources(rb, {1, 2}, {0}), DataError);
}

TEST_CASE("RGCN's first layer from means summed elsewhere equals it over the whole block",
          "[unit][rgcn]") {
  // Sources 0..11, source s of type s % 3 (0: 3 features, 1: featureless,
  // 2: 2 features); relation r's sources are of type r. 5 destinations
  // (sources 0..4), then 2 seeds.
  const int64_t num_rels = 3, embed = 4, num_src = 12, num_dst = 5;
  const std::vector<int64_t> dims{3, 0, 2};
  torch::manual_seed(8);
  RGCN model(dims, embed, 6, 3, num_rels, 2, 2, 0.0, true);
  model->to(torch::kFloat64);
  model->eval();
  std::mt19937 rng(3);
  Block b0;
  b0.num_dst = num_dst;
  for (int64_t s = 0; s < num_src; ++s) b0.src_nodes.push_back(s);
  b0.indptr.push_back(0);
  for (int64_t d = 0; d < num_dst; ++d) {
    for (int k = 0; k < 6; ++k) {
      const int64_t r = static_cast<int64_t>(rng() % 3);
      if (d == 1 && r == 2) continue;  // an empty group
      b0.indices.push_back(r + 3 * static_cast<int64_t>(rng() % 4));
      b0.etypes.push_back(r);
    }
    b0.indptr.push_back(static_cast<int64_t>(b0.indices.size()));
  }
  Block b1 = RandomHeteroBlock(2, num_dst, 4, num_rels, 5);
  const std::vector<RelationBlock> blocks{ToRelationBlock(b0, num_rels),
                                          ToRelationBlock(b1, num_rels)};
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  std::vector<torch::Tensor> x(3);
  std::vector<std::vector<int64_t>> of_type(3);
  for (int64_t s = 0; s < num_src; ++s) of_type[static_cast<size_t>(s % 3)].push_back(s);
  for (int t = 0; t < 3; ++t) {
    x[t] = Dbl({static_cast<int64_t>(of_type[t].size()), dims[t] ? dims[t] : embed}, 20 + t);
  }
  // The whole block: every source's row.
  torch::Tensor emb = x[1].clone().requires_grad_(true);
  std::vector<TypedInput> all;
  for (int t = 0; t < 3; ++t) all.push_back({torch::tensor(of_type[t], i64), t == 1 ? emb : x[t]});
  torch::Tensor full = model->forward(blocks, model->Embed(num_src, all));
  full.pow(2).sum().backward();
  std::map<std::string, torch::Tensor> want;
  for (const auto& p : model->named_parameters()) {
    want[p.key()] = p.value().grad().clone();
    p.value().mutable_grad().zero_();
  }
  // Means: the destinations' own rows, and each group's mean of raw rows
  // (a leaf for the featureless relation).
  std::vector<TypedInput> own;
  torch::Tensor emb_own;
  for (int t = 0; t < 3; ++t) {
    std::vector<int64_t> pos, row;
    for (size_t i = 0; i < of_type[t].size(); ++i) {
      if (of_type[t][i] >= num_dst) continue;
      pos.push_back(of_type[t][i]);
      row.push_back(static_cast<int64_t>(i));
    }
    torch::Tensor rows = x[t].index_select(0, torch::tensor(row, i64));
    if (t == 1) rows = emb_own = rows.detach().requires_grad_(true);
    own.push_back({torch::tensor(pos, i64), rows});
  }
  std::vector<RelationMeans> means;
  std::vector<RelationGroups> groups;
  torch::Tensor leaf;
  for (int64_t r = 0; r < num_rels; ++r) {
    groups.push_back(GroupSources(blocks[0], b0.src_nodes, {r}));
    const RelationGroups& g = groups.back();
    std::vector<torch::Tensor> rows;
    for (size_t k = 0; k < g.size(); ++k) {
      std::vector<int64_t> members;
      for (int64_t e = g.ptr[k]; e < g.ptr[k + 1]; ++e) members.push_back(g.ids[e] / 3);
      rows.push_back(x[r].index_select(0, torch::tensor(members, i64)).mean(0));
    }
    torch::Tensor m = torch::stack(rows);
    if (r == 1) m = leaf = m.detach().requires_grad_(true);
    means.push_back({r, static_cast<int>(r), torch::tensor(g.rows, i64), m});
  }
  for (int64_t row : groups[2].rows) CHECK(row != 2 * num_dst + 1);  // the empty group
  torch::Tensor split =
      model->forward(blocks, model->Embed(num_dst, own), model->EmbedMeans(num_dst, means));
  CHECK(torch::allclose(split, full, 1e-12, 1e-12));
  split.pow(2).sum().backward();
  for (const auto& p : model->named_parameters()) {
    INFO(p.key());
    CHECK(torch::allclose(p.value().grad(), want[p.key()], 1e-10, 1e-12));
  }
  // Each featureless row's gradient: its own (as a destination) plus its
  // share of every group mean it is in.
  torch::Tensor spread = torch::zeros_like(emb);
  for (size_t i = 0, j = 0; i < of_type[1].size(); ++i) {
    if (of_type[1][i] < num_dst) spread[i] += emb_own.grad()[j++];
  }
  const RelationGroups& g = groups[1];
  for (size_t k = 0; k < g.size(); ++k) {
    const double n = static_cast<double>(g.ptr[k + 1] - g.ptr[k]);
    for (int64_t e = g.ptr[k]; e < g.ptr[k + 1]; ++e) spread[g.ids[e] / 3] += leaf.grad()[k] / n;
  }
  CHECK(torch::allclose(spread, emb.grad(), 1e-10, 1e-12));
  // Bad means are refused; RGAT cannot take them.
  std::vector<RelationMeans> outside = means;
  outside[0].rows_at = outside[0].rows_at + num_dst;
  CHECK_THROWS_WITH(model->EmbedMeans(num_dst, outside), Catch::Contains("outside its 5"));
  std::vector<RelationMeans> narrow = means;
  narrow[2].rows = narrow[2].rows.slice(1, 0, 1);
  CHECK_THROWS_AS(model->EmbedMeans(num_dst, narrow), DataError);
  GatOptions gat;
  gat.heads = 2;
  RGCN rgat(dims, embed, 6, 3, num_rels, 0, 2, 0.0, true, &gat);
  CHECK_THROWS_AS(rgat->forward(blocks, torch::zeros({num_dst, embed}),
                                torch::zeros({num_rels * num_dst, embed})),
                  ConfigError);
}

}  // namespace gnn

namespace gnn {

TEST_CASE("RelGATConv sums one GATConv per relation over that relation's edges, plus loop and bias",
          "[unit][rgcn]") {
  torch::manual_seed(11);
  const int64_t num_rels = 3, in = 5, heads = 2, width = 3;
  Block b = RandomHeteroBlock(6, 15, 5, num_rels, 4);
  RelationBlock rb = ToRelationBlock(b, num_rels);
  GatOptions o;
  RelGATConv conv(in, width, heads, num_rels, /*self_loop=*/true, o);
  conv->eval();  // no attention dropout
  auto params = conv->named_parameters();
  for (const char* name : {"mods.0.fc.weight", "mods.2.attn_l", "mods.1.attn_r", "mods.0.bias",
                           "loop_weight", "h_bias"}) {
    CHECK(params.contains(name));
  }
  CHECK(params["loop_weight"].sizes() == torch::IntArrayRef({in, heads * width}));
  torch::Tensor h = torch::randn({15, in}).requires_grad_(true);
  torch::Tensor got = conv->forward(ToTensors(rb), 6, h);
  REQUIRE(got.sizes() == torch::IntArrayRef({6, heads, width}));
  // Reference: relation r as a block over every source (no renumbering),
  // through the relation's GATConv; DGL's HeteroGraphConv(sum).
  torch::Tensor want =
      (h.slice(0, 0, 6).matmul(params["loop_weight"]) + params["h_bias"]).view({6, heads, width});
  for (int64_t r = 0; r < num_rels; ++r) {
    Block rel;
    rel.num_dst = 6;
    rel.src_nodes = b.src_nodes;
    rel.indptr.push_back(0);
    for (int64_t d = 0; d < 6; ++d) {
      for (int64_t e = b.indptr[d]; e < b.indptr[d + 1]; ++e) {
        if (b.etypes[e] == r) rel.indices.push_back(b.indices[e]);
      }
      rel.indptr.push_back(static_cast<int64_t>(rel.indices.size()));
    }
    if (rel.indices.empty()) continue;
    torch::NoGradGuard no_grad;
    want = want + conv->named_modules()["mods." + std::to_string(r)]->as<GATConvImpl>()->forward(
                      ToTensors(rel), h.detach());
  }
  CHECK(torch::allclose(got.detach(), want, 1e-4, 1e-5));
  got.sum().backward();
  CHECK(h.grad().abs().sum().item<double>() > 0);
  CHECK(params["mods.1.attn_l"].grad().defined());
}

TEST_CASE("RGCN with GAT layers (RGAT): heads concatenated in hidden layers, averaged last",
          "[unit][rgcn]") {
  torch::manual_seed(12);
  GatOptions o;
  o.heads = 4;
  o.out_heads = 2;
  RGCN model(std::vector<int64_t>{3, 0}, 8, 8, 5, 2, 0, 2, 0.0, true, &o);
  Block b0 = RandomHeteroBlock(6, 12, 4, 2, 1), b1 = RandomHeteroBlock(3, 6, 4, 2, 2);
  torch::Tensor out =
      model->forward({ToRelationBlock(b0, 2), ToRelationBlock(b1, 2)}, torch::randn({12, 8}));
  CHECK(out.sizes() == torch::IntArrayRef({3, 5}));
  CHECK(model->named_parameters().contains("layers.1.mods.1.attn_l"));
  CHECK(model->named_parameters()["layers.0.mods.0.attn_l"].sizes() ==
        torch::IntArrayRef({1, 4, 2}));
  CHECK_THROWS_WITH(RGCN(std::vector<int64_t>{3, 0}, 8, 6, 5, 2, 0, 2, 0.0, true, &o),
                    Catch::Contains("hidden width 6 is not a multiple of 4 heads"));
}

// The same model (same seed) on the CPU and on the GPU: relation blocks
// placed on the GPU with their host-built transposes, typed inputs with a
// featureless type's embedding rows as a host leaf read through a copy.
TEST_CASE("RGCN and RGAT on the GPU equal the CPU in outputs and gradients (GPU)", "[unit][rgcn]") {
  if (!BuiltWithCuda()) GNN_SKIP("this build has no CUDA kernels (scripts/build-cuda.sh)");
  if (!torch::cuda::is_available()) GNN_SKIP("no CUDA device visible");
  const torch::Device gpu(torch::kCUDA, 0);
  GatOptions o;
  o.heads = 2;
  o.out_heads = 1;
  o.attn_drop = 0;
  for (const bool attention : {false, true}) {
    INFO((attention ? "RGAT" : "RGCN"));
    auto make = [&] {
      torch::manual_seed(21);
      return RGCN(std::vector<int64_t>{3, 0}, 8, 8, 5, 3, attention ? 0 : 2, 2, 0.0, true,
                  attention ? &o : nullptr);
    };
    RGCN on_cpu = make(), on_gpu = make();
    on_gpu->to(gpu);
    on_cpu->eval();
    on_gpu->eval();
    const Block b0 = RandomHeteroBlock(20, 50, 6, 3, 3), b1 = RandomHeteroBlock(6, 20, 5, 3, 4);
    const std::vector<RelationBlock> blocks{ToRelationBlock(b0, 3), ToRelationBlock(b1, 3)};
    torch::manual_seed(22);
    const torch::Tensor p0 = torch::arange(0, 30, torch::kInt64);
    const torch::Tensor p1 = torch::arange(30, 50, torch::kInt64);
    const torch::Tensor x0 = torch::randn({30, 3});
    const torch::Tensor emb = torch::randn({20, 8});
    const torch::Tensor emb_c = emb.clone().requires_grad_(true);
    const torch::Tensor emb_g = emb.clone().requires_grad_(true);
    const torch::Tensor out_c = on_cpu->forward(blocks, on_cpu->Embed(50, {{p0, x0}, {p1, emb_c}}));
    const torch::Tensor out_g = on_gpu->forward(
        blocks, on_gpu->Embed(50, {{p0.to(gpu), x0.to(gpu)}, {p1.to(gpu), emb_g.to(gpu)}}));
    REQUIRE(out_g.device() == gpu);
    const torch::Tensor g = torch::randn({6, 5});
    out_c.backward(g);
    out_g.backward(g.to(gpu));
    CHECK(torch::allclose(out_g.cpu(), out_c.detach(), 1e-4, 1e-5));
    CHECK(torch::allclose(emb_g.grad(), emb_c.grad(), 1e-4, 1e-5));
    auto pc = on_cpu->named_parameters();
    for (const auto& item : on_gpu->named_parameters()) {
      INFO(item.key());
      const torch::Tensor want = pc[item.key()].grad();
      REQUIRE(item.value().grad().defined() == want.defined());
      if (want.defined()) CHECK(torch::allclose(item.value().grad().cpu(), want, 1e-4, 1e-5));
    }
  }
}

}  // namespace gnn

namespace gnn {
namespace {

// Random edge rows for `b`: each edge's relation's first eo.dims[r]
// columns of eo.width(), the rest 0 (as partitions pad them).
void AddEdgeRows(Block* b, const RelEdgeOptions& eo, uint32_t seed) {
  b->edge_dim = eo.width();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t e = 0; e < b->num_edges(); ++e) {
    for (int64_t j = 0; j < b->edge_dim; ++j)
      b->edge_data.push_back(j < eo.dims[static_cast<size_t>(b->etypes[e])] ? u(rng) : 0.0f);
  }
}

// The per-edge RGCN formula with edge features (GraphStorm's
// edge_feat_mp_op), in double precision: for each destination and
// relation the mean of the messages h_src op e P_r (mul only where the
// relation has features), times W_r; concat adds mean(e P_r) E_r.
torch::Tensor NaiveEdgeRelConv(const Block& b, const RelEdgeOptions& eo, const torch::Tensor& h,
                               RelGraphConv& conv, int64_t num_rels) {
  auto p = conv->named_parameters();
  const torch::Tensor w = p["weight"].detach().to(torch::kFloat64);
  const torch::Tensor proj = p["edge_proj"].detach().to(torch::kFloat64);
  const torch::Tensor ew =
      eo.op == "concat" ? p["edge_weight"].detach().to(torch::kFloat64) : torch::Tensor();
  const torch::Tensor hd = h.detach().to(torch::kFloat64);
  const int64_t width = eo.width();
  const torch::Tensor rows = torch::from_blob(const_cast<float*>(b.edge_data.data()),
                                              {b.num_edges(), width}, torch::kFloat32)
                                 .to(torch::kFloat64);
  const int64_t out = w.size(2);
  torch::Tensor result = torch::zeros({b.num_dst, out}, torch::kFloat64);
  for (int64_t d = 0; d < b.num_dst; ++d) {
    for (int64_t r = 0; r < num_rels; ++r) {
      torch::Tensor sum = torch::zeros({hd.size(1)}, torch::kFloat64);
      torch::Tensor esum = torch::zeros({hd.size(1)}, torch::kFloat64);
      int64_t count = 0;
      for (int64_t e = b.indptr[d]; e < b.indptr[d + 1]; ++e) {
        if (b.etypes[e] != r) continue;
        const torch::Tensor src = hd[b.indices[e]];
        const torch::Tensor ep = rows[e].matmul(proj[r]);
        if (eo.op == "add" || eo.op == "concat") sum += eo.op == "add" ? src + ep : src;
        if (eo.op == "sub") sum += src - ep;
        if (eo.op == "mul") sum += eo.dims[static_cast<size_t>(r)] > 0 ? src * ep : src;
        esum += ep;
        ++count;
      }
      if (count == 0) continue;
      result[d] += (sum / count).matmul(w[r]);
      if (eo.op == "concat") result[d] += (esum / count).matmul(ew[r]);
    }
  }
  return result + p["h_bias"].detach().to(torch::kFloat64);
}

}  // namespace

TEST_CASE("RelGraphConv with edge features equals the per-edge formula: add, sub, mul, concat",
          "[unit][rgcn]") {
  const int64_t num_rels = 3, in = 5, out = 4;
  Block b = RandomHeteroBlock(30, 50, 6, num_rels, 7);
  RelEdgeOptions eo;
  eo.dims = {2, 0, 3};  // relation 1 has none; relation 0's third column stays 0
  AddEdgeRows(&b, eo, 3);
  const RelationBlock rb = ToRelationBlock(b, num_rels);
  REQUIRE(rb.eids.size() == rb.indices.size());
  torch::Tensor h = Dbl({b.num_src(), in}, 9).to(torch::kFloat32);
  for (const char* op : {"add", "sub", "mul", "concat"}) {
    CAPTURE(op);
    eo.op = op;
    torch::manual_seed(2);
    RelGraphConv conv(in, out, num_rels, 0, false, eo);
    auto p = conv->named_parameters();
    CHECK(p["edge_proj"].sizes() == torch::IntArrayRef({num_rels, 3, in}));
    CHECK(p.contains("edge_weight") == (eo.op == "concat"));
    const RelEdgeTensors et = ToEdgeTensors(rb, b);
    torch::Tensor hg = h.clone().requires_grad_(true);
    torch::Tensor got = conv->forward(ToTensors(rb), b.num_dst, hg, &et);
    const torch::Tensor want = NaiveEdgeRelConv(b, eo, h, conv, num_rels);
    REQUIRE(got.sizes() == want.sizes());
    CHECK(torch::allclose(got.to(torch::kFloat64), want, 1e-4, 1e-5));
    // The edge projection learns: it gets a gradient.
    got.sum().backward();
    CHECK(p["edge_proj"].grad().abs().sum().item<double>() > 0);
    CHECK(hg.grad().defined());
    // Without the edge rows the layer refuses.
    CHECK_THROWS_AS(conv->forward(ToTensors(rb), b.num_dst, h), DataError);
  }
  eo.op = "div";
  CHECK_THROWS_AS(RelGraphConv(in, out, num_rels, 0, false, eo), ConfigError);
  GatOptions gat;
  eo.op = "concat";
  CHECK_THROWS_WITH(RGCN(std::vector<int64_t>{4, 0}, 8, 8, 3, num_rels, 0, 2, 0.0, true, &gat, eo),
                    Catch::Contains("concat is rgcn's"));
}

TEST_CASE("RelGATConv with edge features: each featured relation's GATConv reads its edges' rows",
          "[unit][rgcn]") {
  torch::manual_seed(12);
  const int64_t num_rels = 3, in = 5, heads = 2, width = 3;
  Block b = RandomHeteroBlock(6, 15, 5, num_rels, 8);
  RelEdgeOptions eo;
  eo.dims = {2, 0, 1};
  AddEdgeRows(&b, eo, 5);
  const RelationBlock rb = ToRelationBlock(b, num_rels);
  GatOptions o;
  for (const char* op : {"add", "sub", "mul"}) {
    CAPTURE(op);
    eo.op = op;
    RelGATConv conv(in, width, heads, num_rels, /*self_loop=*/true, o, &eo);
    conv->eval();
    auto params = conv->named_parameters();
    CHECK(params["mods.0.fc_edge.weight"].sizes() == torch::IntArrayRef({heads * width, 2}));
    CHECK_FALSE(params.contains("mods.1.fc_edge.weight"));
    CHECK(params["mods.2.fc_edge.weight"].sizes() == torch::IntArrayRef({heads * width, 1}));
    torch::Tensor h = torch::randn({15, in}).requires_grad_(true);
    const RelEdgeTensors et = ToEdgeTensors(rb, b);
    torch::Tensor got = conv->forward(ToTensors(rb), 6, h, &et);
    // Reference: relation r alone over every source, its edges' own
    // columns as the block's edge data, through the relation's GATConv.
    torch::Tensor want =
        (h.slice(0, 0, 6).matmul(params["loop_weight"]) + params["h_bias"]).view({6, heads, width});
    for (int64_t r = 0; r < num_rels; ++r) {
      Block rel;
      rel.num_dst = 6;
      rel.src_nodes = b.src_nodes;
      rel.indptr.push_back(0);
      const int64_t w = eo.dims[static_cast<size_t>(r)];
      rel.edge_dim = w;
      for (int64_t d = 0; d < 6; ++d) {
        for (int64_t e = b.indptr[d]; e < b.indptr[d + 1]; ++e) {
          if (b.etypes[e] != r) continue;
          rel.indices.push_back(b.indices[e]);
          for (int64_t j = 0; j < w; ++j) rel.edge_data.push_back(b.edge_data[e * b.edge_dim + j]);
        }
        rel.indptr.push_back(static_cast<int64_t>(rel.indices.size()));
      }
      if (rel.indices.empty()) continue;
      torch::NoGradGuard no_grad;
      want = want + conv->named_modules()["mods." + std::to_string(r)]->as<GATConvImpl>()->forward(
                        ToTensors(rel), h.detach());
    }
    CHECK(torch::allclose(got.detach(), want, 1e-4, 1e-5));
    got.sum().backward();
    CHECK(params["mods.0.fc_edge.weight"].grad().abs().sum().item<double>() > 0);
    CHECK_THROWS_AS(conv->forward(ToTensors(rb), 6, h), DataError);
  }
}

}  // namespace gnn
