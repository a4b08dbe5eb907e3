// Distributed evaluation of label rows (multi-label, regression): each rank
// scores the valid and test nodes of its own inference range, a slice of
// its machine's partition, so their masks and label rows come from shared
// memory, and every rank gets all ranks' rows in rank order.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "store/shm_partition.h"
#include "train/cluster/collective.h"
#include "train/loop/train_env.h"

namespace gnn {

// `mine` holds the model's rows of [lo, hi) ([hi - lo, width]); `local` is
// the machine's partition (null only when the range is empty). One
// all-gather of outputs and labels side by side per split (a collective).
EvalRows GatherRangeRows(Collective& collective, const PartitionView* local, int64_t lo, int64_t hi,
                         const torch::Tensor& mine, int64_t width);

}  // namespace gnn
