#include "graph/synthetic_hetero.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <thread>

#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/timer.h"
#include "graph/synthetic_kit.h"

namespace gnn {

namespace {

// Model constants (changing one changes every generated dataset).
constexpr double kIntraClass = 0.8;      // an edge's destination shares its source's class
constexpr double kLabelFidelity = 0.85;  // a paper's label is its class
constexpr int64_t kNodeChunk = 1 << 14;  // nodes per random stream
constexpr int64_t kEdgeChunk = 1 << 16;  // edges per random stream
constexpr int kMaxRounds = 8;            // sampling rounds to reach a relation's edge count
constexpr int64_t kMaxTypeNodes = (int64_t{1} << 32) - 1;  // node ids travel as uint32

// One tag per use of randomness (disjoint from the homogeneous generator's).
enum Stream : uint64_t {
  kClass = 101,
  kWeight,
  kLabel,
  kCentroid,
  kFeature,
  kSplit,
  kEdge,
  kKeep,
  kEdgeFeature,
  kEdgeLabel,
};

// A node type's home classes and the alias tables to draw its nodes:
// over all nodes by weight, and within each class.
struct TypeModel {
  int64_t n = 0;
  std::vector<int64_t> cls;                    // [n]
  std::vector<uint32_t> threshold, alias;      // [n] over all nodes
  std::vector<int64_t> offsets;                // [C + 1] into members
  std::vector<uint32_t> members;               // [n] node ids grouped by class
  std::vector<uint32_t> m_threshold, m_alias;  // [n] per class segment (segment-local)

  uint32_t Draw(uint64_t r) const {
    const uint32_t i = SlotIndex(r, static_cast<uint32_t>(n));
    return static_cast<uint32_t>(r) < threshold[i] ? i : alias[i];
  }
  uint32_t DrawInClass(int64_t c, uint64_t r) const {
    const int64_t begin = offsets[c], len = offsets[c + 1] - begin;
    if (len == 0) return Draw(r);
    const uint32_t k = SlotIndex(r, static_cast<uint32_t>(len));
    const uint32_t j = static_cast<uint32_t>(r) < m_threshold[begin + k] ? k : m_alias[begin + k];
    return members[begin + j];
  }
};

TypeModel BuildType(int64_t n, int64_t classes, uint64_t seed, uint64_t type, int threads) {
  TypeModel t;
  t.n = n;
  t.cls.resize(n);
  std::vector<double> weight(n);
  const uint64_t base = type << 40;
  ParallelChunks(NumChunks(n, kNodeChunk), threads, [&](int64_t c) {
    Rng class_rng(StreamSeed(seed, kClass, base + c));
    Rng weight_rng(StreamSeed(seed, kWeight, base + c));
    for (int64_t v = c * kNodeChunk, end = std::min(n, v + kNodeChunk); v < end; ++v) {
      t.cls[v] = class_rng.Below(static_cast<uint64_t>(classes));
      weight[v] = PowerLawWeight(weight_rng.Uniform(), kMaxWeight);
    }
  });
  AliasBuilder alias;
  alias.Build(weight.data(), static_cast<uint32_t>(n));
  t.threshold.resize(n);
  t.alias.resize(n);
  for (uint32_t i = 0; i < static_cast<uint32_t>(n); ++i) {
    t.threshold[i] = alias.threshold(i);
    t.alias[i] = alias.alias(i);
  }
  t.offsets.assign(classes + 1, 0);
  for (int64_t v = 0; v < n; ++v) ++t.offsets[t.cls[v] + 1];
  for (int64_t c = 0; c < classes; ++c) t.offsets[c + 1] += t.offsets[c];
  t.members.resize(n);
  std::vector<int64_t> fill(t.offsets.begin(), t.offsets.end() - 1);
  for (int64_t v = 0; v < n; ++v) t.members[fill[t.cls[v]]++] = static_cast<uint32_t>(v);
  t.m_threshold.resize(n);
  t.m_alias.resize(n);
  std::vector<double> w;
  for (int64_t c = 0; c < classes; ++c) {
    const int64_t begin = t.offsets[c], len = t.offsets[c + 1] - begin;
    if (len == 0) continue;
    w.resize(len);
    for (int64_t k = 0; k < len; ++k) w[k] = weight[t.members[begin + k]];
    alias.Build(w.data(), static_cast<uint32_t>(len));
    for (int64_t k = 0; k < len; ++k) {
      t.m_threshold[begin + k] = alias.threshold(static_cast<uint32_t>(k));
      t.m_alias[begin + k] = alias.alias(static_cast<uint32_t>(k));
    }
  }
  return t;
}

// Exactly r.num_edges unique keys u * |D| + v (no u == v within one type),
// sorted. Rounds of draws top up what deduplication removed; the surplus
// of the last round is dropped by a hash of the key, so the kept set does
// not depend on the order of anything.
std::vector<uint64_t> SampleRelation(const HeteroSyntheticSpec::Rel& r, const TypeModel& s,
                                     const TypeModel& d, bool same_type, uint64_t seed,
                                     uint64_t rel, int threads) {
  const uint64_t nd = static_cast<uint64_t>(d.n);
  const uint64_t max_key = static_cast<uint64_t>(s.n) * nd - 1;
  std::vector<uint64_t> keys;
  double new_rate = 0.95;
  for (int round = 0; round < kMaxRounds && static_cast<int64_t>(keys.size()) < r.num_edges;
       ++round) {
    const int64_t deficit = r.num_edges - static_cast<int64_t>(keys.size());
    const int64_t count = static_cast<int64_t>(deficit / new_rate * 1.02) + 64;
    std::vector<uint64_t> batch(count);
    const uint64_t base = (rel << 48) | (static_cast<uint64_t>(round) << 40);
    ParallelChunks(NumChunks(count, kEdgeChunk), threads, [&](int64_t c) {
      Rng rng(StreamSeed(seed, kEdge, base + c));
      for (int64_t i = c * kEdgeChunk, end = std::min(count, i + kEdgeChunk); i < end; ++i) {
        uint64_t u, v;
        do {
          u = s.Draw(rng.Next());
          const bool intra = rng.Uniform() < kIntraClass;
          v = intra ? d.DrawInClass(s.cls[u], rng.Next()) : d.Draw(rng.Next());
        } while (same_type && u == v);
        batch[i] = u * nd + v;
      }
    });
    SortUnique(&batch, max_key, threads);
    const size_t before = keys.size();
    if (keys.empty()) {
      keys.swap(batch);
    } else {
      Union(&keys, batch);
    }
    new_rate = std::max(0.01, static_cast<double>(keys.size() - before) / count);
  }
  if (static_cast<int64_t>(keys.size()) < r.num_edges) {
    throw ConfigError("synthetic relation " + r.src + ":" + r.name + ":" + r.dst + ": only " +
                      std::to_string(keys.size()) + " distinct edges of " +
                      std::to_string(r.num_edges) + " after " + std::to_string(kMaxRounds) +
                      " rounds (too dense)");
  }
  if (static_cast<int64_t>(keys.size()) > r.num_edges) {
    const uint64_t salt = StreamSeed(seed, kKeep, rel);
    std::vector<std::pair<uint64_t, uint64_t>> ranked(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) ranked[i] = {Mix64(keys[i] ^ salt), keys[i]};
    std::nth_element(ranked.begin(), ranked.begin() + r.num_edges, ranked.end());
    keys.resize(r.num_edges);
    for (int64_t i = 0; i < r.num_edges; ++i) keys[i] = ranked[i].second;
    std::sort(keys.begin(), keys.end());
  }
  return keys;
}

// Relation `r`'s edge features (HeteroSyntheticSpec::edge_feature_dim),
// one random stream per chunk of edges.
void EdgeFeatures(int64_t width, const TypeModel& s, const TypeModel& d, uint64_t seed, int threads,
                  Relation* r) {
  const int64_t m = r->num_edges();
  r->edge_feature_dim = width;
  r->edge_features.resize(static_cast<size_t>(m * width));
  ParallelChunks(NumChunks(m, kEdgeChunk), threads, [&](int64_t c) {
    Rng rng(StreamSeed(seed, kEdgeFeature, static_cast<uint64_t>(c)));
    for (int64_t e = c * kEdgeChunk, end = std::min(m, e + kEdgeChunk); e < end; ++e) {
      float* row = r->edge_features.data() + e * width;
      const bool same = s.cls[r->src[e]] == d.cls[r->dst[e]];
      row[0] = static_cast<float>((same ? 1.0 : 0.0) + (rng.Uniform() - 0.5) * 0.5);
      for (int64_t j = 1; j < width; ++j) row[j] = static_cast<float>(rng.Uniform());
    }
  });
}

// HeteroSyntheticSpec::edge_task's labels on paper:cites:paper.
void CitationLabels(const HeteroSyntheticSpec& spec, const TypeModel& paper, uint64_t seed,
                    int threads, HeteroDataset* d) {
  int rel = -1;
  for (size_t i = 0; i < d->relations.size(); ++i) {
    if (d->relations[i].Key() == "paper:cites:paper") rel = static_cast<int>(i);
  }
  if (rel < 0) throw ConfigError("synthetic spec '" + spec.name + "' has no paper:cites:paper");
  const Relation& r = d->relations[static_cast<size_t>(rel)];
  HeteroDataset::EdgeLabels& e = d->edge_task;
  const bool classes = spec.edge_task_kind == LabelKind::kClass;
  const int64_t m = r.num_edges();
  e.relation = rel;
  e.kind = spec.edge_task_kind;
  e.num_classes = classes ? 4 : 0;
  if (classes) {
    e.labels.resize(static_cast<size_t>(m));
  } else {
    e.targets.resize(static_cast<size_t>(m));
  }
  e.split.resize(static_cast<size_t>(m));
  ParallelChunks(NumChunks(m, kEdgeChunk), threads, [&](int64_t c) {
    Rng rng(StreamSeed(seed, kEdgeLabel, static_cast<uint64_t>(c)));
    for (int64_t i = c * kEdgeChunk, end = std::min(m, i + kEdgeChunk); i < end; ++i) {
      const int64_t cu = paper.cls[r.src[i]], cv = paper.cls[r.dst[i]];
      const double u = rng.Uniform(), noise = rng.Uniform();
      const int64_t other = static_cast<int64_t>(rng.Below(4));
      if (classes) {
        e.labels[i] = noise < 0.1 ? other : (cu % 2) * 2 + (cv % 2);
      } else {
        e.targets[i] = static_cast<float>(0.5 * static_cast<double>(cu % 4) -
                                          0.25 * static_cast<double>(cv % 4) + 0.2 * noise - 0.1);
      }
      e.split[i] = u < 0.5 ? 1 : u < 0.7 ? 2 : 3;
    }
  });
}

void CheckSpec(const HeteroSyntheticSpec& spec) {
  auto bad = [&](const std::string& what) {
    throw ConfigError("synthetic spec '" + spec.name + "': " + what);
  };
  if (spec.num_classes <= 0) bad("classes must be positive");
  std::vector<std::string> names;
  for (const auto& t : spec.types) {
    if (t.num_nodes <= 0 || t.num_nodes > kMaxTypeNodes) bad("bad node count of " + t.name);
    if (t.feature_dim < 0) bad("bad feature width of " + t.name);
    names.push_back(t.name);
  }
  auto known = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  if (!known(spec.target)) bad("target " + spec.target + " is not a node type");
  for (const auto& r : spec.relations) {
    if (!known(r.src) || !known(r.dst)) bad("relation " + r.name + " names an unknown type");
    if (r.num_edges <= 0) bad("relation " + r.name + " has no edges");
    int64_t ns = 0, nd = 0;
    for (const auto& t : spec.types) {
      if (t.name == r.src) ns = t.num_nodes;
      if (t.name == r.dst) nd = t.num_nodes;
    }
    const int64_t pairs = r.src == r.dst ? ns * (ns - 1) : ns * nd;
    if (r.num_edges > pairs / 2)
      bad("relation " + r.name + " asks for " + std::to_string(r.num_edges) +
          " edges, more than half of the " + std::to_string(pairs) + " possible");
  }
}

// The options after a typed preset's name (ParseHeteroSyntheticSpec).
void ParseTypedOptions(const std::string& spec, std::string options, HeteroSyntheticSpec* s) {
  auto bad = [&](const std::string& option) {
    throw ConfigError("synthetic:" + spec + ": '" + option +
                      "' is not an option of a typed preset (efeat=K, K in [1, 1024]; "
                      "etask=class or etask=regression; each once)");
  };
  bool seen_efeat = false;
  while (!options.empty()) {
    const size_t comma = options.find(',');
    const std::string option = options.substr(0, comma);
    options = comma == std::string::npos ? "" : options.substr(comma + 1);
    if (option.rfind("etask=", 0) == 0) {
      const std::string kind = option.substr(6);
      if (s->edge_task || (kind != "class" && kind != "regression")) bad(option);
      s->edge_task = true;
      s->edge_task_kind = kind == "class" ? LabelKind::kClass : LabelKind::kRegression;
      continue;
    }
    const std::string key = "efeat=";
    int64_t k = 0;
    size_t used = 0;
    try {
      if (option.rfind(key, 0) == 0) k = std::stoll(option.substr(key.size()), &used);
    } catch (const std::exception&) {
      k = 0;
    }
    if (seen_efeat || option.rfind(key, 0) != 0 || used == 0 ||
        used != option.size() - key.size() || k < 1 || k > 1024) {
      bad(option);
    }
    seen_efeat = true;
    s->edge_feature_dim = k;
  }
}

}  // namespace

bool IsHeteroSyntheticPreset(const std::string& text) {
  const std::string preset = text.substr(0, text.find(','));
  return preset == "mag" || preset == "mag-small";
}

HeteroSyntheticSpec ParseHeteroSyntheticSpec(const std::string& spec) {
  const size_t comma = spec.find(',');
  const std::string text = spec.substr(0, comma);
  HeteroSyntheticSpec s;
  if (comma != std::string::npos) ParseTypedOptions(spec, spec.substr(comma + 1), &s);
  if (text == "mag") {
    s.name = "synthetic-mag";
    s.types = {{"author", 1134649, 0},
               {"field_of_study", 59965, 0},
               {"institution", 8740, 0},
               {"paper", 736389, 128}};
    s.relations = {{"author", "affiliated_with", "institution", 1043998},
                   {"author", "writes", "paper", 7145660},
                   {"paper", "cites", "paper", 5416271},
                   {"paper", "has_topic", "field_of_study", 7505078}};
    s.num_classes = 349;
    // ogbn-mag's split sizes: 629,571 / 64,879 / 41,939 papers.
    s.train_fraction = 629571.0 / 736389.0;
    s.valid_fraction = 64879.0 / 736389.0;
  } else if (text == "mag-small") {
    s.name = "synthetic-mag-small";
    s.types = {{"author", 11346, 0},
               {"field_of_study", 600, 0},
               {"institution", 87, 0},
               {"paper", 7364, 64}};
    s.relations = {{"author", "affiliated_with", "institution", 10440},
                   {"author", "writes", "paper", 71457},
                   {"paper", "cites", "paper", 54163},
                   {"paper", "has_topic", "field_of_study", 75051}};
    s.num_classes = 16;
    s.train_fraction = 629571.0 / 736389.0;
    s.valid_fraction = 64879.0 / 736389.0;
  } else {
    throw ConfigError("unknown heterogeneous synthetic preset '" + text +
                      "' (known: mag, mag-small)");
  }
  s.target = "paper";
  if (s.edge_feature_dim > 0) s.name += "-efeat" + std::to_string(s.edge_feature_dim);
  if (s.edge_task)
    s.name += s.edge_task_kind == LabelKind::kClass ? "-edgeclass" : "-edgeregression";
  CheckSpec(s);
  return s;
}

HeteroDataset GenerateHeteroSynthetic(const HeteroSyntheticSpec& spec, uint64_t seed,
                                      int num_threads) {
  CheckSpec(spec);
  if (num_threads <= 0) num_threads = ResolveThreads(0);
  num_threads = std::max(1, num_threads);
  Stopwatch watch;
  HeteroDataset d;
  d.name = spec.name;
  d.target = spec.target;
  d.num_classes = spec.num_classes;
  std::vector<TypeModel> models;
  for (size_t t = 0; t < spec.types.size(); ++t) {
    models.push_back(BuildType(spec.types[t].num_nodes, spec.num_classes, seed, t, num_threads));
  }
  for (size_t i = 0; i < spec.relations.size(); ++i) {
    const auto& r = spec.relations[i];
    Relation out;
    out.src_type = r.src;
    out.name = r.name;
    out.dst_type = r.dst;
    d.relations.push_back(std::move(out));
  }
  // Types first (their features and labels), then relations, so the type
  // indices below stay valid.
  for (size_t t = 0; t < spec.types.size(); ++t) {
    NodeType nt;
    nt.name = spec.types[t].name;
    nt.num_nodes = spec.types[t].num_nodes;
    nt.feature_dim = spec.types[t].feature_dim;
    d.node_types.push_back(std::move(nt));
  }
  const size_t target = static_cast<size_t>(d.TypeIndex(spec.target));
  const int64_t n_target = d.node_types[target].num_nodes;
  d.labels.resize(n_target);
  ParallelChunks(NumChunks(n_target, kNodeChunk), num_threads, [&](int64_t c) {
    Rng rng(StreamSeed(seed, kLabel, c));
    for (int64_t v = c * kNodeChunk, end = std::min(n_target, v + kNodeChunk); v < end; ++v) {
      const bool keep = rng.Uniform() < kLabelFidelity;
      const int64_t other = rng.Below(static_cast<uint64_t>(spec.num_classes));
      d.labels[v] = keep ? models[target].cls[v] : other;
    }
  });
  for (size_t t = 0; t < d.node_types.size(); ++t) {
    NodeType& nt = d.node_types[t];
    if (nt.feature_dim == 0) continue;
    // The target's features follow its labels (as in the homogeneous
    // generator); other types' follow their home class.
    const int64_t* classes = t == target ? d.labels.data() : models[t].cls.data();
    nt.features =
        ClassFeatures(nt.num_nodes, nt.feature_dim, spec.num_classes, classes,
                      StreamSeed(seed, kCentroid, t), seed, kFeature, t << 40, num_threads);
  }
  for (size_t i = 0; i < spec.relations.size(); ++i) {
    const auto& r = spec.relations[i];
    const int s = d.TypeIndex(r.src), t = d.TypeIndex(r.dst);
    std::vector<uint64_t> keys =
        SampleRelation(r, models[static_cast<size_t>(s)], models[static_cast<size_t>(t)], s == t,
                       seed, i, num_threads);
    const uint64_t nd = static_cast<uint64_t>(models[static_cast<size_t>(t)].n);
    Relation& out = d.relations[i];
    out.src.resize(keys.size());
    out.dst.resize(keys.size());
    for (size_t k = 0; k < keys.size(); ++k) {
      out.src[k] = static_cast<int64_t>(keys[k] / nd);
      out.dst[k] = static_cast<int64_t>(keys[k] % nd);
    }
    if (spec.edge_feature_dim > 0) {
      EdgeFeatures(spec.edge_feature_dim, models[static_cast<size_t>(s)],
                   models[static_cast<size_t>(t)], StreamSeed(seed, kEdgeFeature, i), num_threads,
                   &out);
    }
  }
  if (spec.edge_task) CitationLabels(spec, models[target], seed, num_threads, &d);
  RandomSplit(n_target, spec.train_fraction, spec.valid_fraction, StreamSeed(seed, kSplit, 0),
              &d.train_idx, &d.valid_idx, &d.test_idx);
  if (d.num_edges() >= (int64_t{1} << 24)) {
    GNN_LOG(kInfo) << "generated " << spec.name << " in " << std::fixed << std::setprecision(1)
                   << watch.Seconds() << " s: " << d.num_nodes() << " nodes, " << d.num_edges()
                   << " edges";
  }
  d.Validate();
  return d;
}

}  // namespace gnn
