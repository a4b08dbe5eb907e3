#include "train/cluster/range_eval.h"

#include <cstring>
#include <vector>

#include "common/error.h"

namespace gnn {

std::string EncodeRowRequest(const std::vector<std::vector<int64_t>>& wanted) {
  std::string ask;
  for (const auto& ids : wanted) {
    const int64_t k = static_cast<int64_t>(ids.size());
    ask.append(reinterpret_cast<const char*>(&k), sizeof(k));
    ask.append(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int64_t));
  }
  return ask;
}

std::vector<std::vector<int64_t>> DecodeRowRequest(const std::string& a, int world) {
  std::vector<std::vector<int64_t>> ids(static_cast<size_t>(world));
  size_t at = 0;
  for (int r = 0; r < world; ++r) {
    int64_t k = 0;
    if (at + sizeof(k) > a.size()) throw PeerError("inference: a malformed row request");
    std::memcpy(&k, a.data() + at, sizeof(k));
    at += sizeof(k);
    if (k < 0 || static_cast<uint64_t>(k) > (a.size() - at) / sizeof(int64_t)) {
      throw PeerError("inference: a malformed row request");
    }
    ids[static_cast<size_t>(r)].resize(static_cast<size_t>(k));
    std::memcpy(ids[static_cast<size_t>(r)].data(), a.data() + at,
                static_cast<size_t>(k) * sizeof(int64_t));
    at += static_cast<size_t>(k) * sizeof(int64_t);
  }
  return ids;
}

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
