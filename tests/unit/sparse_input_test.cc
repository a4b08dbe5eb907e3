// Sparse input rows in the first layer (#53 item 3): the sparse x dense
// product against the dense one (values and the weight's gradient), the
// sparse dropout against the dense mask, and each model's first layer
// (GraphSAGE, GCN, GAT, with and without edge weights) over sparse rows
// against the same layer over the same rows made dense.
#include "train/models/sparse_input.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <random>

#include "common/sparse_rows.h"
#include "random_block.h"
#include "sampling/sampler.h"
#include "train/models/aggregate.h"
#include "train/models/dropout.h"
#include "train/models/gat.h"
#include "train/models/gcn.h"
#include "train/models/sage.h"

namespace gnn {
namespace {

using test::RandomBlock;

// A bag-of-words-like matrix: about `per_row` distinct columns per row,
// values 1 when `binary`, else in [0.5, 2).
SparseRows RandomRows(int64_t rows, int64_t cols, int per_row, bool binary, uint32_t seed) {
  std::mt19937 rng(seed);
  SparseRows s;
  s.cols = cols;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int32_t> c;
    const int n = static_cast<int>(rng() % static_cast<uint32_t>(2 * per_row + 1));
    for (int k = 0; k < n; ++k) c.push_back(static_cast<int32_t>(rng() % cols));
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    s.indices.insert(s.indices.end(), c.begin(), c.end());
    if (!binary) {
      for (size_t k = 0; k < c.size(); ++k)
        s.values.push_back(0.5f + static_cast<float>(rng() % 1000) / 666.0f);
    }
    s.indptr.push_back(static_cast<int64_t>(s.indices.size()));
  }
  return s;
}

torch::Tensor Dense(const SparseRows& s) {
  torch::Tensor d = torch::empty({s.rows(), s.cols}, torch::kFloat32);
  Densify(s.view(), d.data_ptr<float>());
  return d;
}

void GiveWeights(Block* b, uint32_t seed) {
  std::mt19937 rng(seed);
  b->edge_dim = 1;
  b->edge_data.resize(b->indices.size());
  for (float& w : b->edge_data) w = 0.25f + static_cast<float>(rng() % 1000) / 500.0f;
}

}  // namespace

TEST_CASE("SparseLinear equals the dense product, values and the weight's gradient", "[unit]") {
  // 33 outputs: slices of the weight's columns; 3,000 rows of 16: row
  // chunks summed in order (the backward pass's two ways).
  for (const bool binary : {true, false}) {
    INFO("binary " << binary);
    const int64_t n = binary ? 200 : 3000, width = binary ? 33 : 16;
    const SparseRows s = RandomRows(n, 700, 12, binary, binary ? 3 : 4);
    torch::manual_seed(5);
    const torch::Tensor w0 = torch::randn({700, width});
    for (const int64_t rows : {int64_t{-1}, int64_t{57}}) {
      torch::Tensor ws = w0.clone().requires_grad_(true);
      torch::Tensor wd = w0.clone().requires_grad_(true);
      const torch::Tensor out = SparseLinear(SparseInput(s), ws, rows);
      const int64_t used = rows < 0 ? s.rows() : rows;
      const torch::Tensor want = Dense(s).slice(0, 0, used).matmul(wd);
      REQUIRE(out.sizes() == want.sizes());
      CHECK(torch::allclose(out, want, 1e-5, 1e-5));
      const torch::Tensor g = torch::randn(out.sizes());
      (out * g).sum().backward();
      (want * g).sum().backward();
      CHECK(torch::allclose(ws.grad(), wd.grad(), 1e-5, 1e-4));
      // The index-op form a GPU runs, here on the CPU: the same values
      // and gradient.
      torch::Tensor wi = w0.clone().requires_grad_(true);
      const torch::Tensor viaops = SparseLinearIndexOps(SparseInput(s), wi, rows);
      CHECK(torch::allclose(viaops, want, 1e-5, 1e-5));
      (viaops * g).sum().backward();
      CHECK(torch::allclose(wi.grad(), wd.grad(), 1e-5, 1e-4));
    }
  }
  // A row without entries gives zeros; an empty matrix an empty result.
  SparseRows empty;
  empty.cols = 10;
  empty.indptr = {0, 0, 0};
  const torch::Tensor z = SparseLinear(SparseInput(empty), torch::ones({10, 4}));
  CHECK(z.abs().sum().item<float>() == 0.0f);
  CHECK(z.size(0) == 2);
}

TEST_CASE("DropoutSparse keeps and scales exactly the entries Dropout keeps of the dense rows",
          "[unit]") {
  const SparseRows s = RandomRows(300, 500, 20, false, 9);
  torch::manual_seed(11);
  const torch::Tensor sparse = DropoutSparse(SparseInput(s), 0.4, true).to_dense();
  torch::manual_seed(11);
  const torch::Tensor dense = Dropout(Dense(s), 0.4, true);
  CHECK(torch::equal(sparse, dense));
  // Some dropped, some kept.
  CHECK(sparse.ne(0).sum().item<int64_t>() < s.nnz());
  CHECK(sparse.ne(0).sum().item<int64_t>() > s.nnz() / 3);
  // Not training: the rows as they are.
  CHECK(torch::equal(DropoutSparse(SparseInput(s), 0.4, false).to_dense(), Dense(s)));
}

TEST_CASE("each model's first layer over sparse rows equals it over the rows made dense",
          "[unit]") {
  const int64_t in = 300, out = 24;
  for (const bool weighted : {false, true}) {
    INFO("edge weights " << weighted);
    Block b = RandomBlock(40, 150, 8, 21);
    if (weighted) GiveWeights(&b, 22);
    Block looped = b;
    AddSelfLoops(&looped);
    BuildTranspose(&b);
    BuildTranspose(&looped);
    const SparseRows s = RandomRows(b.num_src(), in, 10, !weighted, 23);
    const torch::Tensor dense = Dense(s);

    auto compare = [&](torch::nn::Module& m, const std::function<torch::Tensor(torch::Tensor)>& f) {
      const torch::Tensor a = f(SparseInput(s));
      const torch::Tensor g = torch::randn(a.sizes());
      (a * g).sum().backward();
      std::vector<torch::Tensor> sparse_grads;
      for (const torch::Tensor& p : m.parameters()) {
        sparse_grads.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
        if (p.grad().defined()) p.mutable_grad().zero_();
      }
      const torch::Tensor d = f(dense);
      CHECK(torch::allclose(a, d, 1e-5, 1e-5));
      (d * g).sum().backward();
      size_t i = 0;
      for (const torch::Tensor& p : m.parameters()) {
        const torch::Tensor& sg = sparse_grads[i++];
        if (!sg.defined()) continue;
        CHECK(torch::allclose(sg, p.grad(), 1e-4, 1e-4));
      }
    };
    {
      torch::manual_seed(1);
      SAGEConv conv(in, out);
      const BlockTensors bt = ToTensors(b);
      compare(*conv, [&](torch::Tensor x) { return conv->forward(bt, x); });
    }
    {
      torch::manual_seed(2);
      GraphConv conv(in, out);
      const BlockTensors bt = ToTensors(looped);
      compare(*conv, [&](torch::Tensor x) { return conv->forward(bt, x); });
    }
    if (!weighted) {
      for (const bool residual : {false, true}) {
        INFO("gat residual " << residual);
        torch::manual_seed(3);
        GatOptions o;
        o.in = in;
        o.residual = residual;
        o.attn_drop = 0;
        GATConv conv(in, 6, 4, o);
        const BlockTensors bt = ToTensors(looped);
        compare(*conv, [&](torch::Tensor x) { return conv->forward(bt, x); });
      }
    }
  }
}

TEST_CASE("GAT's input dropout over sparse rows equals it over the dense rows", "[unit]") {
  Block b = RandomBlock(30, 100, 6, 31);
  AddSelfLoops(&b);
  BuildTranspose(&b);
  const SparseRows s = RandomRows(b.num_src(), 200, 8, true, 32);
  GatOptions o;
  o.in = 200;
  o.hidden = 16;
  o.heads = 2;
  o.classes = 5;
  o.num_layers = 1;
  o.feat_drop = 0.5;
  o.attn_drop = 0.3;
  torch::manual_seed(4);
  GatImpl model(o);
  model.train();
  const BlockTensors bt = ToTensors(b);
  torch::manual_seed(40);
  const torch::Tensor a = model.ForwardLayer(0, bt, SparseInput(s));
  torch::manual_seed(40);
  const torch::Tensor d = model.ForwardLayer(0, bt, Dense(s));
  CHECK(torch::allclose(a, d, 1e-5, 1e-5));
}

}  // namespace gnn
