// GraphSAGE with the mean aggregator over message-flow blocks:
//   h'_dst = W_self h_dst + W_neigh mean_{src in N(dst)} h_src + b
// ReLU and dropout between layers. Parameter names follow DGL's SAGEConv
// (layers.<i>.fc_self.weight, layers.<i>.fc_neigh.weight, layers.<i>.bias),
// so a state dict maps onto a plain PyTorch/DGL GraphSAGE.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "sampling/block.h"

namespace gnn {

// A block's structure as tensors (int64, CPU). from_blob views: the Block
// must outlive the tensors.
struct BlockTensors {
  int64_t num_dst = 0;
  int64_t num_src = 0;
  torch::Tensor indices;   // [E] local src index per edge
  torch::Tensor dst_of;    // [E] local dst index per edge
  torch::Tensor inv_deg;   // [num_dst, 1] float: 1/in-degree (0 for none)
};

BlockTensors ToTensors(const Block& block);

class SAGEConvImpl : public torch::nn::Module {
 public:
  SAGEConvImpl(int64_t in, int64_t out);
  // h_src: [num_src, in] with the dst rows first. Returns [num_dst, out].
  torch::Tensor forward(const BlockTensors& block, const torch::Tensor& h_src);

 private:
  int64_t in_, out_;
  torch::nn::Linear fc_self_{nullptr}, fc_neigh_{nullptr};
  torch::Tensor bias_;
};
TORCH_MODULE(SAGEConv);

class GraphSageImpl : public torch::nn::Module {
 public:
  GraphSageImpl(int64_t in, int64_t hidden, int64_t classes, int num_layers, double dropout);
  // One block per layer, input -> output; x: [blocks[0].num_src, in].
  torch::Tensor forward(const std::vector<BlockTensors>& blocks, torch::Tensor x);
  // Applies layer `l` alone (with its activation/dropout), for layer-wise
  // full-neighbour inference.
  torch::Tensor ForwardLayer(int l, const BlockTensors& block, const torch::Tensor& h);
  int num_layers() const { return static_cast<int>(layers_->size()); }
  int64_t OutDim(int l) const { return dims_[l + 1]; }

 private:
  std::vector<int64_t> dims_;
  torch::nn::ModuleList layers_;
  double dropout_;
};
TORCH_MODULE(GraphSage);

}  // namespace gnn
