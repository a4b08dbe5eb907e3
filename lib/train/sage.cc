#include "train/sage.h"

namespace gnn {

BlockTensors ToTensors(const Block& block) {
  BlockTensors t;
  t.num_dst = block.num_dst;
  t.num_src = block.num_src();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  t.indices = torch::from_blob(const_cast<int64_t*>(block.indices.data()), {block.num_edges()}, i64);
  torch::Tensor indptr =
      torch::from_blob(const_cast<int64_t*>(block.indptr.data()), {block.num_dst + 1}, i64);
  torch::Tensor deg = indptr.slice(0, 1) - indptr.slice(0, 0, block.num_dst);
  t.dst_of = torch::repeat_interleave(deg);
  torch::Tensor degf = deg.to(torch::kFloat32).unsqueeze(1);
  t.inv_deg = torch::where(degf > 0, 1.0f / degf.clamp_min(1.0f), torch::zeros_like(degf));
  return t;
}

SAGEConvImpl::SAGEConvImpl(int64_t in, int64_t out) : in_(in), out_(out) {
  fc_self_ = register_module("fc_self", torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)));
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
  torch::Tensor h_dst = h_src.slice(0, 0, block.num_dst);
  // Mean is linear, so project first when that shrinks the rows to move.
  torch::Tensor neigh;
  if (in_ > out_) {
    torch::Tensor m = fc_neigh_(h_src);
    neigh = torch::zeros({block.num_dst, out_}, m.options())
                .index_add_(0, block.dst_of, m.index_select(0, block.indices));
    neigh = neigh * block.inv_deg;
  } else {
    neigh = torch::zeros({block.num_dst, in_}, h_src.options())
                .index_add_(0, block.dst_of, h_src.index_select(0, block.indices));
    neigh = fc_neigh_(neigh * block.inv_deg);
  }
  return fc_self_(h_dst) + neigh + bias_;
}

GraphSageImpl::GraphSageImpl(int64_t in, int64_t hidden, int64_t classes, int num_layers,
                             double dropout)
    : dropout_(dropout) {
  dims_.push_back(in);
  for (int l = 0; l + 1 < num_layers; ++l) dims_.push_back(hidden);
  dims_.push_back(classes);
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (int l = 0; l < num_layers; ++l) layers_->push_back(SAGEConv(dims_[l], dims_[l + 1]));
}

torch::Tensor GraphSageImpl::ForwardLayer(int l, const BlockTensors& block, const torch::Tensor& h) {
  torch::Tensor out = layers_[l]->as<SAGEConvImpl>()->forward(block, h);
  if (l + 1 < num_layers()) {
    out = torch::relu(out);
    out = torch::dropout(out, dropout_, is_training());
  }
  return out;
}

torch::Tensor GraphSageImpl::forward(const std::vector<BlockTensors>& blocks, torch::Tensor x) {
  for (int l = 0; l < num_layers(); ++l) x = ForwardLayer(l, blocks[l], x);
  return x;
}

}  // namespace gnn
