// Layer-wise full-neighbour inference (DGL's evaluate), the one used by
// both environments: layer l is computed for a range of nodes in batches of
// destination nodes before layer l+1, so memory stays bounded by a layer's
// output. Where neighbours and layer 0's features come from, and how a
// layer's rows of this range become every node's rows (an all-gather in a
// cluster; nothing alone), is the caller's.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "train/models/node_model.h"

namespace gnn {

struct InferenceSource {
  // All in-neighbours of `dst` (global ids): CSR over dst, and with
  // edge_dim > 0 each edge's data [idx.size(), edge_dim] into edge_rows (a
  // model that reads edge weights or features).
  std::function<void(const std::vector<int64_t>& dst, std::vector<int64_t>* ptr,
                     std::vector<int64_t>* idx, std::vector<float>* edge_rows)>
      neighbors;
  int64_t edge_dim = 0;
  // Layer 0's input rows of `ids` [ids.size(), feature_dim].
  std::function<torch::Tensor(const std::vector<int64_t>& ids)> features;
  // Optional: layer 0's input for destinations `dst` as [2n, feature_dim],
  // their rows then the means of all their in-neighbours' rows, computed
  // where the rows live (DistGraph::SampleAggregate with fan-out -1); when
  // set, layer 0 asks neither `neighbors` nor `features`.
  std::function<torch::Tensor(const std::vector<int64_t>& dst)> input_means;
  // This range's rows of a layer -> the rows of every node (row v - base
  // for node v). Identity when the range is every node.
  std::function<torch::Tensor(const torch::Tensor& rows)> exchange;
  int64_t base = 0;  // global id of row 0 of an exchanged layer
  // Optional: the rows of `ids` (global) in an exchanged layer, when it
  // holds only some nodes' rows (a cluster rank's range and what it
  // reads of others); unset: row = id - base.
  std::function<std::vector<int64_t>(const std::vector<int64_t>& ids)> locate;
};

// Outputs of the model's last layer for nodes [lo, hi) (rows in id order);
// with `exchange_last`, the last layer is exchanged too (every node's rows).
// With `captured`, also layer `capture_layer`'s output (0-based, after its
// activation: the next layer's input) for [lo, hi).
// Runs under NoGradGuard in eval mode, and leaves the model in train mode.
torch::Tensor LayerwiseInference(NodeModel& model, const InferenceSource& source, int64_t lo,
                                 int64_t hi, int64_t batch_size, bool exchange_last,
                                 int capture_layer = -1, torch::Tensor* captured = nullptr);

}  // namespace gnn
