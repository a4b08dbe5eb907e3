// The trainer's pure pieces, in-process: SAGEConv against its formula and
// DGL's parameter names, the model's three forward paths against each
// other, layer-wise inference against the full forward, the tasks' losses,
// RankMetrics on hand-computed cases, and checkpoints.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/parallel.h"
#include "sampling/owner_aggregate.h"
#include "sampling/sampler.h"
#include "train/loop/checkpoint.h"
#include "train/loop/inference.h"
#include "train/loop/link_eval.h"
#include "train/loop/task.h"
#include "train/models/aggregate.h"
#include "train/models/sage.h"

namespace gnn {
namespace {

// A 6-node graph's full in-neighbourhoods (CSC over global ids 0..5).
struct SmallGraph {
  std::vector<int64_t> indptr = {0, 2, 3, 5, 5, 8, 9};
  std::vector<int64_t> indices = {1, 2, 0, 0, 3, 0, 1, 2, 4};
  CscView csc() const { return CscView{indptr.data(), indices.data(), 0, 6}; }
};

Block FullBlock(const SmallGraph& g, const std::vector<int64_t>& dst) {
  std::vector<int64_t> ptr, idx;
  SampleNeighbors(g.csc(), dst.data(), static_cast<int64_t>(dst.size()), -1, false, 0, 1, &ptr,
                  &idx);
  return ToBlock(dst, std::move(ptr), idx);
}

torch::Tensor Rows(const torch::Tensor& x, const std::vector<int64_t>& ids) {
  return x.index_select(0, torch::tensor(ids, torch::kInt64));
}

}  // namespace

TEST_CASE("SAGEConv computes W_self h_dst + W_neigh mean(h_src) + b under DGL's parameter names",
          "[unit]") {
  torch::manual_seed(3);
  SAGEConv conv(4, 3);
  SmallGraph g;
  Block b = FullBlock(g, {0, 4});
  torch::Tensor h = torch::randn({b.num_src(), 4});
  torch::Tensor out = conv->forward(ToTensors(b), h);
  auto params = conv->named_parameters();
  REQUIRE(params.contains("fc_self.weight"));
  REQUIRE(params.contains("fc_neigh.weight"));
  REQUIRE(params.contains("bias"));
  for (int64_t d = 0; d < b.num_dst; ++d) {
    torch::Tensor mean = torch::zeros({4});
    for (int64_t k = b.indptr[d]; k < b.indptr[d + 1]; ++k) mean += h[b.indices[k]];
    mean /= static_cast<double>(b.indptr[d + 1] - b.indptr[d]);
    torch::Tensor want = params["fc_self.weight"].matmul(h[d]) +
                         params["fc_neigh.weight"].matmul(mean) + params["bias"];
    CHECK(torch::allclose(out[d], want, 1e-5, 1e-6));
  }
}

TEST_CASE("GraphSage's forward, ForwardFromMeans and layer-wise inference agree", "[unit]") {
  torch::manual_seed(5);
  GraphSage model(4, 8, 3, 2, 0.5);
  model->eval();  // no dropout: the paths must give the same numbers
  SmallGraph g;
  torch::Tensor x = torch::randn({6, 4});
  // Blocks for seeds {0, 4}: layer 1 (output) over them, layer 0 over its sources.
  Block top = FullBlock(g, {0, 4});
  Block bottom = FullBlock(g, top.src_nodes);
  std::vector<BlockTensors> blocks = {ToTensors(bottom), ToTensors(top)};
  torch::NoGradGuard no_grad;
  torch::Tensor full = model->forward(blocks, Rows(x, bottom.src_nodes));
  // Layer 0's input as [dst rows | their neighbours' means].
  torch::Tensor dst_rows = Rows(
      x, std::vector<int64_t>(bottom.src_nodes.begin(), bottom.src_nodes.begin() + bottom.num_dst));
  torch::Tensor means = torch::zeros({bottom.num_dst, 4});
  for (int64_t d = 0; d < bottom.num_dst; ++d) {
    for (int64_t k = bottom.indptr[d]; k < bottom.indptr[d + 1]; ++k) {
      means[d] += x[bottom.src_nodes[bottom.indices[k]]];
    }
    const int64_t deg = bottom.indptr[d + 1] - bottom.indptr[d];
    if (deg > 0) means[d] /= static_cast<double>(deg);
  }
  torch::Tensor from_means = model->ForwardFromMeans(blocks, torch::cat({dst_rows, means}));
  CHECK(torch::allclose(full, from_means, 1e-5, 1e-6));

  InferenceSource source;
  source.neighbors = [&](const std::vector<int64_t>& dst, std::vector<int64_t>* ptr,
                         std::vector<int64_t>* idx, std::vector<float>*) {
    SampleNeighbors(g.csc(), dst.data(), static_cast<int64_t>(dst.size()), -1, false, 0, 1, ptr,
                    idx);
  };
  source.features = [&](const std::vector<int64_t>& ids) { return Rows(x, ids); };
  source.exchange = [](const torch::Tensor& rows) { return rows; };
  for (int64_t batch : {1, 4, 100}) {  // batching must not change the result
    torch::Tensor all = LayerwiseInference(*model, source, 0, 6, batch, true);
    CHECK(torch::allclose(Rows(all, {0, 4}), full, 1e-5, 1e-6));
  }
  // Layer 0 from [rows | means] made where the rows live (as the owners
  // answer a SampleAggregate with fan-out -1): the same outputs.
  InferenceSource at_owner = source;
  at_owner.input_means = [&](const std::vector<int64_t>& dst) {
    const int64_t n = static_cast<int64_t>(dst.size());
    std::vector<float> rows(2 * n * 4);
    OwnerSums sums;
    SampleAggregate({g.csc(), x.data_ptr<float>(), 4, dst.data(), n, -1, false, 0, 1}, rows.data(),
                    &sums);
    FinishMeans(n, 4, sums.counts, sums.remote_indptr, nullptr, {}, rows.data() + n * 4);
    return torch::from_blob(rows.data(), {2 * n, 4}, torch::kFloat32).clone();
  };
  int asked = 0;  // layer 0 must not ask for neighbours; layer 1 does
  auto neighbors = source.neighbors;
  at_owner.neighbors = [&](const std::vector<int64_t>& dst, std::vector<int64_t>* ptr,
                           std::vector<int64_t>* idx, std::vector<float>* rows) {
    ++asked;
    neighbors(dst, ptr, idx, rows);
  };
  for (int64_t batch : {1, 4, 100}) {
    asked = 0;
    torch::Tensor all = LayerwiseInference(*model, at_owner, 0, 6, batch, true);
    CHECK(torch::allclose(Rows(all, {0, 4}), full, 1e-5, 1e-6));
    CHECK(asked == (6 + batch - 1) / batch);  // layer 1's batches only
  }
  CHECK(model->is_training());  // inference leaves it in train mode
}

TEST_CASE("RankMetrics: AUC over every positive/negative pair, MRR per positive, ties half",
          "[unit]") {
  LinkMetrics m = RankMetrics(torch::tensor({{3.0, 1.0, 2.0}, {0.0, 1.0, 2.0}}));
  CHECK(m.auc == Approx(4.0 / 8.0));  // 3 beats all four negatives, 0 beats none
  CHECK(m.mrr == Approx((1.0 + 1.0 / 3.0) / 2.0));
  LinkMetrics tie = RankMetrics(torch::tensor({{1.0, 1.0}}));
  CHECK(tie.auc == Approx(0.5));
  CHECK(tie.mrr == Approx(1.0 / 1.5));
  LinkMetrics perfect = RankMetrics(torch::tensor({{5.0, 1.0, 2.0}, {4.0, 0.0, 3.0}}));
  CHECK(perfect.auc == Approx(1.0));
  CHECK(perfect.mrr == Approx(1.0));
  CHECK(RankMetrics(torch::zeros({0, 3})).auc == 0.0);
}

TEST_CASE("the node and link tasks' losses, accuracies and example counts", "[unit]") {
  PartitionConfig config;
  config.num_classes = 3;
  TrainOptions o;
  o.num_hidden = 2;
  MiniBatch mb;
  mb.seeds = {10, 11};
  mb.labels = {2, 0};
  torch::Tensor out = torch::tensor({{0.1, 0.2, 3.0}, {0.5, 0.1, 0.0}});
  o.task = "node";
  std::unique_ptr<Task> node = MakeTask(o, config);
  CHECK(node->OutputDim() == 3);
  CHECK(node->Examples(mb) == 2);
  CHECK(node->Loss(out, mb).item<double>() ==
        Approx(torch::nn::functional::cross_entropy(out, torch::tensor({2, 0}, torch::kInt64))
                   .item<double>()));
  CHECK(node->TrainAccuracy(out, mb) == Approx(1.0));

  o.task = "link";
  std::unique_ptr<Task> link = MakeTask(o, config);
  CHECK(link->OutputDim() == 2);
  torch::Tensor emb = torch::tensor({{1.0, 0.0}, {1.0, 1.0}, {-1.0, 0.0}});
  mb.pos_head = {0};
  mb.pos_tail = {1};  // score 1
  mb.neg_head = {0, 1};
  mb.neg_tail = {2, 2};  // scores -1, -1
  CHECK(link->Examples(mb) == 1);
  const double want = (std::log1p(std::exp(-1.0)) + 2 * std::log1p(std::exp(-1.0))) / 3;
  CHECK(link->Loss(emb, mb).item<double>() == Approx(want));
  CHECK(link->TrainAccuracy(emb, mb) == Approx(1.0));
  mb.neg_tail = {1, 1};  // scores 1, 2: both wrong
  CHECK(link->TrainAccuracy(emb, mb) == Approx(1.0 / 3.0));
  o.task = "graph";
  CHECK_THROWS_AS(MakeTask(o, config), ConfigError);
}

TEST_CASE("a checkpoint restores model, optimizer and state, and refuses another model", "[unit]") {
  ScopedTempDir dir;
  torch::manual_seed(1);
  GraphSage model(4, 8, 3, 2, 0.0);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.01));
  // One step so the optimizer has state worth saving.
  SmallGraph g;
  Block top = FullBlock(g, {0, 4});
  Block bottom = FullBlock(g, top.src_nodes);
  torch::Tensor x = torch::randn({6, 4});
  model->forward({ToTensors(bottom), ToTensors(top)}, Rows(x, bottom.src_nodes)).sum().backward();
  opt.step();
  TrainState st;
  st.epochs_done = 7;
  st.best_val = 0.5;
  st.best_epoch = 6;
  SaveCheckpoint(dir.path(), model, opt, st, "sig A");

  torch::manual_seed(2);
  GraphSage other(4, 8, 3, 2, 0.0);
  torch::optim::Adam other_opt(other->parameters(), torch::optim::AdamOptions(0.01));
  CHECK(ParamChecksum(other) != ParamChecksum(model));
  TrainState back = LoadCheckpoint(dir.path(), other, other_opt, "sig A");
  CHECK(ParamChecksum(other) == ParamChecksum(model));
  CHECK(back.epochs_done == 7);
  CHECK(back.best_val == 0.5);
  CHECK(back.best_epoch == 6);
  CHECK_THROWS_WITH(LoadCheckpoint(dir.path(), other, other_opt, "sig B"),
                    Catch::Contains("different model") && Catch::Contains("sig A"));
  { std::ofstream(dir.path() + "/checkpoint.pt", std::ios::trunc) << "garbage"; }
  CHECK_THROWS_WITH(LoadCheckpoint(dir.path(), other, other_opt, "sig A"),
                    Catch::Contains("cannot read checkpoint " + dir.path()));
  ScopedTempDir empty;
  CHECK_THROWS_WITH(LoadCheckpoint(empty.path(), other, other_opt, "sig A"),
                    Catch::Contains("no checkpoint"));
}

}  // namespace gnn

namespace gnn {
namespace {

TEST_CASE(
    "CoreShare: machines on one host split its cores, and a process bound to cores takes "
    "them as its share",
    "[unit]") {
  cpu_set_t all;
  REQUIRE(sched_getaffinity(0, sizeof(all), &all) == 0);
  const int usable = CPU_COUNT(&all);
  CHECK(UsableCores() == usable);
  CHECK(ResolveThreads(0) == usable);
  CHECK(ResolveThreads(3) == 3);
  TrainOptions o;
  o.standalone = true;
  CHECK(CoreShare(o) == usable);
  o.standalone = false;
  o.num_trainers = 1;
  o.machines_on_host = 2;
  if (usable == HostCores()) {
    // Unbound: two machines' trainers take half the host each.
    CHECK(CoreShare(o) == std::max(1, HostCores() / 2));
    o.num_trainers = 2;
    CHECK(CoreShare(o) == std::max(1, HostCores() / 4));
    o.num_trainers = 1;
  }
  // Bound to one core (as taskset binds a machine's processes): that core
  // is the share, whatever else runs on the host.
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
  const int bound_usable = UsableCores(), bound_share = CoreShare(o);
  REQUIRE(sched_setaffinity(0, sizeof(all), &all) == 0);
  CHECK(bound_usable == 1);
  CHECK(bound_share == 1);
  CHECK(UsableCores() == usable);
}

}  // namespace
}  // namespace gnn
