// RunPartition in-process, then every invariant of the on-disk format is
// checked against the input dataset.
#include "partition/partition.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "common/error.h"
#include "common/fs.h"
#include "common/npy.h"
#include "graph/csr.h"
#include "graph/dataset.h"
#include "partition/assign.h"
#include "partition/config.h"
#include "test_util.h"

using namespace gnn;

namespace {

using EdgeSet = std::set<std::pair<int64_t, int64_t>>;

EdgeSet ExpectedEdges(const Dataset& d, bool undirected) {
  EdgeSet e;
  if (undirected) {
    Csr s = Symmetrize(d.num_nodes, d.src, d.dst, 1);
    for (int64_t v = 0; v < s.num_rows(); ++v) {
      for (int64_t k = s.indptr[v]; k < s.indptr[v + 1]; ++k) e.insert({s.indices[k], v});
    }
  } else {
    for (size_t i = 0; i < d.src.size(); ++i) e.insert({d.src[i], d.dst[i]});
  }
  return e;
}

// Checks the written partitions against `d`; returns the parsed config.
PartitionConfig CheckInvariants(const std::string& config_path, const Dataset& d, bool undirected) {
  PartitionConfig c = LoadPartitionConfig(config_path);
  REQUIRE(c.num_nodes == d.num_nodes);
  REQUIRE(c.feature_dim == d.feature_dim);
  std::vector<int> owner(d.num_nodes, -1);
  EdgeSet edges;
  int64_t stored = 0;
  std::vector<uint8_t> want_masks[3] = {std::vector<uint8_t>(d.num_nodes, 0),
                                        std::vector<uint8_t>(d.num_nodes, 0),
                                        std::vector<uint8_t>(d.num_nodes, 0)};
  const std::vector<int64_t>* splits[3] = {&d.train_idx, &d.valid_idx, &d.test_idx};
  for (int m = 0; m < 3; ++m) {
    for (int64_t v : *splits[m]) want_masks[m][v] = 1;
  }
  // Every part's orig_nids first, so edges can be mapped back.
  std::vector<int64_t> orig_of_new(d.num_nodes, -1);
  for (int p = 0; p < c.num_parts; ++p) {
    VerifyPartFiles(c, p);
    auto orig = ReadNpy<int64_t>(c.FilePath(p, "orig_nids.npy"), {c.parts[p].num_nodes()});
    for (int64_t i = 0; i < c.parts[p].num_nodes(); ++i) {
      REQUIRE(orig[i] >= 0);
      REQUIRE(orig[i] < d.num_nodes);
      REQUIRE(owner[orig[i]] == -1);  // owned exactly once
      owner[orig[i]] = p;
      orig_of_new[c.parts[p].node_start + i] = orig[i];
    }
  }
  CHECK(std::count(owner.begin(), owner.end(), -1) == 0);
  for (int p = 0; p < c.num_parts; ++p) {
    const PartInfo& info = c.parts[p];
    const int64_t owned = info.num_nodes();
    auto indptr = ReadNpy<int64_t>(c.FilePath(p, "indptr.npy"), {owned + 1});
    auto indices = ReadNpy<int64_t>(c.FilePath(p, "indices.npy"), {info.num_edges()});
    auto feat = ReadNpy<float>(c.FilePath(p, "feat.npy"), {owned, d.feature_dim});
    auto label = ReadNpy<int64_t>(c.FilePath(p, "label.npy"), {owned});
    REQUIRE(indptr.front() == 0);
    REQUIRE(indptr.back() == info.num_edges());
    for (int64_t i = 0; i < owned; ++i) {
      int64_t dst_old = orig_of_new[info.node_start + i];
      for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k) {
        REQUIRE(indices[k] >= 0);
        REQUIRE(indices[k] < d.num_nodes);
        edges.insert({orig_of_new[indices[k]], dst_old});
        ++stored;
      }
      REQUIRE(label[i] == d.labels[dst_old]);
      REQUIRE(std::equal(feat.begin() + i * d.feature_dim, feat.begin() + (i + 1) * d.feature_dim,
                         d.features.begin() + dst_old * d.feature_dim));
    }
    const char* names[3] = {"train_mask.npy", "valid_mask.npy", "test_mask.npy"};
    int64_t counts[3] = {info.num_train, info.num_valid, info.num_test};
    for (int m = 0; m < 3; ++m) {
      auto mask = ReadNpy<uint8_t>(c.FilePath(p, names[m]), {owned});
      int64_t ones = 0;
      for (int64_t i = 0; i < owned; ++i) {
        REQUIRE(mask[i] == want_masks[m][orig_of_new[info.node_start + i]]);
        ones += mask[i];
      }
      CHECK(ones == counts[m]);
    }
  }
  CHECK(stored == c.num_edges);
  CHECK(edges == ExpectedEdges(d, undirected));
  CHECK(static_cast<int64_t>(edges.size()) == stored);  // no duplicate in-edges
  for (int64_t v = 0; v < d.num_nodes; v += 97) {
    int p = c.PartOf(v);
    CHECK(p == owner[orig_of_new[v]]);
  }
  return c;
}

}  // namespace

TEST_CASE("partition invariants hold for metis and random, 1/2/4/8 parts", "[integration]") {
  test::TempDir dir;
  DatasetOptions data;
  data.dataset = "synthetic:tiny";
  data.seed = 3;
  Dataset d = LoadDataset(data);
  for (std::string method : {"metis", "random"}) {
    for (int parts : {1, 2, 4, 8}) {
      DYNAMIC_SECTION(method << " " << parts << " parts") {
        PartitionOptions o;
        o.data = data;
        o.num_parts = parts;
        o.part_method = method;
        o.balance_train = method == "metis";
        o.output = dir / (method + std::to_string(parts));
        PartitionResult r = RunPartition(o);
        PartitionConfig c = CheckInvariants(r.config_path, d, true);
        CHECK(c.num_parts == parts);
        CHECK(c.graph_name == "synthetic-tiny");
        CHECK(r.report.at("edge_cut").get<int64_t>() >= 0);
        if (parts == 1) CHECK(r.report.at("edge_cut").get<int64_t>() == 0);
        CHECK_FALSE(PathExists(o.output + ".tmp"));
      }
    }
  }
}

TEST_CASE("directed input keeps its edge directions", "[integration]") {
  test::TempDir dir;
  // A small directed graph in OGB layout with a self-loop-free cycle and a chord.
  const std::string root = dir / "mydirected";
  test::WriteGz(root + "/raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,0\n0,2\n4,0\n");
  test::WriteGz(root + "/raw/num-node-list.csv.gz", "5\n");
  test::WriteGz(root + "/raw/num-edge-list.csv.gz", "6\n");
  test::WriteGz(root + "/raw/node-feat.csv.gz", "1,0\n0,1\n1,1\n0.5,0.25\n-1,2\n");
  test::WriteGz(root + "/raw/node-label.csv.gz", "0\n1\n2\n1\n0\n");
  test::WriteGz(root + "/split/s/train.csv.gz", "0\n1\n");
  test::WriteGz(root + "/split/s/valid.csv.gz", "2\n");
  test::WriteGz(root + "/split/s/test.csv.gz", "3\n4\n");
  DatasetOptions data;
  data.dataset = root;
  data.use_cache = false;
  Dataset d = LoadDataset(data);
  REQUIRE_FALSE(d.known_undirected());
  for (bool undirected : {false, true}) {
    PartitionOptions o;
    o.data = data;
    o.num_parts = 2;
    o.undirected = undirected;
    o.output = dir / (undirected ? "u" : "d");
    PartitionResult r = RunPartition(o);
    PartitionConfig c = CheckInvariants(r.config_path, d, undirected);
    CHECK(c.num_edges == (undirected ? 12 : 6));
  }
}

TEST_CASE("metis cuts far fewer edges than random and balances every constraint",
          "[integration][slow]") {
  test::TempDir dir;
  PartitionOptions o;
  o.data.dataset = "synthetic:small";
  o.num_parts = 4;
  o.output = dir / "random";
  o.part_method = "random";
  PartitionResult random = RunPartition(o);
  o.output = dir / "metis";
  o.part_method = "metis";
  o.balance_train = true;
  o.balance_edges = true;
  PartitionResult metis = RunPartition(o);
  int64_t cut_random = random.report.at("edge_cut").get<int64_t>();
  int64_t cut_metis = metis.report.at("edge_cut").get<int64_t>();
  INFO("metis cut " << cut_metis << " random cut " << cut_random);
  CHECK(cut_metis * 2 <= cut_random);
  const auto& im = metis.report.at("imbalance");
  CHECK(im.at("nodes").get<double>() <= 1.10);
  CHECK(im.at("train_nodes").get<double>() <= 1.10);
  CHECK(im.at("edges").get<double>() <= 1.10);
}

TEST_CASE("METIS under --sparsify sees fewer edges, the partitions keep every invariant",
          "[integration]") {
  test::TempDir dir;
  DatasetOptions data;
  data.dataset = "synthetic:tiny";
  data.seed = 3;
  Dataset d = LoadDataset(data);
  PartitionOptions o;
  o.data = data;
  o.num_parts = 4;
  o.balance_train = true;
  o.output = dir / "whole";
  const PartitionResult whole = RunPartition(o);
  o.sparsify = 2;
  o.output = dir / "thin";
  const PartitionResult thin = RunPartition(o);
  CheckInvariants(thin.config_path, d, true);
  CHECK(thin.report.at("sparsify").get<int64_t>() == 2);
  CHECK_FALSE(whole.report.contains("sparsify"));
  // The cut is counted on the whole graph either way.
  CHECK(thin.report.at("undirected_edges") == whole.report.at("undirected_edges"));
  CHECK(thin.report.at("edge_cut").get<int64_t>() > 0);
  // Another partitioning: METIS saw another graph.
  CHECK(ReadFile(dir / "thin/part0/indices.npy") != ReadFile(dir / "whole/part0/indices.npy"));
  o.output = dir / "bad";
  o.part_method = "random";
  CHECK_THROWS_WITH(RunPartition(o), Catch::Contains("--sparsify") && Catch::Contains("metis"));
  o.part_method = "metis";
  o.sparsify = -1;
  CHECK_THROWS_WITH(RunPartition(o), Catch::Contains("--sparsify must be >= 0"));
  CHECK_FALSE(PathExists(o.output));
}

TEST_CASE("METIS stays within its memory budget: sparsified when it would not fit, else one line",
          "[integration]") {
  // A star: the hub's 100 edges each kept with probability 10 / 100.
  const int64_t n = 101;
  std::vector<int64_t> src, dst;
  for (int64_t v = 1; v < n; ++v) {
    src.push_back(0);
    dst.push_back(v);
  }
  const Csr32 star = Symmetrize<int32_t>(n, src, dst, 1);
  CHECK(ExpectedSparsifiedEntries(star, {10, 100}) == std::vector<int64_t>{20, 200});
  CHECK(MetisBytes(1000, 2000, 2) < MetisBytes(1000, 4000, 2));

  DatasetOptions data;
  data.dataset = "synthetic:nodes=20000,edges=200000,feat=2,classes=4";
  Dataset d = LoadDataset(data);
  const Csr32 sym = Symmetrize<int32_t>(d.num_nodes, d.src, d.dst, 1);
  const std::vector<std::vector<int32_t>> weights = {std::vector<int32_t>(d.num_nodes, 1)};
  const int64_t whole = MetisBytes(d.num_nodes, sym.num_entries(), 1);
  int64_t used = -1;
  MetisMemory m;
  m.auto_sparsify = true;
  m.budget_from = "a test";
  m.budget = whole;  // fits: every edge
  CHECK(MetisAssign(sym, weights, 2, 1, 0, m, &used).size() == static_cast<size_t>(d.num_nodes));
  CHECK(used == 0);
  // Half of it: the largest K that fits.
  m.budget = whole / 2;
  MetisAssign(sym, weights, 2, 1, 0, m, &used);
  REQUIRE(used > 0);
  const int64_t kept = ExpectedSparsifiedEntries(sym, {used})[0];
  CHECK(MetisBytes(d.num_nodes, kept, 1) + 4 * kept + 8 * d.num_nodes <= m.budget);
  if (used < 64) {
    const int64_t more = ExpectedSparsifiedEntries(sym, {used * 2})[0];
    CHECK(MetisBytes(d.num_nodes, more, 1) + 4 * more + 8 * d.num_nodes > m.budget);
  }
  // Nothing fits: one line saying what to do.
  m.budget = 1000;
  CHECK_THROWS_WITH(MetisAssign(sym, weights, 2, 1, 0, m, &used),
                    Catch::Contains("even --sparsify 1") && Catch::Contains("a test") &&
                        Catch::Contains("--part_method stream"));
  // A --sparsify the user chose is kept (with a warning).
  m.auto_sparsify = false;
  MetisAssign(sym, weights, 2, 1, 0, m, &used);
  CHECK(used == 0);
  MetisAssign(sym, weights, 2, 1, 8, m, &used);
  CHECK(used == 8);
}

TEST_CASE("bad options fail before anything is written", "[integration]") {
  test::TempDir dir;
  PartitionOptions o;
  o.data.dataset = "synthetic:tiny";
  o.output = dir / "out";
  SECTION("num_parts < 1") {
    o.num_parts = 0;
    CHECK_THROWS_AS(RunPartition(o), ConfigError);
  }
  SECTION("num_parts > nodes") {
    o.num_parts = 100000;
    CHECK_THROWS_WITH(RunPartition(o), Catch::Contains("exceeds"));
  }
  SECTION("unknown method") {
    o.part_method = "spectral";
    CHECK_THROWS_WITH(RunPartition(o), Catch::Contains("--part_method"));
  }
  SECTION("existing output without --overwrite") {
    MakeDirs(o.output);
    WriteFileAtomic(o.output + "/keep.txt", "precious");
    CHECK_THROWS_WITH(RunPartition(o), Catch::Contains("--overwrite"));
    CHECK(ReadFile(o.output + "/keep.txt") == "precious");
    // --overwrite replaces only what gnn-partition wrote: a foreign file is
    // named and kept, before any work.
    o.overwrite = true;
    o.num_parts = 2;
    CHECK_THROWS_WITH(RunPartition(o), Catch::Contains("did not write: keep.txt"));
    CHECK(ReadFile(o.output + "/keep.txt") == "precious");
    RemoveAllQuietly(o.output + "/keep.txt");
    RunPartition(o);
    CHECK(PathExists(o.output + "/synthetic-tiny.json"));
    o.num_parts = 3;
    RunPartition(o);  // its own output is replaced
    CHECK(PathExists(o.output + "/part2"));
    WriteFileAtomic(o.output + "/part1/notes.txt", "mine");
    CHECK_THROWS_WITH(RunPartition(o), Catch::Contains("part1/notes.txt"));
    CHECK(ReadFile(o.output + "/part1/notes.txt") == "mine");
    RemoveAllQuietly(o.output);
  }
  CHECK_FALSE(PathExists(o.output + "/part0"));
}

TEST_CASE("PartOf names the owner a linear scan names, -1 outside, over few and many parts",
          "[integration]") {
  for (const int parts : {1, 2, 5, 16, 17, 40}) {
    PartitionConfig c;
    c.num_parts = parts;
    int64_t next = 0;
    for (int p = 0; p < parts; ++p) {
      PartInfo info;
      info.node_start = next;
      next += 1 + (p * 7) % 13;  // uneven sizes
      info.node_end = next;
      c.parts.push_back(info);
    }
    c.num_nodes = next;
    for (int64_t v = -3; v < next + 3; ++v) {
      int scan = -1;
      for (int p = 0; p < parts; ++p) {
        const PartInfo& info = c.parts[static_cast<size_t>(p)];
        if (v >= info.node_start && v < info.node_end) scan = p;
      }
      REQUIRE(c.PartOf(v) == scan);
      if (v >= 0 && v < next) REQUIRE(scan >= 0);
    }
    REQUIRE(c.PartOf(next) == -1);
    REQUIRE(c.PartOf(-1) == -1);
  }
}
