#include "train/models/gcn.h"

#include "train/models/aggregate.h"
#include "train/models/attention.h"
#include "train/models/dropout.h"

namespace gnn {

GraphConvImpl::GraphConvImpl(int64_t in, int64_t out) : in_(in), out_(out) {
  weight_ = register_parameter("weight", torch::empty({in, out}));
  bias_ = register_parameter("bias", torch::zeros({out}));
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(weight_);  // DGL's reset_parameters
}

torch::Tensor GraphConvImpl::forward(const BlockTensors& block, const torch::Tensor& h_src) {
  // DGL's norm='both' on a block: out-degrees of the sources, in-degrees
  // of the destinations, clamped to 1, each to the power -1/2.
  torch::Tensor src_w = SourceOutDegrees(block).clamp_min(1).to(h_src.scalar_type()).rsqrt();
  torch::Tensor dst_w = DestinationInDegrees(block).clamp_min(1).to(h_src.scalar_type()).rsqrt();
  if (ProjectFirst(block, h_src)) {
    return WeightedAggregate(block, torch::mm(h_src, weight_), src_w, dst_w).add(bias_);
  }
  return torch::addmm(bias_, WeightedAggregate(block, h_src, src_w, dst_w), weight_);
}

bool GraphConvImpl::ProjectFirst(const BlockTensors& block, const torch::Tensor& h_src) const {
  const bool grad = torch::GradMode::is_enabled() && weight_.requires_grad();
  return gnn::ProjectFirst(block, in_, out_, grad, grad && h_src.requires_grad());
}

GcnImpl::GcnImpl(int64_t in, int64_t hidden, int64_t classes, int num_layers, double dropout)
    : dropout_(dropout) {
  dims_ = LayerWidths(in, hidden, classes, num_layers);
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (int l = 0; l < num_layers; ++l) layers_->push_back(GraphConv(dims_[l], dims_[l + 1]));
}

torch::Tensor GcnImpl::ForwardLayer(int l, const BlockTensors& block, const torch::Tensor& h) {
  torch::Tensor x = l == 0 ? h : Dropout(h, dropout_, is_training());
  torch::Tensor out = layers_[l]->as<GraphConvImpl>()->forward(WithSelfLoops(block), x);
  return l + 1 == num_layers() ? out : torch::relu(out);
}

}  // namespace gnn
