#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "common/error.h"
#include "graph/csr.h"
#include "graph/synthetic.h"
#include "sampling/edge_batch.h"
#include "sampling/hot_rows.h"
#include "sampling/id_sort.h"
#include "sampling/loader.h"
#include "sampling/owner_aggregate.h"
#include "sampling/row_sampling.h"
#include "sampling/sampler.h"
#include "test_util.h"

using namespace gnn;

namespace {

// In-edges of nodes 100..106 (node_start = 100):
//   100 <- 101 102 103          deg 3
//   101 <- (none)               deg 0
//   102 <- 100                  deg 1
//   103 <- 200..209             deg 10
//   104 <- 100 101 102 103 104 105   deg 6
//   105 <- 7 7 8                deg 3 (a multigraph row)
//   106 <- 300..339             deg 40
struct HandCsc {
  std::vector<int64_t> indptr, indices;
  CscView view;
  HandCsc() {
    std::vector<std::vector<int64_t>> rows = {
        {101, 102, 103}, {}, {100}, {}, {100, 101, 102, 103, 104, 105}, {7, 7, 8}, {}};
    for (int64_t v = 200; v < 210; ++v) rows[3].push_back(v);
    for (int64_t v = 300; v < 340; ++v) rows[6].push_back(v);
    indptr.push_back(0);
    for (auto& r : rows) {
      indices.insert(indices.end(), r.begin(), r.end());
      indptr.push_back(static_cast<int64_t>(indices.size()));
    }
    view = {indptr.data(), indices.data(), 100, static_cast<int64_t>(rows.size())};
  }
  std::multiset<int64_t> Row(int64_t v) const {
    int64_t r = v - 100;
    return {indices.begin() + indptr[r], indices.begin() + indptr[r + 1]};
  }
};

struct Sampled {
  std::vector<int64_t> indptr, indices;
  std::multiset<int64_t> Row(size_t i) const {
    return {indices.begin() + indptr[i], indices.begin() + indptr[i + 1]};
  }
};

Sampled Sample(const CscView& csc, const std::vector<int64_t>& seeds, int fanout, bool replace,
               uint64_t rng_seed, int threads = 1) {
  Sampled s;
  SampleNeighbors(csc, seeds.data(), static_cast<int64_t>(seeds.size()), fanout, replace, rng_seed,
                  threads, &s.indptr, &s.indices);
  return s;
}

// A standalone graph for block and loader tests (undirected synthetic:tiny).
struct TinyGraph {
  Dataset data;
  Csr csc;
  LocalGraph graph;
  TinyGraph() {
    data = GenerateSynthetic(ParseSyntheticSpec("tiny"), 7, 2);
    csc = Symmetrize(data.num_nodes, data.src, data.dst, 2);
    graph.csc = {csc.indptr.data(), csc.indices.data(), 0, csc.num_rows()};
    graph.features = data.features.data();
    graph.feature_dim = data.feature_dim;
    graph.labels = data.labels.data();
  }
};

const TinyGraph& Tiny() {
  static TinyGraph g;
  return g;
}

bool SameBlocks(const std::vector<Block>& a, const std::vector<Block>& b) {
  if (a.size() != b.size()) return false;
  for (size_t l = 0; l < a.size(); ++l) {
    if (a[l].num_dst != b[l].num_dst || a[l].src_nodes != b[l].src_nodes ||
        a[l].indptr != b[l].indptr || a[l].indices != b[l].indices) {
      return false;
    }
  }
  return true;
}

bool SameBatch(const MiniBatch& a, const MiniBatch& b) {
  return a.index == b.index && a.seeds == b.seeds && SameBlocks(a.blocks, b.blocks) &&
         a.features == b.features && a.labels == b.labels && a.feature_dim == b.feature_dim;
}

std::vector<MiniBatch> Drain(BatchLoader& loader) {
  std::vector<MiniBatch> out;
  while (auto b = loader.Next()) out.push_back(std::move(*b));
  return out;
}

// One epoch of Tiny()'s batches twice (one worker, fan-outs 3,4, batch 50,
// seed 2): with those options, and with `change` applied to them.
struct TwoRuns {
  std::vector<MiniBatch> plain, changed;
};
TwoRuns DrainTwice(const TinyGraph& t, const std::function<void(LoaderOptions*)>& change) {
  LoaderOptions o;
  o.fanouts = {3, 4};
  o.batch_size = 50;
  o.seed = 2;
  o.num_workers = 1;
  BatchLoader plain(t.graph, t.data.train_idx, o, 0);
  change(&o);
  BatchLoader changed(t.graph, t.data.train_idx, o, 0);
  TwoRuns r{Drain(plain), Drain(changed)};
  REQUIRE(r.plain.size() == r.changed.size());
  return r;
}

}  // namespace

TEST_CASE("SampleNeighbors draws real in-neighbours with the right counts", "[unit]") {
  HandCsc g;
  std::vector<int64_t> seeds = {100, 101, 102, 103, 104, 105, 106};
  const uint64_t rng_seed = GENERATE(1, 2, 3);
  {
    SECTION("without replacement, fanout 3") {
      Sampled s = Sample(g.view, seeds, 3, false, rng_seed);
      REQUIRE(s.indptr.size() == seeds.size() + 1);
      REQUIRE(s.indices.size() == static_cast<size_t>(s.indptr.back()));
      std::vector<int64_t> want_count = {3, 0, 1, 3, 3, 3, 3};
      for (size_t i = 0; i < seeds.size(); ++i) {
        CHECK(s.indptr[i + 1] - s.indptr[i] == want_count[i]);
        std::multiset<int64_t> row = g.Row(seeds[i]);
        std::multiset<int64_t> got = s.Row(i);
        for (int64_t v : got) CHECK(row.count(v) >= got.count(v));
        if (seeds[i] != 105) CHECK(std::set<int64_t>(got.begin(), got.end()).size() == got.size());
      }
      // fanout >= degree: exactly the row.
      CHECK(s.Row(0) == g.Row(100));
      CHECK(s.Row(5) == g.Row(105));  // repeated ids kept: positions are distinct
    }
    SECTION("fanout above 32 uses the hashed Floyd path") {
      Sampled s = Sample(g.view, {106, 103}, 33, false, rng_seed);
      std::multiset<int64_t> got = s.Row(0);
      CHECK(got.size() == 33);
      CHECK(std::set<int64_t>(got.begin(), got.end()).size() == 33);
      for (int64_t v : got) CHECK((v >= 300 && v < 340));
      CHECK(s.Row(1) == g.Row(103));
    }
    SECTION("fanout -1 takes everything") {
      Sampled s = Sample(g.view, seeds, -1, false, rng_seed);
      for (size_t i = 0; i < seeds.size(); ++i) CHECK(s.Row(i) == g.Row(seeds[i]));
      Sampled r = Sample(g.view, seeds, -1, true, rng_seed);
      CHECK(r.indices == s.indices);
    }
    SECTION("with replacement: exactly fanout, duplicates allowed, degree 0 none") {
      Sampled s = Sample(g.view, seeds, 5, true, rng_seed);
      for (size_t i = 0; i < seeds.size(); ++i) {
        int64_t want = seeds[i] == 101 ? 0 : 5;
        CHECK(s.indptr[i + 1] - s.indptr[i] == want);
        std::multiset<int64_t> row = g.Row(seeds[i]);
        for (int64_t v : s.Row(i)) CHECK(row.count(v) == 1 + (v == 7 ? 1 : 0));
      }
      // Node 102 has one in-neighbour, so five draws repeat it.
      CHECK(s.Row(2) == std::multiset<int64_t>{100, 100, 100, 100, 100});
    }
    SECTION("fanout 0 samples nothing") {
      Sampled s = Sample(g.view, seeds, 0, false, rng_seed);
      CHECK(s.indptr == std::vector<int64_t>(seeds.size() + 1, 0));
      CHECK(s.indices.empty());
    }
  }
}

TEST_CASE("SampleNeighbors rejects seeds outside the CSC", "[unit]") {
  HandCsc g;
  for (int64_t bad : {99, 107, -1}) {
    std::vector<int64_t> seeds = {100, bad};
    CHECK_THROWS_AS(Sample(g.view, seeds, 2, false, 1), DataError);
    CHECK_THROWS_WITH(Sample(g.view, seeds, 2, false, 1, 2),
                      Catch::Contains("node " + std::to_string(bad)));
  }
  Sampled empty = Sample(g.view, {}, 3, false, 1);
  CHECK(empty.indptr == std::vector<int64_t>{0});
  CHECK(empty.indices.empty());
}

TEST_CASE("SampleNeighbors without replacement is uniform", "[unit]") {
  HandCsc g;
  // Node 103 has 10 in-neighbours; 3 of them are drawn, so each has
  // probability 0.3. 40000 draws: the standard error of a frequency is
  // ~0.0023, so +-15% (0.045) is ~20 sigma: a real bias fails, luck doesn't.
  const int trials = 40000;
  std::map<int64_t, int> hits;
  std::vector<int64_t> seeds = {103};
  for (int t = 0; t < trials; ++t) {
    Sampled s = Sample(g.view, seeds, 3, false, static_cast<uint64_t>(t));
    for (int64_t v : s.indices) ++hits[v];
  }
  REQUIRE(hits.size() == 10);
  for (auto& [v, n] : hits) {
    double f = static_cast<double>(n) / trials;
    INFO("neighbour " << v << " frequency " << f);
    CHECK(f > 0.3 * 0.85);
    CHECK(f < 0.3 * 1.15);
  }
  // The same across seed nodes: one RNG seed, many distinct nodes of a graph
  // whose every row is 0..9.
  const int64_t n = 20000;
  std::vector<int64_t> indptr(n + 1), indices;
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t u = 0; u < 10; ++u) indices.push_back(u);
    indptr[v + 1] = indices.size();
  }
  std::vector<int64_t> all(n);
  for (int64_t v = 0; v < n; ++v) all[v] = v;
  CscView view{indptr.data(), indices.data(), 0, n};
  Sampled s = Sample(view, all, 3, false, 42, 2);
  std::vector<int> count(10, 0);
  for (int64_t v : s.indices) ++count[v];
  for (int u = 0; u < 10; ++u) {
    double f = static_cast<double>(count[u]) / n;
    INFO("neighbour " << u << " frequency " << f);
    CHECK(f > 0.3 * 0.85);
    CHECK(f < 0.3 * 1.15);
  }
}

TEST_CASE("Floyd's draw gives the textbook positions on short and long rows", "[unit]") {
  // Floyd's algorithm as written in the textbook: a duplicate draw takes j.
  auto textbook = [](int64_t deg, int64_t k, uint64_t seed) {
    sampling_detail::Rng rng(seed);
    std::vector<int64_t> chosen;
    for (int64_t j = deg - k; j < deg; ++j) {
      int64_t t = rng.Below(j + 1);
      if (std::find(chosen.begin(), chosen.end(), t) != chosen.end()) t = j;
      chosen.push_back(t);
    }
    return chosen;
  };
  // Rows of up to 64 entries take the one-word path; longer rows the scan
  // (k <= 32) or the hashed set.
  for (int64_t deg : {1, 2, 3, 10, 20, 33, 63, 64, 65, 100, 1000}) {
    for (int64_t k : {1, 2, 5, 10, 25, 32, 33, 40, 63}) {
      if (k >= deg) continue;
      sampling_detail::FloydScratch scratch(static_cast<int>(k));
      for (uint64_t seed = 0; seed < 50; ++seed) {
        sampling_detail::Rng rng(seed);
        std::vector<int64_t> got(k);
        sampling_detail::DrawPositions(deg, k, &rng, &scratch, got.data());
        INFO("deg " << deg << " k " << k << " seed " << seed);
        REQUIRE(got == textbook(deg, k, seed));
      }
    }
  }
}

TEST_CASE("SampleNeighbors is deterministic and thread-count independent", "[unit]") {
  const TinyGraph& t = Tiny();
  std::vector<int64_t> seeds;
  for (int64_t v = 0; v < t.data.num_nodes; v += 3) seeds.push_back(v);
  for (bool replace : {false, true}) {
    Sampled a = Sample(t.graph.csc, seeds, 4, replace, 11, 1);
    Sampled b = Sample(t.graph.csc, seeds, 4, replace, 11, 2);
    Sampled c = Sample(t.graph.csc, seeds, 4, replace, 11, 1);
    Sampled d = Sample(t.graph.csc, seeds, 4, replace, 12, 2);
    CHECK(a.indptr == b.indptr);
    CHECK(a.indices == b.indices);
    CHECK(a.indices == c.indices);
    CHECK(a.indptr == d.indptr);  // counts depend on degrees only
    CHECK(a.indices != d.indices);
  }
  // A seed's draw does not depend on its neighbours in the batch.
  Sampled all = Sample(t.graph.csc, seeds, 4, false, 11);
  Sampled one = Sample(t.graph.csc, {seeds[5]}, 4, false, 11);
  CHECK(std::vector<int64_t>(all.indices.begin() + all.indptr[5],
                             all.indices.begin() + all.indptr[6]) == one.indices);
}

TEST_CASE("ToBlock puts destinations first and relabels sources", "[unit]") {
  HandCsc g;
  std::vector<int64_t> dst = {104, 100, 103, 101};
  Sampled s = Sample(g.view, dst, 4, false, 5);
  Block b = ToBlock(dst, s.indptr, s.indices);
  CHECK(b.num_dst == 4);
  REQUIRE(b.num_src() >= 4);
  CHECK(std::vector<int64_t>(b.src_nodes.begin(), b.src_nodes.begin() + 4) == dst);
  CHECK(std::set<int64_t>(b.src_nodes.begin(), b.src_nodes.end()).size() == b.src_nodes.size());
  CHECK(b.indptr == s.indptr);
  REQUIRE(b.num_edges() == static_cast<int64_t>(s.indices.size()));
  for (int64_t e = 0; e < b.num_edges(); ++e) {
    REQUIRE(b.indices[e] >= 0);
    REQUIRE(b.indices[e] < b.num_src());
    CHECK(b.src_nodes[b.indices[e]] == s.indices[e]);
  }
  // New sources appear in first-seen order.
  std::vector<int64_t> first_seen;
  std::set<int64_t> seen(dst.begin(), dst.end());
  for (int64_t v : s.indices) {
    if (seen.insert(v).second) first_seen.push_back(v);
  }
  CHECK(std::vector<int64_t>(b.src_nodes.begin() + 4, b.src_nodes.end()) == first_seen);

  SECTION("exact small case") {
    Block c = ToBlock({5, 9}, {0, 3, 4}, {9, 7, 7, 5});
    CHECK(c.src_nodes == std::vector<int64_t>{5, 9, 7});
    CHECK(c.indices == std::vector<int64_t>{1, 2, 2, 0});
    CHECK(c.indptr == std::vector<int64_t>{0, 3, 4});
  }
  SECTION("bad input") {
    CHECK_THROWS_AS(ToBlock({5, 5}, {0, 0, 0}, {}), DataError);
    CHECK_THROWS_AS(ToBlock({5, 6}, {0, 1}, {3}), DataError);
    CHECK_THROWS_AS(ToBlock({5}, {0, 2}, {3}), DataError);
    CHECK_THROWS_AS(ToBlock({5}, {0, 1}, {-3}), DataError);
  }
  SECTION("bad input with ids too large for the dense map") {
    const int64_t big = int64_t{1} << 40;
    CHECK_THROWS_AS(ToBlock({big, big}, {0, 0, 0}, {}), DataError);
    CHECK_THROWS_AS(ToBlock({big}, {0, 1}, {-3}), DataError);
  }
  // Ids below a bound a few times the block's size take the dense map,
  // others the hash map: both must give the reference's numbering, and a
  // dense call must not see an earlier call's ids.
  auto check_reference = [](int64_t stride, int64_t offset, int64_t range) {
    std::vector<int64_t> d, ptr = {0}, idx;
    for (int64_t v = 0; v < 1000; ++v) d.push_back(offset + v * stride);
    uint64_t x = static_cast<uint64_t>(range);
    for (int64_t v = 0; v < 1000; ++v) {
      for (int k = 0; k < 50; ++k) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        idx.push_back(offset + static_cast<int64_t>((x >> 33) % range));
      }
      ptr.push_back(idx.size());
    }
    Block big = ToBlock(d, ptr, idx);
    std::map<int64_t, int64_t> ref;
    std::vector<int64_t> ref_src;
    for (int64_t v : d) ref.emplace(v, ref.size()), ref_src.push_back(v);
    std::vector<int64_t> ref_idx;
    for (int64_t v : idx) {
      auto it = ref.emplace(v, ref.size());
      if (it.second) ref_src.push_back(v);
      ref_idx.push_back(it.first->second);
    }
    CHECK(big.src_nodes == ref_src);
    CHECK(big.indices == ref_idx);
  };
  SECTION("large frontier grows the hash map and matches a reference") {
    check_reference(7919, 0, 40000);
    check_reference(1, int64_t{1} << 40, 40000);
  }
  SECTION("dense ids match a reference, call after call") {
    check_reference(13, 0, 40000);
    check_reference(1, 0, 3000);
    check_reference(7, 5, 60000);
  }
}

TEST_CASE("SampleBlocks builds DGL-ordered layers on synthetic:tiny", "[unit]") {
  const TinyGraph& t = Tiny();
  std::vector<int64_t> seeds(t.data.train_idx.begin(), t.data.train_idx.begin() + 50);
  std::vector<int> fanouts = {2, 3};
  std::vector<Block> blocks = SampleBlocks(t.graph.csc, seeds, fanouts, false, 9, 1);
  REQUIRE(blocks.size() == 2);
  CHECK(blocks.back().num_dst == static_cast<int64_t>(seeds.size()));
  CHECK(std::vector<int64_t>(blocks[1].src_nodes.begin(),
                             blocks[1].src_nodes.begin() + blocks[1].num_dst) == seeds);
  CHECK(blocks[0].num_dst == blocks[1].num_src());
  CHECK(std::vector<int64_t>(blocks[0].src_nodes.begin(),
                             blocks[0].src_nodes.begin() + blocks[0].num_dst) ==
        blocks[1].src_nodes);
  for (size_t l = 0; l < blocks.size(); ++l) {
    const Block& b = blocks[l];
    REQUIRE(b.indptr.size() == static_cast<size_t>(b.num_dst + 1));
    CHECK(std::set<int64_t>(b.src_nodes.begin(), b.src_nodes.end()).size() == b.src_nodes.size());
    for (int64_t d = 0; d < b.num_dst; ++d) {
      int64_t v = b.src_nodes[d];
      int64_t deg = t.csc.Degree(v);
      int64_t got = b.indptr[d + 1] - b.indptr[d];
      CHECK(got == std::min<int64_t>(deg, fanouts[l]));
      std::set<int64_t> row(t.csc.indices.begin() + t.csc.indptr[v],
                            t.csc.indices.begin() + t.csc.indptr[v + 1]);
      for (int64_t e = b.indptr[d]; e < b.indptr[d + 1]; ++e) {
        REQUIRE(b.indices[e] < b.num_src());
        CHECK(row.count(b.src_nodes[b.indices[e]]) == 1);
      }
    }
  }
  // The seeds get the output layer's fanout (3), the inputs' layer 2.
  int64_t max_out = 0;
  for (int64_t d = 0; d < blocks[1].num_dst; ++d) {
    max_out = std::max(max_out, blocks[1].indptr[d + 1] - blocks[1].indptr[d]);
  }
  CHECK(max_out == 3);
  CHECK(SameBlocks(blocks, SampleBlocks(t.graph.csc, seeds, fanouts, false, 9, 2)));
  CHECK_FALSE(SameBlocks(blocks, SampleBlocks(t.graph.csc, seeds, fanouts, false, 10, 1)));

  std::vector<Block> none = SampleBlocks(t.graph.csc, seeds, {0, 0}, false, 9, 1);
  REQUIRE(none.size() == 2);
  for (const Block& b : none) {
    CHECK(b.num_edges() == 0);
    CHECK(b.src_nodes == seeds);
  }
  CHECK_THROWS_AS(SampleBlocks(t.graph.csc, seeds, {2, -2}, false, 9, 1), ConfigError);
  std::vector<int64_t> dup = {1, 2, 1};
  CHECK_THROWS_AS(SampleBlocks(t.graph.csc, dup, fanouts, false, 9, 1), DataError);
}

TEST_CASE("GatherRows copies exact rows", "[unit]") {
  const int64_t dim = 5, rows = 3000, start = 1000;
  std::vector<float> m(rows * dim);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(i) * 0.5f;
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 200000; ++i) ids.push_back(start + (i * 7919) % rows);
  for (int threads : {1, 2}) {
    std::vector<float> out;
    GatherRows(m.data(), start, dim, ids, &out, threads);
    REQUIRE(out.size() == ids.size() * dim);
    bool ok = true;
    for (size_t i = 0; i < ids.size() && ok; ++i) {
      for (int64_t k = 0; k < dim; ++k)
        ok = ok && out[i * dim + k] == m[(ids[i] - start) * dim + k];
    }
    CHECK(ok);
  }
  std::vector<float> out = {1, 2, 3};
  GatherRows(m.data(), start, dim, {}, &out, 2);
  CHECK(out.empty());
}

TEST_CASE("BatchLoader covers every seed once per epoch, in the same batches for any workers",
          "[unit]") {
  const TinyGraph& t = Tiny();
  const std::vector<int64_t>& train = t.data.train_idx;
  LoaderOptions o;
  o.fanouts = {2, 3};
  o.batch_size = 64;
  o.seed = 5;
  o.prefetch = 3;
  std::vector<std::vector<MiniBatch>> runs;
  for (int workers : {1, 2, 0}) {
    o.num_workers = workers;
    BatchLoader loader(t.graph, train, o, 0);
    CHECK(loader.num_batches() == (static_cast<int64_t>(train.size()) + 63) / 64);
    runs.push_back(Drain(loader));
    CHECK_FALSE(loader.Next().has_value());
  }
  const std::vector<MiniBatch>& a = runs[0];
  REQUIRE(static_cast<int64_t>(a.size()) == (static_cast<int64_t>(train.size()) + 63) / 64);
  std::vector<int64_t> covered;
  for (size_t i = 0; i < a.size(); ++i) {
    const MiniBatch& b = a[i];
    CHECK(b.index == static_cast<int64_t>(i));
    CHECK(b.blocks.size() == 2);
    CHECK(b.blocks.back().num_dst == static_cast<int64_t>(b.seeds.size()));
    REQUIRE(b.features.size() == b.input_nodes().size() * t.data.feature_dim);
    for (size_t r = 0; r < b.input_nodes().size(); r += 17) {
      int64_t v = b.input_nodes()[r];
      CHECK(std::equal(b.features.begin() + r * b.feature_dim,
                       b.features.begin() + (r + 1) * b.feature_dim,
                       t.data.features.begin() + v * t.data.feature_dim));
    }
    REQUIRE(b.labels.size() == b.seeds.size());
    for (size_t s = 0; s < b.seeds.size(); ++s) CHECK(b.labels[s] == t.data.labels[b.seeds[s]]);
    CHECK(b.sample_seconds >= 0);
    covered.insert(covered.end(), b.seeds.begin(), b.seeds.end());
  }
  CHECK(static_cast<int64_t>(a.back().seeds.size()) ==
        static_cast<int64_t>(train.size()) - 64 * (static_cast<int64_t>(a.size()) - 1));
  std::sort(covered.begin(), covered.end());
  CHECK(covered == train);
  for (size_t r = 1; r < runs.size(); ++r) {
    REQUIRE(runs[r].size() == a.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(SameBatch(a[i], runs[r][i]));
  }

  SECTION("epochs shuffle differently; no shuffle keeps the order; drop_last") {
    o.num_workers = 1;
    BatchLoader e1(t.graph, train, o, 1);
    std::vector<MiniBatch> b1 = Drain(e1);
    CHECK(b1[0].seeds != a[0].seeds);
    o.shuffle = false;
    o.drop_last = true;
    BatchLoader plain(t.graph, train, o, 0);
    CHECK(plain.num_batches() == static_cast<int64_t>(train.size()) / 64);
    std::vector<MiniBatch> p = Drain(plain);
    REQUIRE(static_cast<int64_t>(p.size()) == plain.num_batches());
    CHECK(p[0].seeds == std::vector<int64_t>(train.begin(), train.begin() + 64));
  }
}

TEST_CASE("BatchLoader with a device cache ships only the rows it lacks and runs the stager",
          "[unit]") {
  const TinyGraph& t = Tiny();
  LoaderOptions plain;
  plain.fanouts = {3, 4};
  plain.batch_size = 50;
  plain.seed = 4;
  // Every third node cached, in reverse order of id.
  const int64_t n = t.graph.csc.num_nodes;
  std::vector<int32_t> slot(static_cast<size_t>(n), -1);
  int32_t next = 0;
  for (int64_t v = n - 1; v >= 0; --v) {
    if (v % 3 == 0) slot[v] = next++;
  }
  const int64_t dim = t.data.feature_dim;
  for (int workers : {2, 0}) {
    plain.num_workers = workers;
    LoaderOptions o = plain;
    o.cache_slot = slot.data();
    o.input_means = true;  // a cache overrides it: the consumer assembles block 0's input
    std::atomic<int> staged{0};
    o.stage = [&](MiniBatch& mb) {
      ++staged;
      mb.staged = std::make_shared<int64_t>(mb.index);
    };
    BatchLoader full(t.graph, t.data.train_idx, plain, 0);
    BatchLoader split(t.graph, t.data.train_idx, o, 0);
    std::vector<MiniBatch> a = Drain(full), b = Drain(split);
    REQUIRE(a.size() == b.size());
    CHECK(staged == static_cast<int>(b.size()));
    uint64_t hits = 0, lookups = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      REQUIRE(b[i].staged);
      CHECK(*static_cast<int64_t*>(b[i].staged.get()) == b[i].index);
      const std::vector<int64_t>& input = a[i].input_nodes();
      CHECK(b[i].input_nodes() == input);  // the same sampling
      REQUIRE(b[i].split_rows);
      CHECK_FALSE(b[i].input_means);
      REQUIRE(b[i].host_rows.size() + b[i].cached_rows.size() == input.size());
      REQUIRE(b[i].cached_slots.size() == b[i].cached_rows.size());
      REQUIRE(b[i].features.size() == b[i].host_rows.size() * dim);
      // Host rows: the full batch's rows at those positions, in order.
      for (size_t r = 0; r < b[i].host_rows.size(); ++r) {
        const int64_t pos = b[i].host_rows[r];
        CHECK(slot[input[pos]] == -1);
        CHECK(std::equal(b[i].features.begin() + r * dim, b[i].features.begin() + (r + 1) * dim,
                         a[i].features.begin() + pos * dim));
      }
      for (size_t r = 0; r < b[i].cached_rows.size(); ++r) {
        CHECK(b[i].cached_slots[r] == slot[input[b[i].cached_rows[r]]]);
      }
      CHECK(b[i].cache_lookups == input.size());
      CHECK(b[i].cache_hits == b[i].cached_rows.size());
      hits += b[i].cache_hits;
      lookups += b[i].cache_lookups;
    }
    // About a third of the rows read are cached.
    CHECK(hits > lookups / 5);
    CHECK(hits < lookups / 2);
  }
}

TEST_CASE("BatchLoader input_means: destination rows and their sources' means, and transposes",
          "[unit]") {
  const TinyGraph& t = Tiny();
  TwoRuns runs = DrainTwice(t, [](LoaderOptions* o) {
    o->input_means = true;
    o->transpose = true;
  });
  const std::vector<MiniBatch>& a = runs.plain;
  const std::vector<MiniBatch>& b = runs.changed;
  const int64_t dim = t.data.feature_dim;
  for (size_t i = 0; i < a.size(); ++i) {
    const Block& blk = a[i].blocks.front();
    CHECK(b[i].blocks.front().src_nodes == blk.src_nodes);  // same sampling
    CHECK_FALSE(a[i].input_means);
    REQUIRE(b[i].input_means);
    REQUIRE(static_cast<int64_t>(b[i].features.size()) == 2 * blk.num_dst * dim);
    // Rows 0..n-1: the destinations' own rows, as the full batch has them.
    CHECK(std::equal(b[i].features.begin(), b[i].features.begin() + blk.num_dst * dim,
                     a[i].features.begin()));
    // Rows n..2n-1: the mean of each destination's sources' rows.
    for (int64_t d = 0; d < blk.num_dst; ++d) {
      const int64_t deg = blk.indptr[d + 1] - blk.indptr[d];
      for (int64_t k = 0; k < dim; ++k) {
        double sum = 0;
        for (int64_t e = blk.indptr[d]; e < blk.indptr[d + 1]; ++e) {
          sum += a[i].features[blk.indices[e] * dim + k];
        }
        const double want = deg > 0 ? sum / static_cast<double>(deg) : 0.0;
        REQUIRE(b[i].features[(blk.num_dst + d) * dim + k] == Approx(want).margin(1e-5));
      }
    }
    // The same form made from the full batch (as samplers of the cluster do).
    MiniBatch packed = a[i];
    PackInputMeans(&packed, 1);
    CHECK(packed.input_means);
    CHECK(packed.features == b[i].features);
    // Transposes of the blocks a gradient flows through (1..), not block 0.
    CHECK(b[i].blocks[0].t_indptr.empty());
    const Block& top = b[i].blocks[1];
    REQUIRE(static_cast<int64_t>(top.t_indptr.size()) == top.num_src() + 1);
    CHECK(top.t_indptr.back() == top.num_edges());
  }
}

TEST_CASE("BatchLoader self_loops: every block looped in the worker, with its transpose",
          "[unit]") {
  const TinyGraph& t = Tiny();
  TwoRuns runs = DrainTwice(t, [](LoaderOptions* o) {
    o->self_loops = true;
    o->transpose = true;
  });
  const std::vector<MiniBatch>& a = runs.plain;
  const std::vector<MiniBatch>& b = runs.changed;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].features == b[i].features);  // the same batch
    for (size_t l = 0; l < a[i].blocks.size(); ++l) {
      Block want = a[i].blocks[l];
      AddSelfLoops(&want);
      BuildTranspose(&want);
      const Block& got = b[i].blocks[l];
      CHECK(got.self_loops);
      CHECK(got.src_nodes == want.src_nodes);
      CHECK(got.indptr == want.indptr);
      CHECK(got.indices == want.indices);
      CHECK(got.t_indptr == want.t_indptr);  // block 0's too
      CHECK(got.t_indices == want.t_indices);
      CHECK(got.t_eids == want.t_eids);
    }
  }
  LoaderOptions o;
  o.fanouts = {3, 4};
  o.self_loops = true;
  o.input_means = true;
  CHECK_THROWS_WITH(o.Validate(), Catch::Contains("self_loops and input_means"));
}

TEST_CASE("BatchLoader prefetches at most `prefetch` batches ahead", "[unit]") {
  const TinyGraph& t = Tiny();
  LoaderOptions o;
  o.fanouts = {5, 5};
  o.batch_size = 16;
  o.num_workers = 2;
  o.prefetch = 2;
  BatchLoader loader(t.graph, t.data.train_idx, o, 0);
  REQUIRE(loader.num_batches() > 10);
  int64_t n = 0;
  while (auto b = loader.Next()) {
    ++n;
    // A slow consumer: the workers catch up and must stop at the bound.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(loader.peak_ready() <= o.prefetch);
  }
  CHECK(n == loader.num_batches());
  CHECK(loader.peak_ready() == o.prefetch);  // and they did run ahead
}

TEST_CASE("BatchLoader stops promptly when the consumer stops early", "[unit]") {
  const TinyGraph& t = Tiny();
  LoaderOptions o;
  o.fanouts = {10, 10};
  o.batch_size = 8;
  o.num_workers = 2;
  o.prefetch = 4;
  auto start = std::chrono::steady_clock::now();
  for (int consumed : {0, 1, 3}) {
    BatchLoader loader(t.graph, t.data.train_idx, o, 0);
    for (int i = 0; i < consumed; ++i) REQUIRE(loader.Next().has_value());
  }
  // Each loader has ~50 batches; stopping must not produce them all.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("BatchLoader rethrows a bad seed from Next", "[unit]") {
  const TinyGraph& t = Tiny();
  LoaderOptions o;
  o.fanouts = {2, 2};
  o.batch_size = 4;
  o.shuffle = false;
  std::vector<int64_t> seeds = {1, 2, 3, 4, 5, 6, 7, 8, t.data.num_nodes + 5, 9, 10, 11, 12, 13};
  for (int workers : {0, 1, 2}) {
    o.num_workers = workers;
    BatchLoader loader(t.graph, seeds, o, 0);
    REQUIRE(loader.num_batches() == 4);
    CHECK(loader.Next().has_value());
    CHECK(loader.Next().has_value());
    CHECK_THROWS_AS(loader.Next(), DataError);
    CHECK_THROWS_WITH(loader.Next(), Catch::Contains(std::to_string(t.data.num_nodes + 5)));
  }
  o.batch_size = 0;
  CHECK_THROWS_AS(BatchLoader(t.graph, seeds, o, 0), ConfigError);
  o.batch_size = 4;
  o.fanouts = {};
  CHECK_THROWS_AS(BatchLoader(t.graph, seeds, o, 0), ConfigError);
}

TEST_CASE("MixSeed separates streams", "[unit]") {
  CHECK(MixSeed(1, 2) == MixSeed(1, 2));
  CHECK(MixSeed(1, 2) != MixSeed(2, 1));
  CHECK(MixSeed(0, 0) != MixSeed(0, 1));
  CHECK(MixSeed(0, 0) != 0);
}

TEST_CASE(
    "SampleAggregate at the owner gives the means of the same sampled neighbours, an edge "
    "batch's pairs excluded as a block excludes them",
    "[unit]") {
  // synthetic:tiny's graph; this "partition" owns nodes [lo, hi) and their
  // rows; the others' rows come from the whole table, as remote pulls do.
  Dataset d = GenerateSynthetic(ParseSyntheticSpec("tiny"), 3, 1);
  const Csr in = Symmetrize(d.num_nodes, d.src, d.dst, 2);
  const int64_t n_all = d.num_nodes, dim = d.feature_dim, lo = n_all / 4, hi = n_all / 2;
  std::vector<int64_t> ptr(in.indptr.begin() + lo, in.indptr.begin() + hi + 1);
  for (int64_t& p : ptr) p -= in.indptr[lo];
  std::vector<int64_t> idx(in.indices.begin() + in.indptr[lo], in.indices.begin() + in.indptr[hi]);
  CscView csc{ptr.data(), idx.data(), lo, hi - lo, nullptr};
  const float* owned_rows = d.features.data() + lo * dim;
  std::vector<int64_t> dsts;
  for (int64_t v = lo; v < hi; v += 3) dsts.push_back(v);
  const int64_t n = static_cast<int64_t>(dsts.size());
  for (const auto& [fanout, replace, excluding] : std::vector<std::tuple<int, bool, bool>>{
           {5, false, false}, {5, true, false}, {-1, false, false}, {5, false, true}}) {
    INFO("fanout " << fanout << " replace " << replace << " excluding " << excluding);
    // Today's path: sample, build the block, average the sources' rows.
    std::vector<int64_t> sp, si;
    SampleNeighbors(csc, dsts.data(), n, fanout, replace, 99, 2, &sp, &si);
    // An edge batch's pairs (every other destination's first sampled
    // neighbour) filtered out of the block, and left out at the owner.
    EdgeExclusion exclude;
    if (excluding) {
      std::vector<int64_t> pairs;
      for (int64_t i = 0; i < n; i += 2) {
        if (sp[i + 1] > sp[i]) pairs.insert(pairs.end(), {dsts[i], si[sp[i]]});
      }
      exclude = EdgeExclusion(pairs);
      const int64_t sampled = sp[n];
      exclude.Filter(dsts.data(), n, &sp, &si);
      CHECK(sp[n] < sampled);
    }
    const EdgeExclusion* ex = excluding ? &exclude : nullptr;
    const Block block = ToBlock(dsts, sp, si);
    std::vector<float> expect(n * dim);
    MeanOfSources(d.features.data(), 0, dim, block, expect.data(), 1);
    // At the owner: own rows and held sums, then the remote rows added in.
    std::vector<float> out(2 * n * dim);
    OwnerSums all;
    SampleAggregate({csc, owned_rows, dim, dsts.data(), n, fanout, replace, 99, 2, ex}, out.data(),
                    &all);
    const std::vector<int64_t>&counts = all.counts, &rptr = all.remote_indptr,
          &rids = all.remote_ids;
    CHECK(!rids.empty());  // some neighbours live elsewhere
    for (int64_t v : rids) CHECK((v < lo || v >= hi));
    for (int64_t i = 0; i < n; ++i)
      CHECK(std::is_sorted(rids.begin() + rptr[i], rids.begin() + rptr[i + 1]));
    // Only the first k own rows asked for: the same sums, from row k.
    const int64_t k = n / 3;
    std::vector<float> part((k + n) * dim);
    OwnerSums first_k;
    SampleAggregate({csc, owned_rows, dim, dsts.data(), n, fanout, replace, 99, 1, ex}, part.data(),
                    &first_k, k);
    CHECK(std::equal(part.begin(), part.begin() + k * dim, out.begin()));
    CHECK(std::equal(part.begin() + k * dim, part.end(), out.begin() + n * dim));
    CHECK(first_k.counts == counts);
    CHECK(first_k.remote_ids == rids);
    // Each remote row once (by id), referenced from every pair.
    std::vector<float> remote_rows;
    GatherRows(d.features.data(), 0, dim, rids, &remote_rows, 1);
    std::vector<int64_t> row_of(rids.size());
    for (size_t k = 0; k < rids.size(); ++k) row_of[k] = static_cast<int64_t>(k);
    FinishMeans(n, dim, counts, rptr, remote_rows.data(), row_of, out.data() + n * dim);
    for (int64_t i = 0; i < n; ++i) {
      CHECK(counts[i] == sp[i + 1] - sp[i]);
      for (int64_t j = 0; j < dim; ++j) {
        CHECK(out[i * dim + j] == d.features[dsts[i] * dim + j]);
        const float a = out[(n + i) * dim + j], b = expect[i * dim + j];
        CHECK(std::abs(a - b) <= 1e-5f * std::max(1.0f, std::abs(b)));
      }
    }
  }
  std::vector<float> out(2 * dim);
  OwnerSums sums;
  const int64_t foreign = hi;
  CHECK_THROWS_AS(
      SampleAggregate({csc, owned_rows, dim, &foreign, 1, 5, false, 1, 1}, out.data(), &sums),
      DataError);
}

// Nodes 10..13 of a partition. Node 10 (degree 4) lists 1, 2, 3, 11; node
// 11 (degree 1) lists 2; node 12 (degree 2) lists 1, 50; node 13 none.
struct FourNodes {
  const std::vector<int64_t> indptr = {0, 4, 5, 7, 7};
  const std::vector<int64_t> indices = {1, 2, 3, 11, 2, 1, 50};
  CscView csc;
  FourNodes() {
    csc.indptr = indptr.data();
    csc.indices = indices.data();
    csc.node_start = 10;
    csc.num_nodes = 4;
  }
};

TEST_CASE("HotRemoteRows ranks other partitions' in-neighbours by expected draws", "[unit]") {
  const FourNodes g;
  const CscView& csc = g.csc;
  // One layer, every node a seed, fan-out 2: scores 1 -> 0.5 + 1 = 1.5,
  // 2 -> 0.5 + 1 = 1.5, 3 -> 0.5, 50 -> 1. Never a local id (11).
  CHECK(HotRemoteRows(csc, nullptr, {2}, 10) == std::vector<int64_t>{1, 2, 3, 50});
  CHECK(HotRemoteRows(csc, nullptr, {2}, 3) == std::vector<int64_t>{1, 2, 50});
  CHECK(HotRemoteRows(csc, nullptr, {2}, 1) == std::vector<int64_t>{1});  // tie: smaller id
  CHECK(HotRemoteRows(csc, nullptr, {2}, 0).empty());
  // Every neighbour taken (fan-out -1): counts 1 -> 2, 2 -> 2, 3 -> 1, 50 -> 1.
  CHECK(HotRemoteRows(csc, nullptr, {-1}, 2) == std::vector<int64_t>{1, 2});
  CHECK(HotRemoteRows(csc, nullptr, {-1}, 3) == std::vector<int64_t>{1, 2, 3});
  // Only node 10 a seed, two layers (fan-outs {-1, 2}: the top layer draws
  // 2 of node 10's 4): node 10 is a first-layer destination once, node 11
  // half a time (0.5 of the draw). Scores: 1 -> 1, 2 -> 1 + 0.5, 3 -> 1,
  // 50 -> 0 (node 12 is never reached).
  const std::vector<uint8_t> seed = {1, 0, 0, 0};
  CHECK(HotRemoteRows(csc, seed.data(), {-1, 2}, 10) == std::vector<int64_t>{1, 2, 3});
  CHECK(HotRemoteRows(csc, seed.data(), {-1, 2}, 1) == std::vector<int64_t>{2});
  // With one layer only the seeds are destinations.
  CHECK(HotRemoteRows(csc, seed.data(), {-1}, 10) == std::vector<int64_t>{1, 2, 3});
}

TEST_CASE("HotLocalRows ranks a partition's own rows by expected reads", "[unit]") {
  const FourNodes g;
  const CscView& csc = g.csc;
  // One layer, every node a seed, fan-out 2: each reads its own row once,
  // and node 10 draws 11 half the time: 10 -> 1, 11 -> 1.5, 12 -> 1, 13 -> 1.
  // Never a remote id.
  CHECK(HotLocalRows(csc, nullptr, {2}, 10) == std::vector<int64_t>{10, 11, 12, 13});
  CHECK(HotLocalRows(csc, nullptr, {2}, 1) == std::vector<int64_t>{11});
  CHECK(HotLocalRows(csc, nullptr, {2}, 2) == std::vector<int64_t>{10, 11});  // tie: smaller id
  CHECK(HotLocalRows(csc, nullptr, {2}, 0).empty());
  // Only node 10 a seed: 10 -> 1, 11 -> 0.5 (fan-out 2 of 4), the others
  // are never read and left out.
  const std::vector<uint8_t> seed = {1, 0, 0, 0};
  CHECK(HotLocalRows(csc, seed.data(), {2}, 10) == std::vector<int64_t>{10, 11});
  // Two layers (fan-outs {-1, 2}): the top layer makes 10 a destination once
  // and 11 half a time; below, 10 takes every neighbour, 11 among them:
  // 10 -> 1, 11 -> 0.5 + 1 = 1.5.
  CHECK(HotLocalRows(csc, seed.data(), {-1, 2}, 10) == std::vector<int64_t>{10, 11});
  CHECK(HotLocalRows(csc, seed.data(), {-1, 2}, 1) == std::vector<int64_t>{11});
}

TEST_CASE("DistinctIds and SortByIdInRange agree with a comparison sort", "[unit]") {
  std::mt19937_64 rng(7);
  // Under and over the radix sort's cut-over, ranges needing 1 to 3 passes,
  // many repeats and none.
  for (size_t n : {size_t{0}, size_t{1}, size_t{100}, size_t{255}, size_t{256}, size_t{5000}}) {
    for (int64_t lo : {int64_t{0}, int64_t{1000}}) {
      for (int64_t range : {int64_t{50}, int64_t{3000}, int64_t{1} << 22, int64_t{1} << 30}) {
        std::vector<int64_t> ids(n);
        for (int64_t& v : ids) v = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(range));
        std::vector<int64_t> unique, row_of;
        DistinctIds(ids, lo, lo + range, &unique, &row_of);
        std::vector<int64_t> want = ids;
        std::sort(want.begin(), want.end());
        want.erase(std::unique(want.begin(), want.end()), want.end());
        CHECK(unique == want);
        REQUIRE(row_of.size() == n);
        bool all = true;
        for (size_t k = 0; k < n; ++k) all = all && unique[row_of[k]] == ids[k];
        CHECK(all);
        // Stable: equal ids keep their positions' order.
        std::vector<size_t> pos(n);
        for (size_t k = 0; k < n; ++k) pos[k] = k;
        SortByIdInRange(&pos, ids, lo, lo + range);
        bool sorted = true;
        for (size_t k = 1; k < n; ++k) {
          sorted = sorted && (ids[pos[k - 1]] < ids[pos[k]] ||
                              (ids[pos[k - 1]] == ids[pos[k]] && pos[k - 1] < pos[k]));
        }
        CHECK(sorted);
      }
    }
  }
}
