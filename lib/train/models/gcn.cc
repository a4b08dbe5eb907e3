#include "train/models/gcn.h"

#include "common/error.h"
#include "train/models/aggregate.h"
#include "train/models/attention.h"
#include "train/models/dropout.h"
#include "train/models/sparse_input.h"

namespace gnn {

GraphConvImpl::GraphConvImpl(int64_t in, int64_t out) : in_(in), out_(out) {
  weight_ = register_parameter("weight", torch::empty({in, out}));
  bias_ = register_parameter("bias", torch::zeros({out}));
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(weight_);  // DGL's reset_parameters
}

torch::Tensor GraphConvImpl::forward(const BlockTensors& block, const torch::Tensor& h_src) {
  if (block.edge_data.defined()) {
    // DGL's recipe for edge weights: EdgeWeightNorm('both') turns w_e of
    // s -> i into w_e / sqrt(out_w(s) * in_w(i)), the weighted degrees of
    // the block; GraphConv(norm='none') sums the normalised messages.
    // DGL refuses any weight <= 0 there; gnn refuses negative ones only: a
    // zero-weight edge sends nothing (and a node whose weights are all zero
    // gets a zero factor, not 0 / 0).
    const torch::Tensor w = EdgeWeights(block, weight_.scalar_type());
    if (w.numel() > 0 && w.min().item<double>() < 0) {
      throw DataError(
          "gcn's edge weight normalisation (DGL's EdgeWeightNorm 'both') needs "
          "weights >= 0; a sampled edge has weight " +
          std::to_string(w.min().item<double>()) + " (--edge_weight none ignores them)");
    }
    auto inv_sqrt = [](const torch::Tensor& deg) {
      return torch::where(deg > 0, deg.clamp_min(1e-30).rsqrt(), torch::zeros_like(deg));
    };
    const torch::Tensor dst = torch::repeat_interleave(DestinationInDegrees(block));
    const torch::Tensor out_w =
        torch::zeros({block.num_src}, w.options()).index_add_(0, block.indices, w);
    const torch::Tensor in_w = torch::zeros({block.num_dst}, w.options()).index_add_(0, dst, w);
    const torch::Tensor coef =
        w * inv_sqrt(out_w).index_select(0, block.indices) * inv_sqrt(in_w).index_select(0, dst);
    if (IsSparse(h_src)) {
      return EdgeWeightedAggregate(block, SparseLinear(h_src, weight_), coef).add(bias_);
    }
    if (ProjectFirst(block, h_src)) {
      return EdgeWeightedAggregate(block, torch::mm(h_src, weight_), coef).add(bias_);
    }
    return torch::addmm(bias_, EdgeWeightedAggregate(block, h_src, coef), weight_);
  }
  // DGL's norm='both' on a block: out-degrees of the sources, in-degrees
  // of the destinations, clamped to 1, each to the power -1/2.
  const auto dtype = IsSparse(h_src) ? weight_.scalar_type() : h_src.scalar_type();
  torch::Tensor src_w = SourceOutDegrees(block).clamp_min(1).to(dtype).rsqrt();
  torch::Tensor dst_w = DestinationInDegrees(block).clamp_min(1).to(dtype).rsqrt();
  if (IsSparse(h_src)) {
    // Sparse input rows: projected on their stored entries, then summed.
    return WeightedAggregate(block, SparseLinear(h_src, weight_), src_w, dst_w).add(bias_);
  }
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
