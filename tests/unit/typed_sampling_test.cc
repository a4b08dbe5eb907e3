// Typed (per-relation) neighbour sampling and --fan_out for relations.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "common/error.h"
#include "sampling/edge_batch.h"
#include "sampling/typed_sampler.h"

using namespace gnn;

namespace {

// 6 nodes; node v's in-edges: relation 0 from every u < v, relation 1 from
// every u > v (rows sorted by relation, then source).
struct Graph {
  std::vector<int64_t> indptr{0}, indices, etypes, keys;
  TypedCscView view() const {
    TypedCscView g;
    g.csc = CscView{indptr.data(), indices.data(), 0, 6, keys.data()};
    g.etypes = etypes.data();
    g.num_rels = 2;
    return g;
  }
};

Graph MakeGraph() {
  Graph g;
  for (int64_t v = 0; v < 6; ++v) {
    for (int64_t u = 0; u < v; ++u) g.indices.push_back(u), g.etypes.push_back(0);
    for (int64_t u = v + 1; u < 6; ++u) g.indices.push_back(u), g.etypes.push_back(1);
    g.indptr.push_back(static_cast<int64_t>(g.indices.size()));
    g.keys.push_back(100 + v);
  }
  return g;
}

}  // namespace

TEST_CASE("typed sampling draws up to each relation's fan-out from that relation", "[sampling]") {
  const Graph graph = MakeGraph();
  const TypedCscView g = graph.view();
  const std::vector<int64_t> seeds = {5, 0, 3};
  std::vector<int64_t> ptr, idx, rel;
  SampleTypedNeighbors(g, seeds.data(), 3, {2, 1}, false, 7, 1, &ptr, &idx, &rel);
  REQUIRE(ptr == std::vector<int64_t>{0, 2, 3, 6});
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::set<int64_t> seen;
    for (int64_t k = ptr[i]; k < ptr[i + 1]; ++k) {
      // A real edge of its relation: relation 0 from below, 1 from above.
      CHECK((rel[k] == 0 ? idx[k] < seeds[i] : idx[k] > seeds[i]));
      if (k > ptr[i]) CHECK(rel[k] >= rel[k - 1]);  // relation order
      CHECK(seen.insert(idx[k]).second);            // without replacement
    }
  }
  // The same draw whatever the thread count; -1 takes a relation whole; 0 none.
  std::vector<int64_t> ptr2, idx2, rel2;
  SampleTypedNeighbors(g, seeds.data(), 3, {2, 1}, false, 7, 4, &ptr2, &idx2, &rel2);
  CHECK(idx2 == idx);
  SampleTypedNeighbors(g, seeds.data(), 3, {-1, 0}, false, 7, 2, &ptr2, &idx2, &rel2);
  CHECK(ptr2 == std::vector<int64_t>{0, 5, 5, 8});
  CHECK(idx2 == std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2});
  // Another rng seed, another draw somewhere; a seed's draw keys on rng_keys.
  bool differs = false;
  for (uint64_t s = 0; s < 20 && !differs; ++s) {
    SampleTypedNeighbors(g, seeds.data(), 3, {2, 1}, false, s, 1, &ptr2, &idx2, &rel2);
    differs = idx2 != idx;
  }
  CHECK(differs);
  // With replacement: exactly the fan-out for a relation that has edges.
  SampleTypedNeighbors(g, seeds.data(), 3, {3, 3}, true, 7, 1, &ptr2, &idx2, &rel2);
  CHECK(ptr2 == std::vector<int64_t>{0, 3, 6, 12});
  // Errors.
  const int64_t bad = 6;
  CHECK_THROWS_AS(SampleTypedNeighbors(g, &bad, 1, {1, 1}, false, 0, 1, &ptr, &idx, &rel),
                  DataError);
  CHECK_THROWS_AS(SampleTypedNeighbors(g, seeds.data(), 3, {1}, false, 0, 1, &ptr, &idx, &rel),
                  ConfigError);
  CHECK_THROWS_AS(SampleTypedNeighbors(g, seeds.data(), 3, {1, -2}, false, 0, 1, &ptr, &idx, &rel),
                  ConfigError);
}

TEST_CASE("typed blocks carry each edge's relation", "[sampling]") {
  const Graph graph = MakeGraph();
  const std::vector<std::vector<int>> fanouts = {{1, 1}, {2, 2}};
  const std::vector<Block> blocks = SampleTypedBlocks(graph.view(), {2, 4}, fanouts, false, 3, 2);
  REQUIRE(blocks.size() == 2);
  CHECK(blocks[1].src_nodes[0] == 2);
  CHECK(blocks[1].src_nodes[1] == 4);
  for (const Block& b : blocks) {
    REQUIRE(b.etypes.size() == b.indices.size());
    for (int64_t d = 0; d < b.num_dst; ++d) {
      for (int64_t k = b.indptr[d]; k < b.indptr[d + 1]; ++k) {
        const int64_t u = b.src_nodes[b.indices[k]], v = b.src_nodes[d];
        CHECK((b.etypes[k] == 0 ? u < v : u > v));
      }
    }
  }
  CHECK(blocks[0].num_dst == blocks[1].num_src());
}

TEST_CASE("typed blocks keep an excluded pair's edges out of every layer, either direction",
          "[sampling]") {
  const Graph graph = MakeGraph();
  const std::vector<std::vector<int>> all = {{-1, -1}, {-1, -1}};
  // Every neighbour of 2 and 4: without exclusion 2 <- 4 (relation 1) and
  // 4 <- 2 (relation 0) are in the last block.
  const std::vector<Block> plain = SampleTypedBlocks(graph.view(), {2, 4}, all, false, 3, 1);
  const EdgeExclusion pair({2, 4});
  const std::vector<Block> kept = SampleTypedBlocks(graph.view(), {2, 4}, all, false, 3, 1, &pair);
  auto count = [](const std::vector<Block>& blocks, int64_t a, int64_t b) {
    int64_t n = 0;
    for (const Block& blk : blocks) {
      for (int64_t d = 0; d < blk.num_dst; ++d) {
        for (int64_t k = blk.indptr[d]; k < blk.indptr[d + 1]; ++k) {
          const int64_t u = blk.src_nodes[blk.indices[k]], v = blk.src_nodes[d];
          if ((u == a && v == b) || (u == b && v == a)) ++n;
        }
      }
    }
    return n;
  };
  CHECK(count(plain, 2, 4) > 0);
  CHECK(count(kept, 2, 4) == 0);
  // Every other edge stays, each with its relation.
  int64_t plain_edges = 0, kept_edges = 0;
  for (const Block& b : plain) plain_edges += static_cast<int64_t>(b.indices.size());
  for (const Block& b : kept) {
    kept_edges += static_cast<int64_t>(b.indices.size());
    REQUIRE(b.etypes.size() == b.indices.size());
    for (int64_t d = 0; d < b.num_dst; ++d) {
      for (int64_t k = b.indptr[d]; k < b.indptr[d + 1]; ++k) {
        const int64_t u = b.src_nodes[b.indices[k]], v = b.src_nodes[d];
        CHECK((b.etypes[k] == 0 ? u < v : u > v));
      }
    }
  }
  CHECK(kept_edges == plain_edges - count(plain, 2, 4));
}

TEST_CASE("fan-outs for relations: one count or REL:n entries per layer", "[sampling]") {
  const std::vector<std::string> rels = {"paper:cites:paper", "author:writes:paper",
                                         "paper:rev-writes:author"};
  CHECK(ParseTypedFanouts("25,10", rels) ==
        std::vector<std::vector<int>>{{25, 25, 25}, {10, 10, 10}});
  CHECK(ParseTypedFanouts("cites:5/*:2,author:writes:paper:3/cites:1/rev-writes:-1", rels) ==
        std::vector<std::vector<int>>{{5, 2, 2}, {1, 3, -1}});
  CHECK_THROWS_WITH(ParseTypedFanouts("cites:5", rels),
                    Catch::Contains("gives no fan-out for relation author:writes:paper"));
  CHECK_THROWS_WITH(ParseTypedFanouts("likes:5/*:1", rels), Catch::Contains("no relation 'likes'"));
  CHECK_THROWS_WITH(ParseTypedFanouts("x,3", rels), Catch::Contains("'x' is not a fan-out"));
  CHECK_THROWS_WITH(ParseTypedFanouts("cites:-3/*:1", rels), Catch::Contains("'-3'"));
  CHECK_THROWS_AS(ParseTypedFanouts("", rels), ConfigError);
}
