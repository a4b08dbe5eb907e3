// Servers (threads) on loopback + the DistGraph client: distributed sampling
// equals standalone sampling of the same graph, and features and labels are
// the dataset's rows.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

#include "client/dist_graph.h"
#include "client/sampler_service.h"
#include "cluster_util.h"
#include "common/error.h"
#include "common/sha256.h"
#include "partition/local_partition.h"
#include "partition/partition.h"
#include "sampling/edge_batch.h"
#include "sampling/sampler.h"
#include "store/row_cache.h"

using namespace gnn;

namespace {

struct OneGraph {
  PartitionConfig config;
  LocalPartition part;
  std::vector<int64_t> new_of_orig;  // input id -> this partitioning's id
};

OneGraph LoadAll(const std::string& config_path) {
  OneGraph g;
  g.config = LoadPartitionConfig(config_path);
  g.new_of_orig.assign(g.config.num_nodes, -1);
  for (int p = 0; p < g.config.num_parts; ++p) {
    LocalPartition lp = LoadLocalPartition(g.config, p, false);
    for (int64_t i = 0; i < lp.num_nodes; ++i) g.new_of_orig[lp.orig_nids[i]] = lp.node_start + i;
    if (g.config.num_parts == 1) g.part = std::move(lp);
  }
  return g;
}

// Checks a distributed batch against standalone sampling on the 1-part copy.
void CheckAgainstStandalone(const MiniBatch& mb, const OneGraph& dist, const OneGraph& single,
                            const std::vector<int>& fanouts, uint64_t rng) {
  std::vector<int64_t> orig_of_dist(dist.config.num_nodes);
  for (int64_t o = 0; o < dist.config.num_nodes; ++o) orig_of_dist[dist.new_of_orig[o]] = o;
  auto to_single = [&](int64_t dist_id) { return single.new_of_orig[orig_of_dist[dist_id]]; };
  std::vector<int64_t> seeds1;
  for (int64_t s : mb.seeds) seeds1.push_back(to_single(s));
  CscView csc{single.part.indptr.data(), single.part.indices.data(), 0, single.part.num_nodes,
              single.part.orig_nids.data()};
  std::vector<Block> want = SampleBlocks(csc, seeds1, fanouts, false, rng, 1);
  REQUIRE(want.size() == mb.blocks.size());
  for (size_t l = 0; l < want.size(); ++l) {
    const Block& got = mb.blocks[l];
    REQUIRE(got.num_dst == want[l].num_dst);
    REQUIRE(got.src_nodes.size() == want[l].src_nodes.size());
    for (size_t i = 0; i < got.src_nodes.size(); ++i) {
      REQUIRE(to_single(got.src_nodes[i]) == want[l].src_nodes[i]);
    }
    REQUIRE(got.indptr == want[l].indptr);
    REQUIRE(got.indices == want[l].indices);
    for (int64_t d = 0; d < got.num_dst; ++d) {
      if (fanouts[l] >= 0) REQUIRE(got.indptr[d + 1] - got.indptr[d] <= fanouts[l]);
    }
  }
  // Features and labels are bit-identical to the dataset's rows.
  const int64_t f = single.config.feature_dim;
  const auto& inputs = mb.blocks.front().src_nodes;
  REQUIRE(mb.features.size() == inputs.size() * static_cast<size_t>(f));
  for (size_t i = 0; i < inputs.size(); ++i) {
    int64_t row = to_single(inputs[i]);
    REQUIRE(std::memcmp(&mb.features[i * f], &single.part.features[row * f], f * sizeof(float)) ==
            0);
  }
  for (size_t i = 0; i < mb.seeds.size(); ++i) {
    REQUIRE(mb.labels[i] == single.part.labels[to_single(mb.seeds[i])]);
  }
}

// A batch aggregated at the owners against today's batch of the same
// seeds: the same blocks above the first, the first's destinations, and
// [dst rows | means] equal to PackInputMeans of today's rows up to float
// summation order.
void CheckAggregatedAtOwner(const MiniBatch& aggregated, MiniBatch today) {
  REQUIRE(aggregated.input_means);
  REQUIRE(aggregated.seeds == today.seeds);
  REQUIRE(aggregated.labels == today.labels);
  REQUIRE(aggregated.blocks.size() == today.blocks.size());
  for (size_t l = 1; l < today.blocks.size(); ++l) {
    REQUIRE(aggregated.blocks[l].src_nodes == today.blocks[l].src_nodes);
    REQUIRE(aggregated.blocks[l].indices == today.blocks[l].indices);
  }
  const Block& first = today.blocks.front();
  REQUIRE(aggregated.blocks.front().num_dst == first.num_dst);
  REQUIRE(std::equal(first.src_nodes.begin(), first.src_nodes.begin() + first.num_dst,
                     aggregated.blocks.front().src_nodes.begin()));
  PackInputMeans(&today, 1);
  REQUIRE(aggregated.features.size() == today.features.size());
  size_t off = 0;
  for (size_t i = 0; i < today.features.size(); ++i) {
    const float a = aggregated.features[i], b = today.features[i];
    off += std::abs(a - b) > 1e-5f * std::max(1.0f, std::abs(b));
  }
  CHECK(off == 0);
}

void RunEquality(const std::string& dataset) {
  test::TempDir dir;
  const std::string job = "job-" + std::to_string(::getpid()) + "-" + dataset.substr(0, 4);
  std::string four = test::MakePartitions(dir, dataset, 4, "four");
  std::string one = test::MakePartitions(dir, dataset, 1, "one");
  OneGraph dist = LoadAll(four), single = LoadAll(one);
  std::string ip = test::WriteLoopbackIpConfig(dir, 4);
  test::ServerThreads servers(ip, four, 4, 1, job);

  for (int local : {-1, 0}) {
    DistGraphOptions o = test::ClientOptions(four, ip, servers, job, local);
    o.aggregate_at_owner = false;
    DistGraph g(o);
    o.aggregate_at_owner = true;
    DistGraph at_owner(o);
    o.wire_format = net::RowFormat::kBfloat16;
    DistGraph narrow(o);
    std::mt19937_64 rng(local + 5);
    for (int b = 0; b < 6; ++b) {
      std::vector<int64_t> seeds;
      std::vector<uint8_t> used(dist.config.num_nodes, 0);
      while (seeds.size() < 64) {
        int64_t v = static_cast<int64_t>(rng() % dist.config.num_nodes);
        if (!used[v]) {
          used[v] = 1;
          seeds.push_back(v);
        }
      }
      std::vector<int> fanouts = b % 2 ? std::vector<int>{5, 10} : std::vector<int>{3, -1, 4};
      MiniBatch mb = g.MakeBatch(seeds, fanouts, false, 100 + b);
      CheckAgainstStandalone(mb, dist, single, fanouts, 100 + b);
      // An edge batch's pairs (the first seeds, each with its first
      // neighbour in block 0) kept out of the sample: the owners, told
      // them, leave them out of the means.
      const Block& first = mb.blocks.front();
      std::vector<int64_t> pairs;
      for (int64_t i = 0; i < std::min<int64_t>(first.num_dst, 16); ++i) {
        if (first.indptr[i + 1] == first.indptr[i]) continue;
        pairs.insert(pairs.end(),
                     {first.src_nodes[i], first.src_nodes[first.indices[first.indptr[i]]]});
      }
      const EdgeExclusion exclude(pairs);
      MiniBatch kept = g.MakeBatch(seeds, fanouts, false, 100 + b, &exclude);
      CHECK(kept.blocks.front().num_edges() < first.num_edges());
      CheckAggregatedAtOwner(at_owner.MakeBatch(seeds, fanouts, false, 100 + b, &exclude),
                             std::move(kept));
      CheckAggregatedAtOwner(at_owner.MakeBatch(seeds, fanouts, false, 100 + b), std::move(mb));
    }
    if (local < 0) CHECK(g.wire_bytes() > 0);
    if (dataset.rfind("synthetic", 0) == 0) {
      // DGL's default batch (1000 seeds, fan-outs 10,25): aggregating at
      // the owners ships far fewer bytes. (Small batches over a small
      // graph, whose neighbourhoods overlap, can ship more: two rows per
      // destination against each shared neighbour's row once.)
      std::vector<int64_t> seeds(1000);
      for (size_t i = 0; i < seeds.size(); ++i) seeds[i] = static_cast<int64_t>(i * 97) % 100000;
      const uint64_t today0 = g.wire_bytes(), owner0 = at_owner.wire_bytes();
      MiniBatch mb = g.MakeBatch(seeds, {10, 25}, false, 7);
      CheckAggregatedAtOwner(at_owner.MakeBatch(seeds, {10, 25}, false, 7), std::move(mb));
      const double today = static_cast<double>(g.wire_bytes() - today0);
      const double owner = static_cast<double>(at_owner.wire_bytes() - owner0);
      INFO("wire bytes per batch: aggregated at the owners " << owner << ", today " << today);
      CHECK(owner < 0.7 * today);
      // bfloat16 on the wire: the same batch within its precision, fewer bytes.
      const uint64_t narrow0 = narrow.wire_bytes();
      const MiniBatch a = at_owner.MakeBatch(seeds, {10, 25}, false, 7);
      const MiniBatch b = narrow.MakeBatch(seeds, {10, 25}, false, 7);
      REQUIRE(a.features.size() == b.features.size());
      size_t off = 0;
      for (size_t i = 0; i < a.features.size(); ++i) {
        off += std::abs(a.features[i] - b.features[i]) >
               1e-2f * std::max(1.0f, std::abs(a.features[i]));
      }
      CHECK(off == 0);
      const double narrow_bytes = static_cast<double>(narrow.wire_bytes() - narrow0);
      INFO("bfloat16 " << narrow_bytes);
      CHECK(narrow_bytes < 0.65 * owner);
    }
    // Every node's row in one call: several ~4 MB chunks per server in
    // flight at once, answered out of order by the worker threads.
    std::vector<int64_t> all(dist.config.num_nodes);
    for (int64_t v = 0; v < dist.config.num_nodes; ++v) all[v] = dist.config.num_nodes - 1 - v;
    NoInitVector<float> rows;
    g.PullFeatures(all, &rows);
    std::vector<int64_t> orig_of_dist(dist.config.num_nodes);
    for (int64_t o2 = 0; o2 < dist.config.num_nodes; ++o2) orig_of_dist[dist.new_of_orig[o2]] = o2;
    const int64_t f = dist.config.feature_dim;
    bool same = true;
    for (size_t i = 0; i < all.size() && same; ++i) {
      int64_t row = single.new_of_orig[orig_of_dist[all[i]]];
      same = std::memcmp(&rows[i * f], &single.part.features[row * f], f * sizeof(float)) == 0;
    }
    CHECK(same);
  }
}

}  // namespace

TEST_CASE("distributed sampling over 4 servers equals standalone sampling (synthetic:small)",
          "[integration]") {
  RunEquality("synthetic:small");
}

TEST_CASE("distributed sampling over 4 servers equals standalone sampling (Cora)",
          "[integration]") {
  std::string cora = test::SharedDataset("cora");
  if (cora.empty()) GNN_SKIP("../shared/datasets/cora not found");
  RunEquality(cora);
}

TEST_CASE("a handshake with a different partition config is refused naming the server",
          "[integration]") {
  test::TempDir dir;
  std::string a = test::MakePartitions(dir, "synthetic:tiny", 2, "a");
  PartitionOptions o;
  o.data.dataset = "synthetic:tiny";
  o.data.seed = 9;  // a different graph, same name
  o.num_parts = 2;
  o.output = dir / "b";
  std::string b = RunPartition(o).config_path;
  std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  const std::string job = "job-mismatch-" + std::to_string(::getpid());
  test::ServerThreads servers(ip, a, 2, 1, job);
  DistGraphOptions c;
  c.job_id = job;
  c.keys = test::Keys(job);
  c.part_config = b;
  c.ip_config = ip;
  c.endpoints = servers.endpoints();
  c.timeout = std::chrono::milliseconds(5000);
  CHECK_THROWS_WITH(DistGraph(c), Catch::Contains("machine 0 server 0") &&
                                      Catch::Contains("deploy the same partition config"));
}

TEST_CASE("a server that is down gives a timeout naming it", "[integration]") {
  test::TempDir dir;
  std::string a = test::MakePartitions(dir, "synthetic:tiny", 2, "a");
  std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  DistGraphOptions c;
  c.part_config = a;
  c.ip_config = ip;
  c.endpoints = {{"tcp://127.0.0.1:1"}, {"tcp://127.0.0.1:2"}};
  c.timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(DistGraph(c), Catch::Contains("machine 0 server 0 at 127.0.0.1:1") &&
                                      Catch::Contains("did not answer Hello"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
}

TEST_CASE(
    "SamplerPool streams batches from sampler threads in order with bounded credit in batches and "
    "bytes",
    "[integration]") {
  test::TempDir dir;
  const std::string job = "job-pool-" + std::to_string(::getpid());
  std::string four = test::MakePartitions(dir, "synthetic:small", 2, "two");
  std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  test::ServerThreads servers(ip, four, 2, 1, job);
  PartitionConfig config = LoadPartitionConfig(four);
  // The default byte window lets each sampler work `prefetch` (2) batches
  // ahead; a window smaller than two replies keeps each at one in flight.
  const uint64_t window = GENERATE(kSamplerWindowBytes, uint64_t{1});
  SamplerPool pool("tcp://127.0.0.1:*", 2, net::Hello{config.graph_name, Sha256File(four), job}, 2,
                   20000, test::Keys(job), window);
  std::atomic<bool> stop{false};
  std::vector<std::thread> samplers;
  std::vector<std::string> errors(2);
  for (int s = 0; s < 2; ++s) {
    samplers.emplace_back([&, s] {
      SamplerOptions so;
      so.graph.part_config = four;
      so.graph.ip_config = ip;
      so.graph.endpoints = servers.endpoints();
      so.graph.local_machine_id = 0;
      so.graph.job_id = job;
      so.graph.keys = test::Keys(job);
      so.trainer_endpoint = pool.endpoint();
      so.sampler_id = s;
      try {
        RunSampler(so, stop);
      } catch (const std::exception& e) {
        errors[s] = e.what();
      }
    });
  }
  pool.WaitForSamplers(20000);
  std::vector<net::SeedBatch> batches;
  for (int b = 0; b < 10; ++b) {
    net::SeedBatch sb;
    sb.index = b;
    sb.rng_seed = b;
    sb.fanouts = {5, 10};
    for (int i = 0; i < 50; ++i) sb.seeds.push_back(b * 50 + i);
    batches.push_back(sb);
  }
  pool.Start(batches);
  int64_t expect = 0;
  while (auto mb = pool.Next()) {
    CHECK(mb->index == expect);
    CHECK(mb->seeds == batches[expect].seeds);
    CHECK(mb->blocks.size() == 2);
    ++expect;
  }
  CHECK(expect == 10);
  CHECK(pool.max_in_flight() == (window == 1 ? 1 : 2));
  pool.Stop();
  for (auto& t : samplers) t.join();
  CHECK(errors[0].empty());
  CHECK(errors[1].empty());
}

TEST_CASE("the hot-row cache: one per machine, same batches, fewer bytes (synthetic:small)",
          "[integration]") {
  test::TempDir dir;
  const std::string job = "job-cache-" + std::to_string(::getpid());
  const std::string parts = test::MakePartitions(dir, "synthetic:small", 2, "two");
  const std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  test::ServerThreads servers(ip, parts, 2, 1, job);
  DistGraphOptions o = test::ClientOptions(parts, ip, servers, job, 0);
  o.cache_fanouts = {10, 25};
  DistGraph plain(o);
  CHECK(plain.row_cache() == nullptr);
  o.cache_bytes = 1 << 20;
  DistGraph cached(o), second(o);  // the second attaches to what the first built
  REQUIRE(cached.row_cache() != nullptr);
  REQUIRE(second.row_cache() != nullptr);
  CHECK(cached.row_cache()->is_builder());
  CHECK_FALSE(second.row_cache()->is_builder());
  const ShmRowCache& cache = *cached.row_cache();
  const int64_t dim = plain.feature_dim();
  CHECK(cache.num_rows() == (1 << 20) / (dim * 4 + 8));
  // Only other partitions' rows, exactly theirs.
  const PartInfo& mine = plain.config().parts[0];
  NoInitVector<float> want;
  std::vector<int64_t> ids(cache.ids(), cache.ids() + cache.num_rows());
  plain.PullFeatures(ids, &want);
  bool exact = true;
  for (int64_t r = 0; r < cache.num_rows(); ++r) {
    CHECK((ids[r] < mine.node_start || ids[r] >= mine.node_end));
    exact = exact && std::memcmp(cache.Find(ids[r]), &want[r * dim], dim * sizeof(float)) == 0;
  }
  CHECK(exact);
  // Both wires: batches byte-identical with and without the cache (with
  // remote sums, equal up to float summation order: a cached row is added
  // here, outside its owner's partial sum).
  for (int mode = 0; mode < 3; ++mode) {
    const bool at_owner = mode < 2, remote_sums = mode == 0;
    plain.SetAggregateAtOwner(at_owner);
    cached.SetAggregateAtOwner(at_owner);
    plain.SetRemoteSums(remote_sums);
    cached.SetRemoteSums(remote_sums);
    uint64_t plain_bytes = 0, cached_bytes = 0, lookups = 0, hits = 0;
    for (int b = 0; b < 4; ++b) {
      std::vector<int64_t> seeds;
      for (int64_t i = 0; i < 500; ++i) seeds.push_back((i * 131 + b) % mine.node_end);
      std::sort(seeds.begin(), seeds.end());
      seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
      const MiniBatch a = plain.MakeBatch(seeds, {10, 25}, false, 40 + b);
      const MiniBatch c = cached.MakeBatch(seeds, {10, 25}, false, 40 + b);
      if (remote_sums) {
        REQUIRE(a.features.size() == c.features.size());
        size_t off = 0;
        for (size_t i = 0; i < a.features.size(); ++i) {
          off += std::abs(a.features[i] - c.features[i]) >
                 1e-5f * std::max(1.0f, std::abs(a.features[i]));
        }
        CHECK(off == 0);
      } else {
        CHECK(a.features == c.features);
      }
      CHECK(a.blocks.back().indices == c.blocks.back().indices);
      CHECK(a.cache_hits == 0);
      CHECK(c.cache_lookups == a.cache_lookups);
      plain_bytes += a.wire_bytes;
      cached_bytes += c.wire_bytes;
      lookups += c.cache_lookups;
      hits += c.cache_hits;
    }
    INFO("at owner " << at_owner << ", remote sums " << remote_sums << ": bytes " << plain_bytes
                     << " -> " << cached_bytes << ", hits " << hits << " of " << lookups);
    CHECK(hits > 0);
    CHECK(hits <= lookups);
    // A hit saves a whole row on the rows' wire; with remote sums its id
    // (and, when all of a destination's neighbours there hit, a sum row).
    if (remote_sums) {
      CHECK(cached_bytes + hits * sizeof(int64_t) <= plain_bytes);
    } else {
      CHECK(cached_bytes + hits * dim * sizeof(float) <= plain_bytes);
    }
  }
}

TEST_CASE("HoldRows: other partitions' rows pulled once, then read here with no request",
          "[integration]") {
  test::TempDir dir;
  const std::string job = "job-hold-" + std::to_string(::getpid());
  const std::string parts = test::MakePartitions(dir, "synthetic:small", 2, "two");
  const std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  test::ServerThreads servers(ip, parts, 2, 1, job);
  const DistGraphOptions o = test::ClientOptions(parts, ip, servers, job, 0);
  DistGraph plain(o), holding(o);
  const PartInfo& mine = plain.config().parts[0];
  const PartInfo& other = plain.config().parts[1];
  const int64_t dim = plain.feature_dim();
  // Every third node of the other partition, some twice, out of order.
  std::vector<int64_t> held;
  for (int64_t v = other.node_end - 1; v >= other.node_start; v -= 3) held.push_back(v);
  held.push_back(held.front());
  holding.HoldRows(held);
  CHECK(holding.num_held_rows() == static_cast<int64_t>(held.size()) - 1);
  // Held rows and the local partition's: exactly the owners' rows, and
  // not a byte on the wire.
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 2000; ++i) {
    ids.push_back(i % 2 ? held[static_cast<size_t>(i * 7) % held.size()]
                        : mine.node_start + (i * 13) % mine.num_nodes());
  }
  NoInitVector<float> want, got;
  plain.PullFeatures(ids, &want);
  const uint64_t before = holding.wire_bytes();
  holding.PullFeatures(ids, &got);
  CHECK(holding.wire_bytes() == before);
  REQUIRE(got.size() == ids.size() * static_cast<size_t>(dim));
  CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  // A row not held is asked of its owner, beside the held ones.
  ids.push_back(other.node_end - 2);  // not a held one: held steps by 3 from node_end - 1
  plain.PullFeatures(ids, &want);
  holding.PullFeatures(ids, &got);
  CHECK(holding.wire_bytes() > before);
  CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  // Released: every other-partition row is asked for again.
  holding.ReleaseRows();
  CHECK(holding.num_held_rows() == 0);
  const uint64_t released = holding.wire_bytes();
  holding.PullFeatures({held[0]}, &got);
  plain.PullFeatures({held[0]}, &want);
  CHECK(holding.wire_bytes() > released);
  CHECK(std::memcmp(got.data(), want.data(), dim * sizeof(float)) == 0);
}

namespace {

// Relative gap |a - b| / max(1, |b|) above `tol`, counted.
size_t Off(const NoInitVector<float>& a, const NoInitVector<float>& b, float tol) {
  REQUIRE(a.size() == b.size());
  size_t off = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    off += std::abs(a[i] - b[i]) > tol * std::max(1.0f, std::abs(b[i]));
  }
  return off;
}

}  // namespace

TEST_CASE(
    "remote sums: the neighbours a destination's owner lacks summed at their owners give the "
    "same batches and evaluation means (synthetic:small)",
    "[integration]") {
  test::TempDir dir;
  for (const std::string method : {"metis", "random"}) {
    const std::string job = "job-sums-" + method + "-" + std::to_string(::getpid());
    const std::string parts = test::MakePartitions(dir, "synthetic:small", 3, method, method);
    const std::string ip = test::WriteLoopbackIpConfig(dir, 3);
    test::ServerThreads servers(ip, parts, 3, 1, job);
    // No local partition, a local one, a local one with the hot-row cache.
    for (int setting = 0; setting < 3; ++setting) {
      DistGraphOptions o = test::ClientOptions(parts, ip, servers, job, setting == 0 ? -1 : 0);
      o.cache_fanouts = {10, 25};
      o.cache_bytes = setting == 2 ? 1 << 20 : 0;
      o.remote_sums = false;
      DistGraph rows(o);
      o.remote_sums = true;
      DistGraph sums(o);
      o.wire_format = net::RowFormat::kBfloat16;
      DistGraph narrow(o);
      o.id_coding = net::IdCoding::kVarint;
      DistGraph varint(o);
      o.remote_sums = false;
      DistGraph varint_rows(o);
      if (setting == 2) REQUIRE(sums.row_cache() != nullptr);
      const int64_t num_nodes = rows.config().num_nodes;
      uint64_t rows_bytes = 0, sums_bytes = 0, narrow_bytes = 0, varint_bytes = 0;
      for (int b = 0; b < 3; ++b) {
        std::vector<int64_t> seeds;
        for (int64_t i = 0; i < 1000; ++i) seeds.push_back((i * 97 + b * 13) % num_nodes);
        std::sort(seeds.begin(), seeds.end());
        seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
        INFO(method << " parts, setting " << setting << ", batch " << b);
        const MiniBatch a = rows.MakeBatch(seeds, {10, 25}, false, 60 + b);
        const MiniBatch c = sums.MakeBatch(seeds, {10, 25}, false, 60 + b);
        const MiniBatch n = narrow.MakeBatch(seeds, {10, 25}, false, 60 + b);
        REQUIRE(c.input_means);
        // The same sampled neighbours, labels and cache lookups.
        REQUIRE(a.blocks.size() == c.blocks.size());
        for (size_t l = 0; l < a.blocks.size(); ++l) {
          REQUIRE(a.blocks[l].src_nodes == c.blocks[l].src_nodes);
          REQUIRE(a.blocks[l].indices == c.blocks[l].indices);
        }
        CHECK(a.labels == c.labels);
        CHECK(a.cache_lookups == c.cache_lookups);
        CHECK(a.cache_hits == c.cache_hits);
        if (setting == 2) CHECK(c.cache_hits > 0);
        // [dst rows | means] up to float summation order; bfloat16 within its precision.
        CHECK(Off(c.features, a.features, 1e-5f) == 0);
        CHECK(Off(n.features, a.features, 2e-2f) == 0);
        // Varint ids: the very same batch, remote sums or rows.
        for (DistGraph* g : {&varint, &varint_rows}) {
          const MiniBatch w = g->MakeBatch(seeds, {10, 25}, false, 60 + b);
          const MiniBatch& same = g == &varint ? n : a;
          REQUIRE(w.blocks.size() == same.blocks.size());
          for (size_t l = 0; l < w.blocks.size(); ++l) {
            REQUIRE(w.blocks[l].src_nodes == same.blocks[l].src_nodes);
            REQUIRE(w.blocks[l].indices == same.blocks[l].indices);
          }
          CHECK(w.labels == same.labels);
          if (g == &varint) {
            CHECK(w.features == n.features);
            varint_bytes += w.wire_bytes;
          } else {
            CHECK(Off(w.features, a.features, 2e-2f) == 0);
          }
        }
        rows_bytes += a.wire_bytes;
        sums_bytes += c.wire_bytes;
        narrow_bytes += n.wire_bytes;
      }
      // Layer-wise evaluation's first layer: every neighbour (fan-out -1).
      std::vector<int64_t> dsts;
      for (int64_t v = 0; v < num_nodes; v += 7) dsts.push_back(v);
      NoInitVector<float> want, got;
      rows.SampleAggregate(dsts, -1, false, 0, &want);
      sums.SampleAggregate(dsts, -1, false, 0, &got);
      CHECK(Off(got, want, 1e-5f) == 0);
      INFO(method << " parts, setting " << setting << ": wire bytes of 3 batches: rows "
                  << rows_bytes << ", remote sums " << sums_bytes << ", bfloat16 " << narrow_bytes
                  << ", varint ids " << varint_bytes);
      if (setting == 0) CHECK(sums_bytes < rows_bytes);
      if (method == "random" && setting < 2) CHECK(sums_bytes < 0.85 * rows_bytes);
      CHECK(narrow_bytes < sums_bytes);
      CHECK(varint_bytes < 0.9 * narrow_bytes);
      // Evaluation's first layer in varints: the same means.
      NoInitVector<float> coded;
      varint.SampleAggregate(dsts, -1, false, 0, &coded);
      narrow.SampleAggregate(dsts, -1, false, 0, &got);
      CHECK(coded == got);
    }
  }
}
