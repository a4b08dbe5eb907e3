// Edge batches for link prediction: exclusion of a batch's own edges,
// negative sampling plans, edge endpoints, the loader's link mode and the
// SeedBatch exclusion frame.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <utility>

#include "common/error.h"
#include "graph/csr.h"
#include "graph/synthetic.h"
#include "net/batch_codec.h"
#include "sampling/edge_batch.h"
#include "sampling/loader.h"
#include "sampling/sampler.h"

using namespace gnn;

namespace {

using Pair = std::pair<int64_t, int64_t>;

Pair Key(int64_t a, int64_t b) { return {std::min(a, b), std::max(a, b)}; }

// Undirected synthetic:tiny as a standalone graph.
struct TinyLinkGraph {
  Dataset data;
  Csr csc;
  LocalGraph graph;
  TinyLinkGraph() {
    data = GenerateSynthetic(ParseSyntheticSpec("tiny"), 3, 2);
    csc = Symmetrize(data.num_nodes, data.src, data.dst, 2);
    graph.csc = {csc.indptr.data(), csc.indices.data(), 0, csc.num_rows()};
    graph.features = data.features.data();
    graph.feature_dim = data.feature_dim;
    graph.labels = data.labels.data();
  }
};

}  // namespace

TEST_CASE("EdgeExclusion matches both directions and filters sampled neighbours", "[unit]") {
  EdgeExclusion ex({1, 2, 5, 3});
  CHECK(ex.Contains(1, 2));
  CHECK(ex.Contains(2, 1));
  CHECK(ex.Contains(3, 5));
  CHECK_FALSE(ex.Contains(1, 3));
  CHECK_FALSE(ex.Contains(2, 2));
  CHECK_THROWS_AS(EdgeExclusion({1, 2, 3}), DataError);
  CHECK(EdgeExclusion().empty());

  // dst 1 <- {2, 4, 2}; dst 7 <- {1}; dst 3 <- {5, 6}; dst 2 <- {}
  std::vector<int64_t> dst = {1, 7, 3, 2};
  std::vector<int64_t> indptr = {0, 3, 4, 6, 6};
  std::vector<int64_t> indices = {2, 4, 2, 1, 5, 6};
  ex.Filter(dst.data(), 4, &indptr, &indices);
  CHECK(indptr == std::vector<int64_t>{0, 1, 2, 3, 3});
  CHECK(indices == std::vector<int64_t>{4, 1, 6});

  // A node in many pairs (a hub: its partners searched, not scanned).
  std::vector<int64_t> hub_pairs;
  for (int64_t v = 10; v < 30; ++v) hub_pairs.insert(hub_pairs.end(), {0, v});
  const EdgeExclusion hub(hub_pairs);
  CHECK(hub.Contains(15, 0));
  CHECK(hub.Contains(0, 29));
  CHECK_FALSE(hub.Contains(0, 30));
  CHECK_FALSE(hub.Contains(10, 11));
  dst = {0, 12};
  indptr = {0, 4, 6};
  indices = {10, 35, 29, 30, 0, 13};
  hub.Filter(dst.data(), 2, &indptr, &indices);
  CHECK(indptr == std::vector<int64_t>{0, 2, 3});
  CHECK(indices == std::vector<int64_t>{35, 30, 13});
}

TEST_CASE("PlanEdgeBatch lists every endpoint once and draws negatives in range", "[unit]") {
  std::vector<int64_t> heads = {10, 11, 10, 40}, tails = {11, 12, 13, 10};
  EdgeBatchPlan p = PlanEdgeBatch(heads, tails, 3, 100, 110, 42);
  REQUIRE(p.pos_head.size() == 4);
  REQUIRE(p.neg_head.size() == 12);
  REQUIRE(p.neg_tail.size() == 12);
  std::set<int64_t> unique(p.seeds.begin(), p.seeds.end());
  CHECK(unique.size() == p.seeds.size());
  for (size_t i = 0; i < heads.size(); ++i) {
    CHECK(p.seeds[p.pos_head[i]] == heads[i]);
    CHECK(p.seeds[p.pos_tail[i]] == tails[i]);
    for (int j = 0; j < 3; ++j) {
      CHECK(p.neg_head[i * 3 + j] == p.pos_head[i]);
      int64_t v = p.seeds[p.neg_tail[i * 3 + j]];
      CHECK(v >= 100);
      CHECK(v < 110);
    }
  }
  CHECK(p.exclude == std::vector<int64_t>{10, 11, 11, 12, 10, 13, 40, 10});
  // Reproducible from the seed; another seed draws other negatives.
  EdgeBatchPlan again = PlanEdgeBatch(heads, tails, 3, 100, 110, 42);
  CHECK(again.seeds == p.seeds);
  CHECK(again.neg_tail == p.neg_tail);
  std::vector<int64_t> many_h(200, 1), many_t(200, 2);
  EdgeBatchPlan a = PlanEdgeBatch(many_h, many_t, 1, 0, 1000, 1);
  EdgeBatchPlan b = PlanEdgeBatch(many_h, many_t, 1, 0, 1000, 2);
  CHECK(a.seeds != b.seeds);
  // Negatives cover the range roughly uniformly (200 draws over 1000 ids:
  // nearly all distinct).
  CHECK(a.seeds.size() > 180);

  CHECK_THROWS_AS(PlanEdgeBatch(heads, tails, -1, 0, 10, 0), ConfigError);
  CHECK_THROWS_AS(PlanEdgeBatch(heads, tails, 1, 5, 5, 0), ConfigError);
  CHECK_THROWS_AS(PlanEdgeBatch(heads, {1}, 1, 0, 10, 0), DataError);
}

TEST_CASE("EdgeEndpoints maps in-edge positions to (source, owning row)", "[unit]") {
  // Rows 50 <- {7, 8}; 51 <- {}; 52 <- {9}
  std::vector<int64_t> indptr = {0, 2, 2, 3}, indices = {7, 8, 9};
  CscView csc{indptr.data(), indices.data(), 50, 3};
  std::vector<int64_t> h, t;
  EdgeEndpoints(csc, {2, 0, 1}, &h, &t);
  CHECK(h == std::vector<int64_t>{9, 7, 8});
  CHECK(t == std::vector<int64_t>{52, 50, 50});
  CHECK_THROWS_AS(EdgeEndpoints(csc, {3}, &h, &t), DataError);
  CHECK_THROWS_AS(EdgeEndpoints(csc, {-1}, &h, &t), DataError);
}

TEST_CASE("BatchLoader in link mode covers every edge once and hides batch edges", "[unit]") {
  TinyLinkGraph g;
  const int64_t num_edges = g.csc.num_entries();
  std::vector<int64_t> edges(num_edges);
  for (int64_t e = 0; e < num_edges; ++e) edges[e] = e;
  LoaderOptions o;
  o.fanouts = {-1, -1};  // every neighbour: a batch edge would surely show up
  o.batch_size = 256;
  o.link = true;
  o.num_negs = 2;
  o.seed = 9;

  for (bool remove : {true, false}) {
    o.remove_edge = remove;
    BatchLoader loader(g.graph, edges, o, 0);
    CHECK(loader.num_batches() == (num_edges + 255) / 256);
    std::multiset<Pair> seen;
    int64_t batch_edges_in_blocks = 0;
    while (auto b = loader.Next()) {
      REQUIRE(b->pos_head.size() == b->pos_tail.size());
      REQUIRE(b->neg_tail.size() == 2 * b->pos_head.size());
      REQUIRE(b->blocks.back().num_dst == static_cast<int64_t>(b->seeds.size()));
      std::set<Pair> mine;
      for (size_t i = 0; i < b->pos_head.size(); ++i) {
        int64_t u = b->seeds[b->pos_head[i]], v = b->seeds[b->pos_tail[i]];
        seen.insert({u, v});
        mine.insert(Key(u, v));
      }
      for (const Block& blk : b->blocks) {
        for (int64_t d = 0; d < blk.num_dst; ++d) {
          for (int64_t k = blk.indptr[d]; k < blk.indptr[d + 1]; ++k) {
            int64_t s = blk.src_nodes[blk.indices[k]];
            batch_edges_in_blocks += mine.count(Key(blk.src_nodes[d], s));
          }
        }
      }
    }
    // Every in-edge (source -> owning row) exactly once.
    std::multiset<Pair> all;
    for (int64_t v = 0; v < g.csc.num_rows(); ++v) {
      for (int64_t k = g.csc.indptr[v]; k < g.csc.indptr[v + 1]; ++k) {
        all.insert({g.csc.indices[k], v});
      }
    }
    CHECK(seen == all);
    if (remove) {
      CHECK(batch_edges_in_blocks == 0);
    } else {
      CHECK(batch_edges_in_blocks > 0);
    }
  }
}

TEST_CASE("SeedBatch carries excluded edges only when there are some", "[unit]") {
  net::SeedBatch sb;
  sb.epoch = 1;
  sb.index = 2;
  sb.fanouts = {5, 10};
  sb.seeds = {4, 5, 6};
  net::Message plain = net::EncodeSeedBatch(sb, 1);
  CHECK(plain.frames.size() == 1);
  CHECK(net::DecodeSeedBatch(plain).exclude.empty());
  sb.exclude = {4, 5, 6, 4};
  net::Message m = net::EncodeSeedBatch(sb, 1);
  CHECK(m.frames.size() == 2);
  net::SeedBatch back = net::DecodeSeedBatch(m);
  CHECK(back.seeds == sb.seeds);
  CHECK(back.exclude == sb.exclude);
}
