#include "train/models/gat.h"

#include <string>

#include "common/error.h"
#include "train/models/attention.h"
#include "train/models/dropout.h"
#include "train/models/sparse_input.h"

namespace gnn {

GATConvImpl::GATConvImpl(int64_t in, int64_t width, int heads, const GatOptions& o)
    : in_(in),
      width_(width),
      edge_dim_(o.edge_dim),
      edge_op_(o.edge_op),
      heads_(heads),
      attn_drop_(o.attn_drop),
      slope_(o.negative_slope) {
  const int64_t out = width * heads;
  fc_ = register_module("fc", torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)));
  if (edge_dim_ > 0) {
    if (edge_op_ != "add" && edge_op_ != "sub" && edge_op_ != "mul") {
      throw ConfigError("gat takes edge features by --edge_feat_mp_op add, sub or mul, not '" +
                        edge_op_ + "'");
    }
    fc_edge_ = register_module(
        "fc_edge", torch::nn::Linear(torch::nn::LinearOptions(edge_dim_, out).bias(false)));
  }
  attn_l_ = register_parameter("attn_l", torch::empty({1, heads, width}));
  attn_r_ = register_parameter("attn_r", torch::empty({1, heads, width}));
  // DGL: a linear residual (with its own bias) when the widths differ, the
  // identity when they match; an explicit bias unless the residual has one.
  if (o.residual && in != out) {
    res_fc_ = register_module("res_fc", torch::nn::Linear(in, out));
  } else {
    identity_residual_ = o.residual;
    bias_ = register_parameter("bias", torch::zeros({out}));
  }
  // DGL's reset_parameters: xavier_normal with the ReLU gain, biases zero.
  const double gain = std::sqrt(2.0);
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_normal_(fc_->weight, gain);
  torch::nn::init::xavier_normal_(attn_l_, gain);
  torch::nn::init::xavier_normal_(attn_r_, gain);
  if (fc_edge_) torch::nn::init::xavier_normal_(fc_edge_->weight, gain);
  if (res_fc_) {
    torch::nn::init::xavier_normal_(res_fc_->weight, gain);
    res_fc_->bias.zero_();
  }
}

torch::Tensor GATConvImpl::forward(const BlockTensors& block, const torch::Tensor& h_src) {
  if (edge_dim_ > 0) return ForwardEdgeFeatures(block, h_src);
  // One GEMM for the projected rows and both sides' attention logits:
  // [fc.weight; (W_h^T a_l)^T; (W_h^T a_r)^T] is [H x F + 2H, in], so the
  // sources' rows are read (and packed) once forward and once backward.
  torch::Tensor weight = torch::cat({fc_->weight, Folded(attn_l_).t(), Folded(attn_r_).t()}, 0);
  if (IsSparse(h_src)) {
    // Sparse input rows: the one projection on their stored entries; the
    // residual reads the destinations' rows the same way.
    torch::Tensor out = GatAggregateProjected(block, SparseLinear(h_src, weight.t()), heads_,
                                              slope_, DropMask(block));
    const int64_t D = block.num_dst;
    if (res_fc_) {
      out =
          out +
          SparseLinear(h_src, res_fc_->weight.t(), D).add(res_fc_->bias).view({D, heads_, width_});
    }
    if (identity_residual_) out = out + SparseHeadDense(h_src, D).view({D, heads_, width_});
    if (bias_.defined()) out = out + bias_.view({1, heads_, width_});
    return out;
  }
  torch::Tensor proj = h_src.matmul(weight.t());
  torch::Tensor out = GatAggregateProjected(block, proj, heads_, slope_, DropMask(block));
  return Finish(out, h_src.slice(0, 0, block.num_dst));
}

torch::Tensor GATConvImpl::ForwardEdgeFeatures(const BlockTensors& block,
                                               const torch::Tensor& h_src,
                                               const torch::Tensor& h_dst_given) {
  if (IsSparse(h_src)) {
    throw ConfigError(
        "gat with --edge_feat_mp_op builds messages from whole input rows: partition the graph "
        "with --feature_format dense");
  }
  if (!block.edge_data.defined() || block.edge_data.size(1) != edge_dim_) {
    throw ConfigError("gat with --edge_feat_mp_op needs " + std::to_string(edge_dim_) +
                      " features per sampled edge; the block carries " +
                      (block.edge_data.defined() ? std::to_string(block.edge_data.size(1))
                                                 : std::string("none")));
  }
  const int64_t D = block.num_dst, E = block.indices.numel();
  const torch::Tensor feat = fc_(h_src).view({h_src.size(0), heads_, width_});
  const torch::Tensor h_dst = h_dst_given.defined() ? h_dst_given : h_src.slice(0, 0, D);
  const torch::Tensor feat_dst =
      h_dst_given.defined() ? fc_(h_dst).view({D, heads_, width_}) : feat.slice(0, 0, D);
  const torch::Tensor el = (feat * attn_l_).sum(-1);      // [S, H]
  const torch::Tensor er = (feat_dst * attn_r_).sum(-1);  // [D, H]
  const torch::Tensor edge =
      fc_edge_(block.edge_data.to(h_src.scalar_type())).view({E, heads_, width_});
  const torch::Tensor rows = feat.index_select(0, block.indices);
  const torch::Tensor msg = edge_op_ == "add"   ? rows + edge
                            : edge_op_ == "sub" ? rows - edge
                                                : rows * edge;
  // The same attention over a block whose sources are the edges: edge k
  // is source k, with its message as the row and its source's el, so the
  // fused op (softmax over each destination's in-edges, weighted sum)
  // serves per-edge messages too.
  BlockTensors per_edge;
  per_edge.num_dst = D;
  per_edge.num_src = E;
  per_edge.indptr = block.indptr;
  per_edge.indices = torch::arange(E, block.indices.options());
  const torch::Tensor out =
      GatAggregate(per_edge, msg, el.index_select(0, block.indices), er, slope_, DropMask(block));
  return Finish(out, h_dst);
}

torch::Tensor GATConvImpl::ForwardBipartite(const BlockTensors& block, const torch::Tensor& h_src,
                                            const torch::Tensor& h_dst) {
  if (edge_dim_ > 0) return ForwardEdgeFeatures(block, h_src, h_dst);
  torch::Tensor feat = fc_(h_src).view({h_src.size(0), heads_, width_});
  // The attention logits from the unprojected rows through the folded
  // weights: one [rows, in] x [in, heads] product per side instead of an
  // elementwise pass over [rows, heads, width] (and its backward).
  torch::Tensor el = h_src.matmul(Folded(attn_l_));
  torch::Tensor er = h_dst.matmul(Folded(attn_r_));
  return Finish(GatAggregate(block, feat, el, er, slope_, DropMask(block)), h_dst);
}

torch::Tensor GATConvImpl::Folded(const torch::Tensor& attn) const {
  return (fc_->weight.view({heads_, width_, in_}) * attn.view({heads_, width_, 1})).sum(1).t();
}

torch::Tensor GATConvImpl::DropMask(const BlockTensors& block) const {
  if (!is_training() || attn_drop_ <= 0) return {};
  return KeepMask({block.indices.numel(), heads_}, attn_drop_, fc_->weight.options());
}

torch::Tensor GATConvImpl::Finish(torch::Tensor out, const torch::Tensor& h_dst) {
  const int64_t D = out.size(0);
  if (res_fc_) out = out + res_fc_(h_dst).view({D, heads_, width_});
  if (identity_residual_) out = out + h_dst.view({D, heads_, width_});
  if (bias_.defined()) out = out + bias_.view({1, heads_, width_});
  return out;
}

GatImpl::GatImpl(const GatOptions& o) : o_(o) {
  dims_ = LayerWidths(o.in, o.hidden, o.classes, o.num_layers);
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (int l = 0; l < o.num_layers; ++l) {
    const bool last = l + 1 == o.num_layers;
    const int heads = last ? o.out_heads : o.heads;
    const int64_t width = last ? o.classes : o.hidden / o.heads;
    layers_->push_back(GATConv(dims_[l], width, heads, o));
  }
}

torch::Tensor GatImpl::ForwardLayer(int l, const BlockTensors& block, const torch::Tensor& h) {
  torch::Tensor x = IsSparse(h) ? DropoutSparse(h, o_.feat_drop, is_training())
                                : Dropout(h, o_.feat_drop, is_training());
  torch::Tensor out = layers_[l]->as<GATConvImpl>()->forward(WithSelfLoops(block), x);
  if (l + 1 == num_layers()) return out.mean(1);
  return torch::elu(out).flatten(1);
}

nlohmann::json GatImpl::Describe() const {
  return {{"parameter_names", "dgl.nn.GATConv"},
          {"num_heads", o_.heads},
          {"num_out_heads", o_.out_heads},
          {"residual", o_.residual},
          {"self_loops", true},
          {"hidden_activation", "elu"},
          {"last_layer_heads", "mean"}};
}

}  // namespace gnn
