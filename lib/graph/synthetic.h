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
};

// Parses "tiny", "small", "products" or "nodes=N,edges=E,feat=F,classes=C"
// (optional train=, valid= fractions, efeat= edge features). Throws
// ConfigError naming the bad key.
SyntheticSpec ParseSyntheticSpec(const std::string& spec);

// Generates the dataset (known_undirected = true, each edge listed once with
// src < dst). Same (spec, seed) -> same bytes, whatever num_threads is.
Dataset GenerateSynthetic(const SyntheticSpec& spec, uint64_t seed, int num_threads);

}  // namespace gnn
