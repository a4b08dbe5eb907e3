// GraphSAGE with the mean aggregator over message-flow blocks:
//   h'_dst = W_self h_dst + W_neigh mean_{src in N(dst)} h_src + b
// ReLU and dropout between layers. Parameter names follow DGL's SAGEConv
// (layers.<i>.fc_self.weight, layers.<i>.fc_neigh.weight, layers.<i>.bias),
// so a state dict maps onto a plain PyTorch/DGL GraphSAGE.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "sampling/block.h"
#include "train/models/aggregate.h"
#include "train/models/node_model.h"

namespace gnn {

class SAGEConvImpl : public torch::nn::Module {
 public:
  SAGEConvImpl(int64_t in, int64_t out);
  // h_src: [num_src, in] with the dst rows first. Returns [num_dst, out].
  torch::Tensor forward(const BlockTensors& block, const torch::Tensor& h_src);
  // The same from the destinations' rows and their neighbours' mean
  // (aggregated already, e.g. by the sampler: MiniBatch::input_means).
  torch::Tensor ForwardMean(const torch::Tensor& h_dst, const torch::Tensor& neigh_mean);

 private:
  int64_t in_, out_;
  torch::nn::Linear fc_self_{nullptr}, fc_neigh_{nullptr};
  torch::Tensor bias_;
};
TORCH_MODULE(SAGEConv);

class GraphSageImpl : public NodeModel {
 public:
  GraphSageImpl(int64_t in, int64_t hidden, int64_t classes, int num_layers, double dropout);
  // One block per layer, input -> output; x: [blocks[0].num_src, in].
  torch::Tensor forward(const std::vector<BlockTensors>& blocks, torch::Tensor x) {
    return Forward(blocks, std::move(x));
  }
  // Applies layer `l` alone (with its activation/dropout), for layer-wise
  // full-neighbour inference.
  torch::Tensor ForwardLayer(int l, const BlockTensors& block, const torch::Tensor& h) override;
  // The mean is linear: layer 0 can start from the destinations' rows and
  // their neighbours' means (MiniBatch::input_means).
  bool TakesMeans() const override { return true; }
  torch::Tensor ForwardLayerFromMeans(int l, const torch::Tensor& x) override;
  int num_layers() const override { return static_cast<int>(layers_->size()); }
  int64_t OutDim(int l) const override { return dims_[l + 1]; }
  std::string Name() const override { return "graphsage"; }
  nlohmann::json Describe() const override {
    return {{"aggregator", "mean"}, {"parameter_names", "dgl.nn.SAGEConv"}};
  }

 private:
  torch::Tensor Activate(int l, torch::Tensor out);

  std::vector<int64_t> dims_;
  torch::nn::ModuleList layers_;
  double dropout_;
};
TORCH_MODULE(GraphSage);

}  // namespace gnn
