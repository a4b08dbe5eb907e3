// Which rows a machine's trainers will read most: the choice behind the
// hot-row cache (store/row_cache.h) and the GPU feature cache. Pure function of the local
// partition's in-edges, so every process of a machine computes the same.
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/sampler.h"

namespace gnn {

// The in-neighbours of `csc`'s nodes that it does not own (ids outside
// [node_start, node_start + num_nodes)), ranked by how often an epoch of
// mini-batches over the seeds `is_seed` marks ([csc.num_nodes]; null: every
// node) is expected to read their rows at the first layer, with fan-outs
// `fanouts` (DGL's order: fanouts[0] nearest the input; -1 = every
// neighbour): each seed is a destination of the top layer once; a node
// with in-degree d that is a destination e times passes e * min(1, f / d)
// to each neighbour in the layer below (and stays a destination there);
// the first layer's destinations pass it to their remote neighbours, whose
// sums are the scores. Those neighbours are the rows the owners of local
// destinations do not hold, so they cross the network (and, on DGL's wire,
// the remote rows of every input layer). Remote nodes the walk reaches only
// through other partitions are not seen. Returns at most `max_rows` ids,
// the highest scores first (ties by smaller id), then sorted ascending.
// Blocking, single-threaded, O(layers * local edges + remote entries * log).
std::vector<int64_t> HotRemoteRows(const CscView& csc, const uint8_t* is_seed,
                                   const std::vector<int>& fanouts, int64_t max_rows);

// The same expected reads for `csc`'s own nodes (a first-layer destination
// reads its own row and passes its draws to its neighbours'): the rows a
// trainer's GPU feature cache holds (gnn-train --gpu_cache_mb). Nodes never
// read are left out. At most `max_rows` ids, hottest first (ties by smaller
// id), then sorted ascending.
std::vector<int64_t> HotLocalRows(const CscView& csc, const uint8_t* is_seed,
                                  const std::vector<int>& fanouts, int64_t max_rows);

}  // namespace gnn
