// GraphSAGE with the mean aggregator over message-flow blocks:
//   h'_dst = W_self h_dst + W_neigh mean_{src in N(dst)} h_src + b
// ReLU and dropout between layers. Parameter names follow DGL's SAGEConv
// (layers.<i>.fc_self.weight, layers.<i>.fc_neigh.weight, layers.<i>.bias),
// so a state dict maps onto a plain PyTorch/DGL GraphSAGE.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "sampling/block.h"
#include "train/aggregate.h"

namespace gnn {

// Whether SAGEConv applies W_neigh before the mean (over the block's
// sources) rather than after it (over its destinations): the cheaper order
// by an estimate of both, given which gradients the step needs.
bool ProjectFirst(const BlockTensors& block, int64_t in, int64_t out, bool weight_grad,
                  bool input_grad);

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

class GraphSageImpl : public torch::nn::Module {
 public:
  GraphSageImpl(int64_t in, int64_t hidden, int64_t classes, int num_layers, double dropout);
  // One block per layer, input -> output; x: [blocks[0].num_src, in].
  torch::Tensor forward(const std::vector<BlockTensors>& blocks, torch::Tensor x);
  // The same when layer 0's input is [2 * blocks[0].num_dst, in]: the
  // destinations' rows, then their neighbours' means (MiniBatch::input_means).
  torch::Tensor ForwardFromMeans(const std::vector<BlockTensors>& blocks, const torch::Tensor& x);
  // Applies layer `l` alone (with its activation/dropout), for layer-wise
  // full-neighbour inference.
  torch::Tensor ForwardLayer(int l, const BlockTensors& block, const torch::Tensor& h);
  // Layer `l` alone over [2n, in]: n destinations' rows, then their
  // neighbours' means (layer-wise inference aggregated at the owners).
  torch::Tensor ForwardLayerFromMeans(int l, const torch::Tensor& x);
  int num_layers() const { return static_cast<int>(layers_->size()); }
  int64_t OutDim(int l) const { return dims_[l + 1]; }

 private:
  torch::Tensor Activate(int l, torch::Tensor out);

  std::vector<int64_t> dims_;
  torch::nn::ModuleList layers_;
  double dropout_;
};
TORCH_MODULE(GraphSage);

}  // namespace gnn
