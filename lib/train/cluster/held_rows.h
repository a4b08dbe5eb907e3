// Full-neighbour inference's first layer on a cluster: the feature rows of
// other partitions' nodes that a rank's range reads, pulled once and held
// by the DistGraph (DistGraph::HoldRows) while the layer runs, so each
// batch gathers its rows on the machine instead of asking their owners.
#pragma once

#include <cstdint>
#include <vector>

#include "client/dist_graph.h"

namespace gnn {

// Held rows above this many bytes per rank are not held: layer 0 then asks
// for them batch by batch.
constexpr double kHeldRowsBudget = 2.0 * (1 << 30);

// Holds, from construction to Release (or destruction), the rows of the
// nodes in `wanted` (per rank: the ids of that rank's range this range
// reads) outside the machine's partition, when the graph's rows are dense
// and they fit in kHeldRowsBudget bytes.
class HeldInputRows {
 public:
  HeldInputRows(DistGraph& graph, const std::vector<std::vector<int64_t>>& wanted);
  ~HeldInputRows() { Release(); }
  HeldInputRows(const HeldInputRows&) = delete;
  HeldInputRows& operator=(const HeldInputRows&) = delete;

  // Whether every row the range's first layer reads is on this machine
  // (held, or the local partition's).
  bool covers() const { return covers_; }
  void Release();

 private:
  DistGraph& graph_;
  bool covers_ = false;
};

}  // namespace gnn
