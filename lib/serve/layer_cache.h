// gnn-serve's first-layer cache: the first layer's output row of a node,
// kept across queries. Serving samples every node's neighbourhood with one
// fixed seed (a node's sample depends on the node and the layer only, as
// gnn-train --inference --fan_out samples), so for a model whose layer
// output depends only on the destination and its sampled in-neighbours
// (GraphSAGE, GAT; not GCN, whose block normalisation counts the batch's
// other destinations), a node's first-layer row is the same whichever
// query asks: a cached row is the row the query would compute.
//
// Direct-mapped (one slot per hash of the node id; a new row replaces what
// its slot held), bounded by its byte budget, no allocation after
// construction. One thread (the queue's worker) uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gnn {

class LayerCache {
 public:
  // Slots for about `bytes` of rows of `dim` floats (at least one).
  LayerCache(int64_t bytes, int64_t dim);

  int64_t dim() const { return dim_; }
  int64_t slots() const { return static_cast<int64_t>(keys_.size()); }
  // Node v's row, or null.
  const float* Find(int64_t v) const;
  // Node v's row is `row` (dim floats) from now on.
  void Put(int64_t v, const float* row);

  uint64_t lookups = 0, hits = 0;  // the caller's counts

 private:
  size_t Slot(int64_t v) const;

  int64_t dim_;
  std::vector<int64_t> keys_;  // -1: empty
  std::vector<float> rows_;    // [slots, dim]
};

}  // namespace gnn
