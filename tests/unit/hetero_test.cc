// Heterogeneous datasets: the synthetic:mag presets (ogbn-mag's shape,
// exact sizes, thread-invariant bytes, a planted class signal in every
// relation), DGL's reverse relations, and OGB's raw heterogeneous layout
// written and read back, with clear errors for broken folders; the
// heterogeneous partition config and its checks.
#include "graph/hetero.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "graph/ogb_hetero.h"
#include "graph/synthetic_hetero.h"
#include "partition/config.h"
#include "partition/partition.h"
#include "test_util.h"

namespace gnn {
namespace {

namespace fs = std::filesystem;

HeteroDataset MagSmall(int threads, uint64_t seed = 0) {
  return GenerateHeteroSynthetic(ParseHeteroSyntheticSpec("mag-small"), seed, threads);
}

const Relation& Rel(const HeteroDataset& d, const std::string& key) {
  for (const auto& r : d.relations) {
    if (r.Key() == key) return r;
  }
  FAIL("no relation " << key);
  return d.relations.front();
}

// How often the papers joined to one node (a field of study, an author)
// share a label: the largest label's share among each node's papers,
// averaged over nodes with at least `min_papers` (group by the relation's
// source when `by_src`, else its destination; papers at the other end).
struct Purity {
  double mean = 0;
  int groups = 0;
};
Purity LabelPurity(const Relation& r, const std::vector<int64_t>& labels, int64_t num_groups,
                   bool by_src, int64_t min_papers) {
  std::vector<std::map<int64_t, int64_t>> counts(static_cast<size_t>(num_groups));
  for (int64_t i = 0; i < r.num_edges(); ++i) {
    const int64_t group = by_src ? r.src[i] : r.dst[i];
    ++counts[group][labels[by_src ? r.dst[i] : r.src[i]]];
  }
  Purity p;
  double sum = 0;
  for (const auto& c : counts) {
    int64_t total = 0, best = 0;
    for (const auto& [label, n] : c) total += n, best = std::max(best, n);
    if (total < min_papers) continue;
    sum += static_cast<double>(best) / total;
    ++p.groups;
  }
  p.mean = p.groups ? sum / p.groups : 0;
  return p;
}

void RequireEqual(const HeteroDataset& a, const HeteroDataset& b) {
  REQUIRE(a.node_types.size() == b.node_types.size());
  for (size_t t = 0; t < a.node_types.size(); ++t) {
    INFO(a.node_types[t].name);
    CHECK(a.node_types[t].name == b.node_types[t].name);
    CHECK(a.node_types[t].num_nodes == b.node_types[t].num_nodes);
    CHECK(a.node_types[t].feature_dim == b.node_types[t].feature_dim);
    CHECK(a.node_types[t].features == b.node_types[t].features);
  }
  REQUIRE(a.relations.size() == b.relations.size());
  for (size_t r = 0; r < a.relations.size(); ++r) {
    INFO(a.relations[r].Key());
    CHECK(a.relations[r].Key() == b.relations[r].Key());
    CHECK(a.relations[r].src == b.relations[r].src);
    CHECK(a.relations[r].dst == b.relations[r].dst);
  }
  CHECK(a.target == b.target);
  CHECK(a.labels == b.labels);
  CHECK(a.num_classes == b.num_classes);
  CHECK(a.train_idx == b.train_idx);
  CHECK(a.valid_idx == b.valid_idx);
  CHECK(a.test_idx == b.test_idx);
}

}  // namespace

TEST_CASE("synthetic:mag-small has ogbn-mag's shape at 1/100, the same bytes on any thread count",
          "[unit]") {
  const HeteroDataset d = MagSmall(1);
  CHECK_NOTHROW(d.Validate());
  CHECK(d.name == "synthetic-mag-small");
  CHECK(d.target == "paper");
  CHECK(d.num_classes == 16);
  const std::map<std::string, int64_t> nodes = {
      {"author", 11346}, {"field_of_study", 600}, {"institution", 87}, {"paper", 7364}};
  for (const auto& t : d.node_types) {
    CHECK(t.num_nodes == nodes.at(t.name));
    CHECK(t.feature_dim == (t.name == "paper" ? 64 : 0));
  }
  CHECK(Rel(d, "author:affiliated_with:institution").num_edges() == 10440);
  CHECK(Rel(d, "author:writes:paper").num_edges() == 71457);
  CHECK(Rel(d, "paper:cites:paper").num_edges() == 54163);
  CHECK(Rel(d, "paper:has_topic:field_of_study").num_edges() == 75051);
  // ogbn-mag's split fractions (629,571 / 64,879 / 41,939 of 736,389).
  CHECK(d.train_idx.size() == 6296);
  CHECK(d.valid_idx.size() == 649);
  CHECK(d.test_idx.size() == 419);
  // Unique edges, no paper citing itself.
  for (const auto& r : d.relations) {
    INFO(r.Key());
    std::vector<std::pair<int64_t, int64_t>> e;
    for (int64_t i = 0; i < r.num_edges(); ++i) e.push_back({r.src[i], r.dst[i]});
    std::sort(e.begin(), e.end());
    CHECK(std::adjacent_find(e.begin(), e.end()) == e.end());
    if (r.src_type == r.dst_type) {
      for (const auto& [u, v] : e) REQUIRE(u != v);
    }
  }
  RequireEqual(d, MagSmall(2));
  RequireEqual(d, MagSmall(3));
  CHECK(MagSmall(1, 7).labels != d.labels);
}

TEST_CASE("synthetic:mag-small plants its class signal in relations, weakly in features",
          "[unit]") {
  const HeteroDataset d = MagSmall(0);
  // Citations mostly join papers of one label (random: 1/16).
  const Relation& cites = Rel(d, "paper:cites:paper");
  int64_t same = 0;
  for (int64_t i = 0; i < cites.num_edges(); ++i)
    same += d.labels[cites.src[i]] == d.labels[cites.dst[i]];
  const double homophily = static_cast<double>(same) / cites.num_edges();
  CHECK(homophily > 0.5);
  // A field of study's papers mostly share a label: a learnable embedding
  // of the field carries the class.
  const Purity fields =
      LabelPurity(Rel(d, "paper:has_topic:field_of_study"), d.labels, 600, false, 20);
  REQUIRE(fields.groups > 100);
  CHECK(fields.mean > 0.5);
  // Writers: an author's papers mostly share a label too.
  const Purity authors = LabelPurity(Rel(d, "author:writes:paper"), d.labels, 11346, true, 10);
  REQUIRE(authors.groups > 50);
  CHECK(authors.mean > 0.5);
  WARN("mag-small: citation homophily " << homophily << ", field purity " << fields.mean
                                        << ", author purity " << authors.mean);
}

TEST_CASE("a heterogeneous dataset's type and relation names are safe for file names", "[unit]") {
  HeteroDataset d = MagSmall(0);
  d.node_types[0].name = " author";
  CHECK_THROWS_WITH(d.Validate(), Catch::Contains("node type ' author'"));
  d = MagSmall(0);
  d.relations[0].name = "a:b";
  CHECK_THROWS_WITH(d.Validate(), Catch::Contains("relation 'a:b'"));
  d = MagSmall(0);
  d.relations.clear();
  CHECK_THROWS_WITH(d.Validate(), Catch::Contains("no relations"));
}

TEST_CASE("reverse relations are DGL's rev- relations with the edges turned around", "[unit]") {
  HeteroDataset d = MagSmall(0);
  const HeteroDataset before = d;
  AddReverseRelations(&d);
  CHECK_NOTHROW(d.Validate());
  REQUIRE(d.relations.size() == 8);
  CHECK(d.num_edges() == 2 * before.num_edges());
  const Relation& rev = Rel(d, "paper:rev-writes:author");
  const Relation& fwd = Rel(d, "author:writes:paper");
  CHECK(rev.src == fwd.dst);
  CHECK(rev.dst == fwd.src);
  CHECK_NOTHROW(Rel(d, "paper:rev-cites:paper"));
}

TEST_CASE("OGB's heterogeneous raw layout: written and read back, broken folders named", "[unit]") {
  test::TempDir dir;
  const HeteroDataset d = MagSmall(0);
  const std::string folder = dir / "synthetic_mag_small";
  WriteOgbHeteroFolder(d, folder, "random");
  for (const char* f :
       {"raw/num-node-dict.csv.gz", "raw/triplet-type-list.csv.gz",
        "raw/relations/author___writes___paper/edge.csv.gz",
        "raw/relations/author___writes___paper/num-edge-list.csv.gz",
        "raw/relations/author___writes___paper/edge_reltype.csv.gz",
        "raw/node-feat/paper/node-feat.csv.gz", "raw/node-label/paper/node-label.csv.gz",
        "raw/nodetype-has-label.csv.gz", "split/random/paper/train.csv.gz",
        "split/random/nodetype-has-split.csv.gz"}) {
    INFO(f);
    CHECK(fs::exists(fs::path(folder) / f));
  }
  CHECK_FALSE(fs::exists(fs::path(folder) / "raw/node-feat/author"));
  DatasetOptions o;
  o.dataset = folder;
  REQUIRE(IsHeteroDataset(o));
  HeteroDataset back = LoadHeteroDataset(o);
  CHECK(back.name == "synthetic-mag-small");
  RequireEqual(d, back);
  // The homogeneous loader says what the folder is instead of failing on it.
  CHECK_THROWS_WITH(LoadDataset(o), Catch::Contains("heterogeneous"));

  SECTION("a missing relation folder is named") {
    fs::remove_all(fs::path(folder) / "raw/relations/paper___cites___paper");
    CHECK_THROWS_WITH(LoadHeteroDataset(o), Catch::Contains("paper___cites___paper") &&
                                                Catch::Contains("num-edge-list.csv.gz"));
  }
  SECTION("an edge to a node that does not exist is named with its line") {
    test::WriteGz(folder + "/raw/relations/author___affiliated_with___institution/edge.csv.gz",
                  "0,1\n5,87\n");
    test::WriteGz(
        folder + "/raw/relations/author___affiliated_with___institution/num-edge-list.csv.gz",
        "2\n");
    CHECK_THROWS_WITH(LoadHeteroDataset(o),
                      Catch::Contains("edge.csv.gz:2") && Catch::Contains("outside [0, 87)"));
  }
  SECTION("a relation of an unknown type is refused") {
    test::WriteGz(folder + "/raw/triplet-type-list.csv.gz", "paper,cites,venue\n");
    CHECK_THROWS_WITH(LoadHeteroDataset(o), Catch::Contains("paper:cites:venue"));
  }
  SECTION("a bad node count is named") {
    test::WriteGz(folder + "/raw/num-node-dict.csv.gz",
                  "author,field_of_study,institution,paper\n11346,600,-3,7364\n");
    CHECK_THROWS_WITH(LoadHeteroDataset(o), Catch::Contains("count of institution"));
  }
}

TEST_CASE("synthetic heterogeneous presets: unknown names are one clear error", "[unit]") {
  CHECK(IsHeteroSyntheticPreset("mag"));
  CHECK_FALSE(IsHeteroSyntheticPreset("small"));
  CHECK_THROWS_WITH(ParseHeteroSyntheticSpec("mag-huge"), Catch::Contains("mag, mag-small"));
  const HeteroSyntheticSpec mag = ParseHeteroSyntheticSpec("mag");
  int64_t nodes = 0, edges = 0;
  for (const auto& t : mag.types) nodes += t.num_nodes;
  for (const auto& r : mag.relations) edges += r.num_edges;
  CHECK(nodes == 1939743);
  CHECK(edges == 21111007);
  CHECK(mag.num_classes == 349);
}

TEST_CASE("a heterogeneous partition config is checked: per-type ranges, type names, target",
          "[unit]") {
  test::TempDir dir;
  PartitionOptions o;
  o.data.dataset = "synthetic:mag-small";
  o.num_parts = 2;
  o.output = dir / "out";
  o.undirected = true;
  const PartitionResult r = RunPartition(o);
  const std::string text = ReadFile(r.config_path);
  const PartitionConfig c = ParsePartitionConfigText(text, dir / "out", r.config_path);
  REQUIRE(c.hetero());
  CHECK(c.PartFileNames() ==
        std::vector<std::string>{"indptr.npy", "indices.npy", "etype.npy", "orig_nids.npy",
                                 "paper-feat.npy", "paper-label.npy", "paper-train_mask.npy",
                                 "paper-valid_mask.npy", "paper-test_mask.npy"});
  // Every type's ranges, partition after partition, cover the ids once.
  int64_t covered = 0;
  for (const auto& p : c.parts) {
    REQUIRE(p.ntype_ranges.size() == 4);
    for (const auto& [s, e] : p.ntype_ranges) covered += e - s;
    int64_t stored = 0;
    for (int64_t k : p.etype_edges) stored += k;
    CHECK(stored == p.num_edges());
  }
  CHECK(covered == 19397);

  auto error_of = [&](const std::function<void(nlohmann::json&)>& mutate) {
    nlohmann::json j = nlohmann::json::parse(text);
    mutate(j);
    try {
      ParsePartitionConfig(j, dir / "out", "mag.json");
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("parsed");
  };
  CHECK_THAT(error_of([](nlohmann::json& j) {
               std::swap(j["node_map"]["author"][0][1], j["node_map"]["author"][1][1]);
             }),
             Catch::Contains("node_map") && Catch::Contains("contiguous"));
  CHECK_THAT(error_of([](nlohmann::json& j) { j["target_ntype"] = "venue"; }),
             Catch::Contains("'venue' is not a node type"));
  CHECK_THAT(error_of([](nlohmann::json& j) {
               j["ntypes"]["../x"] = j["ntypes"]["author"];
               j["ntypes"].erase("author");
             }),
             Catch::Contains("node type '../x'"));
  CHECK_THAT(error_of([](nlohmann::json& j) { j["part-1"]["files"].erase("etype.npy"); }),
             Catch::Contains("etype.npy"));
  CHECK_THAT(error_of([](nlohmann::json& j) { j["etypes"]["paper:cites:paper"] = 0; }),
             Catch::Contains("index given twice"));
  CHECK_THAT(error_of([](nlohmann::json& j) {
               j["etypes"]["paper:cites:venue"] = j["etypes"]["paper:cites:paper"];
               j["etypes"].erase("paper:cites:paper");
             }),
             Catch::Contains("'paper:cites:venue' is not src:rel:dst"));
  CHECK_THAT(error_of([](nlohmann::json& j) { j.erase("target_ntype"); }),
             Catch::Contains("need a target_ntype"));
}

}  // namespace gnn
