// RGCN layers and model: the relation-major regrouping of a block, the
// per-relation mean + batched GEMM of RelGraphConv, and the per-type input
// embedding of entity_classify_dist.py.
#include "train/models/rgcn.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "sampling/sampler.h"
#include "train/models/dropout.h"
#include "train/models/rgat.h"
#include "train/models/tensor_text.h"

namespace gnn {
namespace {

torch::Tensor View(const std::vector<int64_t>& v) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::kInt64);
}

// The relation block where `h` lives, with its transpose built on the
// host (where the relation block is) when the backward pass will read it:
// views on the CPU, copies on a GPU (which then needs no round trip for it).
BlockTensors Placed(const RelationBlock& rb, const torch::Tensor& h) {
  BlockTensors t = ToTensors(rb);
  if (!torch::GradMode::is_enabled() || !h.requires_grad()) return t.To(h.device());
  t.t_indptr = torch::empty({t.num_src + 1}, torch::kInt64);
  t.t_indices = torch::empty({t.indices.numel()}, torch::kInt64);
  TransposeCsr(rb.indptr.data(), rb.indices.data(), t.num_dst, t.num_src,
               t.t_indptr.data_ptr<int64_t>(), t.t_indices.data_ptr<int64_t>());
  return t.To(h.device());
}

}  // namespace

int64_t RelEdgeOptions::width() const {
  int64_t w = 0;
  for (int64_t d : dims) w = std::max(w, d);
  return w;
}

RelEdgeTensors ToEdgeTensors(const RelationBlock& rb, const Block& block) {
  if (block.edge_dim < 1 || rb.eids.size() != rb.indices.size() ||
      static_cast<int64_t>(block.edge_data.size()) != block.num_edges() * block.edge_dim) {
    throw DataError("RGCN takes edge features, but a block carries " +
                    std::to_string(block.edge_data.size()) + " edge values for " +
                    std::to_string(block.num_edges()) + " edges");
  }
  RelEdgeTensors t;
  t.groups.num_dst = rb.num_rels * rb.num_dst;
  t.groups.num_src = block.num_edges();
  t.groups.indptr = View(rb.indptr);
  t.groups.indices = View(rb.eids);
  t.rows = torch::from_blob(const_cast<float*>(block.edge_data.data()),
                            {block.num_edges(), block.edge_dim}, torch::kFloat32);
  return t;
}

BlockTensors ToTensors(const RelationBlock& rb) {
  BlockTensors t;
  t.num_dst = rb.num_rels * rb.num_dst;
  t.num_src = rb.num_src;
  t.indptr = View(rb.indptr);
  t.indices = View(rb.indices);
  return t;
}

RelGraphConvImpl::RelGraphConvImpl(int64_t in, int64_t out, int64_t num_rels, int64_t num_bases,
                                   bool self_loop, const RelEdgeOptions& edges)
    : in_(in), out_(out), num_rels_(num_rels), edges_(edges) {
  if (in < 1 || out < 1 || num_rels < 1) {
    throw ConfigError("RelGraphConv: in (" + std::to_string(in) + "), out (" + std::to_string(out) +
                      ") and num_rels (" + std::to_string(num_rels) + ") must be positive");
  }
  // As DGL: bases only when they are fewer than the relations (otherwise
  // they would cost more than full weights and express nothing more).
  const bool bases = num_bases > 0 && num_bases < num_rels;
  weight_ = register_parameter("weight", torch::empty({bases ? num_bases : num_rels, in, out}));
  if (bases) coeff_ = register_parameter("coeff", torch::empty({num_rels, num_bases}));
  h_bias_ = register_parameter("h_bias", torch::zeros({out}));
  if (self_loop) loop_weight_ = register_parameter("loop_weight", torch::empty({in, out}));
  // DGL's init: xavier_uniform_ with the relu gain. On the 3-D weight the
  // fans are PyTorch's (fan_in = in * out, fan_out = B * out), as in DGL.
  const double gain = std::sqrt(2.0);
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(weight_, gain);
  if (bases) torch::nn::init::xavier_uniform_(coeff_, gain);
  if (self_loop) torch::nn::init::xavier_uniform_(loop_weight_, gain);
  if (!edges_.used()) return;
  const std::string& op = edges_.op;
  if (op != "add" && op != "sub" && op != "mul" && op != "concat") {
    throw ConfigError("RelGraphConv takes edge features by add, sub, mul or concat, not '" + op +
                      "'");
  }
  if (static_cast<int64_t>(edges_.dims.size()) != num_rels || edges_.width() < 1) {
    throw ConfigError("RelGraphConv: edge feature widths for " +
                      std::to_string(edges_.dims.size()) + " of " + std::to_string(num_rels) +
                      " relations, none wider than 0");
  }
  // GraphStorm's edge projection: xavier_uniform_ (gain 1), as a Linear's
  // weight of each relation.
  edge_proj_ = register_parameter("edge_proj", torch::empty({num_rels, edges_.width(), in}));
  torch::nn::init::xavier_uniform_(edge_proj_);
  if (op == "concat") {
    edge_weight_ = register_parameter("edge_weight", torch::empty({num_rels, in, out}));
    torch::nn::init::xavier_uniform_(edge_weight_, gain);
  }
}

torch::Tensor RelGraphConvImpl::RelationWeight() const {
  if (!coeff_.defined()) return weight_;
  const int64_t num_bases = weight_.size(0);
  return coeff_.matmul(weight_.reshape({num_bases, in_ * out_})).view({num_rels_, in_, out_});
}

torch::Tensor RelGraphConvImpl::MulMeans(const BlockTensors& relation_block,
                                         const torch::Tensor& h_src, const RelEdgeTensors& e) {
  // Each edge's message h_src * e P_r in relation-block order (relation r's
  // edges are one run), then the runs' means by destination.
  const torch::Tensor ptr = e.groups.indptr.cpu();
  const int64_t* p = ptr.data_ptr<int64_t>();
  const int64_t num_dst = e.groups.num_dst / num_rels_;
  const torch::Tensor rows = e.rows.index_select(0, e.groups.indices);
  std::vector<torch::Tensor> scale;
  for (int64_t r = 0; r < num_rels_; ++r) {
    const int64_t a = p[r * num_dst], b = p[(r + 1) * num_dst];
    if (edges_.dims[static_cast<size_t>(r)] == 0) {
      scale.push_back(torch::ones({b - a, in_}, h_src.options()));
    } else {
      scale.push_back(rows.slice(0, a, b).to(edge_proj_.device()).matmul(edge_proj_[r]));
    }
  }
  const torch::Tensor messages = h_src.index_select(0, relation_block.indices) * torch::cat(scale);
  BlockTensors by_edge;
  by_edge.num_dst = relation_block.num_dst;
  by_edge.num_src = messages.size(0);
  by_edge.indptr = relation_block.indptr;
  by_edge.indices = torch::arange(
      messages.size(0),
      torch::TensorOptions().dtype(torch::kInt64).device(relation_block.indptr.device()));
  return MeanAggregate(by_edge, messages);
}

torch::Tensor RelGraphConvImpl::forward(const BlockTensors& relation_block, int64_t num_dst,
                                        const torch::Tensor& h_src, const RelEdgeTensors* edges) {
  if (h_src.dim() != 2 || h_src.size(0) != relation_block.num_src || h_src.size(1) != in_) {
    throw DataError("RelGraphConv: input is " + ShapeText(h_src) + ", expected [" +
                    std::to_string(relation_block.num_src) + ", " + std::to_string(in_) + "]");
  }
  if (relation_block.num_dst != num_rels_ * num_dst || num_dst > relation_block.num_src) {
    throw DataError("RelGraphConv: the relation block has " +
                    std::to_string(relation_block.num_dst) + " rows, expected " +
                    std::to_string(num_rels_) + " relations x " + std::to_string(num_dst) +
                    " destinations");
  }
  // The mean is linear, so sum_r mean_r(h) W_r needs one aggregation of the
  // raw rows (relation-major, so it views as [R, num_dst, in]) and one
  // batched GEMM; projecting first would cost R GEMMs over all sources.
  // Summing the bmm's [R, num_dst, out] beats one [num_dst, R * in] GEMM,
  // which would need a transposed copy of the (wider, as in >= out is the
  // common case) aggregated input.
  const torch::Tensor h_dst = h_src.slice(0, 0, num_dst);
  if (!edge_proj_.defined()) return ForwardMeans(MeanAggregate(relation_block, h_src), h_dst);
  if (edges == nullptr || edges->rows.dim() != 2 || edges->rows.size(1) != edges_.width() ||
      edges->groups.num_dst != relation_block.num_dst) {
    throw DataError("RelGraphConv takes edge features of width " + std::to_string(edges_.width()) +
                    ": the block's are " +
                    (edges ? ShapeText(edges->rows) : std::string("missing")));
  }
  if (edges_.op == "mul") return ForwardMeans(MulMeans(relation_block, h_src, *edges), h_dst);
  // The mean is linear: mean_r(h op e P_r) = mean_r(h) op mean_r(e) P_r,
  // so the edge rows are averaged once per group and projected per
  // relation by one batched GEMM.
  const torch::Tensor projected = torch::bmm(MeanAggregate(edges->groups, edges->rows)
                                                 .to(h_src.device())
                                                 .view({num_rels_, num_dst, edges_.width()}),
                                             edge_proj_);  // [R, num_dst, in]
  torch::Tensor mean = MeanAggregate(relation_block, h_src);
  if (edges_.op == "concat") {
    return ForwardMeans(mean, h_dst) + torch::bmm(projected, edge_weight_).sum(0);
  }
  const torch::Tensor flat = projected.view({num_rels_ * num_dst, in_});
  return ForwardMeans(edges_.op == "add" ? mean + flat : mean - flat, h_dst);
}

torch::Tensor RelGraphConvImpl::ForwardMeans(const torch::Tensor& mean,
                                             const torch::Tensor& h_dst) {
  const int64_t num_dst = h_dst.size(0);
  if (h_dst.dim() != 2 || h_dst.size(1) != in_ || mean.dim() != 2 ||
      mean.size(0) != num_rels_ * num_dst || mean.size(1) != in_) {
    throw DataError("RelGraphConv: means " + ShapeText(mean) + " and destination rows " +
                    ShapeText(h_dst) + " for " + std::to_string(num_rels_) +
                    " relations of width " + std::to_string(in_));
  }
  torch::Tensor out = torch::bmm(mean.view({num_rels_, num_dst, in_}), RelationWeight()).sum(0);
  if (loop_weight_.defined()) out = torch::addmm(out, h_dst, loop_weight_);
  return out.add_(h_bias_);
}

RGCNImpl::RGCNImpl(std::vector<int64_t> feature_dims, int64_t embed, int64_t hidden,
                   int64_t classes, int64_t num_rels, int64_t num_bases, int num_layers,
                   double dropout, bool self_loop, const GatOptions* gat,
                   const RelEdgeOptions& edges)
    : feature_dims_(std::move(feature_dims)),
      embed_(embed),
      num_rels_(num_rels),
      dropout_(dropout),
      gat_(gat != nullptr),
      edges_(edges) {
  if (gat && edges.used() && edges.op == "concat") {
    throw ConfigError(
        "--edge_feat_mp_op concat: rgat combines a message's projected row with its edge's "
        "projected features element-wise (add, sub or mul); concat is rgcn's");
  }
  if (feature_dims_.empty()) throw ConfigError("RGCN: no node types");
  if (num_layers < 1) {
    throw ConfigError("RGCN: num_layers is " + std::to_string(num_layers) + ", must be >= 1");
  }
  if (embed < 1 || classes < 1 || (num_layers > 1 && hidden < 1)) {
    throw ConfigError("RGCN: embed (" + std::to_string(embed) + "), hidden (" +
                      std::to_string(hidden) + ") and classes (" + std::to_string(classes) +
                      ") must be positive");
  }
  if (!(dropout >= 0 && dropout < 1)) {
    throw ConfigError("RGCN: dropout " + std::to_string(dropout) + " is outside [0, 1)");
  }
  auto embed_module = register_module("embed", std::make_shared<torch::nn::Module>("RGCNEmbed"));
  projs_.resize(feature_dims_.size());
  for (size_t t = 0; t < feature_dims_.size(); ++t) {
    if (feature_dims_[t] < 0) {
      throw ConfigError("RGCN: node type " + std::to_string(t) + " has feature width " +
                        std::to_string(feature_dims_[t]));
    }
    if (feature_dims_[t] == 0) continue;  // featureless: rows come from a sparse embedding
    projs_[t] = embed_module->register_parameter("proj_" + std::to_string(t),
                                                 torch::empty({feature_dims_[t], embed}));
    torch::NoGradGuard no_grad;
    torch::nn::init::xavier_uniform_(projs_[t]);  // DistEmbedLayer: gain 1
  }
  std::vector<int64_t> dims{embed};
  for (int l = 0; l + 1 < num_layers; ++l) dims.push_back(hidden);
  dims.push_back(classes);
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (int l = 0; l < num_layers; ++l) {
    if (!gat) {
      layers_->push_back(RelGraphConv(dims[l], dims[l + 1], num_rels, num_bases, self_loop, edges));
      continue;
    }
    const bool last = l + 1 == num_layers;
    const int heads = last ? gat->out_heads : gat->heads;
    if (!last && dims[l + 1] % heads != 0) {
      throw ConfigError("RGAT: hidden width " + std::to_string(dims[l + 1]) +
                        " is not a multiple of " + std::to_string(heads) + " heads");
    }
    layers_->push_back(RelGATConv(dims[l], last ? dims[l + 1] : dims[l + 1] / heads, heads,
                                  num_rels, self_loop, *gat, &edges));
  }
}

torch::Tensor RGCNImpl::Embed(int64_t num_src, const std::vector<TypedInput>& inputs) {
  if (inputs.size() != feature_dims_.size()) {
    throw DataError("RGCN::Embed: " + std::to_string(inputs.size()) + " typed inputs for " +
                    std::to_string(feature_dims_.size()) + " node types");
  }
  std::vector<torch::Tensor> positions, rows;
  for (size_t t = 0; t < inputs.size(); ++t) {
    const TypedInput& in = inputs[t];
    const std::string type = "RGCN::Embed: node type " + std::to_string(t);
    if (!in.positions.defined() && !in.rows.defined()) continue;  // absent from the batch
    if (!in.positions.defined() || !in.rows.defined()) {
      throw DataError(type + " has only one of positions and rows");
    }
    const int64_t width = feature_dims_[t] > 0 ? feature_dims_[t] : embed_;
    if (in.positions.dim() != 1 || in.positions.scalar_type() != torch::kInt64 ||
        in.rows.dim() != 2 || in.rows.size(0) != in.positions.size(0) || in.rows.size(1) != width) {
      throw DataError(type + ": positions " + ShapeText(in.positions) + " and rows " +
                      ShapeText(in.rows) + ", expected int64 [n] and [n, " + std::to_string(width) +
                      "]");
    }
    if (in.positions.numel() == 0) continue;
    const int64_t lo = in.positions.min().item<int64_t>();
    const int64_t hi = in.positions.max().item<int64_t>();
    if (lo < 0 || hi >= num_src) {
      throw DataError(type + " has positions in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "], outside [0, " + std::to_string(num_src) + ")");
    }
    positions.push_back(in.positions);
    rows.push_back(feature_dims_[t] > 0 ? in.rows.matmul(projs_[t]) : in.rows);
  }
  const torch::TensorOptions options =
      rows.empty() ? layers_[0]->parameters().front().options() : rows.front().options();
  torch::Tensor h0 = torch::zeros({num_src, embed_}, options);
  if (rows.empty()) return h0;
  // One out-of-place index_copy for all types: differentiable in the rows
  // (their gradient is the output's gradient at their positions), and the
  // [num_src, embed] matrix is written once rather than once per type.
  return h0.index_copy(0, torch::cat(positions), torch::cat(rows));
}

torch::Tensor RGCNImpl::EmbedMeans(int64_t num_dst, const std::vector<RelationMeans>& means) {
  std::vector<torch::Tensor> at, rows;
  for (const RelationMeans& m : means) {
    const std::string what = "RGCN::EmbedMeans: relation " + std::to_string(m.rel);
    if (m.rel < 0 || m.rel >= num_rels_ || m.type < 0 ||
        static_cast<size_t>(m.type) >= feature_dims_.size()) {
      throw DataError(what + " of source type " + std::to_string(m.type) + " is not the model's");
    }
    const int64_t width = feature_dims_[m.type] > 0 ? feature_dims_[m.type] : embed_;
    if (m.rows_at.dim() != 1 || m.rows_at.scalar_type() != torch::kInt64 || m.rows.dim() != 2 ||
        m.rows.size(0) != m.rows_at.size(0) || m.rows.size(1) != width) {
      throw DataError(what + ": rows at " + ShapeText(m.rows_at) + " and rows " +
                      ShapeText(m.rows) + ", expected int64 [k] and [k, " + std::to_string(width) +
                      "]");
    }
    if (m.rows_at.numel() == 0) continue;
    const int64_t lo = m.rows_at.min().item<int64_t>(), hi = m.rows_at.max().item<int64_t>();
    if (lo < m.rel * num_dst || hi >= (m.rel + 1) * num_dst) {
      throw DataError(what + " has rows in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                      "], outside its " + std::to_string(num_dst) + " destinations");
    }
    at.push_back(m.rows_at);
    rows.push_back(feature_dims_[m.type] > 0 ? m.rows.matmul(projs_[m.type]) : m.rows);
  }
  const torch::TensorOptions options =
      rows.empty() ? layers_[0]->parameters().front().options() : rows.front().options();
  torch::Tensor mean = torch::zeros({num_rels_ * num_dst, embed_}, options);
  if (rows.empty()) return mean;
  return mean.index_copy(0, torch::cat(at), torch::cat(rows));
}

torch::Tensor RGCNImpl::forward(const std::vector<RelationBlock>& blocks, torch::Tensor h0) {
  return forward(blocks, std::move(h0), torch::Tensor());
}

torch::Tensor RGCNImpl::forward(const std::vector<RelationBlock>& blocks, torch::Tensor h0,
                                const std::vector<RelEdgeTensors>& edges, int capture_layer,
                                torch::Tensor* captured) {
  return Run(blocks, std::move(h0), torch::Tensor(), &edges, capture_layer, captured);
}

torch::Tensor RGCNImpl::forward(const std::vector<RelationBlock>& blocks, torch::Tensor h0,
                                const torch::Tensor& means0, int capture_layer,
                                torch::Tensor* captured) {
  return Run(blocks, std::move(h0), means0, nullptr, capture_layer, captured);
}

torch::Tensor RGCNImpl::Run(const std::vector<RelationBlock>& blocks, torch::Tensor h0,
                            const torch::Tensor& means0, const std::vector<RelEdgeTensors>* edges,
                            int capture_layer, torch::Tensor* captured) {
  if (means0.defined() && gat_) {
    throw ConfigError("RGAT attends over every source: its first layer cannot take means");
  }
  if (edges_.used() &&
      (means0.defined() || edges == nullptr || static_cast<int>(edges->size()) != num_layers())) {
    throw DataError("RGCN takes edge features: every layer's block needs its edge rows" +
                    std::string(means0.defined() ? " (not the first layer's means)" : ""));
  }
  if (static_cast<int>(blocks.size()) != num_layers()) {
    throw DataError("RGCN: " + std::to_string(blocks.size()) + " blocks for " +
                    std::to_string(num_layers()) + " layers");
  }
  torch::Tensor h = std::move(h0);
  for (int l = 0; l < num_layers(); ++l) {
    const RelationBlock& rb = blocks[l];
    if (rb.num_rels != num_rels_) {
      throw DataError("RGCN: block " + std::to_string(l) + " has " + std::to_string(rb.num_rels) +
                      " relations, the model " + std::to_string(num_rels_));
    }
    const bool last = l + 1 == num_layers();
    if (l == 0 && means0.defined()) {
      h = layers_[0]->as<RelGraphConvImpl>()->ForwardMeans(means0, h);
    } else if (gat_) {  // host views: RelGATConv places each relation's block itself
      torch::Tensor heads = layers_[l]->as<RelGATConvImpl>()->forward(
          ToTensors(rb), rb.num_dst, h,
          edges_.used() ? &(*edges)[static_cast<size_t>(l)] : nullptr);
      h = last ? heads.mean(1) : heads.flatten(1);
    } else {
      h = layers_[l]->as<RelGraphConvImpl>()->forward(
          Placed(rb, h), rb.num_dst, h,
          edges_.used() ? &(*edges)[static_cast<size_t>(l)] : nullptr);
    }
    if (!last) {
      h = torch::relu(h);
      h = Dropout(h, dropout_, is_training());
    }
    if (captured && l == capture_layer) *captured = h.slice(0, 0, blocks.back().num_dst);
  }
  return h;
}

}  // namespace gnn
