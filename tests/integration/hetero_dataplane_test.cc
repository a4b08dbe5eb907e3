// Heterogeneous serving on real sockets: typed sampling through servers of
// 3 partitions draws, node for node (by input id), what one in-memory
// partition draws; typed pulls return the partition files' rows; embedding
// rows live at server 0 only; homogeneous requests are refused by name;
// typed batches made by sampler threads and sent through a SamplerPool are
// the trainer's own, bit for bit.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <climits>
#include <cstring>
#include <map>
#include <thread>

#include "client/dist_graph.h"
#include "client/sampler_service.h"
#include "cluster_util.h"
#include "common/bfloat16.h"
#include "common/error.h"
#include "common/sha256.h"
#include "net/batch_codec.h"
#include "net/channel.h"
#include "net/messages.h"
#include "partition/hetero_local.h"
#include "partition/partition.h"
#include "sampling/relation_block.h"
#include "sampling/typed_sampler.h"
#include "store/row_cache.h"
#include "test_util.h"

using namespace gnn;

namespace {

std::string MagSmall(const test::TempDir& dir, int parts, const std::string& name) {
  PartitionOptions o;
  o.data.dataset = "synthetic:mag-small";
  o.num_parts = parts;
  o.undirected = true;
  o.balance_train = true;
  o.output = dir / name;
  return RunPartition(o).config_path;
}

// Input id (type offset + type-local id) of every new id of `config`.
std::map<int64_t, int64_t> InputIds(const PartitionConfig& c) {
  std::map<int64_t, int64_t> out;
  for (int p = 0; p < c.num_parts; ++p) {
    const HeteroPartition part = LoadHeteroPartition(c, p, false);
    for (int64_t i = 0; i < part.num_nodes; ++i)
      out[part.node_start + i] = part.rng_keys[static_cast<size_t>(i)];
  }
  return out;
}

// A client of the test's server threads.
DistGraphOptions ClientOptions(const std::string& part_config, const std::string& ip,
                               const test::ServerThreads& servers, const std::string& job) {
  DistGraphOptions o;
  o.part_config = part_config;
  o.ip_config = ip;
  o.endpoints = servers.endpoints();
  o.job_id = job;
  o.keys = test::Keys(job);
  o.timeout = std::chrono::milliseconds(20000);
  return o;
}

}  // namespace

TEST_CASE("typed sampling over 3 servers equals one in-memory partition, by input id",
          "[integration]") {
  test::TempDir dir;
  const std::string three = MagSmall(dir, 3, "three"), one = MagSmall(dir, 1, "one");
  const PartitionConfig c3 = LoadPartitionConfig(three), c1 = LoadPartitionConfig(one);
  const std::map<int64_t, int64_t> in3 = InputIds(c3), in1 = InputIds(c1);
  std::map<int64_t, int64_t> from_input1;  // input id -> new id of the 1-partition config
  for (const auto& [v, k] : in1) from_input1[k] = v;

  const std::string job = "hetero-" + std::to_string(::getpid());
  const std::string ip = test::WriteLoopbackIpConfig(dir, 3);
  test::ServerThreads servers(ip, three, 3, 2, job);
  DistGraphOptions o = ClientOptions(three, ip, servers, job);
  DistGraph g(o);

  const HeteroPartition local = LoadHeteroPartition(c1, 0, false);
  TypedCscView view;
  view.csc =
      CscView{local.indptr.data(), local.indices.data(), 0, local.num_nodes, local.rng_keys.data()};
  view.etypes = local.etypes.data();
  view.num_rels = static_cast<int64_t>(c1.etypes.size());

  // Seeds: the first 300 training papers of the 3-partition numbering.
  std::vector<int64_t> seeds3 = g.SplitNodes(0, 0, 300), seeds1;
  for (int64_t v : seeds3) seeds1.push_back(from_input1.at(in3.at(v)));
  const std::vector<std::vector<int>> fanouts = {std::vector<int>(8, 3), std::vector<int>(8, 5)};
  const std::vector<Block> d = g.SampleTypedBlocks(seeds3, fanouts, false, 77);
  const std::vector<Block> s = SampleTypedBlocks(view, seeds1, fanouts, false, 77, 2);
  REQUIRE(d.size() == 2);
  // The last block (seeds -> first hop): the same sampled (relation, input
  // id) pairs for every seed; then the same number of input nodes.
  const Block &bd = d[1], &bs = s[1];
  REQUIRE(bd.num_dst == bs.num_dst);
  for (int64_t i = 0; i < bd.num_dst; ++i) {
    std::vector<std::pair<int64_t, int64_t>> a, b;
    for (int64_t k = bd.indptr[i]; k < bd.indptr[i + 1]; ++k)
      a.push_back({bd.etypes[k], in3.at(bd.src_nodes[bd.indices[k]])});
    for (int64_t k = bs.indptr[i]; k < bs.indptr[i + 1]; ++k)
      b.push_back({bs.etypes[k], in1.at(bs.src_nodes[bs.indices[k]])});
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    CHECK(a == b);
  }
  CHECK(d[0].num_src() == s[0].num_src());
  CHECK(d[0].num_edges() == s[0].num_edges());

  // Typed pulls: paper features (type 3) as in the 1-partition files, by input id.
  const int paper = 3;
  std::vector<int64_t> papers;
  for (int64_t v : seeds3) papers.push_back(v);
  std::vector<float> rows;
  g.PullTyped(paper, papers, &rows);
  const int64_t dim = c3.ntype_feature_dims[paper];
  for (size_t i = 0; i < papers.size(); i += 37) {
    const int64_t v1 = from_input1.at(in3.at(papers[i]));
    const float* want = local.features[paper].data() + (v1 - local.ntype_ranges[paper].first) * dim;
    CHECK(std::equal(want, want + dim, rows.data() + i * dim));
  }
  // The narrow wire: the same rows rounded to bfloat16, in half the bytes.
  {
    DistGraphOptions narrow = o;
    narrow.wire_format = net::RowFormat::kBfloat16;
    DistGraph g16(narrow);
    std::vector<float> rows16;
    const uint64_t before32 = g.wire_bytes();
    g.PullTyped(paper, papers, &rows);
    const uint64_t bytes32 = g.wire_bytes() - before32;
    g16.PullTyped(paper, papers, &rows16);
    const uint64_t bytes16 = g16.wire_bytes();
    REQUIRE(rows16.size() == rows.size());
    for (size_t i = 0; i < rows.size(); ++i)
      REQUIRE(rows16[i] == Bfloat16ToFloat(FloatToBfloat16(rows[i])));
    CHECK(bytes16 < bytes32 * 6 / 10);
  }
  // Varint ids: the same blocks and rows, fewer bytes.
  {
    DistGraphOptions coded = o;
    coded.id_coding = net::IdCoding::kVarint;
    DistGraph gv(coded);
    const uint64_t before = g.wire_bytes();
    const std::vector<Block> d64 = g.SampleTypedBlocks(seeds3, fanouts, false, 77);
    const std::vector<Block> dv = gv.SampleTypedBlocks(seeds3, fanouts, false, 77);
    const uint64_t bytes64 = g.wire_bytes() - before, bytesv = gv.wire_bytes();
    REQUIRE(dv.size() == d64.size());
    for (size_t l = 0; l < dv.size(); ++l) {
      CHECK(dv[l].src_nodes == d64[l].src_nodes);
      CHECK(dv[l].indptr == d64[l].indptr);
      CHECK(dv[l].indices == d64[l].indices);
      CHECK(dv[l].etypes == d64[l].etypes);
    }
    INFO("typed sampling wire bytes: int64 " << bytes64 << ", varint " << bytesv);
    CHECK(bytesv < bytes64 * 6 / 10);
    std::vector<float> rowsv;
    gv.PullTyped(paper, papers, &rowsv);
    g.PullTyped(paper, papers, &rows);
    CHECK(rowsv == rows);
  }

  // Embedding rows: initial values keyed by input id (the same in any
  // partitioning); a push moves exactly the rows pushed.
  const net::EmbSpec spec{0, 8, 0, 0.5, 11};
  std::vector<int64_t> authors;
  for (int p = 0; p < 3; ++p) authors.push_back(c3.parts[p].ntype_ranges[0].first);
  std::vector<float> before, after;
  g.EmbPull(spec, authors, &before);
  std::vector<float> grads(8, 0.0f);
  grads[0] = 1.0f;
  g.EmbPush(spec, {authors[1]}, grads);
  g.EmbPull(spec, authors, &after);
  CHECK(after[8] == Approx(before[8] - 0.5f).margin(1e-4));  // Adagrad's first step: lr * sign
  CHECK(std::equal(before.begin(), before.begin() + 8, after.begin()));
  CHECK(std::equal(before.begin() + 16, before.end(), after.begin() + 16));
  // A different spec for the same table, and a featured type, are refused.
  net::EmbSpec other = spec;
  other.dim = 16;
  CHECK_THROWS_WITH(g.EmbPull(other, authors, &after), Catch::Contains("must agree"));
  net::EmbSpec featured = spec;
  featured.ntype = paper;
  CHECK_THROWS_WITH(g.EmbPull(featured, {papers[0]}, &after), Catch::Contains("has features"));
  // Hostile arguments get an Error reply, and the server goes on serving:
  // a SplitNodes range whose end overflows, another embedding width, an
  // unknown node type.
  zmq::context_t ctx;
  net::Connection raw(ctx, servers.endpoints()[1][0], "machine 1 server 0", test::Keys(job));
  CHECK_THROWS_WITH(raw.Call(net::SplitNodes{0, INT64_MAX - 8, 16}.Encode(0), net::Millis(5000)),
                    Catch::Contains("past the end"));
  CHECK_THROWS_WITH(
      raw.Call(net::EmbPull{{0, 1 << 20, 0, 0.1, 1}, {authors[1]}}.Encode(0), net::Millis(5000)),
      Catch::Contains("must agree"));
  CHECK_THROWS_WITH(raw.Call(net::PullTyped{99, {authors[1]}}.Encode(0), net::Millis(5000)),
                    Catch::Contains("does not exist"));
  CHECK(g.SplitNodes(0, 0, 3).size() == 3);
  // Homogeneous requests name the heterogeneous partition.
  std::vector<int64_t> ptr, idx;
  CHECK_THROWS_WITH(g.SampleNeighbors(seeds3, 5, false, 0, &ptr, &idx),
                    Catch::Contains("heterogeneous"));
}

TEST_CASE("typed batches from sampler threads equal the in-process ones bit for bit",
          "[integration]") {
  test::TempDir dir;
  const std::string two = MagSmall(dir, 2, "two");
  const PartitionConfig config = LoadPartitionConfig(two);
  const std::string job = "typed-pool-" + std::to_string(::getpid());
  const std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  test::ServerThreads servers(ip, two, 2, 1, job);
  DistGraphOptions o = ClientOptions(two, ip, servers, job);

  SamplerPool pool("tcp://127.0.0.1:*", 2, net::Hello{config.graph_name, Sha256File(two), job}, 2,
                   20000, test::Keys(job));
  std::atomic<bool> stop{false};
  std::vector<std::thread> samplers;
  std::vector<std::string> errors(2);
  for (int s = 0; s < 2; ++s) {
    samplers.emplace_back([&, s] {
      SamplerOptions so;
      so.graph = o;
      so.trainer_endpoint = pool.endpoint();
      so.sampler_id = s;
      try {
        RunSampler(so, stop);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(s)] = e.what();
      }
    });
  }
  pool.WaitForSamplers(20000);

  // Training papers of both partitions, 6 batches, one of them empty (a
  // rank whose share is one short).
  DistGraph g(o);
  const std::vector<int64_t> train = g.SplitNodes(0, 0, g.CountNodes(0));
  REQUIRE(train.size() > 600);
  const int64_t rels = static_cast<int64_t>(config.etypes.size());
  const std::vector<std::vector<int>> fanouts = {std::vector<int>(static_cast<size_t>(rels), 4),
                                                 std::vector<int>(static_cast<size_t>(rels), 6)};
  std::vector<net::TypedSeedBatch> batches;
  for (int b = 0; b < 6; ++b) {
    net::TypedSeedBatch sb;
    sb.index = b;
    sb.rng_seed = 1000 + static_cast<uint64_t>(b);
    sb.fanouts = fanouts;
    if (b != 3) sb.seeds.assign(train.begin() + 100 * b, train.begin() + 100 * (b + 1));
    batches.push_back(sb);
  }
  pool.Start(batches);
  net::TypedBatchSchema schema;
  schema.num_rels = rels;
  schema.feature_dims = config.ntype_feature_dims;
  schema.feature_dims.resize(config.ntypes.size(), 0);
  schema.type_of = [&](int64_t v) { return config.NtypeOf(v); };
  schema.rel_src_type = config.RelationSrcTypes();
  int64_t expect = 0;
  while (std::optional<net::Message> m = pool.NextMessage()) {
    INFO("batch " << expect);
    REQUIRE(expect < 6);
    CHECK(m->header.msg_type() == net::MsgType::kTypedMiniBatch);
    const HeteroBatch got = net::DecodeTypedMiniBatch(*m, schema);
    const net::TypedSeedBatch& sb = batches[static_cast<size_t>(expect)];
    const HeteroBatch want = g.MakeTypedBatch(sb.seeds, sb.fanouts, false, sb.rng_seed);
    CHECK(got.index == expect);
    CHECK(got.seeds == want.seeds);
    CHECK(got.labels == want.labels);
    REQUIRE(got.blocks.size() == want.blocks.size());
    for (size_t l = 0; l < want.blocks.size(); ++l) {
      CHECK(got.blocks[l].num_dst == want.blocks[l].num_dst);
      CHECK(got.blocks[l].src_nodes == want.blocks[l].src_nodes);
      CHECK(got.blocks[l].indptr == want.blocks[l].indptr);
      CHECK(got.blocks[l].indices == want.blocks[l].indices);
      CHECK(got.blocks[l].etypes == want.blocks[l].etypes);
    }
    CHECK(got.positions == want.positions);
    CHECK(got.ids == want.ids);
    // The first layer at the owners (the default): the papers' means.
    CHECK(got.input_means);
    CHECK(got.means == want.means);
    REQUIRE(got.features.size() == want.features.size());
    for (size_t t = 0; t < want.features.size(); ++t) {
      REQUIRE(got.features[t].size() == want.features[t].size());
      CHECK(std::memcmp(got.features[t].data(), want.features[t].data(),
                        want.features[t].size() * sizeof(float)) == 0);
    }
    if (expect != 3) {
      CHECK(got.blocks.front().num_edges() > 0);
      CHECK(got.wire_bytes > 0);
    }
    ++expect;
  }
  CHECK(expect == 6);
  pool.Stop();
  for (auto& t : samplers) t.join();
  CHECK(errors[0].empty());
  CHECK(errors[1].empty());
}

TEST_CASE(
    "typed hot-row cache: other partitions' most-named papers once per machine, the same "
    "batches, fewer bytes",
    "[integration]") {
  test::TempDir dir;
  const std::string two = MagSmall(dir, 2, "two");
  const PartitionConfig config = LoadPartitionConfig(two);
  const std::string job = "typed-cache-" + std::to_string(::getpid());
  const std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  test::ServerThreads servers(ip, two, 2, 1, job);
  DistGraphOptions o = ClientOptions(two, ip, servers, job);
  o.local_machine_id = 0;        // its partition read in place
  o.aggregate_at_owner = false;  // every row (the sums' own test is below)
  const int paper = 3;
  const std::string cache_name =
      TypedRowCacheName(RowCacheName(config.graph_name, Sha256File(two), job, 0), paper);
  {
    DistGraph plain(o);
    CHECK(plain.typed_row_cache(paper) == nullptr);
    o.cache_bytes = 1 << 20;
    DistGraph cached(o), second(o);  // the second attaches to what the first built
    REQUIRE(cached.typed_row_cache(paper) != nullptr);
    REQUIRE(second.typed_row_cache(paper) != nullptr);
    CHECK(cached.typed_row_cache(paper)->is_builder());
    CHECK_FALSE(second.typed_row_cache(paper)->is_builder());
    for (int t = 0; t < 3; ++t) CHECK(cached.typed_row_cache(t) == nullptr);  // featureless
    const ShmRowCache& cache = *cached.typed_row_cache(paper);
    const int64_t dim = config.ntype_feature_dims[paper];
    // The budget's rows, or every remote paper the partition names if fewer.
    CHECK(cache.num_rows() > 1000);
    CHECK(cache.num_rows() <= (1 << 20) / (dim * 4 + 8));
    // Only the other partition's papers, exactly their rows.
    const auto [lo, hi] = config.parts[1].ntype_ranges[paper];
    std::vector<int64_t> ids(cache.ids(), cache.ids() + cache.num_rows());
    std::vector<float> want;
    plain.PullTyped(paper, ids, &want);
    bool theirs = true, exact = true;
    for (int64_t r = 0; r < cache.num_rows(); ++r) {
      theirs = theirs && ids[r] >= lo && ids[r] < hi;
      exact = exact && std::memcmp(cache.Find(ids[r]), &want[r * dim], dim * sizeof(float)) == 0;
    }
    CHECK(theirs);
    CHECK(exact);
    // Batches bit for bit the same, with fewer bytes.
    const std::vector<int64_t> train = plain.SplitNodes(0, 0, plain.CountNodes(0));
    REQUIRE(train.size() > 400);
    const int64_t rels = static_cast<int64_t>(config.etypes.size());
    const std::vector<std::vector<int>> fanouts = {std::vector<int>(static_cast<size_t>(rels), 4),
                                                   std::vector<int>(static_cast<size_t>(rels), 6)};
    uint64_t plain_bytes = 0, cached_bytes = 0;
    for (int b = 0; b < 4; ++b) {
      const std::vector<int64_t> seeds(train.begin() + 100 * b, train.begin() + 100 * (b + 1));
      const HeteroBatch x = plain.MakeTypedBatch(seeds, fanouts, false, 500 + b);
      const HeteroBatch y = cached.MakeTypedBatch(seeds, fanouts, false, 500 + b);
      plain_bytes += x.wire_bytes;
      cached_bytes += y.wire_bytes;
      REQUIRE(x.blocks.size() == y.blocks.size());
      for (size_t l = 0; l < x.blocks.size(); ++l) {
        CHECK(x.blocks[l].src_nodes == y.blocks[l].src_nodes);
        CHECK(x.blocks[l].indices == y.blocks[l].indices);
      }
      CHECK(x.ids == y.ids);
      CHECK(x.labels == y.labels);
      REQUIRE(x.features.size() == y.features.size());
      for (size_t t = 0; t < x.features.size(); ++t) {
        REQUIRE(x.features[t].size() == y.features[t].size());
        CHECK(std::memcmp(x.features[t].data(), y.features[t].data(),
                          x.features[t].size() * sizeof(float)) == 0);
      }
    }
    CHECK(cached.cache_hits() > 0);
    CHECK(cached.cache_lookups() == plain.cache_lookups());
    CHECK(cached_bytes < plain_bytes);
    const int held = shm_open(cache_name.c_str(), O_RDONLY, 0);  // under that name
    CHECK(held >= 0);
    if (held >= 0) close(held);
  }
  // The partition's last holder takes the type's cache with it.
  servers.Stop();
  const int fd = shm_open(cache_name.c_str(), O_RDONLY, 0);
  if (fd >= 0) close(fd);
  CHECK(fd < 0);
}

TEST_CASE("typed first layer at the owners: the means of every row, summed where rows live",
          "[integration]") {
  test::TempDir dir;
  const std::string two = MagSmall(dir, 2, "two");
  const PartitionConfig config = LoadPartitionConfig(two);
  const std::string job = "typed-sums-" + std::to_string(::getpid());
  const std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  test::ServerThreads servers(ip, two, 2, 1, job);
  DistGraphOptions o = ClientOptions(two, ip, servers, job);
  o.local_machine_id = 0;  // its partition read in place
  o.wire_format = net::RowFormat::kFloat32;
  o.aggregate_at_owner = false;
  DistGraph rows(o);
  o.aggregate_at_owner = true;
  DistGraph sums(o);
  o.remote_sums = false;  // every other owner's share pulled as rows
  DistGraph pulled_shares(o);
  o.remote_sums = true;
  o.cache_bytes = 1 << 20;  // the hot-row cache's rows added here
  DistGraph cached(o);
  const int64_t rels = static_cast<int64_t>(config.etypes.size());
  const std::vector<int> src_type = config.RelationSrcTypes();
  const std::vector<int64_t> train = rows.SplitNodes(0, 0, rows.CountNodes(0));
  REQUIRE(train.size() > 400);
  const std::vector<std::vector<int>> fanouts = {std::vector<int>(static_cast<size_t>(rels), 10),
                                                 std::vector<int>(static_cast<size_t>(rels), 5)};
  uint64_t rows_bytes = 0, sums_bytes = 0, shares_bytes = 0;
  size_t featured_groups = 0, featureless_groups = 0;
  for (int b = 0; b < 3; ++b) {
    INFO("batch " << b);
    const std::vector<int64_t> seeds(train.begin() + 100 * b, train.begin() + 100 * (b + 1));
    const HeteroBatch x = rows.MakeTypedBatch(seeds, fanouts, false, 900 + b);
    const HeteroBatch y = sums.MakeTypedBatch(seeds, fanouts, false, 900 + b);
    const HeteroBatch z = cached.MakeTypedBatch(seeds, fanouts, false, 900 + b);
    const HeteroBatch w = pulled_shares.MakeTypedBatch(seeds, fanouts, false, 900 + b);
    rows_bytes += x.wire_bytes;
    sums_bytes += y.wire_bytes;
    shares_bytes += w.wire_bytes;
    CHECK_FALSE(x.input_means);
    REQUIRE(y.input_means);
    // The same draw; the inputs are the destinations' own rows.
    REQUIRE(x.blocks.size() == y.blocks.size());
    for (size_t l = 0; l < x.blocks.size(); ++l) {
      CHECK(x.blocks[l].src_nodes == y.blocks[l].src_nodes);
      CHECK(x.blocks[l].indices == y.blocks[l].indices);
      CHECK(x.blocks[l].etypes == y.blocks[l].etypes);
    }
    CHECK(x.labels == y.labels);
    const Block& b0 = x.blocks.front();
    for (size_t t = 0; t < x.ids.size(); ++t) {
      std::vector<int64_t> dst_ids;
      for (size_t i = 0; i < x.ids[t].size(); ++i)
        if (x.positions[t][i] < b0.num_dst) dst_ids.push_back(x.ids[t][i]);
      CHECK(y.ids[t] == dst_ids);
      CHECK(y.features[t].size() ==
            dst_ids.size() * static_cast<size_t>(config.ntype_feature_dims[t]));
    }
    // Each featured relation's group means: those of the rows path's rows.
    const RelationBlock rb = ToRelationBlock(b0, rels);
    for (int64_t r = 0; r < rels; ++r) {
      const size_t t = static_cast<size_t>(src_type[static_cast<size_t>(r)]);
      const int64_t dim = config.ntype_feature_dims[t];
      const RelationGroups g = GroupSources(rb, b0.src_nodes, {r});
      if (dim == 0) {
        CHECK(y.means[static_cast<size_t>(r)].empty());
        featureless_groups += g.size();
        continue;
      }
      featured_groups += g.size();
      std::map<int64_t, size_t> row_of;
      for (size_t i = 0; i < x.ids[t].size(); ++i) row_of[x.ids[t][i]] = i;
      REQUIRE(y.means[static_cast<size_t>(r)].size() == g.size() * static_cast<size_t>(dim));
      REQUIRE(z.means[static_cast<size_t>(r)].size() == g.size() * static_cast<size_t>(dim));
      REQUIRE(w.means[static_cast<size_t>(r)].size() == g.size() * static_cast<size_t>(dim));
      double worst = 0;
      for (size_t k = 0; k < g.size(); ++k) {
        for (int64_t j = 0; j < dim; ++j) {
          double mean = 0;
          for (int64_t e = g.ptr[k]; e < g.ptr[k + 1]; ++e)
            mean += x.features[t][row_of.at(g.ids[static_cast<size_t>(e)]) * dim + j];
          mean /= static_cast<double>(g.ptr[k + 1] - g.ptr[k]);
          const size_t at = k * static_cast<size_t>(dim) + static_cast<size_t>(j);
          worst = std::max(worst, std::abs(y.means[static_cast<size_t>(r)][at] - mean));
          worst = std::max(worst, std::abs(z.means[static_cast<size_t>(r)][at] - mean));
          worst = std::max(worst, std::abs(w.means[static_cast<size_t>(r)][at] - mean));
        }
      }
      CHECK(worst < 1e-5);
    }
  }
  CHECK(featured_groups > 1000);
  CHECK(featureless_groups > 1000);
  CHECK(cached.cache_hits() > 0);
  // Fewer bytes: one row per group and owner instead of every source's.
  INFO(rows_bytes << " bytes with rows, " << sums_bytes << " with sums, " << shares_bytes
                  << " with other owners' shares as rows");
  CHECK(sums_bytes * 10 < rows_bytes * 9);
  CHECK(sums_bytes < shares_bytes);

  // Embedding rows summed at their servers equal the pulled rows summed.
  size_t author = config.ntypes.size();
  for (size_t t = 0; t < config.ntypes.size(); ++t)
    if (config.ntype_feature_dims[t] == 0 && author == config.ntypes.size()) author = t;
  REQUIRE(author < config.ntypes.size());
  const net::EmbSpec spec{static_cast<int64_t>(author), 8, 1, 0.01, 7};
  std::vector<int64_t> ids, ptr{0};
  for (int p = 0; p < 2; ++p) {  // groups of 1 to 4 rows across both partitions
    const auto [lo, hi] = config.parts[static_cast<size_t>(p)].ntype_ranges[author];
    REQUIRE(hi - lo > 400);
    for (int k = 0; k < 60; ++k) {
      for (int j = 0; j <= k % 4; ++j) ids.push_back(lo + (k * 7 + j * 13) % (hi - lo));
      if (k % 3 == 0) {  // and a member of the other partition
        const auto [lo2, hi2] = config.parts[static_cast<size_t>(1 - p)].ntype_ranges[author];
        ids.push_back(lo2 + k % (hi2 - lo2));
      }
      ptr.push_back(static_cast<int64_t>(ids.size()));
    }
  }
  std::vector<float> pulled, summed;
  sums.EmbPull(spec, ids, &pulled);
  sums.TypedGroupSums(static_cast<int>(author), &spec, ids, ptr, &summed);
  REQUIRE(summed.size() == (ptr.size() - 1) * 8);
  double worst = 0;
  for (size_t k = 0; k + 1 < ptr.size(); ++k) {
    for (size_t j = 0; j < 8; ++j) {
      double want = 0;
      for (int64_t e = ptr[k]; e < ptr[k + 1]; ++e) want += pulled[static_cast<size_t>(e) * 8 + j];
      worst = std::max(worst, std::abs(summed[k * 8 + j] - want));
    }
  }
  CHECK(worst < 1e-5);
  // A node of another type is refused by name, here or at its server.
  const int paper = static_cast<int>(config.ntypes.size()) - 1;
  REQUIRE(config.ntype_feature_dims[static_cast<size_t>(paper)] > 0);
  const auto [alo, ahi] = config.parts[1].ntype_ranges[author];
  CHECK_THROWS_WITH(sums.TypedGroupSums(paper, nullptr, {alo, alo + 1}, {0, 2}, &summed),
                    Catch::Contains("is not a paper node"));
  const auto [llo, lhi] = config.parts[0].ntype_ranges[author];
  CHECK_THROWS_WITH(sums.TypedGroupSums(paper, nullptr, {llo}, {0, 1}, &summed),
                    Catch::Contains("not of node type"));
}
