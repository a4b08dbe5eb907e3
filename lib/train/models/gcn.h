// GCN over message-flow blocks (DGL's GraphConv with norm='both' and its
// GCN example): out[i] = d_i^-1/2 * sum over i's in-edges of d_s^-1/2 h[s] W
// + b, with DGL's block degrees: d_s a source's out-edges in the block,
// d_i a destination's in-edges in the block (each at least 1). Every
// destination is one of its own in-neighbours (DGL's example adds
// self-loops to the graph, dgl.add_self_loop; gnn adds one to every block
// on top of the sampled neighbours, so it is never sampled away), and both
// degrees count it. W applied before the sum or after it, whichever order
// the block makes cheaper (gnn::ProjectFirst, as SAGEConv's W_neigh; DGL
// projects first whenever in > out, while on a sampled first layer summing
// first reads the input rows once instead of twice): the same function
// either way, rounded differently. ReLU between layers; dropout on every layer's
// input but the first (DGL's example). Parameter names follow DGL's
// GraphConv (layers.<i>.weight [in, out], layers.<i>.bias).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "train/models/node_model.h"

namespace gnn {

class GraphConvImpl : public torch::nn::Module {
 public:
  GraphConvImpl(int64_t in, int64_t out);
  // `block` with its self-loops; h_src [num_src, in]. Returns [num_dst, out].
  torch::Tensor forward(const BlockTensors& block, const torch::Tensor& h_src);
  // Whether forward applies W before the sum over in-edges for this block.
  bool ProjectFirst(const BlockTensors& block, const torch::Tensor& h_src) const;

 private:
  int64_t in_, out_;
  torch::Tensor weight_, bias_;
};
TORCH_MODULE(GraphConv);

class GcnImpl : public NodeModel {
 public:
  GcnImpl(int64_t in, int64_t hidden, int64_t classes, int num_layers, double dropout);
  torch::Tensor ForwardLayer(int l, const BlockTensors& block, const torch::Tensor& h) override;
  int num_layers() const override { return static_cast<int>(layers_->size()); }
  int64_t OutDim(int l) const override { return dims_[l + 1]; }
  std::string Name() const override { return "gcn"; }
  nlohmann::json Describe() const override {
    return {{"parameter_names", "dgl.nn.GraphConv"},
            {"norm", "both"},
            {"self_loops", true},
            {"hidden_activation", "relu"}};
  }

 private:
  std::vector<int64_t> dims_;
  torch::nn::ModuleList layers_;
  double dropout_;
};
TORCH_MODULE(Gcn);

}  // namespace gnn
