// Wire forms of the trainer <-> gnn-sampler messages: SeedBatch (what to
// sample) and MiniBatch (blocks, input features, seed labels), and their
// heterogeneous forms TypedSeedBatch and HeteroBatch (typed blocks, rows
// per node type).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "net/protocol.h"
#include "sampling/block.h"
#include "sampling/typed_sampler.h"

namespace gnn::net {

struct SeedBatch {
  int64_t epoch = 0;
  int64_t index = 0;  // batch number within the epoch
  uint64_t rng_seed = 0;
  bool replace = false;
  std::vector<int> fanouts;    // DGL order, input layer first
  std::vector<int64_t> seeds;  // global ids
  // Link prediction with --remove_edge: flat (head, tail) pairs kept out of
  // the sampled neighbourhoods (EdgeExclusion). Sent as a second frame only
  // when non-empty.
  std::vector<int64_t> exclude;
};

Message EncodeSeedBatch(const SeedBatch& b, uint64_t request_id);
// Throws ProtocolError on a malformed message (wrong shape, bad fanouts).
SeedBatch DecodeSeedBatch(const Message& m);

// fields: {index, blocks, feature_dim[, input_means][, wire_bytes][,
// cache_lookups][, cache_hits][, label_width][, edge_dim][, sparse]}, the
// optional ones present only when not 0 / unset; frames: seeds, labels
// (int64, or float32 [seeds, label_width] rows with that field), features,
// then per block src_nodes, indptr, indices[, edge rows float32 [edges,
// edge_dim] with that field] (num_dst = size of the next block's
// src_nodes, or of seeds for the last block)[, then with the sparse flag
// the input rows as CSR: indptr, column ids int32, values float32 (empty:
// every value 1)].
Message EncodeMiniBatch(const MiniBatch& b, uint64_t request_id);
// Validates every invariant (sizes, offsets monotone, indices in range,
// blocks chained, dst nodes first) and throws ProtocolError naming it.
MiniBatch DecodeMiniBatch(const Message& m);

// A heterogeneous batch to sample: fanouts[layer][relation] (DGL's layer
// order, ParseTypedFanouts).
struct TypedSeedBatch {
  int64_t epoch = 0;
  int64_t index = 0;
  uint64_t rng_seed = 0;
  bool replace = false;
  std::vector<std::vector<int>> fanouts;
  std::vector<int64_t> seeds;
  // A typed edge task's batch: flat (head, tail) pairs kept out of the
  // sampled neighbourhoods (EdgeExclusion), a third frame only when
  // non-empty.
  std::vector<int64_t> exclude;
};

Message EncodeTypedSeedBatch(const TypedSeedBatch& b, uint64_t request_id);
// ProtocolError on a malformed message (no layers, ragged or out-of-range
// fan-outs, more than kMaxRelations relations, an odd exclusion frame).
TypedSeedBatch DecodeTypedSeedBatch(const Message& m);

// What a receiver knows of the graph, to check a HeteroBatch against it.
struct TypedBatchSchema {
  int64_t num_rels = 0;
  std::vector<int64_t> feature_dims;    // per node type; 0: featureless
  std::function<int(int64_t)> type_of;  // a node's type, or -1
  // Each relation's source type (input_means batches only; empty: every
  // relation's means must be empty).
  std::vector<int> rel_src_type;
  // The width of the edge rows the blocks must carry (0: none).
  int64_t edge_dim = 0;
};

// The batch's index, seeds, labels, blocks (relation ids in the narrowest
// width, RelationWidth), wire_bytes and every featured type's rows; not its
// positions and ids (the receiver groups block 0's sources again). An
// input_means batch adds that flag and one frame: every relation's means in
// relation order; a batch whose blocks carry edge rows (never with means)
// adds field edge_dim and one frame: every block's rows in block order.
// At most 7 blocks (one message's frames).
Message EncodeTypedMiniBatch(const HeteroBatch& b, uint64_t request_id);
// Validates what DecodeMiniBatch does for the blocks (plus at least one
// block, relation ids in [0, num_rels) beside every edge), groups block 0's
// sources by schema.type_of (GroupInputsByType) and checks every featured
// type's rows against them; ProtocolError naming what is wrong.
HeteroBatch DecodeTypedMiniBatch(const Message& m, const TypedBatchSchema& schema);

}  // namespace gnn::net
