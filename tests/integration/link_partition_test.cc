// gnn-partition --val_edges in-process: held-out edges leave every
// partition's CSC, are stored with the partition owning their tail, and are
// the same edges (and negatives) for any partitioning.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "common/error.h"
#include "common/npy.h"
#include "graph/csr.h"
#include "graph/dataset.h"
#include "partition/config.h"
#include "partition/local_partition.h"
#include "partition/partition.h"
#include "test_util.h"

using namespace gnn;

namespace {

using Pair = std::pair<int64_t, int64_t>;

struct Written {
  std::set<Pair> stored;                      // (src, dst) in input ids
  std::map<Pair, std::vector<int64_t>> held;  // (head, tail) -> negatives, input ids
};

Written Read(const std::string& config_path) {
  PartitionConfig c = LoadPartitionConfig(config_path);
  std::vector<int64_t> orig(c.num_nodes);
  for (int p = 0; p < c.num_parts; ++p) {
    auto o = ReadNpy<int64_t>(c.FilePath(p, "orig_nids.npy"), {c.parts[p].num_nodes()});
    std::copy(o.begin(), o.end(), orig.begin() + c.parts[p].node_start);
  }
  Written w;
  int64_t held_total = 0;
  for (int p = 0; p < c.num_parts; ++p) {
    VerifyPartFiles(c, p);  // the held-out files are listed and hashed too
    LocalPartition part = LoadLocalPartition(c, p, true);
    for (int64_t i = 0; i < part.num_nodes; ++i) {
      for (int64_t k = part.indptr[i]; k < part.indptr[i + 1]; ++k) {
        w.stored.insert({orig[part.indices[k]], orig[part.node_start + i]});
      }
    }
    HeldOutEdges h = LoadHeldOutEdges(c, p, true);
    REQUIRE(h.num_negatives == kValNegatives);
    held_total += h.size();
    for (int64_t i = 0; i < h.size(); ++i) {
      CHECK(c.PartOf(h.tails[i]) == p);  // stored with the tail's owner
      std::vector<int64_t> negs;
      for (int j = 0; j < h.num_negatives; ++j)
        negs.push_back(orig[h.negatives[i * h.num_negatives + j]]);
      w.held[{orig[h.heads[i]], orig[h.tails[i]]}] = negs;
    }
  }
  CHECK(held_total == c.num_val_edges);
  CHECK(static_cast<int64_t>(w.held.size()) == held_total);
  return w;
}

}  // namespace

TEST_CASE("gnn-partition --val_edges holds out the same edges for any partitioning",
          "[integration]") {
  test::TempDir dir;
  DatasetOptions data;
  data.dataset = "synthetic:tiny";
  data.seed = 4;
  Dataset d = LoadDataset(data);
  Csr sym = Symmetrize(d.num_nodes, d.src, d.dst, 1);
  std::set<Pair> all;
  for (int64_t v = 0; v < sym.num_rows(); ++v) {
    for (int64_t k = sym.indptr[v]; k < sym.indptr[v + 1]; ++k) all.insert({sym.indices[k], v});
  }

  std::vector<Written> runs;
  for (int parts : {1, 2, 3}) {
    PartitionOptions o;
    o.data = data;
    o.num_parts = parts;
    o.val_edges = 0.1;
    o.output = dir / ("p" + std::to_string(parts));
    PartitionResult r = RunPartition(o);
    Written w = Read(r.config_path);
    // Held out in both directions; everything else kept.
    std::set<Pair> expected = all;
    for (const auto& [e, negs] : w.held) {
      CHECK(e.first < e.second);
      CHECK(all.count(e) == 1);
      expected.erase(e);
      expected.erase({e.second, e.first});
      for (int64_t v : negs) {
        CHECK(v >= 0);
        CHECK(v < d.num_nodes);
      }
    }
    CHECK(w.stored == expected);
    const double fraction = static_cast<double>(w.held.size()) / (all.size() / 2.0);
    CHECK(fraction > 0.07);
    CHECK(fraction < 0.13);
    CHECK(r.report.at("val_edges").get<int64_t>() == static_cast<int64_t>(w.held.size()));
    runs.push_back(std::move(w));
  }
  CHECK(runs[1].held == runs[0].held);
  CHECK(runs[2].held == runs[0].held);

  SECTION("without --val_edges nothing is held out and no files are listed") {
    PartitionOptions o;
    o.data = data;
    o.num_parts = 2;
    o.output = dir / "none";
    PartitionConfig c = LoadPartitionConfig(RunPartition(o).config_path);
    CHECK(c.num_val_edges == 0);
    CHECK(c.parts[0].files.count(kValEdgeFiles[0]) == 0);
    CHECK(LoadHeldOutEdges(c, 0, true).size() == 0);
  }
  SECTION("a fraction outside [0, 1) is a ConfigError naming the flag") {
    for (double bad : {-0.1, 1.0, 2.0}) {
      PartitionOptions o;
      o.data = data;
      o.val_edges = bad;
      o.output = dir / "bad";
      try {
        RunPartition(o);
        FAIL("accepted --val_edges " << bad);
      } catch (const ConfigError& e) {
        CHECK(std::string(e.what()).find("--val_edges") != std::string::npos);
      }
    }
  }
}
