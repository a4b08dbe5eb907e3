// Distributed evaluation by inference ranges (each rank computes a slice of
// its machine's partition): the row requests of the layer-wise exchange,
// and label-row evaluation (multi-label, regression), where each rank
// scores the valid and test nodes of its own range, so their masks and
// label rows come from shared memory, and every rank gets all ranks' rows
// in rank order.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "store/shm_partition.h"
#include "train/cluster/collective.h"
#include "train/loop/train_env.h"

namespace gnn {

// A rank's request of the layer-wise exchange: per rank (in order) a count,
// then the ids of that rank's range it reads, as int64 bytes.
std::string EncodeRowRequest(const std::vector<std::vector<int64_t>>& wanted);
// The same back, for `world` ranks; PeerError on a malformed request.
std::vector<std::vector<int64_t>> DecodeRowRequest(const std::string& bytes, int world);

// `mine` holds the model's rows of [lo, hi) ([hi - lo, width]); `local` is
// the machine's partition (null only when the range is empty). One
// all-gather of outputs and labels side by side per split (a collective).
EvalRows GatherRangeRows(Collective& collective, const PartitionView* local, int64_t lo, int64_t hi,
                         const torch::Tensor& mine, int64_t width);

}  // namespace gnn
