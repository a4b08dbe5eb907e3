// Neighbour sampling over a heterogeneous CSC (every relation's in-edges in
// one CSC, each edge's relation beside it): per-relation fan-outs, as DGL's
// sample_neighbors with a fanout per edge type. Pure functions with the
// guarantees of sampler.h: the draw of a seed depends only on the seed's
// key, the relation and the rng seed, never on threads or partitioning.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "sampling/block.h"
#include "sampling/sampler.h"

namespace gnn {

// One heterogeneous mini-batch: typed blocks (Block::etypes set), the
// seeds' labels, and per node type which rows of block 0's sources are of
// that type (positions, global ids) and, for types with features, their
// feature rows [ids.size(), feature_dims[t]]. Made in the trainer or in a
// gnn-sampler (net/batch_codec.h: positions and ids do not travel, the
// receiver groups the inputs again).
struct HeteroBatch {
  int64_t index = 0;        // batch number within the epoch (or evaluation)
  uint64_t wire_bytes = 0;  // bytes its making sent and received over sockets
  // Feature rows of other partitions its making needed, and how many of
  // them the machine's hot-row caches held.
  uint64_t cache_lookups = 0;
  uint64_t cache_hits = 0;
  std::vector<int64_t> seeds;
  std::vector<Block> blocks;
  std::vector<int64_t> labels;
  std::vector<std::vector<int64_t>> positions, ids;
  std::vector<std::vector<float>> features;
  // The first layer at the owners (DistGraph, --aggregate_at_owner with
  // RGCN): positions, ids and features cover block 0's destinations only
  // (the self-loop's rows), and the per-relation means come summed instead
  // of the sources' rows. means[r], for a relation whose source type has
  // features: the mean of the sources' feature rows of each non-empty
  // (r, destination) group of block 0, destinations in increasing order
  // (GroupSources), [groups, that type's width]. A featureless source
  // type's means are the trainer's to sum when it uses the batch (its
  // embedding rows change every step): their entries stay empty.
  bool input_means = false;
  std::vector<std::vector<float>> means;

  // Fills positions and ids from block 0's sources (`type_of(id)`: a node
  // type in [0, num_types), or -1, a DataError), the first `count` of them
  // only when count >= 0, and sizes `features`.
  template <typename TypeOf>
  void GroupInputsByType(size_t num_types, TypeOf type_of, int64_t count = -1) {
    positions.assign(num_types, {});
    ids.assign(num_types, {});
    features.assign(num_types, {});
    const std::vector<int64_t>& src = blocks.front().src_nodes;
    const size_t n = count < 0 ? src.size() : std::min(src.size(), static_cast<size_t>(count));
    for (size_t i = 0; i < n; ++i) {
      const int t = type_of(src[i]);
      if (t < 0 || static_cast<size_t>(t) >= num_types)
        throw DataError("node " + std::to_string(src[i]) + " has no node type");
      positions[static_cast<size_t>(t)].push_back(static_cast<int64_t>(i));
      ids[static_cast<size_t>(t)].push_back(src[i]);
    }
  }
};

// A CSC whose rows list in-edges sorted by relation (etypes[k] is edge k's
// relation in [0, num_rels)), as heterogeneous partitions store them.
struct TypedCscView {
  CscView csc;
  const int64_t* etypes = nullptr;
  int64_t num_rels = 0;
};

// Sampled in-neighbours of `seeds`: for each seed and relation r, up to
// fanouts[r] of its in-edges of relation r (-1: all of them; the
// replace/without-replacement rules of SampleNeighbors apply per relation),
// drawn from MixSeed(MixSeed(rng_seed, key), r). Each seed's edges come in
// relation order; out_etypes gives each sampled edge's relation, and
// out_edges (when given) its position in the CSC (its row of
// csc.edge_data). Throws
// DataError for a seed the CSC does not own and ConfigError when fanouts
// has another length than num_rels or an entry < -1.
void SampleTypedNeighbors(const TypedCscView& g, const int64_t* seeds, int64_t num_seeds,
                          const std::vector<int>& fanouts, bool replace, uint64_t rng_seed,
                          int threads, std::vector<int64_t>* out_indptr,
                          std::vector<int64_t>* out_indices, std::vector<int64_t>* out_etypes,
                          std::vector<int64_t>* out_edges = nullptr);

// All layers for `seeds` (fanouts[l][r]: layer l, relation r; DGL's layer
// order), blocks input -> output with Block::etypes set, and each sampled
// edge's row of g.csc.edge_data in Block::edge_data when the CSC has them. Layer l draws with
// MixSeed(rng_seed, l), as SampleBlocks. With `exclude` (a typed edge
// task's batch), every layer's sampled edges between a pair it holds, of
// any relation and either direction, are dropped after the draw, as
// SampleBlocks drops them.
std::vector<Block> SampleTypedBlocks(const TypedCscView& g, const std::vector<int64_t>& seeds,
                                     const std::vector<std::vector<int>>& fanouts, bool replace,
                                     uint64_t rng_seed, int threads,
                                     const EdgeExclusion* exclude = nullptr);
// Keeps entries kept[i] of *etypes and of *edges (when not null), in
// order: the sampled edges EdgeExclusion::Filter left.
void KeepTypedEdges(const std::vector<int64_t>& kept, std::vector<int64_t>* etypes,
                    std::vector<int64_t>* edges);

// --fan_out for a graph with relations `etypes` ("src:rel:dst"): layers
// separated by ','; a layer is one integer (every relation) or entries
// "REL:n" separated by '/', REL being a relation's name or its full key,
// '*' for the relations not named (without '*', every relation must be
// named). Returns [layer][relation]; ConfigError naming the bad part.
std::vector<std::vector<int>> ParseTypedFanouts(const std::string& spec,
                                                const std::vector<std::string>& etypes);

}  // namespace gnn
