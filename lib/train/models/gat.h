// GAT over message-flow blocks (DGL's GATConv and its GAT example): per
// layer a linear projection to heads x width, attention logits
// leaky_relu(el[src] + er[dst]) with per-head vectors attn_l / attn_r,
// softmax over each destination's in-edges (a self-loop included: the
// convention of DGL's GAT example, dgl.add_self_loop), attention dropout,
// the weighted sum of the sources' projected rows (one fused op:
// train/attention.h), optional residual, bias; hidden layers ELU and heads
// concatenated, the last layer's heads averaged. Feature dropout (DGL's
// feat_drop) on every layer's input. Parameter names follow DGL's GATConv
// (layers.<i>.fc.weight, layers.<i>.attn_l, layers.<i>.attn_r,
// layers.<i>.bias, layers.<i>.res_fc.weight).
// With edge features and an op (GraphStorm's edge_feat_mp_op: add, sub or
// mul), the message of edge e = (src -> dst) is op(fc(h_src), fc_edge(x_e))
// per head, weighted by the same attention (which reads the nodes only);
// the layer's fc_edge.weight [heads x width, edge_dim] is beyond DGL's
// module.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "train/models/node_model.h"

namespace gnn {

struct GatOptions {
  int64_t in = 0, hidden = 8, classes = 0;  // hidden: the concatenated width (heads x per-head)
  int num_layers = 2;
  int heads = 8;      // attention heads of the hidden layers
  int out_heads = 1;  // of the last layer (averaged)
  double feat_drop = 0.6, attn_drop = 0.6, negative_slope = 0.2;
  bool residual = false;
  int64_t edge_dim = 0;          // > 0: edge features of that width enter the message
  std::string edge_op = "none";  // by add, sub or mul
};

class GATConvImpl : public torch::nn::Module {
 public:
  GATConvImpl(int64_t in, int64_t width, int heads, const GatOptions& o);
  // h_src: [num_src, in], destinations first; returns [num_dst, heads, width].
  torch::Tensor forward(const BlockTensors& block, const torch::Tensor& h_src);
  // The same over a bipartite block whose sources are the rows of h_src
  // and whose destinations are the rows of h_dst (one relation of a typed
  // block: its own sources only, DGL's GATConv on a (src, dst) pair); with
  // edge features, block.edge_data holds its edges' rows.
  torch::Tensor ForwardBipartite(const BlockTensors& block, const torch::Tensor& h_src,
                                 const torch::Tensor& h_dst);

 private:
  // forward with edge features in the messages (edge_dim_ > 0): per-edge
  // messages and the attention's softmax in plain tensor ops. h_dst: the
  // destinations' rows (undefined: the first rows of h_src).
  torch::Tensor ForwardEdgeFeatures(const BlockTensors& block, const torch::Tensor& h_src,
                                    const torch::Tensor& h_dst = torch::Tensor());
  // The attention dropout's keep-mask for the block's edges (undefined
  // when not training or without dropout).
  torch::Tensor DropMask(const BlockTensors& block) const;
  // Residual and bias added to the aggregated [num_dst, heads, width].
  torch::Tensor Finish(torch::Tensor out, const torch::Tensor& h_dst);
  // attn ([1, heads, width]) folded into the projection: [in, heads], so
  // that h @ Folded(attn_l) is DGL's el = (fc(h) * attn_l).sum(-1).
  torch::Tensor Folded(const torch::Tensor& attn) const;

  int64_t in_, width_, edge_dim_ = 0;
  std::string edge_op_ = "none";
  int heads_;
  double attn_drop_, slope_;
  torch::nn::Linear fc_{nullptr}, res_fc_{nullptr}, fc_edge_{nullptr};
  bool identity_residual_ = false;
  torch::Tensor attn_l_, attn_r_, bias_;
};
TORCH_MODULE(GATConv);

class GatImpl : public NodeModel {
 public:
  explicit GatImpl(const GatOptions& o);
  torch::Tensor ForwardLayer(int l, const BlockTensors& block, const torch::Tensor& h) override;
  int num_layers() const override { return static_cast<int>(layers_->size()); }
  int64_t OutDim(int l) const override { return dims_[l + 1]; }
  std::string Name() const override { return "gat"; }
  nlohmann::json Describe() const override;

 private:
  GatOptions o_;
  std::vector<int64_t> dims_;
  torch::nn::ModuleList layers_;
};
TORCH_MODULE(Gat);

}  // namespace gnn
