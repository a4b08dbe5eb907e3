// Wire forms of the trainer <-> gnn-sampler messages: SeedBatch (what to
// sample) and MiniBatch (blocks, input features, seed labels).
#pragma once

#include <cstdint>
#include <vector>

#include "net/protocol.h"
#include "sampling/block.h"

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

// ints: {index, num_blocks, feature_dim}; frames: seeds, labels, features,
// then per block src_nodes, indptr, indices (num_dst = size of the next
// block's src_nodes, or of seeds for the last block).
Message EncodeMiniBatch(const MiniBatch& b, uint64_t request_id);
// Validates every invariant (sizes, offsets monotone, indices in range,
// blocks chained, dst nodes first) and throws ProtocolError naming it.
MiniBatch DecodeMiniBatch(const Message& m);

}  // namespace gnn::net
