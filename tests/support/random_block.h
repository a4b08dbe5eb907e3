// A random message-flow block for the trainer's op tests (aggregations,
// attention, their CUDA row functions).
#pragma once

#include <cstdint>
#include <random>

#include "sampling/block.h"

namespace gnn::test {

// `num_dst` destinations over `num_src` sources (ids 1000 + i): random
// degrees in [0, max_deg] (so some destinations have none), sources drawn
// with repeats (so some appear on many edges, some on none).
inline Block RandomBlock(int64_t num_dst, int64_t num_src, int max_deg, uint32_t seed) {
  std::mt19937 rng(seed);
  Block b;
  b.num_dst = num_dst;
  b.src_nodes.resize(static_cast<size_t>(num_src));
  for (int64_t i = 0; i < num_src; ++i) b.src_nodes[static_cast<size_t>(i)] = 1000 + i;
  b.indptr.push_back(0);
  for (int64_t d = 0; d < num_dst; ++d) {
    const int deg = static_cast<int>(rng() % static_cast<uint32_t>(max_deg + 1));
    for (int k = 0; k < deg; ++k) {
      b.indices.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(num_src)));
    }
    b.indptr.push_back(static_cast<int64_t>(b.indices.size()));
  }
  return b;
}

}  // namespace gnn::test
