// The synthetic generator's labels beyond class ids and the proteins
// presets' edge data and split (graph/synthetic.h), made from the hidden
// classes GenerateSynthetic drew (Dataset::labels on entry).
#pragma once

#include <cstdint>

#include "graph/dataset.h"
#include "graph/synthetic.h"

namespace gnn {

// The proteins presets' 8 edge features: per hidden class 8 random bits;
// feature k of edge (u, v) is a quarter of each end's bit k plus uniform
// noise in [0, 0.5). Deterministic for (seed, edge), whatever num_threads.
void MakeProteinEdgeFeatures(const SyntheticSpec& spec, uint64_t seed, int num_threads, Dataset* d);

// The proteins presets' split: 8 "species", blocks of consecutive ids; the
// first 5 train, the 6th valid, the last 2 test.
void SpeciesSplit(Dataset* d);

// The edge presets' labels (spec.edge_task): class (c_u mod 2) * 2 +
// (c_v mod 2) of edge (u, v) from both ends' hidden classes, one in ten
// replaced by a uniform class; or the value 0.5 (c_u mod 4) - 0.25 (c_v mod
// 4) plus uniform noise in [-0.1, 0.1). Split per edge: half train, a fifth
// valid, the rest test. Deterministic for (seed, edge), whatever num_threads.
void MakeEdgeLabels(const SyntheticSpec& spec, uint64_t seed, int num_threads, Dataset* d);

// Multi-label or regression label rows (spec.label_kind, spec.label_width)
// in place of d's class ids, drawn from them (see synthetic.cc's spec).
void MakeTargets(const SyntheticSpec& spec, uint64_t seed, Dataset* d);

}  // namespace gnn
