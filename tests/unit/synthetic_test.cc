// Tests for synthetic: datasets: spec parsing, determinism, graph invariants
// and the statistical properties the generator promises (power-law-ish
// degrees, homophily, a neighbour signal that a per-node model cannot use).
#include "graph/synthetic.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "graph/dataset.h"

namespace gnn {
namespace {

// Spec of a ~20K-node graph: several node, feature and edge chunks, so the
// multi-threaded paths really split work.
constexpr const char* kMediumSpec = "nodes=20000,edges=100000,feat=16,classes=4";

// Returns the ConfigError message for `spec`, failing if it parses.
std::string ConfigErrorOf(const std::string& spec) {
  try {
    ParseSyntheticSpec(spec);
  } catch (const ConfigError& e) {
    return e.what();
  }
  FAIL("'" << spec << "' parsed without a ConfigError");
  return "";
}

std::vector<int64_t> Degrees(const Dataset& d) {
  std::vector<int64_t> degree(d.num_nodes, 0);
  for (int64_t i = 0; i < d.num_edges(); ++i) {
    ++degree[d.src[i]];
    ++degree[d.dst[i]];
  }
  return degree;
}

// Checks every promise of GenerateSynthetic about the shape of its output.
void CheckInvariants(const SyntheticSpec& spec, const Dataset& d) {
  REQUIRE_NOTHROW(d.Validate());
  CHECK(d.name == spec.name);
  CHECK(d.known_undirected());
  CHECK(d.num_nodes == spec.num_nodes);
  CHECK(d.feature_dim == spec.feature_dim);
  CHECK(d.num_classes == spec.num_classes);
  REQUIRE(d.num_edges() == spec.num_edges);
  REQUIRE(d.features.size() == static_cast<size_t>(spec.num_nodes * spec.feature_dim));
  CHECK(
      std::all_of(d.features.begin(), d.features.end(), [](float x) { return std::isfinite(x); }));

  std::vector<uint64_t> keys(d.num_edges());
  for (int64_t i = 0; i < d.num_edges(); ++i) {
    REQUIRE(0 <= d.src[i]);
    REQUIRE(d.src[i] < d.dst[i]);  // also rules out self-loops
    REQUIRE(d.dst[i] < d.num_nodes);
    keys[i] = static_cast<uint64_t>(d.src[i]) * d.num_nodes + d.dst[i];
  }
  std::sort(keys.begin(), keys.end());
  CHECK(std::adjacent_find(keys.begin(), keys.end()) == keys.end());

  std::vector<int64_t> per_class(spec.num_classes, 0);
  for (int64_t l : d.labels) {
    REQUIRE(0 <= l);
    REQUIRE(l < spec.num_classes);
    ++per_class[l];
  }
  if (spec.num_nodes >= 100 * spec.num_classes) {
    CHECK(*std::min_element(per_class.begin(), per_class.end()) > 0);
  }

  const int64_t n = spec.num_nodes;
  CHECK(static_cast<int64_t>(d.train_idx.size()) == std::llround(spec.train_fraction * n));
  CHECK(static_cast<int64_t>(d.valid_idx.size()) == std::llround(spec.valid_fraction * n));
  CHECK(static_cast<int64_t>(d.train_idx.size() + d.valid_idx.size() + d.test_idx.size()) == n);
  std::vector<int> seen(n, 0);
  for (const auto* split : {&d.train_idx, &d.valid_idx, &d.test_idx}) {
    CHECK(std::is_sorted(split->begin(), split->end()));
    for (int64_t v : *split) ++seen[v];
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
}

// Nearest-centroid accuracy on the test split, centroids from the train
// split, for per-node vectors x (row-major [N, dim]).
double NearestCentroidAccuracy(const Dataset& d, const std::vector<double>& x, int64_t dim) {
  const int64_t classes = d.num_classes;
  std::vector<double> centroid(classes * dim, 0.0);
  std::vector<int64_t> count(classes, 0);
  for (int64_t v : d.train_idx) {
    ++count[d.labels[v]];
    for (int64_t j = 0; j < dim; ++j) centroid[d.labels[v] * dim + j] += x[v * dim + j];
  }
  for (int64_t c = 0; c < classes; ++c) {
    for (int64_t j = 0; j < dim; ++j) centroid[c * dim + j] /= std::max<int64_t>(count[c], 1);
  }
  int64_t correct = 0;
  for (int64_t v : d.test_idx) {
    int64_t best = -1;
    double best_distance = 0;
    for (int64_t c = 0; c < classes; ++c) {
      double distance = 0;
      for (int64_t j = 0; j < dim; ++j) {
        double diff = x[v * dim + j] - centroid[c * dim + j];
        distance += diff * diff;
      }
      if (best < 0 || distance < best_distance) {
        best = c;
        best_distance = distance;
      }
    }
    correct += best == d.labels[v];
  }
  return static_cast<double>(correct) / d.test_idx.size();
}

TEST_CASE("ParseSyntheticSpec knows the presets", "[unit]") {
  SyntheticSpec tiny = ParseSyntheticSpec("tiny");
  CHECK(tiny.name == "synthetic-tiny");
  CHECK(tiny.num_nodes == 2000);
  CHECK(tiny.num_edges == 10000);
  CHECK(tiny.feature_dim == 16);
  CHECK(tiny.num_classes == 4);
  CHECK(tiny.train_fraction == Approx(0.2));
  CHECK(tiny.valid_fraction == Approx(0.1));

  SyntheticSpec small = ParseSyntheticSpec("small");
  CHECK(small.name == "synthetic-small");
  CHECK(small.num_nodes == 100000);
  CHECK(small.num_edges == 1000000);
  CHECK(small.feature_dim == 32);
  CHECK(small.num_classes == 8);
  CHECK(small.train_fraction == Approx(0.1));
  CHECK(small.valid_fraction == Approx(0.05));

  SyntheticSpec products = ParseSyntheticSpec("products");
  CHECK(products.name == "synthetic-products");
  CHECK(products.num_nodes == 2449029);
  CHECK(products.num_edges == 61859140);
  CHECK(products.feature_dim == 100);
  CHECK(products.num_classes == 47);
  CHECK(products.train_fraction == Approx(0.0803));
  CHECK(products.valid_fraction == Approx(0.0161));
}

TEST_CASE("ParseSyntheticSpec reads a custom key=value spec", "[unit]") {
  SyntheticSpec s = ParseSyntheticSpec("nodes=500,edges=2000,feat=8,classes=3");
  CHECK(s.name == "synthetic-n500-e2000");
  CHECK(s.num_nodes == 500);
  CHECK(s.num_edges == 2000);
  CHECK(s.feature_dim == 8);
  CHECK(s.num_classes == 3);
  CHECK(s.train_fraction == Approx(0.1));
  CHECK(s.valid_fraction == Approx(0.05));

  s = ParseSyntheticSpec("classes=2,valid=0.25,feat=1,train=0.5,edges=45,nodes=10");
  CHECK(s.name == "synthetic-n10-e45");
  CHECK(s.num_edges == 45);  // exactly the complete graph is allowed
  CHECK(s.train_fraction == Approx(0.5));
  CHECK(s.valid_fraction == Approx(0.25));

  s = ParseSyntheticSpec("nodes=10,edges=5,feat=2,classes=2,train=0.6,valid=0.4");
  CHECK(s.train_fraction + s.valid_fraction == Approx(1.0));
}

TEST_CASE("ParseSyntheticSpec rejects bad specs with one clear line", "[unit]") {
  const std::string ok = "nodes=10,edges=5,feat=2,classes=2";
  struct Case {
    std::string spec;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"huge",
       "unknown synthetic preset 'huge' (known: tiny, small, products, proteins, "
       "proteins-small, bow, bow-small, edges, edges-small, or nodes=N,edges=E,feat=F,classes=C)"},
      {ok + ",etask=rank", "etask must be class or regression, got 'rank'"},
      {"", "unknown synthetic preset ''"},
      {"Tiny", "unknown synthetic preset 'Tiny'"},
      {ok + ",color=3", "unknown key 'color'"},
      {ok + ",nodes=10", "key 'nodes' given twice"},
      {ok + ",,train=0.1", "item '' is not key=value"},
      {ok + ",train", "item 'train' is not key=value"},
      {"nodes=10,edges=5,feat=2", "missing classes="},
      {"edges=5,feat=2,classes=2", "missing nodes="},
      {"nodes=abc,edges=5,feat=2,classes=2", "nodes must be a positive integer, got 'abc'"},
      {"nodes=10x,edges=5,feat=2,classes=2", "nodes must be a positive integer, got '10x'"},
      {"nodes=,edges=5,feat=2,classes=2", "nodes must be a positive integer, got ''"},
      {"nodes=1.5,edges=5,feat=2,classes=2", "nodes must be a positive integer"},
      {"nodes=0,edges=5,feat=2,classes=2", "nodes must be a positive integer, got '0'"},
      {"nodes=-3,edges=5,feat=2,classes=2", "nodes must be a positive integer, got '-3'"},
      {"nodes=10,edges=0,feat=2,classes=2", "edges must be a positive integer, got '0'"},
      {"nodes=10,edges=5,feat=0,classes=2", "feat must be a positive integer, got '0'"},
      {"nodes=10,edges=5,feat=2,classes=-1", "classes must be a positive integer, got '-1'"},
      {"nodes=99999999999999999999,edges=5,feat=2,classes=2", "nodes must be a positive integer"},
      {"nodes=3000000000,edges=5,feat=2,classes=2", "nodes=3000000000 exceeds the maximum"},
      {"nodes=2000000000,edges=5,feat=1000,classes=2", "feature values is too many"},
      {"nodes=10,edges=46,feat=2,classes=2", "edges=46 exceeds nodes*(nodes-1)/2 = 45"},
      {"nodes=1,edges=1,feat=2,classes=2", "edges=1 exceeds nodes*(nodes-1)/2 = 0"},
      {ok + ",train=0", "train must be in (0, 1]"},
      {ok + ",train=1.5", "train must be a fraction in [0, 1], got '1.5'"},
      {ok + ",train=-0.1", "train must be a fraction in [0, 1]"},
      {ok + ",valid=abc", "valid must be a fraction in [0, 1], got 'abc'"},
      {ok + ",valid=nan", "valid must be a fraction in [0, 1]"},
      {ok + ",train=0.7,valid=0.4", "train + valid must not exceed 1"},
  };
  for (const Case& c : cases) {
    INFO("spec '" << c.spec << "'");
    std::string message = ConfigErrorOf(c.spec);
    CHECK_THAT(message, Catch::Contains(c.expected));
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("GenerateSynthetic rejects an invalid hand-built spec", "[unit]") {
  SyntheticSpec spec = ParseSyntheticSpec("tiny");
  spec.num_edges = spec.num_nodes * (spec.num_nodes - 1) / 2 + 1;
  CHECK_THROWS_AS(GenerateSynthetic(spec, 1, 1), ConfigError);
  spec = ParseSyntheticSpec("tiny");
  spec.num_classes = 0;
  CHECK_THROWS_AS(GenerateSynthetic(spec, 1, 1), ConfigError);
}

TEST_CASE("GenerateSynthetic is deterministic and thread-count independent", "[unit]") {
  const SyntheticSpec spec = ParseSyntheticSpec(kMediumSpec);
  const Dataset one = GenerateSynthetic(spec, 42, 1);
  for (int threads : {2, 3, 0}) {
    INFO("num_threads " << threads);
    const Dataset other = GenerateSynthetic(spec, 42, threads);
    CHECK(other.src == one.src);
    CHECK(other.dst == one.dst);
    CHECK(other.labels == one.labels);
    CHECK(other.features == one.features);
    CHECK(other.train_idx == one.train_idx);
    CHECK(other.valid_idx == one.valid_idx);
    CHECK(other.test_idx == one.test_idx);
  }
  const Dataset reseeded = GenerateSynthetic(spec, 43, 2);
  CHECK(reseeded.num_edges() == one.num_edges());
  CHECK(reseeded.src != one.src);
  CHECK(reseeded.dst != one.dst);
  CHECK(reseeded.labels != one.labels);
  CHECK(reseeded.features != one.features);
  CHECK(reseeded.train_idx != one.train_idx);
}

TEST_CASE("GenerateSynthetic output satisfies every invariant", "[unit]") {
  for (const char* text : {"tiny", "small", kMediumSpec}) {
    INFO("spec " << text);
    const SyntheticSpec spec = ParseSyntheticSpec(text);
    CheckInvariants(spec, GenerateSynthetic(spec, 7, 2));
  }
}

TEST_CASE("GenerateSynthetic handles tiny and nearly complete graphs", "[unit]") {
  for (const char* text : {
           "nodes=2,edges=1,feat=1,classes=1",
           "nodes=3,edges=3,feat=3,classes=5",          // more classes than nodes
           "nodes=10,edges=45,feat=2,classes=2",        // the complete graph
           "nodes=100,edges=4900,feat=4,classes=3",     // 99% of all pairs
           "nodes=1000,edges=450000,feat=4,classes=3",  // 90% of all pairs
       }) {
    INFO("spec " << text);
    const SyntheticSpec spec = ParseSyntheticSpec(text);
    const Dataset d = GenerateSynthetic(spec, 3, 2);
    CheckInvariants(spec, d);
    CHECK(GenerateSynthetic(spec, 3, 1).src == d.src);
  }
}

TEST_CASE("GenerateSynthetic splits follow the requested fractions", "[unit]") {
  const SyntheticSpec spec =
      ParseSyntheticSpec("nodes=1001,edges=3000,feat=2,classes=2,train=0.5,valid=0.5");
  const Dataset d = GenerateSynthetic(spec, 5, 2);
  CHECK(d.train_idx.size() + d.valid_idx.size() == 1001);
  CHECK(d.test_idx.empty());
  REQUIRE_NOTHROW(d.Validate());
}

TEST_CASE("GenerateSynthetic degrees have a heavy tail", "[unit]") {
  for (const char* text : {"tiny", kMediumSpec}) {
    INFO("spec " << text);
    const Dataset d = GenerateSynthetic(ParseSyntheticSpec(text), 11, 2);
    std::vector<int64_t> degree = Degrees(d);
    const double mean = 2.0 * d.num_edges() / d.num_nodes;
    std::sort(degree.begin(), degree.end());
    const int64_t max_degree = degree.back();
    const int64_t median = degree[degree.size() / 2];
    INFO("mean " << mean << " median " << median << " max " << max_degree);
    CHECK(max_degree > 15 * mean);
    CHECK(median < mean);  // right-skewed, unlike an Erdos-Renyi graph
  }
}

TEST_CASE("GenerateSynthetic edges are homophilous", "[unit]") {
  for (const char* text : {"tiny", kMediumSpec}) {
    INFO("spec " << text);
    const Dataset d = GenerateSynthetic(ParseSyntheticSpec(text), 13, 2);
    int64_t same = 0;
    for (int64_t i = 0; i < d.num_edges(); ++i) same += d.labels[d.src[i]] == d.labels[d.dst[i]];
    const double homophily = static_cast<double>(same) / d.num_edges();
    INFO("homophily " << homophily << " with " << d.num_classes << " classes");
    CHECK(homophily > 0.5);
  }
}

TEST_CASE("GenerateSynthetic neighbours carry label signal beyond own features", "[unit]") {
  for (const char* text : {"tiny", kMediumSpec}) {
    INFO("spec " << text);
    const Dataset d = GenerateSynthetic(ParseSyntheticSpec(text), 17, 2);
    const int64_t n = d.num_nodes, f = d.feature_dim;
    std::vector<double> own(d.features.begin(), d.features.end());
    // GCN-style aggregation: mean over the node and its neighbours.
    std::vector<double> mixed(own);
    for (int64_t i = 0; i < d.num_edges(); ++i) {
      const int64_t a = d.src[i], b = d.dst[i];
      for (int64_t j = 0; j < f; ++j) {
        mixed[a * f + j] += own[b * f + j];
        mixed[b * f + j] += own[a * f + j];
      }
    }
    const std::vector<int64_t> degree = Degrees(d);
    for (int64_t v = 0; v < n; ++v) {
      for (int64_t j = 0; j < f; ++j) mixed[v * f + j] /= degree[v] + 1;
    }
    const double own_accuracy = NearestCentroidAccuracy(d, own, f);
    const double mixed_accuracy = NearestCentroidAccuracy(d, mixed, f);
    INFO("own-feature accuracy " << own_accuracy << ", with neighbours " << mixed_accuracy);
    // Own features are informative but far from enough...
    CHECK(own_accuracy > 1.0 / d.num_classes + 0.1);
    CHECK(own_accuracy < 0.7);
    // ...and neighbours add a clear margin.
    CHECK(mixed_accuracy > own_accuracy + 0.1);
  }
}

TEST_CASE("GenerateSynthetic products preset has the ogbn-products shape", "[unit][slow]") {
  const SyntheticSpec spec = ParseSyntheticSpec("products");
  const Dataset d = GenerateSynthetic(spec, 0, 0);
  REQUIRE_NOTHROW(d.Validate());
  REQUIRE(d.num_edges() == 61859140);
  CHECK(d.num_nodes == 2449029);
  CHECK(d.features.size() == static_cast<size_t>(2449029) * 100);
  CHECK(d.train_idx.size() == static_cast<size_t>(std::llround(0.0803 * 2449029)));
  CHECK(d.valid_idx.size() == static_cast<size_t>(std::llround(0.0161 * 2449029)));
  int64_t not_upper = 0;
  for (int64_t i = 0; i < d.num_edges(); ++i) not_upper += d.src[i] >= d.dst[i];
  CHECK(not_upper == 0);
  std::vector<uint64_t> keys(d.num_edges());
  for (int64_t i = 0; i < d.num_edges(); ++i) {
    keys[i] = static_cast<uint64_t>(d.src[i]) * d.num_nodes + d.dst[i];
  }
  std::sort(keys.begin(), keys.end());
  CHECK(std::adjacent_find(keys.begin(), keys.end()) == keys.end());
}

}  // namespace
}  // namespace gnn

namespace gnn {
namespace {

TEST_CASE("proteins-small has ogbn-proteins' shape: edge features only, 112 labels, species",
          "[unit]") {
  const SyntheticSpec spec = ParseSyntheticSpec("proteins-small");
  CHECK(spec.proteins);
  const Dataset d = GenerateSynthetic(spec, 7, 2);
  d.Validate();
  CHECK(d.feature_dim == 0);
  CHECK(d.features.empty());
  CHECK(d.edge_feature_dim == 8);
  CHECK(d.num_edges() == 300000);
  REQUIRE(d.label_kind == LabelKind::kMultilabel);
  CHECK(d.label_width == 112);
  CHECK(d.num_classes == 112);
  CHECK(d.labels.empty());
  for (float f : d.edge_features) REQUIRE((f >= 0 && f < 1));
  // Species: 8 blocks of consecutive ids, 5 train, 1 valid, 2 test.
  CHECK(d.train_idx.size() == 3750);
  CHECK(d.valid_idx.size() == 750);
  CHECK(d.test_idx.size() == 1500);
  CHECK(d.train_idx.back() < d.valid_idx.front());
  CHECK(d.valid_idx.back() < d.test_idx.front());
  // Every label has both classes, and the same seed gives the same bytes.
  for (int64_t j = 0; j < d.label_width; ++j) {
    int64_t ones = 0;
    for (int64_t v = 0; v < d.num_nodes; ++v) ones += d.targets[v * d.label_width + j] > 0.5f;
    REQUIRE(ones > 0);
    REQUIRE(ones < d.num_nodes);
  }
  const Dataset again = GenerateSynthetic(spec, 7, 1);
  CHECK(again.targets == d.targets);
  CHECK(again.edge_features == d.edge_features);
  CHECK(again.src == d.src);
  // Multi-label and regression keys of a custom spec.
  const SyntheticSpec ml =
      ParseSyntheticSpec("nodes=100,edges=300,feat=4,classes=3,task=multilabel");
  CHECK(ml.label_kind == LabelKind::kMultilabel);
  CHECK(ml.label_width == 3);
  const SyntheticSpec rg =
      ParseSyntheticSpec("nodes=100,edges=300,feat=4,classes=3,task=regression,labels=2");
  CHECK(rg.label_kind == LabelKind::kRegression);
  CHECK(rg.label_width == 2);
  CHECK_THAT(ConfigErrorOf("nodes=100,edges=300,feat=4,classes=3,labels=2"),
             Catch::Contains("labels= needs task=multilabel or task=regression"));
  CHECK_THAT(ConfigErrorOf("nodes=100,edges=300,feat=4,classes=3,task=ranking"),
             Catch::Contains("task must be class, multilabel or regression"));
}

TEST_CASE("etask= labels every edge from both ends' hidden classes, with a split", "[unit]") {
  const SyntheticSpec spec =
      ParseSyntheticSpec("nodes=300,edges=2000,feat=4,classes=4,etask=class");
  CHECK(spec.edge_labels);
  CHECK(ParseSyntheticSpec("edges-small").edge_labels);
  const Dataset d = GenerateSynthetic(spec, 7, 2);
  REQUIRE(d.edge_labeled());
  CHECK(d.num_edge_classes == 4);
  REQUIRE(d.edge_labels.size() == d.src.size());
  int64_t follows = 0, split[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < d.src.size(); ++i) {
    follows += d.edge_labels[i] == (d.labels[d.src[i]] % 2) * 2 + d.labels[d.dst[i]] % 2;
    ++split[d.edge_split[i]];
  }
  // One in ten is redrawn uniformly (and a quarter of those land right).
  CHECK(static_cast<double>(follows) / d.src.size() > 0.85);
  CHECK(split[0] == 0);
  CHECK(split[1] > split[2]);
  CHECK(split[2] > 0);
  CHECK(split[3] > 0);
  // Same bytes for any thread count.
  CHECK(GenerateSynthetic(spec, 7, 1).edge_labels == d.edge_labels);
  const Dataset r = GenerateSynthetic(
      ParseSyntheticSpec("nodes=300,edges=2000,feat=4,classes=4,etask=regression"), 7, 2);
  CHECK(r.edge_label_kind == LabelKind::kRegression);
  CHECK(r.edge_targets.size() == r.src.size());
  CHECK(r.edge_labels.empty());
}

}  // namespace
}  // namespace gnn
