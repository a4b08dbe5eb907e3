#include "graph/synthetic_targets.h"

#include <algorithm>
#include <vector>

#include "common/parallel.h"
#include "common/random.h"
#include "graph/synthetic_kit.h"

namespace gnn {

namespace {

// Edges per work chunk: the chunk -> random stream mapping depends only on
// this, never on the thread count.
constexpr int64_t kEdgeChunk = 1 << 16;

}  // namespace

void MakeEdgeLabels(const SyntheticSpec& spec, uint64_t seed, int num_threads, Dataset* d) {
  const int64_t m = d->num_edges();
  const bool classes = spec.edge_task == LabelKind::kClass;
  d->edge_label_kind = spec.edge_task;
  d->num_edge_classes = classes ? 4 : 0;
  if (classes) {
    d->edge_labels.resize(static_cast<size_t>(m));
  } else {
    d->edge_targets.resize(static_cast<size_t>(m));
  }
  d->edge_split.resize(static_cast<size_t>(m));
  const uint64_t stream = MixSeed(seed, 0x656467656c6162ULL);  // "edgelab"
  ParallelChunks(NumChunks(m, kEdgeChunk), num_threads, [&](int64_t c) {
    for (int64_t i = c * kEdgeChunk, end = std::min(m, i + kEdgeChunk); i < end; ++i) {
      const int64_t cu = d->labels[static_cast<size_t>(d->src[i])];
      const int64_t cv = d->labels[static_cast<size_t>(d->dst[i])];
      const uint64_t h = SplitMix64(MixSeed(stream, static_cast<uint64_t>(i)));
      const double u = static_cast<double>(h >> 11) * 0x1.0p-53;  // uniform [0, 1)
      const uint64_t h2 = SplitMix64(MixSeed(MixSeed(stream, 1), static_cast<uint64_t>(i)));
      const double r = static_cast<double>(h2 >> 11) * 0x1.0p-53;
      if (classes) {
        d->edge_labels[i] = r < 0.1 ? static_cast<int64_t>(h2 % 4) : (cu % 2) * 2 + (cv % 2);
      } else {
        d->edge_targets[i] = static_cast<float>(0.5 * static_cast<double>(cu % 4) -
                                                0.25 * static_cast<double>(cv % 4) + 0.2 * r - 0.1);
      }
      d->edge_split[i] = u < 0.5 ? 1 : u < 0.7 ? 2 : 3;
    }
  });
}

// The proteins presets' edge features: per hidden class 8 random bits;
// feature k of edge (u, v) is a quarter of each end's bit k plus uniform
// noise in [0, 0.5), so each node's mean over its edges tells its own class
// and its neighbours' (mostly the same: edges stay within communities).
void MakeProteinEdgeFeatures(const SyntheticSpec& spec, uint64_t seed, int num_threads,
                             Dataset* d) {
  const int64_t m = d->num_edges(), w = spec.edge_feature_dim;
  d->edge_feature_dim = w;
  d->edge_features.resize(static_cast<size_t>(m * w));
  const uint64_t stream = MixSeed(seed, 0x70726f7465696eULL);  // "protein"
  auto bit = [&](int64_t c, int64_t k) {
    return static_cast<float>(
        SplitMix64(MixSeed(MixSeed(stream, 1), static_cast<uint64_t>(c * w + k))) >> 63);
  };
  ParallelChunks(NumChunks(m, kEdgeChunk), num_threads, [&](int64_t c) {
    for (int64_t i = c * kEdgeChunk, end = std::min(m, i + kEdgeChunk); i < end; ++i) {
      const int64_t cu = d->labels[static_cast<size_t>(d->src[i])];
      const int64_t cv = d->labels[static_cast<size_t>(d->dst[i])];
      float* row = d->edge_features.data() + i * w;
      for (int64_t k = 0; k < w; ++k) {
        const uint64_t h =
            SplitMix64(MixSeed(MixSeed(stream, 2), static_cast<uint64_t>(i * w + k)));
        const float noise = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
        row[k] = 0.25f * (bit(cu, k) + bit(cv, k)) + 0.5f * noise;
      }
    }
  });
}

// The proteins presets' split: 8 "species", blocks of consecutive ids; the
// first 5 train, the 6th valid, the last 2 test.
void SpeciesSplit(Dataset* d) {
  const int64_t n = d->num_nodes;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t species = v * 8 / n;
    (species < 5 ? d->train_idx : species == 5 ? d->valid_idx : d->test_idx).push_back(v);
  }
}

// Multi-label or regression targets in place of the class ids (after
// everything that follows the classes is made), so neighbourhoods help as
// they do for classes. Multi-label column j: bit (j mod B) of the node's
// class (B bits number the classes), inverted for odd j / B rounds and
// flipped for one node in sixteen; regression column j: the class spread
// evenly over [-1, 1] (reversed for odd j) plus uniform noise of +-0.25.
void MakeTargets(const SyntheticSpec& spec, uint64_t seed, Dataset* d) {
  const int64_t n = d->num_nodes, w = spec.label_width, classes = spec.num_classes;
  const uint64_t stream = MixSeed(seed, 0x746172676574ULL);  // "target"
  int64_t bits = 1;
  while ((int64_t{1} << bits) < classes) ++bits;
  std::vector<double> rows(static_cast<size_t>(n * w));
  for (int64_t v = 0; v < n; ++v) {
    const int64_t c = d->labels[static_cast<size_t>(v)];
    for (int64_t j = 0; j < w; ++j) {
      const uint64_t h = SplitMix64(MixSeed(stream, static_cast<uint64_t>(v * w + j)));
      const double noise = static_cast<double>(h >> 11) * 0x1.0p-53;
      double& y = rows[static_cast<size_t>(v * w + j)];
      if (spec.label_kind == LabelKind::kMultilabel) {
        const bool bit = spec.proteins ? (SplitMix64(MixSeed(MixSeed(stream, 0x636c6173ULL),
                                                             static_cast<uint64_t>(c * w + j))) >>
                                          63) != 0
                                       : (((c >> (j % bits)) & 1) != 0) != ((j / bits) % 2 == 1);
        y = (noise < 0.0625) != bit ? 1.0 : 0.0;
      } else {
        const double at =
            classes > 1 ? static_cast<double>(c) / static_cast<double>(classes - 1) : 0.5;
        y = (j % 2 == 0 ? 2.0 * at - 1.0 : 1.0 - 2.0 * at) + (noise - 0.5) * 0.5;
      }
    }
  }
  SetLabelRows(d, std::move(rows), w,
               spec.label_kind == LabelKind::kMultilabel ? "multilabel" : "node_regression",
               spec.name);
}

}  // namespace gnn
