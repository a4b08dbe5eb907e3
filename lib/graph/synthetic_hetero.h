// Synthetic heterogeneous graphs of ogbn-mag's shape, deterministic from a
// seed: every node of every type has a home class; a relation's edge picks
// its source by a power-law weight and, with probability 0.8, a destination
// of the source's class (else any), so authors, fields and cited papers
// tell a paper's class; paper features are a noisy class centroid, weak on
// their own; the paper label is its class with probability 0.85.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/hetero.h"

namespace gnn {

struct HeteroSyntheticSpec {
  struct Type {
    std::string name;
    int64_t num_nodes = 0;
    int64_t feature_dim = 0;  // 0: featureless
  };
  struct Rel {
    std::string src, name, dst;
    int64_t num_edges = 0;  // directed, unique, no self-loops
  };
  std::string name;
  std::vector<Type> types;
  std::vector<Rel> relations;
  std::string target;
  int64_t num_classes = 0;
  // Every relation's edge features (",efeat=K"): column 0 is 1 when the
  // edge's endpoints share their home class (else 0), plus uniform noise
  // of +-0.25, so an edge says how far its source speaks for its
  // destination's class; the other columns are uniform noise in [0, 1].
  int64_t edge_feature_dim = 0;
  // ",etask=class|regression": labels on paper:cites:paper's edges for a
  // typed edge task (--target_etype paper:cites:paper). A class is
  // (source's home class mod 2) * 2 + (destination's mod 2), one edge in ten
  // a random class; a value is 0.5 * (source's class mod 4) - 0.25 *
  // (destination's class mod 4) plus uniform noise of +-0.1. Half the edges
  // train, a fifth valid, the rest test.
  bool edge_task = false;
  LabelKind edge_task_kind = LabelKind::kClass;
  double train_fraction = 0.8, valid_fraction = 0.1;  // of the target; test = the rest
};

// True for the presets ParseHeteroSyntheticSpec knows ("mag", "mag-small"),
// with or without options after a comma.
bool IsHeteroSyntheticPreset(const std::string& text);

// "mag": ogbn-mag's size (1,939,743 nodes of 4 types, 21,111,007 edges of 4
// relations, 128-wide paper features, 349 classes, its split fractions);
// "mag-small": the same shape at 1/100 (64 features, 16 classes) for tests.
// Either may be followed by options, each once: ",efeat=K" (K in [1, 1024]:
// every relation's edges get K features), ",etask=class" or
// ",etask=regression" (edge labels on paper:cites:paper). ConfigError for
// anything else.
HeteroSyntheticSpec ParseHeteroSyntheticSpec(const std::string& text);

// Same (spec, seed) -> same bytes, whatever num_threads is (0 = all cores).
HeteroDataset GenerateHeteroSynthetic(const HeteroSyntheticSpec& spec, uint64_t seed,
                                      int num_threads);

}  // namespace gnn
