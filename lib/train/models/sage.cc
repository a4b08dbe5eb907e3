#include "train/models/sage.h"

#include "train/models/dropout.h"

namespace gnn {

SAGEConvImpl::SAGEConvImpl(int64_t in, int64_t out) : in_(in), out_(out) {
  fc_self_ =
      register_module("fc_self", torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)));
  fc_neigh_ =
      register_module("fc_neigh", torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)));
  bias_ = register_parameter("bias", torch::zeros({out}));
  // DGL initialises both weights with xavier_uniform and gain sqrt(2) (relu).
  const double gain = std::sqrt(2.0);
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(fc_self_->weight, gain);
  torch::nn::init::xavier_uniform_(fc_neigh_->weight, gain);
}

torch::Tensor SAGEConvImpl::forward(const BlockTensors& block, const torch::Tensor& h_src) {
  const bool grad = torch::GradMode::is_enabled();
  const bool weight_grad = grad && fc_neigh_->weight.requires_grad();
  const bool project_first =
      ProjectFirst(block, in_, out_, weight_grad, grad && h_src.requires_grad());
  if (block.edge_data.defined()) {
    // DGL's SAGEConv with edge_weight: the mean of w_e * h_s over the
    // destination's in-edges, sum(w_e h_s) / deg.
    const torch::Tensor w = EdgeWeights(block, h_src.scalar_type());
    const torch::Tensor deg = DestinationInDegrees(block).clamp_min(1).to(w.scalar_type());
    const torch::Tensor coef = w / torch::repeat_interleave(deg, DestinationInDegrees(block));
    torch::Tensor h_dst = h_src.slice(0, 0, block.num_dst);
    if (project_first) {
      return torch::addmm(bias_, h_dst, fc_self_->weight.t())
          .add_(EdgeWeightedAggregate(block, fc_neigh_(h_src), coef));
    }
    return ForwardMean(h_dst, EdgeWeightedAggregate(block, h_src, coef));
  }
  if (project_first) {
    torch::Tensor h_dst = h_src.slice(0, 0, block.num_dst);
    return torch::addmm(bias_, h_dst, fc_self_->weight.t())
        .add_(MeanAggregate(block, fc_neigh_(h_src)));
  }
  return ForwardMean(h_src.slice(0, 0, block.num_dst), MeanAggregate(block, h_src));
}

torch::Tensor SAGEConvImpl::ForwardMean(const torch::Tensor& h_dst,
                                        const torch::Tensor& neigh_mean) {
  // bias + h_dst W_self^T in one GEMM call, then the neighbour term.
  return torch::addmm(bias_, h_dst, fc_self_->weight.t()).add_(fc_neigh_(neigh_mean));
}

GraphSageImpl::GraphSageImpl(int64_t in, int64_t hidden, int64_t classes, int num_layers,
                             double dropout)
    : dropout_(dropout) {
  dims_ = LayerWidths(in, hidden, classes, num_layers);
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (int l = 0; l < num_layers; ++l) layers_->push_back(SAGEConv(dims_[l], dims_[l + 1]));
}

torch::Tensor GraphSageImpl::Activate(int l, torch::Tensor out) {
  if (l + 1 < num_layers()) {
    out = torch::relu(out);
    out = Dropout(out, dropout_, is_training());
  }
  return out;
}

torch::Tensor GraphSageImpl::ForwardLayer(int l, const BlockTensors& block,
                                          const torch::Tensor& h) {
  return Activate(l, layers_[l]->as<SAGEConvImpl>()->forward(block, h));
}

torch::Tensor GraphSageImpl::ForwardLayerFromMeans(int l, const torch::Tensor& x) {
  const int64_t n = x.size(0) / 2;
  return Activate(l, layers_[l]->as<SAGEConvImpl>()->ForwardMean(x.slice(0, 0, n), x.slice(0, n)));
}

}  // namespace gnn
