// DistGraph's planners (the plain batch, the first layer at the owners,
// the remote sums) against servers in this process (test::InProcessOwners):
// what each sends to which owner, and what it makes of the replies, with
// no socket in between. The same planners over real servers and sockets
// are tested in dataplane_test.cc.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <set>

#include "client/dist_graph.h"
#include "cluster_util.h"
#include "common/error.h"
#include "in_process_owners.h"
#include "net/messages.h"
#include "net/typed_messages.h"
#include "partition/partition.h"

using namespace gnn;
using net::Key;
using net::MsgType;

namespace {

// The requests of type `type` among `owners`' requests.
std::vector<const test::InProcessOwners::Request*> OfType(const test::InProcessOwners& owners,
                                                          MsgType type) {
  std::vector<const test::InProcessOwners::Request*> out;
  for (const auto& r : owners.requests()) {
    if (r.message.header.msg_type() == type) out.push_back(&r);
  }
  return out;
}

// The ids the requests of `type` asked for (ids_of(message) reads them),
// each checked to be owned by the partition it went to: how many in all,
// and which.
struct Asked {
  size_t count = 0;
  std::set<int64_t> distinct;
};
template <typename IdsOf>
Asked AskedIds(const test::InProcessOwners& owners, const PartitionConfig& pc, MsgType type,
               IdsOf ids_of) {
  Asked a;
  for (const auto* r : OfType(owners, type)) {
    for (int64_t v : ids_of(r->message)) {
      REQUIRE(pc.PartOf(v) == r->part);
      a.distinct.insert(v);
      ++a.count;
    }
  }
  return a;
}

// Largest difference of `got` from `want`, relative to 1 + |want|.
float Off(const float* got, const float* want, size_t n) {
  float worst = 0;
  for (size_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::fabs(got[i] - want[i]) / (1.0f + std::fabs(want[i])));
  }
  return worst;
}

// The first layer as its definition says: rows of `dsts`, then the mean
// of the rows of the neighbours SampleNeighbors draws with the same
// arguments (a destination without any: zeros).
std::vector<float> MeansByDefinition(DistGraph& g, const std::vector<int64_t>& dsts, int fanout,
                                     uint64_t rng_seed) {
  const int64_t dim = g.feature_dim();
  const size_t n = dsts.size();
  std::vector<int64_t> indptr, indices;
  g.SampleNeighbors(dsts, fanout, false, rng_seed, &indptr, &indices);
  NoInitVector<float> own, nbr;
  g.PullFeatures(dsts, &own);
  g.PullFeatures(indices, &nbr);
  std::vector<float> out(2 * n * static_cast<size_t>(dim), 0.0f);
  std::copy(own.begin(), own.end(), out.begin());
  for (size_t i = 0; i < n; ++i) {
    float* mean = out.data() + (n + i) * static_cast<size_t>(dim);
    const int64_t deg = indptr[i + 1] - indptr[i];
    for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k) {
      for (int64_t d = 0; d < dim; ++d) mean[d] += nbr[static_cast<size_t>(k * dim + d)];
    }
    for (int64_t d = 0; d < dim && deg > 0; ++d) mean[d] /= static_cast<float>(deg);
  }
  return out;
}

}  // namespace

TEST_CASE(
    "the first layer at the owners, planned against in-process owners: the means of the sampled "
    "rows, each row pulled once, a group summed at its owner only when it has two or more",
    "[integration]") {
  test::TempDir dir;
  const std::string config = test::MakePartitions(dir, "synthetic:small", 4, "g", "random");
  test::InProcessOwners owners(config, "planner-job");
  DistGraph g(owners.Options());
  const PartitionConfig& pc = g.config();
  const std::vector<int64_t> dsts = test::DistinctRandomIds(pc.num_nodes, 300, 5);
  const size_t n = dsts.size();
  const size_t dim = static_cast<size_t>(g.feature_dim());

  for (const bool remote_sums : {true, false}) {
    INFO("remote sums " << remote_sums);
    g.SetRemoteSums(remote_sums);
    owners.ClearRequests();
    NoInitVector<float> got;
    g.SampleAggregate(dsts, 10, false, 7, &got);

    // To every owner of a destination, SampleAggregate for its own ones.
    std::set<int> asked;
    size_t dsts_asked = 0;
    for (const auto* r : OfType(owners, MsgType::kSampleAggregate)) {
      const net::SampleAggregateRequest q = net::SampleAggregateRequest::Decode(r->message);
      for (int64_t v : q.dsts) REQUIRE(pc.PartOf(v) == r->part);
      dsts_asked += q.dsts.size();
      asked.insert(r->part);
    }
    CHECK(dsts_asked == n);
    CHECK(asked.size() == 4);
    // The neighbours an owner lacks: summed at their own owner in groups
    // of two or more rows (a group of one is the row), or pulled, each
    // distinct row at most once.
    const auto sums = OfType(owners, MsgType::kPullSums);
    size_t summed = 0;
    for (const auto* r : sums) {
      const net::PullSums q = net::PullSums::Decode(r->message);
      for (size_t k = 0; k < q.num_groups(); ++k) {
        REQUIRE(q.group_ptr[k + 1] - q.group_ptr[k] >= 2);
      }
      for (int64_t v : q.ids) REQUIRE(pc.PartOf(v) == r->part);
      summed += q.ids.size();
    }
    const Asked pulled = AskedIds(owners, pc, MsgType::kPullFeatures, [](const net::Message& m) {
      return net::PullFeatures::Decode(m).ids;
    });
    CHECK(pulled.count == pulled.distinct.size());
    if (remote_sums) {
      CHECK(summed > 0);
    } else {
      CHECK(sums.empty());
      CHECK(pulled.count > 0);
    }
    const std::vector<float> want = MeansByDefinition(g, dsts, 10, 7);
    REQUIRE(got.size() == 2 * n * dim);
    CHECK(Off(got.data(), want.data(), want.size()) < 1e-5f);
  }
}

TEST_CASE(
    "a plain batch, planned against in-process owners: one Sample per owner and layer, every "
    "input row pulled once, the rows the owners hold",
    "[integration]") {
  test::TempDir dir;
  const std::string config = test::MakePartitions(dir, "synthetic:small", 3, "g", "random");
  test::InProcessOwners owners(config, "planner-job");
  DistGraph g(owners.Options());
  g.SetAggregateAtOwner(false);
  const PartitionConfig& pc = g.config();
  const std::vector<int64_t> seeds = test::DistinctRandomIds(pc.num_nodes, 64, 9);
  owners.ClearRequests();
  const MiniBatch mb = g.MakeBatch(seeds, {5, 10}, false, 11);
  REQUIRE(mb.blocks.size() == 2);
  CHECK_FALSE(mb.input_means);

  // Layer by layer, each owner is asked once for its destinations' samples.
  const auto samples = OfType(owners, MsgType::kSample);
  std::multiset<int> per_owner;
  for (const auto* r : samples) {
    for (int64_t v : net::SampleRequest::Decode(r->message).seeds) REQUIRE(pc.PartOf(v) == r->part);
    per_owner.insert(r->part);
  }
  for (int p = 0; p < 3; ++p) CHECK(per_owner.count(p) == 2);
  // Every input row once, from its owner, and the batch holds what they sent.
  const Asked pulled = AskedIds(owners, pc, MsgType::kPullFeatures, [](const net::Message& m) {
    return net::PullFeatures::Decode(m).ids;
  });
  const std::vector<int64_t>& inputs = mb.blocks.front().src_nodes;
  CHECK(pulled.count == inputs.size());
  CHECK(pulled.distinct == std::set<int64_t>(inputs.begin(), inputs.end()));
  NoInitVector<float> rows;
  g.PullFeatures(inputs, &rows);
  REQUIRE(mb.features.size() == rows.size());
  CHECK(std::memcmp(mb.features.data(), rows.data(), rows.size() * sizeof(float)) == 0);
  // Labels too, by PullLabels from the seeds' owners.
  std::vector<int64_t> labels;
  g.PullLabels(seeds, &labels);
  CHECK(mb.labels == labels);
}

TEST_CASE(
    "a planner names the owner whose reply does not fit what was asked, and the one that does not "
    "answer in time",
    "[integration]") {
  test::TempDir dir;
  const std::string config = test::MakePartitions(dir, "synthetic:small", 4, "g", "random");
  test::InProcessOwners owners(config, "planner-job");
  DistGraphOptions options = owners.Options();
  options.timeout = std::chrono::milliseconds(300);
  DistGraph g(options);
  const std::vector<int64_t> dsts = test::DistinctRandomIds(g.config().num_nodes, 200, 3);
  NoInitVector<float> out;

  SECTION("a reply one frame short") {
    owners.tamper = [](int part, net::Message* reply) {
      if (part != 2 || reply->header.msg_type() != MsgType::kSampleAggregateReply) return;
      reply->frames.pop_back();
      reply->header.frame_bytes.pop_back();
    };
    CHECK_THROWS_WITH(
        g.SampleAggregate(dsts, 10, false, 1, &out),
        Catch::Contains("machine 2 server 0") && Catch::Contains("SampleAggregateReply"));
  }
  SECTION("rows of another width") {
    owners.tamper = [](int part, net::Message* reply) {
      if (part != 1 || reply->header.msg_type() != MsgType::kPullFeaturesReply) return;
      *reply->header.Find(Key::kDim) += 1;
    };
    CHECK_THROWS_WITH(g.PullFeatures(dsts, &out), Catch::Contains("machine 1 server 0"));
  }
  SECTION("a field the reply type does not take") {
    owners.tamper = [](int part, net::Message* reply) {
      if (part == 3 && reply->header.msg_type() == MsgType::kSampleAggregateReply) {
        reply->header.Add(Key::kFanout, 5);
      }
    };
    CHECK_THROWS_WITH(g.SampleAggregate(dsts, 10, false, 1, &out),
                      Catch::Contains("machine 3 server 0") && Catch::Contains("fanout"));
  }
  SECTION("an owner that does not answer") {
    owners.silent = {1};
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_AS(g.SampleAggregate(dsts, 10, false, 1, &out), TimeoutError);
    CHECK_THROWS_WITH(g.SampleAggregate(dsts, 10, false, 1, &out),
                      Catch::Contains("machine 1 server 0"));
    // Within the one request round's deadline (twice: two calls), not more.
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
  }
}

TEST_CASE(
    "typed group sums, planned against in-process owners: an owner sums its share of a group "
    "when it holds two or more of its rows, the other rows are pulled once each",
    "[integration]") {
  test::TempDir dir;
  PartitionOptions po;
  po.data.dataset = "synthetic:mag-small";
  po.num_parts = 2;
  po.undirected = true;
  po.output = dir / "mag";
  const std::string config = RunPartition(po).config_path;
  test::InProcessOwners owners(config, "planner-job");
  DistGraph g(owners.Options());
  const PartitionConfig& pc = g.config();
  const int paper = static_cast<int>(pc.ntypes.size()) - 1;
  const int64_t dim = pc.ntype_feature_dims[static_cast<size_t>(paper)];
  REQUIRE(dim > 0);
  // Groups of 1 to 4 papers of one partition, every third with one of the
  // other partition too, and some rows in several groups.
  std::vector<int64_t> ids, ptr{0};
  for (int p = 0; p < 2; ++p) {
    const auto [lo, hi] = pc.parts[static_cast<size_t>(p)].ntype_ranges[static_cast<size_t>(paper)];
    const auto [lo2, hi2] =
        pc.parts[static_cast<size_t>(1 - p)].ntype_ranges[static_cast<size_t>(paper)];
    REQUIRE(hi - lo > 100);
    for (int k = 0; k < 80; ++k) {
      for (int j = 0; j <= k % 4; ++j) ids.push_back(lo + (k * 7 + j * 13) % (hi - lo));
      if (k % 3 == 0) ids.push_back(lo2 + k % (hi2 - lo2));
      ptr.push_back(static_cast<int64_t>(ids.size()));
    }
  }
  owners.ClearRequests();
  std::vector<float> sums;
  g.TypedGroupSums(paper, nullptr, ids, ptr, &sums);

  size_t summed_groups = 0;
  for (const auto* r : OfType(owners, MsgType::kPullTypedSums)) {
    const net::PullTypedSums q = net::PullTypedSums::Decode(r->message);
    CHECK(q.ntype == paper);
    for (size_t k = 0; k + 1 < q.group_ptr.size(); ++k) {
      REQUIRE(q.group_ptr[k + 1] - q.group_ptr[k] >= 2);
    }
    for (int64_t v : q.ids) REQUIRE(pc.PartOf(v) == r->part);
    summed_groups += q.group_ptr.size() - 1;
  }
  CHECK(summed_groups > 0);
  const Asked pulled = AskedIds(owners, pc, MsgType::kPullTyped, [](const net::Message& m) {
    return net::PullTyped::Decode(m).ids;
  });
  CHECK(pulled.count == pulled.distinct.size());

  std::vector<float> rows;
  g.PullTyped(paper, ids, &rows);
  REQUIRE(sums.size() == (ptr.size() - 1) * static_cast<size_t>(dim));
  std::vector<float> want(sums.size(), 0.0f);
  for (size_t k = 0; k + 1 < ptr.size(); ++k) {
    for (int64_t e = ptr[k]; e < ptr[k + 1]; ++e) {
      for (int64_t j = 0; j < dim; ++j) {
        want[k * static_cast<size_t>(dim) + static_cast<size_t>(j)] +=
            rows[static_cast<size_t>(e * dim + j)];
      }
    }
  }
  CHECK(Off(sums.data(), want.data(), want.size()) < 1e-5f);
}

TEST_CASE(
    "named header fields stay small beside what they describe: headers under 1 % of a batch's "
    "bytes, requests and replies",
    "[integration]") {
  test::TempDir dir;
  const std::string config = test::MakePartitions(dir, "synthetic:small", 2, "g", "random");
  test::InProcessOwners owners(config, "planner-job");
  DistGraphOptions options = owners.Options();
  options.wire_format = net::RowFormat::kBfloat16;  // the defaults of gnn-train
  options.id_coding = net::IdCoding::kVarint;
  DistGraph g(options);
  const std::vector<int64_t> seeds = test::DistinctRandomIds(g.config().num_nodes, 1000, 4);
  for (const bool at_owner : {true, false}) {
    g.SetAggregateAtOwner(at_owner);
    const test::InProcessOwners::Bytes before = owners.bytes();
    g.MakeBatch(seeds, {10, 25}, false, 3);
    const uint64_t headers = owners.bytes().headers - before.headers;
    const uint64_t frames = owners.bytes().frames - before.frames;
    INFO("aggregate at owner " << at_owner << ": " << headers << " header bytes, " << frames
                               << " array bytes");
    CHECK(headers > 0);
    CHECK(headers * 100 < headers + frames);
  }
}
