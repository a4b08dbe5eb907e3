// GraphSAGE with the mean aggregator over message-flow blocks:
//   h'_dst = W_self h_dst + W_neigh mean_{src in N(dst)} h_src + b
// With a block's 1-wide edge data as weights (DGL's SAGEConv edge_weight):
// the mean of w_e h_src. With edge features and an op (GraphStorm's
// edge_feat_mp_op), the message of edge e = (src -> dst) is
// op(h_src, W_edge x_e): concat puts them side by side (W_neigh then takes
// 2 x in columns), add / sub / mul combine them element-wise; the layer's
// fc_edge.weight [in, edge_dim] is beyond DGL's module.
// ReLU and dropout between layers. Parameter names follow DGL's SAGEConv
// (layers.<i>.fc_self.weight, layers.<i>.fc_neigh.weight, layers.<i>.bias),
// so a state dict maps onto a plain PyTorch/DGL GraphSAGE.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "sampling/block.h"
#include "train/models/aggregate.h"
#include "train/models/node_model.h"

namespace gnn {

class SAGEConvImpl : public torch::nn::Module {
 public:
  // edge_dim > 0: edge features of that width enter the message by `op`
  // (concat, add, sub, mul).
  SAGEConvImpl(int64_t in, int64_t out, int64_t edge_dim = 0, const std::string& op = "none");
  // h_src: [num_src, in] with the dst rows first (or those rows sparse, a
  // CSR tensor). Returns [num_dst, out].
  torch::Tensor forward(const BlockTensors& block, const torch::Tensor& h_src);
  // The same from the destinations' rows and their neighbours' mean
  // (aggregated already, e.g. by the sampler: MiniBatch::input_means).
  torch::Tensor ForwardMean(const torch::Tensor& h_dst, const torch::Tensor& neigh_mean);

 private:
  // The mean over each destination's in-edges of its messages with the
  // edges' features (edge_dim_ > 0).
  torch::Tensor EdgeFeatureMean(const BlockTensors& block, const torch::Tensor& h_src);
  // forward over sparse input rows (models/sparse_input.h).
  torch::Tensor ForwardSparse(const BlockTensors& block, const torch::Tensor& x);

  int64_t in_, out_, edge_dim_ = 0;
  std::string op_ = "none";
  torch::nn::Linear fc_self_{nullptr}, fc_neigh_{nullptr}, fc_edge_{nullptr};
  torch::Tensor bias_;
};
TORCH_MODULE(SAGEConv);

class GraphSageImpl : public NodeModel {
 public:
  GraphSageImpl(int64_t in, int64_t hidden, int64_t classes, int num_layers, double dropout,
                int64_t edge_dim = 0, const std::string& edge_op = "none");
  // One block per layer, input -> output; x: [blocks[0].num_src, in].
  torch::Tensor forward(const std::vector<BlockTensors>& blocks, torch::Tensor x) {
    return Forward(blocks, std::move(x));
  }
  // Applies layer `l` alone (with its activation/dropout), for layer-wise
  // full-neighbour inference.
  torch::Tensor ForwardLayer(int l, const BlockTensors& block, const torch::Tensor& h) override;
  // The mean is linear: layer 0 can start from the destinations' rows and
  // their neighbours' means (MiniBatch::input_means).
  bool TakesMeans() const override { return edge_dim_ == 0; }
  torch::Tensor ForwardLayerFromMeans(int l, const torch::Tensor& x) override;
  int num_layers() const override { return static_cast<int>(layers_->size()); }
  int64_t OutDim(int l) const override { return dims_[l + 1]; }
  std::string Name() const override { return "graphsage"; }
  nlohmann::json Describe() const override {
    nlohmann::json d = {{"aggregator", "mean"}, {"parameter_names", "dgl.nn.SAGEConv"}};
    if (edge_dim_ > 0) d["extra_keys"] = "layers.<i>.fc_edge.weight [in, edge_feat_dim]";
    return d;
  }

 private:
  torch::Tensor Activate(int l, torch::Tensor out);

  std::vector<int64_t> dims_;
  torch::nn::ModuleList layers_;
  double dropout_;
  int64_t edge_dim_ = 0;
};
TORCH_MODULE(GraphSage);

}  // namespace gnn
