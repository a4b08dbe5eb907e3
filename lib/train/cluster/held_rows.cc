#include "train/cluster/held_rows.h"

#include "sampling/sampler.h"

namespace gnn {

HeldInputRows::HeldInputRows(DistGraph& graph, const std::vector<std::vector<int64_t>>& wanted)
    : graph_(graph) {
  if (graph.sparse_rows()) return;
  CscView local;
  const bool has_local = graph.LocalCsc(&local);
  std::vector<int64_t> ids;
  for (const std::vector<int64_t>& of : wanted) {
    for (int64_t v : of) {
      if (!has_local || v < local.node_start || v >= local.node_start + local.num_nodes)
        ids.push_back(v);
    }
  }
  const double bytes =
      static_cast<double>(ids.size()) * static_cast<double>(graph.feature_dim()) * sizeof(float);
  if (bytes > kHeldRowsBudget) return;
  if (!ids.empty()) graph.HoldRows(ids);
  covers_ = true;
}

void HeldInputRows::Release() {
  if (graph_.num_held_rows() > 0) graph_.ReleaseRows();
}

}  // namespace gnn
