#include "graph/synthetic.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <iomanip>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/random.h"
#include "common/timer.h"
#include "graph/synthetic_kit.h"
#include "graph/synthetic_targets.h"

namespace gnn {

namespace {

// ---------------------------------------------------------------------------
// Model parameters. Changing any of them changes every generated dataset, so
// they are constants, not options.

// Target community size. Much smaller than any sensible partition, so METIS
// can keep whole communities together, and large enough that the
// in-community edges of typical nodes do not saturate their community.
constexpr int64_t kCommunitySize = 1000;
// Probability that the second endpoint of an edge is drawn inside the first
// endpoint's community (edge homophily comes mostly from this).
constexpr double kIntraCommunity = 0.8;
// Probability that a node's label is its community's class; otherwise the
// label is uniform over all classes. The noisy rest is what a GNN cannot fix
// from neighbours alone, while the features carry the node's own label.
constexpr double kLabelFidelity = 0.85;
// Work granularity. The chunk -> random stream mapping depends only on these,
// never on the thread count, which is what makes the output thread-invariant.
constexpr int64_t kNodeChunk = 1 << 14;
constexpr int64_t kEdgeChunk = 1 << 16;
// Weighted sampling rounds before switching to the dense-graph fallback.
constexpr int kMaxWeightedRounds = 8;
// The fallback enumerates missing pairs when there are at most this many.
constexpr int64_t kMaxEnumeratedComplement = int64_t{1} << 24;

// ---------------------------------------------------------------------------
// Random streams (graph/synthetic_kit.h): one tag per use of randomness,
// so streams never overlap between uses.
enum class Stream : uint64_t {
  kCommunity = 1,
  kClassOfCommunity,
  kWeight,
  kLabel,
  kCentroid,
  kFeature,
  kSplit,
  kEdge,
  kUniformEdge,
  kComplement,
  kDrop,
  kWords,
};

uint64_t StreamSeed(uint64_t seed, Stream stream, uint64_t index) {
  return gnn::StreamSeed(seed, static_cast<uint64_t>(stream), index);
}

// Slots carry the answer for both outcomes (node ids, communities), so that
// one draw costs one cache miss: the sampler is bound by memory latency, not
// arithmetic, on graphs whose tables exceed the cache.
struct NodeSlot {  // over all nodes, slot i = node i
  uint32_t threshold;
  uint32_t alias;
  uint32_t community;
  uint32_t alias_community;
};
struct MemberSlot {  // over one community's members
  uint32_t threshold;
  uint32_t node;
  uint32_t alias_node;
};

// ---------------------------------------------------------------------------
// The graph model: node -> community, weights, and the tables to draw edges.

struct Model {
  int64_t num_nodes = 0;
  int64_t num_communities = 0;
  std::vector<uint32_t> community;       // [N]
  std::vector<int64_t> member_offsets;   // [K + 1] into member_slots
  std::vector<NodeSlot> node_slots;      // [N]
  std::vector<MemberSlot> member_slots;  // [N], one segment per community
};

Model BuildModel(const SyntheticSpec& spec, uint64_t seed, int num_threads) {
  Model m;
  const int64_t n = spec.num_nodes;
  m.num_nodes = n;
  m.num_communities = std::max(spec.num_classes, (n + kCommunitySize / 2) / kCommunitySize);
  const uint64_t k = static_cast<uint64_t>(m.num_communities);

  m.community.resize(n);
  std::vector<double> weight(n);
  // Capping weights keeps a hub's expected degree below about half the graph
  // for small dense graphs (mean weight of the uncapped law is ~3).
  const double mean_degree = 2.0 * spec.num_edges / n;
  const double cap =
      std::max(1.0, std::min(kMaxWeight, 1.5 * static_cast<double>(n - 1) / mean_degree));
  ParallelChunks(NumChunks(n, kNodeChunk), num_threads, [&](int64_t c) {
    Rng community_rng(StreamSeed(seed, Stream::kCommunity, c));
    Rng weight_rng(StreamSeed(seed, Stream::kWeight, c));
    for (int64_t v = c * kNodeChunk, end = std::min(n, v + kNodeChunk); v < end; ++v) {
      m.community[v] = community_rng.Below(k);
      weight[v] = PowerLawWeight(weight_rng.Uniform(), cap);
    }
  });

  AliasBuilder alias;
  alias.Build(weight.data(), static_cast<uint32_t>(n));
  m.node_slots.resize(n);
  for (uint32_t i = 0; i < static_cast<uint32_t>(n); ++i) {
    uint32_t a = alias.alias(i);
    m.node_slots[i] = {alias.threshold(i), a, m.community[i], m.community[a]};
  }

  // Counting sort by community: members of a community in increasing id order.
  m.member_offsets.assign(k + 1, 0);
  for (int64_t v = 0; v < n; ++v) ++m.member_offsets[m.community[v] + 1];
  for (uint64_t c = 0; c < k; ++c) m.member_offsets[c + 1] += m.member_offsets[c];
  std::vector<uint32_t> members(n);
  {
    std::vector<int64_t> fill(m.member_offsets.begin(), m.member_offsets.end() - 1);
    for (int64_t v = 0; v < n; ++v) members[fill[m.community[v]]++] = static_cast<uint32_t>(v);
  }
  std::vector<double> member_weight(n);
  for (int64_t i = 0; i < n; ++i) member_weight[i] = weight[members[i]];
  m.member_slots.resize(n);
  for (uint64_t c = 0; c < k; ++c) {
    const int64_t begin = m.member_offsets[c];
    const uint32_t size = static_cast<uint32_t>(m.member_offsets[c + 1] - begin);
    if (size == 0) continue;
    alias.Build(&member_weight[begin], size);
    for (uint32_t i = 0; i < size; ++i) {
      m.member_slots[begin + i] = {alias.threshold(i), members[begin + i],
                                   members[begin + alias.alias(i)]};
    }
  }
  return m;
}

// Fills keys[i] = u * N + v (u < v) for `count` edges of round `round`:
// u ∝ weight; v ∝ weight inside u's community with probability
// kIntraCommunity, else over all nodes; self-loops are redrawn.
//
// Draws are made in blocks, stage by stage, with prefetches: each stage's
// table reads are independent across the block, so their cache misses
// overlap instead of stalling one after another.
std::vector<uint64_t> SampleModelEdges(const Model& m, int64_t count, uint64_t seed, int round,
                                       int num_threads) {
  std::vector<uint64_t> keys(count);
  const uint32_t n = static_cast<uint32_t>(m.num_nodes);
  const NodeSlot* node_slots = m.node_slots.data();
  const MemberSlot* member_slots = m.member_slots.data();
  const int64_t* offsets = m.member_offsets.data();
  const uint64_t round_base = static_cast<uint64_t>(round) << 40;
  ParallelChunks(NumChunks(count, kEdgeChunk), num_threads, [&](int64_t c) {
    constexpr int kBlock = 64;
    uint64_t rand[kBlock];
    uint32_t slot[kBlock], node[kBlock];
    int64_t pos[kBlock];  // v's slot: in member_slots if intra, else in node_slots
    bool intra[kBlock];
    Rng rng(StreamSeed(seed, Stream::kEdge, round_base + c));
    const int64_t chunk_end = std::min(count, (c + 1) * kEdgeChunk);
    for (int64_t first = c * kEdgeChunk; first < chunk_end; first += kBlock) {
      const int block = static_cast<int>(std::min<int64_t>(kBlock, chunk_end - first));
      for (int j = 0; j < block; ++j) {
        rand[j] = rng.Next();
        slot[j] = SlotIndex(rand[j], n);
        __builtin_prefetch(&node_slots[slot[j]]);
      }
      for (int j = 0; j < block; ++j) {
        const NodeSlot& s = node_slots[slot[j]];
        const bool keep = static_cast<uint32_t>(rand[j]) < s.threshold;
        node[j] = keep ? slot[j] : s.alias;
        const uint32_t cu = keep ? s.community : s.alias_community;
        const int64_t begin = offsets[cu];
        const uint32_t size = static_cast<uint32_t>(offsets[cu + 1] - begin);
        intra[j] = size > 1 && rng.Uniform() < kIntraCommunity;
        rand[j] = rng.Next();
        if (intra[j]) {
          pos[j] = begin + SlotIndex(rand[j], size);
          __builtin_prefetch(&member_slots[pos[j]]);
        } else {
          pos[j] = SlotIndex(rand[j], n);
          __builtin_prefetch(&node_slots[pos[j]]);
        }
      }
      for (int j = 0; j < block; ++j) {
        const uint32_t u = node[j];
        uint64_t r = rand[j];
        int64_t p = pos[j];
        uint32_t v;
        for (;;) {
          if (intra[j]) {
            const MemberSlot& s = member_slots[p];
            v = static_cast<uint32_t>(r) < s.threshold ? s.node : s.alias_node;
          } else {
            const NodeSlot& s = node_slots[p];
            v = static_cast<uint32_t>(r) < s.threshold ? static_cast<uint32_t>(p) : s.alias;
          }
          if (v != u) break;
          // Rare: redraw a self-loop from the same distribution.
          r = rng.Next();
          if (intra[j]) {
            const uint32_t cu = m.community[u];
            p = offsets[cu] + SlotIndex(r, static_cast<uint32_t>(offsets[cu + 1] - offsets[cu]));
          } else {
            p = SlotIndex(r, n);
          }
        }
        keys[first + j] = u < v ? uint64_t{u} * n + v : uint64_t{v} * n + u;
      }
    }
  });
  return keys;
}

// Uniform distinct pairs: the fallback when weighted draws keep hitting
// existing edges (graphs close to complete).
std::vector<uint64_t> SampleUniformEdges(int64_t num_nodes, int64_t count, uint64_t seed, int round,
                                         int num_threads) {
  std::vector<uint64_t> keys(count);
  const uint64_t n = static_cast<uint64_t>(num_nodes);
  const uint64_t round_base = static_cast<uint64_t>(round) << 40;
  ParallelChunks(NumChunks(count, kEdgeChunk), num_threads, [&](int64_t c) {
    Rng rng(StreamSeed(seed, Stream::kUniformEdge, round_base + c));
    for (int64_t i = c * kEdgeChunk, end = std::min(count, i + kEdgeChunk); i < end; ++i) {
      uint64_t u, v;
      do {
        u = rng.Below(n);
        v = rng.Below(n);
      } while (u == v);
      keys[i] = u < v ? u * n + v : v * n + u;
    }
  });
  return keys;
}

// Adds `want` pairs chosen uniformly among those not yet in `*keys`, by
// listing the missing pairs (only called when there are few of them).
void AddFromComplement(int64_t num_nodes, int64_t want, uint64_t seed,
                       std::vector<uint64_t>* keys) {
  const uint64_t n = static_cast<uint64_t>(num_nodes);
  std::vector<uint64_t> missing;
  auto it = keys->begin();
  for (uint64_t u = 0; u < n; ++u) {
    for (uint64_t v = u + 1; v < n; ++v) {
      uint64_t key = u * n + v;
      while (it != keys->end() && *it < key) ++it;
      if (it != keys->end() && *it == key) continue;
      missing.push_back(key);
    }
  }
  Rng rng(StreamSeed(seed, Stream::kComplement, 0));
  for (int64_t i = 0; i < want; ++i) {
    uint64_t j = i + rng.Below64(missing.size() - i);
    std::swap(missing[i], missing[j]);
  }
  missing.resize(want);
  std::sort(missing.begin(), missing.end());
  Union(keys, missing);
}

// Drops keys->size() - want keys chosen uniformly at random.
void DropRandom(int64_t want, uint64_t seed, std::vector<uint64_t>* keys) {
  const int64_t have = static_cast<int64_t>(keys->size());
  std::vector<uint64_t> dropped((have + 63) / 64, 0);
  Rng rng(StreamSeed(seed, Stream::kDrop, 0));
  for (int64_t left = have - want; left > 0;) {
    uint64_t i = rng.Below64(have);
    uint64_t bit = uint64_t{1} << (i % 64);
    if (dropped[i / 64] & bit) continue;
    dropped[i / 64] |= bit;
    --left;
  }
  int64_t out = 0;
  for (int64_t i = 0; i < have; ++i) {
    if (!(dropped[i / 64] >> (i % 64) & 1)) (*keys)[out++] = (*keys)[i];
  }
  keys->resize(out);
  keys->shrink_to_fit();
}

// Returns exactly spec.num_edges sorted unique keys u * N + v with u < v.
// Rounds of weighted sampling top up what deduplication removed; each round
// asks for the deficit divided by the last round's rate of new pairs.
std::vector<uint64_t> SampleEdges(const SyntheticSpec& spec, const Model& model, uint64_t seed,
                                  int num_threads, int* rounds_used) {
  const int64_t n = spec.num_nodes;
  const int64_t want = spec.num_edges;
  const int64_t max_edges = n * (n - 1) / 2;
  const uint64_t max_key = static_cast<uint64_t>(n) * static_cast<uint64_t>(n) - 1;
  std::vector<uint64_t> keys;
  double new_rate = 0.95;  // first guess: a few percent duplicates
  int round = 0;
  for (; round < kMaxWeightedRounds && static_cast<int64_t>(keys.size()) < want; ++round) {
    const int64_t deficit = want - static_cast<int64_t>(keys.size());
    const int64_t count = static_cast<int64_t>(deficit / new_rate * 1.02) + 64;
    std::vector<uint64_t> batch = SampleModelEdges(model, count, seed, round, num_threads);
    SortUnique(&batch, max_key, num_threads);
    const int64_t before = static_cast<int64_t>(keys.size());
    if (keys.empty()) {
      keys.swap(batch);
    } else {
      Union(&keys, batch);
    }
    new_rate = static_cast<double>(static_cast<int64_t>(keys.size()) - before) / count;
    // Saturated (a graph close to complete): leave it to the fallback.
    if (new_rate < 0.05) {
      ++round;
      break;
    }
  }
  for (int fill = 0; static_cast<int64_t>(keys.size()) < want; ++fill, ++round) {
    const int64_t have = static_cast<int64_t>(keys.size());
    if (max_edges - have <= kMaxEnumeratedComplement) {
      AddFromComplement(n, want - have, seed, &keys);
      break;
    }
    const double rate = static_cast<double>(max_edges - have) / max_edges;
    const int64_t count =
        std::min<int64_t>(static_cast<int64_t>((want - have) / rate * 1.1) + 64, int64_t{1} << 27);
    std::vector<uint64_t> batch = SampleUniformEdges(n, count, seed, fill, num_threads);
    SortUnique(&batch, max_key, num_threads);
    Union(&keys, batch);
  }
  if (static_cast<int64_t>(keys.size()) > want) DropRandom(want, seed, &keys);
  *rounds_used = round;
  return keys;
}

// ---------------------------------------------------------------------------
// Labels, features, split.

std::vector<int64_t> MakeLabels(const SyntheticSpec& spec, const Model& model, uint64_t seed,
                                int num_threads) {
  const int64_t n = spec.num_nodes;
  const int64_t k = model.num_communities;
  const int64_t classes = spec.num_classes;
  // Shuffled community -> class with every class getting floor or ceil(K/C)
  // communities, so classes are balanced.
  std::vector<int64_t> order(k);
  for (int64_t i = 0; i < k; ++i) order[i] = i;
  Rng shuffle(StreamSeed(seed, Stream::kClassOfCommunity, 0));
  for (int64_t i = k - 1; i > 0; --i) std::swap(order[i], order[shuffle.Below64(i + 1)]);
  std::vector<int64_t> class_of(k);
  for (int64_t i = 0; i < k; ++i) class_of[order[i]] = i % classes;

  std::vector<int64_t> labels(n);
  ParallelChunks(NumChunks(n, kNodeChunk), num_threads, [&](int64_t c) {
    Rng rng(StreamSeed(seed, Stream::kLabel, c));
    for (int64_t v = c * kNodeChunk, end = std::min(n, v + kNodeChunk); v < end; ++v) {
      if (rng.Uniform() < kLabelFidelity) {
        labels[v] = class_of[model.community[v]];
      } else {
        labels[v] = static_cast<int64_t>(rng.Below64(classes));
      }
    }
  });
  return labels;
}

// Features: x = (centroid[label] + sigma * noise) / sqrt(1 + sigma^2), with
// centroids ~ N(0, I), so every feature is roughly unit variance.
std::vector<float> MakeFeatures(const SyntheticSpec& spec, const std::vector<int64_t>& labels,
                                uint64_t seed, int num_threads) {
  return ClassFeatures(spec.num_nodes, spec.feature_dim, spec.num_classes, labels.data(),
                       StreamSeed(seed, Stream::kCentroid, 0), seed,
                       static_cast<uint64_t>(Stream::kFeature), 0, num_threads);
}

// Bag-of-words rows: node v draws spec.bow_words words, each from its
// class's slice of the vocabulary with probability 0.4, else from all of
// it; the distinct words are set to 1. Rows of a chunk come from the
// chunk's own stream, so the output does not depend on the thread count.
SparseRows MakeBowFeatures(const SyntheticSpec& spec, const std::vector<int64_t>& labels,
                           uint64_t seed, int num_threads) {
  const int64_t n = spec.num_nodes, f = spec.feature_dim, c = spec.num_classes;
  const int64_t slice = std::max<int64_t>(1, f / c);
  constexpr int64_t kChunk = 1 << 12;
  const int64_t chunks = NumChunks(n, kChunk);
  std::vector<std::vector<int32_t>> words(static_cast<size_t>(chunks));
  std::vector<int64_t> counts(static_cast<size_t>(n));
  ParallelChunks(chunks, num_threads, [&](int64_t k) {
    Rng rng(StreamSeed(seed, Stream::kWords, static_cast<uint64_t>(k)));
    std::vector<int32_t> row;
    for (int64_t v = k * kChunk, end = std::min(n, v + kChunk); v < end; ++v) {
      row.clear();
      const int64_t first = std::min(labels[v] * slice, f - slice);
      for (int64_t w = 0; w < spec.bow_words; ++w) {
        const bool topic = rng.Uniform() < 0.4;
        const int64_t word =
            topic ? first + static_cast<int64_t>(rng.Below64(static_cast<uint64_t>(slice)))
                  : static_cast<int64_t>(rng.Below64(static_cast<uint64_t>(f)));
        row.push_back(static_cast<int32_t>(word));
      }
      std::sort(row.begin(), row.end());
      row.erase(std::unique(row.begin(), row.end()), row.end());
      counts[static_cast<size_t>(v)] = static_cast<int64_t>(row.size());
      words[static_cast<size_t>(k)].insert(words[static_cast<size_t>(k)].end(), row.begin(),
                                           row.end());
    }
  });
  SparseRows s;
  s.cols = f;
  s.indptr.resize(static_cast<size_t>(n + 1));
  for (int64_t v = 0; v < n; ++v) s.indptr[v + 1] = s.indptr[v] + counts[static_cast<size_t>(v)];
  s.indices.reserve(static_cast<size_t>(s.indptr[n]));
  for (const std::vector<int32_t>& w : words) s.indices.insert(s.indices.end(), w.begin(), w.end());
  return s;
}

void MakeSplit(const SyntheticSpec& spec, uint64_t seed, Dataset* d) {
  RandomSplit(spec.num_nodes, spec.train_fraction, spec.valid_fraction,
              StreamSeed(seed, Stream::kSplit, 0), &d->train_idx, &d->valid_idx, &d->test_idx);
}

// ---------------------------------------------------------------------------
// Spec parsing.

// Edge i's features from (seed, i) alone: uniform in [0, 1), the first
// shifted up by half when both ends share a class, so it carries signal.
void MakeEdgeFeatures(const SyntheticSpec& spec, uint64_t seed, int num_threads, Dataset* d) {
  const int64_t m = d->num_edges(), w = spec.edge_feature_dim;
  d->edge_feature_dim = w;
  d->edge_features.resize(static_cast<size_t>(m * w));
  const uint64_t stream = MixSeed(seed, 0x65646765666561ULL);  // "edgefea"
  ParallelChunks(NumChunks(m, kEdgeChunk), num_threads, [&](int64_t c) {
    for (int64_t i = c * kEdgeChunk, end = std::min(m, i + kEdgeChunk); i < end; ++i) {
      float* row = d->edge_features.data() + i * w;
      for (int64_t j = 0; j < w; ++j) {
        const uint64_t h = SplitMix64(MixSeed(stream, static_cast<uint64_t>(i * w + j)));
        row[j] = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
      }
      if (d->labels[static_cast<size_t>(d->src[i])] == d->labels[static_cast<size_t>(d->dst[i])])
        row[0] = 0.5f + 0.5f * row[0];
      else
        row[0] = 0.5f * row[0];
    }
  });
}

}  // namespace

Dataset GenerateSynthetic(const SyntheticSpec& spec, uint64_t seed, int num_threads) {
  CheckSyntheticSpec(spec, spec.name);
  if (num_threads <= 0) num_threads = ResolveThreads(0);
  num_threads = std::max(1, num_threads);
  const bool big = spec.num_edges >= (int64_t{1} << 24);
  Stopwatch watch;
  if (big) {
    GNN_LOG(kInfo) << "generating " << spec.name << ": " << spec.num_nodes << " nodes, "
                   << spec.num_edges << " edges, " << spec.feature_dim << " features, "
                   << spec.num_classes << " classes (seed " << seed << ", " << num_threads
                   << " threads)";
  }

  Dataset d;
  d.name = spec.name;
  d.num_nodes = spec.num_nodes;
  d.feature_dim = spec.feature_dim;
  d.num_classes = spec.num_classes;
  d.undirected_reason = "synthetic graphs are undirected (each pair listed once)";

  int rounds = 0;
  {
    Model model = BuildModel(spec, seed, num_threads);
    d.labels = MakeLabels(spec, model, seed, num_threads);
    std::vector<uint64_t> keys = SampleEdges(spec, model, seed, num_threads, &rounds);
    model = Model();  // free the model's tables before allocating the edge arrays
    const int64_t m = static_cast<int64_t>(keys.size());
    const uint64_t n = static_cast<uint64_t>(spec.num_nodes);
    d.src.resize(m);
    d.dst.resize(m);
    ParallelChunks(NumChunks(m, kEdgeChunk), num_threads, [&](int64_t c) {
      for (int64_t i = c * kEdgeChunk, end = std::min(m, i + kEdgeChunk); i < end; ++i) {
        d.src[i] = static_cast<int64_t>(keys[i] / n);
        d.dst[i] = static_cast<int64_t>(keys[i] % n);
      }
    });
  }
  if (spec.proteins) {
    // No node features: the edges carry the classes.
    d.feature_dim = 0;
    SpeciesSplit(&d);
    MakeProteinEdgeFeatures(spec, seed, num_threads, &d);
  } else {
    if (spec.bow_words > 0) {
      d.sparse_features = MakeBowFeatures(spec, d.labels, seed, num_threads);
    } else {
      d.features = MakeFeatures(spec, d.labels, seed, num_threads);
    }
    MakeSplit(spec, seed, &d);
    if (spec.edge_feature_dim > 0) MakeEdgeFeatures(spec, seed, num_threads, &d);
  }
  if (spec.edge_labels) MakeEdgeLabels(spec, seed, num_threads, &d);
  if (spec.label_kind != LabelKind::kClass) MakeTargets(spec, seed, &d);

  if (big) {
    GNN_LOG(kInfo) << "generated " << spec.name << " in " << std::fixed << std::setprecision(1)
                   << watch.Seconds() << " s (" << rounds << " edge sampling rounds)";
  }
  return d;
}

}  // namespace gnn
