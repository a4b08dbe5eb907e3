// Edge data through the data plane: a graph with edge features partitioned
// into 1, 2 and 4 parts gives every sampled edge its input edge's features,
// standalone (the partition files) and distributed (servers on loopback,
// shared memory for the local partition); a batch's edge rows survive the
// MiniBatch codec; a server asked for edge data it does not have says so.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <random>

#include "client/dist_graph.h"
#include "cluster_util.h"
#include "common/error.h"
#include "graph/dataset.h"
#include "net/batch_codec.h"
#include "partition/local_partition.h"
#include "sampling/edge_batch.h"
#include "sampling/sampler.h"

using namespace gnn;

namespace {

constexpr const char* kSpec = "synthetic:nodes=600,edges=4000,feat=4,classes=3,efeat=3";

// Input id -> this partitioning's id, and back.
struct Ids {
  std::vector<int64_t> new_of_orig, orig_of_new;
};

Ids LoadIds(const PartitionConfig& config) {
  Ids ids;
  ids.new_of_orig.assign(config.num_nodes, -1);
  ids.orig_of_new.assign(config.num_nodes, -1);
  for (int p = 0; p < config.num_parts; ++p) {
    LocalPartition lp = LoadLocalPartition(config, p, false);
    for (int64_t i = 0; i < lp.num_nodes; ++i) {
      ids.new_of_orig[lp.orig_nids[i]] = lp.node_start + i;
      ids.orig_of_new[lp.node_start + i] = lp.orig_nids[i];
    }
  }
  return ids;
}

// The input's edge features by (input source, input destination): every
// input edge between them (both directions for an undirected partitioning;
// repeated edges keep their own rows).
using EdgeRows = std::multimap<std::pair<int64_t, int64_t>, std::vector<float>>;

EdgeRows InputEdgeRows(const Dataset& d, bool undirected) {
  EdgeRows rows;
  const int64_t w = d.edge_feature_dim;
  for (int64_t e = 0; e < d.num_edges(); ++e) {
    std::vector<float> r(d.edge_features.begin() + e * w, d.edge_features.begin() + (e + 1) * w);
    rows.emplace(std::make_pair(d.src[e], d.dst[e]), r);
    if (undirected && d.src[e] != d.dst[e]) rows.emplace(std::make_pair(d.dst[e], d.src[e]), r);
  }
  return rows;
}

// Every edge of every block carries the row of an input edge between its
// endpoints; returns how many edges were checked.
int64_t CheckBlocks(const std::vector<Block>& blocks, const Ids& ids, const EdgeRows& input,
                    int64_t w) {
  int64_t checked = 0;
  for (const Block& b : blocks) {
    REQUIRE(b.edge_dim == w);
    REQUIRE(b.edge_data.size() == b.indices.size() * static_cast<size_t>(w));
    for (int64_t d = 0; d < b.num_dst; ++d) {
      for (int64_t k = b.indptr[d]; k < b.indptr[d + 1]; ++k) {
        const int64_t u = ids.orig_of_new[b.src_nodes[b.indices[k]]];
        const int64_t v = ids.orig_of_new[b.src_nodes[d]];
        auto [lo, hi] = input.equal_range({u, v});
        bool found = false;
        for (auto it = lo; it != hi && !found; ++it) {
          found = std::memcmp(it->second.data(), &b.edge_data[k * w], w * sizeof(float)) == 0;
        }
        INFO("edge " << u << " -> " << v);
        REQUIRE(found);
        ++checked;
      }
    }
  }
  return checked;
}

}  // namespace

TEST_CASE(
    "edge data: 1, 2 and 4 parts give every sampled edge its input edge's features, standalone "
    "and over servers",
    "[integration]") {
  test::TempDir dir;
  DatasetOptions dopt;
  dopt.dataset = kSpec;
  dopt.use_cache = false;
  const Dataset input = LoadDataset(dopt);
  REQUIRE(input.edge_feature_dim == 3);
  for (int parts : {1, 2, 4}) {
    INFO(parts << " parts");
    const std::string path = test::MakePartitions(dir, kSpec, parts, "p" + std::to_string(parts));
    const PartitionConfig config = LoadPartitionConfig(path);
    REQUIRE(config.edge_feature_dim == 3);
    const Ids ids = LoadIds(config);
    const EdgeRows rows = InputEdgeRows(input, config.undirected);
    const std::vector<int> fanouts = {4, -1};

    // Standalone: the partition's edge_feat.npy through SampleBlocks, with
    // the batch's own edges excluded and self-loops added.
    if (parts == 1) {
      const LocalPartition lp = LoadLocalPartition(config, 0, true, true);
      REQUIRE(lp.edge_dim == 3);
      CscView csc{lp.indptr.data(), lp.indices.data(), 0, lp.num_nodes, lp.orig_nids.data()};
      csc.edge_data = lp.edge_data.data();
      csc.edge_dim = lp.edge_dim;
      const std::vector<int64_t> seeds = test::DistinctRandomIds(config.num_nodes, 50, 1);
      std::vector<Block> blocks = SampleBlocks(csc, seeds, fanouts, false, 9, 1);
      CHECK(CheckBlocks(blocks, ids, rows, 3) > 200);
      // Excluding edges keeps the rows with their edges.
      std::vector<int64_t> pairs;
      for (int64_t k = blocks[1].indptr[0]; k < blocks[1].indptr[1]; ++k) {
        pairs.push_back(seeds[0]);
        pairs.push_back(blocks[1].src_nodes[blocks[1].indices[k]]);
      }
      const EdgeExclusion exclude(pairs);
      std::vector<Block> kept = SampleBlocks(csc, seeds, fanouts, false, 9, 1, &exclude);
      CHECK(kept[1].num_edges() < blocks[1].num_edges());
      CheckBlocks(kept, ids, rows, 3);
      // A self-loop carries 1.0 in every column (dgl.add_self_loop).
      Block looped = blocks[1];
      AddSelfLoops(&looped);
      for (int64_t d = 0; d < looped.num_dst; ++d) {
        for (int64_t c = 0; c < 3; ++c) CHECK(looped.edge_data[looped.indptr[d] * 3 + c] == 1.0f);
      }
    }

    // Distributed: servers send each sampled edge's row; the local
    // partition's come from shared memory.
    const std::string job = "job-edge-" + std::to_string(parts) + "-" + std::to_string(::getpid());
    const std::string ip = test::WriteLoopbackIpConfig(dir, parts);
    test::ServerThreads servers(ip, path, parts, 1, job);
    for (int local : {-1, 0}) {
      INFO("local machine " << local);
      DistGraphOptions o;
      o.part_config = path;
      o.ip_config = ip;
      o.endpoints = servers.endpoints();
      o.local_machine_id = local;
      o.job_id = job;
      o.keys = test::Keys(job);
      o.timeout = std::chrono::milliseconds(20000);
      o.edge_data = true;
      DistGraph g(o);
      REQUIRE(g.edge_dim() == 3);
      const std::vector<int64_t> seeds = test::DistinctRandomIds(config.num_nodes, 64, 7 + parts);
      const MiniBatch mb = g.MakeBatch(seeds, fanouts, false, 11);
      CHECK_FALSE(mb.input_means);  // rows shipped: the first layer is weighted
      CHECK(CheckBlocks(mb.blocks, ids, rows, 3) > 200);
      // The codec carries the rows (gnn-sampler -> trainer).
      const MiniBatch back = net::DecodeMiniBatch(net::EncodeMiniBatch(mb, 3));
      for (size_t l = 0; l < mb.blocks.size(); ++l) {
        CHECK(back.blocks[l].edge_dim == 3);
        CHECK(back.blocks[l].edge_data == mb.blocks[l].edge_data);
      }
      // The same batch without edge data is the same sample.
      o.edge_data = false;
      o.aggregate_at_owner = false;
      DistGraph plain(o);
      const MiniBatch p = plain.MakeBatch(seeds, fanouts, false, 11);
      for (size_t l = 0; l < mb.blocks.size(); ++l) {
        CHECK(p.blocks[l].indices == mb.blocks[l].indices);
        CHECK(p.blocks[l].edge_data.empty());
      }
    }
  }
}

TEST_CASE("edge data asked of a graph without it is one error naming the config", "[integration]") {
  test::TempDir dir;
  const std::string path =
      test::MakePartitions(dir, "synthetic:nodes=300,edges=1500,feat=4,classes=3", 1, "plain");
  DistGraphOptions o;
  o.part_config = path;
  o.ip_config = test::WriteLoopbackIpConfig(dir, 1);
  o.edge_data = true;
  try {
    DistGraph g(o);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("no edge data"));
  }
}
