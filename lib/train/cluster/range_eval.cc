#include "train/cluster/range_eval.h"

#include <vector>

#include "common/error.h"

namespace gnn {

EvalRows GatherRangeRows(Collective& collective, const PartitionView* local, int64_t lo, int64_t hi,
                         const torch::Tensor& mine, int64_t width) {
  if (local == nullptr && hi > lo) throw Error("evaluation: no local partition");
  torch::Tensor targets = torch::empty({0, width}, torch::kFloat32);
  if (hi > lo) {
    targets =
        torch::from_blob(const_cast<float*>(local->targets + (lo - local->node_start) * width),
                         {hi - lo, width}, torch::kFloat32);
  }
  EvalRows rows;
  for (int k = 0; k < 2; ++k) {
    std::vector<int64_t> at;  // positions in [lo, hi)
    const uint8_t* mask = hi > lo ? (k == 0 ? local->valid_mask : local->test_mask) : nullptr;
    for (int64_t u = lo; u < hi; ++u) {
      if (mask[u - local->node_start]) at.push_back(u - lo);
    }
    const torch::Tensor idx =
        torch::from_blob(at.data(), {static_cast<int64_t>(at.size())}, torch::kInt64);
    const torch::Tensor both =
        torch::cat({mine.index_select(0, idx), targets.index_select(0, idx)}, 1).contiguous();
    const torch::Tensor every = collective.AllgatherRows(both);
    rows.out[k] = every.slice(1, 0, width).contiguous();
    rows.target[k] = every.slice(1, width).contiguous();
  }
  return rows;
}

}  // namespace gnn
