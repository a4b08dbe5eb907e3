// Synthetic node-classification graphs, deterministic from a seed:
// communities (degree-corrected stochastic block model with a power-law
// degree spread), features = noisy class centroid, labels tied to the
// community so neighbours carry signal (a GNN beats a per-node model).
#pragma once

#include <cstdint>
#include <string>

#include "graph/dataset.h"

namespace gnn {

struct SyntheticSpec {
  std::string name;  // e.g. "synthetic-small"
  int64_t num_nodes = 0;
  int64_t num_edges = 0;  // undirected, unique, no self-loops
  int64_t feature_dim = 0;
  int64_t num_classes = 0;
  double train_fraction = 0.1;
  double valid_fraction = 0.05;  // test = the rest
  // Edge features per listed edge (efeat=K), in [0, 1): the first is
  // higher when the two ends share a class, the rest uniform noise.
  int64_t edge_feature_dim = 0;
  // task=multilabel (labels=L columns of 0/1, L = classes unless given) or
  // task=regression (labels=T real values, 1 unless given): targets drawn
  // from each node's hidden class (the one its features and edges follow)
  // plus per-node noise, so the neighbourhood helps as it does for classes.
  LabelKind label_kind = LabelKind::kClass;
  int64_t label_width = 0;
  // The "proteins" and "proteins-small" presets, shaped like ogbn-proteins:
  // no node features (gnn-partition derives them from the edges' means), 8
  // edge features in [0, 1) that carry both ends' hidden classes, 112
  // binary labels per node drawn from its hidden class, and a species-like
  // split (8 blocks of node ids: 5 train, 1 valid, 2 test).
  bool proteins = false;
  // bow=K: bag-of-words features instead of dense ones: feature_dim
  // columns ("words"), about K distinct ones set to 1 per node, 40 % of
  // them drawn from its class's own slice of the vocabulary (the "bow" and
  // "bow-small" presets: 10,000 and 4,000 words, 30 and 20 per node). Kept
  // sparse (Dataset::sparse_features).
  int64_t bow_words = 0;
  // etask=class or etask=regression: every listed edge gets a label drawn
  // from both ends' hidden classes and a split (MakeEdgeLabels), for the
  // edge tasks (the "edges" and "edges-small" presets: classes).
  bool edge_labels = false;
  LabelKind edge_task = LabelKind::kClass;
};

// Parses "tiny", "small", "products", "proteins", "proteins-small", "bow",
// "bow-small", "edges", "edges-small" or "nodes=N,edges=E,feat=F,classes=C"
// (optional train=, valid= fractions, efeat= edge features, bow= words per
// node, etask=class|regression edge labels, task=multilabel
// or task=regression with labels= columns). Throws
// ConfigError naming the bad key.
SyntheticSpec ParseSyntheticSpec(const std::string& spec);
// ConfigError "synthetic spec '<text>': ..." unless the spec's counts are
// positive, fit the generator's limits (2^31 - 1 nodes, 2^40 feature
// values, a simple graph's edges) and its fractions add up to at most 1.
void CheckSyntheticSpec(const SyntheticSpec& s, const std::string& text);

// Generates the dataset (known_undirected = true, each edge listed once with
// src < dst). Same (spec, seed) -> same bytes, whatever num_threads is.
Dataset GenerateSynthetic(const SyntheticSpec& spec, uint64_t seed, int num_threads);

}  // namespace gnn
