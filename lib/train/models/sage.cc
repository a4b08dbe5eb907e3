#include "train/models/sage.h"

#include "common/error.h"
#include "train/models/dropout.h"
#include "train/models/sparse_input.h"

namespace gnn {

namespace {

// DGL's SAGEConv with edge_weight: each edge's coefficient in the mean of
// w_e * h_src over its destination's in-edges, w_e / deg.
torch::Tensor WeightedMeanCoefficients(const BlockTensors& block, torch::ScalarType dtype) {
  const torch::Tensor w = EdgeWeights(block, dtype);
  const torch::Tensor counts = DestinationInDegrees(block);
  return w / torch::repeat_interleave(counts.clamp_min(1).to(w.scalar_type()), counts);
}

}  // namespace

SAGEConvImpl::SAGEConvImpl(int64_t in, int64_t out, int64_t edge_dim, const std::string& op)
    : in_(in), out_(out), edge_dim_(edge_dim), op_(op) {
  if (edge_dim_ > 0 && op_ != "concat" && op_ != "add" && op_ != "sub" && op_ != "mul") {
    throw ConfigError("SAGEConv: edge feature op '" + op_ + "' (concat, add, sub or mul)");
  }
  const int64_t neigh_in = edge_dim_ > 0 && op_ == "concat" ? 2 * in : in;
  fc_self_ =
      register_module("fc_self", torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)));
  fc_neigh_ = register_module(
      "fc_neigh", torch::nn::Linear(torch::nn::LinearOptions(neigh_in, out).bias(false)));
  if (edge_dim_ > 0) {
    fc_edge_ = register_module(
        "fc_edge", torch::nn::Linear(torch::nn::LinearOptions(edge_dim_, in).bias(false)));
  }
  bias_ = register_parameter("bias", torch::zeros({out}));
  // DGL initialises both weights with xavier_uniform and gain sqrt(2) (relu).
  const double gain = std::sqrt(2.0);
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(fc_self_->weight, gain);
  torch::nn::init::xavier_uniform_(fc_neigh_->weight, gain);
  if (fc_edge_) torch::nn::init::xavier_uniform_(fc_edge_->weight, gain);
}

torch::Tensor SAGEConvImpl::EdgeFeatureMean(const BlockTensors& block, const torch::Tensor& h_src) {
  if (!block.edge_data.defined() || block.edge_data.size(1) != edge_dim_) {
    throw Error("graphsage reads " + std::to_string(edge_dim_) +
                " features per edge, but the block carries " +
                (block.edge_data.defined() ? std::to_string(block.edge_data.size(1))
                                           : std::string("none")));
  }
  const torch::Tensor counts = DestinationInDegrees(block);
  const torch::Tensor dst = torch::repeat_interleave(counts);
  const torch::Tensor inv_deg =
      counts.clamp_min(1).to(h_src.scalar_type()).reciprocal().unsqueeze(1);
  const torch::Tensor x = block.edge_data.to(h_src.scalar_type());
  if (op_ == "mul") {
    // Not linear in the pair: each edge's message is built, [E, in].
    const torch::Tensor msg = h_src.index_select(0, block.indices) * fc_edge_(x);
    return torch::zeros({block.num_dst, in_}, h_src.options()).index_add(0, dst, msg) * inv_deg;
  }
  // concat, add, sub: the mean of the messages is the messages of the means
  // (the source rows' mean, the projected mean of the edge features), so no
  // per-edge row of width `in` is built.
  const torch::Tensor edge_mean = fc_edge_(
      torch::zeros({block.num_dst, edge_dim_}, x.options()).index_add(0, dst, x) * inv_deg);
  const torch::Tensor row_mean = MeanAggregate(block, h_src);
  if (op_ == "concat") return torch::cat({row_mean, edge_mean}, 1);
  return op_ == "add" ? row_mean + edge_mean : row_mean - edge_mean;
}

torch::Tensor SAGEConvImpl::ForwardSparse(const BlockTensors& block, const torch::Tensor& x) {
  if (edge_dim_ > 0) {
    throw ConfigError(
        "graphsage with --edge_feat_mp_op builds messages from whole input rows: partition the "
        "graph with --feature_format dense");
  }
  // Both projections on the stored entries alone: the destinations' own
  // rows by W_self, every source row by W_neigh, then the (weighted) mean
  // of the projected rows, which is the projection of the mean.
  torch::Tensor self = SparseLinear(x, fc_self_->weight.t(), block.num_dst).add(bias_);
  const torch::Tensor neigh = SparseLinear(x, fc_neigh_->weight.t());
  if (block.edge_data.defined()) {
    return self.add(
        EdgeWeightedAggregate(block, neigh, WeightedMeanCoefficients(block, neigh.scalar_type())));
  }
  return self.add(MeanAggregate(block, neigh));
}

torch::Tensor SAGEConvImpl::forward(const BlockTensors& block, const torch::Tensor& h_src) {
  if (IsSparse(h_src)) return ForwardSparse(block, h_src);
  const bool grad = torch::GradMode::is_enabled();
  const bool weight_grad = grad && fc_neigh_->weight.requires_grad();
  const bool project_first =
      ProjectFirst(block, in_, out_, weight_grad, grad && h_src.requires_grad());
  if (edge_dim_ > 0) {
    return ForwardMean(h_src.slice(0, 0, block.num_dst), EdgeFeatureMean(block, h_src));
  }
  if (block.edge_data.defined()) {
    // DGL's SAGEConv with edge_weight: the mean of w_e * h_s over the
    // destination's in-edges, sum(w_e h_s) / deg.
    const torch::Tensor coef = WeightedMeanCoefficients(block, h_src.scalar_type());
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
  if (grad && h_src.requires_grad()) {
    // A layer above the first: h_src's gradient comes back as one tensor.
    const auto [h_dst, mean] = DestinationsAndMean(block, h_src);
    return ForwardMean(h_dst, mean);
  }
  return ForwardMean(h_src.slice(0, 0, block.num_dst), MeanAggregate(block, h_src));
}

torch::Tensor SAGEConvImpl::ForwardMean(const torch::Tensor& h_dst,
                                        const torch::Tensor& neigh_mean) {
  // bias + h_dst W_self^T in one GEMM call, then the neighbour term added
  // by the second GEMM itself (beta = 1): no [n, out] temporary, no pass
  // to add it.
  return torch::addmm(bias_, h_dst, fc_self_->weight.t()).addmm_(neigh_mean, fc_neigh_->weight.t());
}

GraphSageImpl::GraphSageImpl(int64_t in, int64_t hidden, int64_t classes, int num_layers,
                             double dropout, int64_t edge_dim, const std::string& edge_op)
    : dropout_(dropout), edge_dim_(edge_dim) {
  dims_ = LayerWidths(in, hidden, classes, num_layers);
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (int l = 0; l < num_layers; ++l) {
    layers_->push_back(SAGEConv(dims_[l], dims_[l + 1], edge_dim, edge_op));
  }
}

torch::Tensor GraphSageImpl::Activate(int l, torch::Tensor out) {
  if (l + 1 < num_layers()) out = ReluDropout(out, dropout_, is_training());
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
