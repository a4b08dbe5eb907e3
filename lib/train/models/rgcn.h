// RGCN (Schlichtkrull et al.; DGL's RelGraphConv and the model of
// entity_classify_dist.py) over heterogeneous message-flow blocks:
//   h'_i = sum_r (1/|N_i^r|) sum_{j in N_i^r} h_j W_r + h_i W_loop + b
// A block's edges are regrouped by (relation, destination) once per batch,
// so each layer is one fused mean aggregation (train/aggregate) followed by
// one batched GEMM over relations; no per-edge message is materialized.
// Parameter names follow DGL 0.6's RelGraphConv ("weight", "h_bias",
// "loop_weight"; its "w_comp" is called "coeff" here) and DistEmbedLayer's
// per-type projections.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sampling/block.h"
#include "sampling/relation_block.h"
#include "train/models/aggregate.h"
#include "train/models/gat.h"

namespace gnn {

// from_blob views as BlockTensors with num_dst = num_rels * rb.num_dst, so
// MeanAggregate gives every (relation, destination) pair the mean of its
// sources (RGCN's c_{i,r} = |N_i^r|; zero without any). No transpose:
// MeanAggregate builds one when a gradient needs it. `rb` must outlive the
// tensors.
BlockTensors ToTensors(const RelationBlock& rb);

// How an RGCN layer takes edge features (GraphStorm's edge_feat_mp_op):
// `op` add, sub, mul or concat ("none": it takes none); dims[r] the
// features of relation r's edges (0: none), the widest being the width of
// the block's edge rows (a narrower relation's rows are 0 past its width).
struct RelEdgeOptions {
  std::string op = "none";
  std::vector<int64_t> dims;
  int64_t width() const;
  bool used() const { return op != "none"; }
};

// A layer's edge features: the relation block's groups over the block's
// edges (indptr of the relation block, indices its eids, num_src the
// block's edge count) and the block's edge rows [edges, width].
struct RelEdgeTensors {
  BlockTensors groups;
  torch::Tensor rows;
};

// The views of `rb` (which must carry eids) and `block`'s edge rows; `rb`
// and `block` must outlive them. DataError when the block has no edge rows.
RelEdgeTensors ToEdgeTensors(const RelationBlock& rb, const Block& block);

// One RGCN layer. Parameters, in registration order: "weight" ([R, in, out]
// full, or [B, in, out] bases), "coeff" ([R, B], bases only), "h_bias"
// ([out], zeros), "loop_weight" ([in, out], with self_loop only); with
// edge features (RelEdgeOptions) "edge_proj" ([R, width, in]: relation r's
// projection of its edges' features to the source rows' width), and for
// concat "edge_weight" ([R, in, out]). A message is then h_src op e P_r
// (add, sub, mul; mul only on relations with features), or [h_src, e P_r]
// times [W_r; E_r] for concat: mean_r(h_src) W_r + mean_r(e) P_r E_r.
class RelGraphConvImpl : public torch::nn::Module {
 public:
  // num_bases <= 0 or >= num_rels: one full weight per relation; otherwise
  // the basis decomposition W_r = sum_b coeff[r, b] V_b. Weights, coeff and
  // loop_weight start as DGL's: xavier_uniform_ with gain sqrt(2).
  // ConfigError on a non-positive size or an unknown edge op.
  RelGraphConvImpl(int64_t in, int64_t out, int64_t num_rels, int64_t num_bases, bool self_loop,
                   const RelEdgeOptions& edges = RelEdgeOptions());
  // relation_block: ToTensors(ToRelationBlock(...)) of this layer's block;
  // h_src [num_src, in], the num_dst destination rows first. Returns
  // [num_dst, out] = sum_r mean_r(h_src) W_r + h_dst W_loop + h_bias (no
  // activation). DataError on mismatched shapes.
  // `edges`: the block's edge features, needed when the layer takes them.
  torch::Tensor forward(const BlockTensors& relation_block, int64_t num_dst,
                        const torch::Tensor& h_src, const RelEdgeTensors* edges = nullptr);
  // The same from the means computed elsewhere: mean [num_rels * num_dst,
  // in] (row r * num_dst + d: relation r's mean at destination d, zero for
  // none), h_dst [num_dst, in] the destinations' own rows.
  torch::Tensor ForwardMeans(const torch::Tensor& mean, const torch::Tensor& h_dst);
  // The effective per-relation weights [R, in, out] (coeff · V with bases),
  // differentiable in the parameters.
  torch::Tensor RelationWeight() const;
  bool has_bases() const { return coeff_.defined(); }

 private:
  // relation_block's per-(relation, destination) mean of the messages h_src
  // op e P_r (edge_op_ mul).
  torch::Tensor MulMeans(const BlockTensors& relation_block, const torch::Tensor& h_src,
                         const RelEdgeTensors& edges);

  int64_t in_, out_, num_rels_;
  RelEdgeOptions edges_;
  torch::Tensor weight_, coeff_, h_bias_, loop_weight_, edge_proj_, edge_weight_;
};
TORCH_MODULE(RelGraphConv);

// Input rows of one node type within a batch: `positions` (int64 [n],
// distinct across all types) are rows of the layer-0 input (block 0's
// src_nodes); `rows` [n, width] are the type's features, or, for a
// featureless type, its learnable embedding rows [n, embed] (which may
// require grad: their gradient is what the sparse optimizer applies).
struct TypedInput {
  torch::Tensor positions;
  torch::Tensor rows;
};

// The first layer's means of relation `rel` computed elsewhere (the
// cluster's owners, HeteroBatch::input_means): rows_at (int64 [k]) are rows
// r * num_dst + d of the layer's relation-major mean, rows [k, width] their
// means: of feature rows of the source type (feature width), or of its
// embedding rows (embed; may require grad).
struct RelationMeans {
  int64_t rel = 0;
  int type = 0;  // the relation's source node type
  torch::Tensor rows_at;
  torch::Tensor rows;
};

// EntityClassify of DGL's entity_classify_dist.py: per-type input
// projection (DistEmbedLayer's node_projs), then num_layers RelGraphConv
// layers embed -> hidden (relu, dropout) ... -> classes (no activation, no
// dropout). With `gat` (--model rgat), the layers are RelGATConv
// (train/rgat.h): gat->heads heads concatenated to `hidden` in the hidden
// layers (which they must divide), gat->out_heads averaged in the last. Parameter names:
// "embed.proj_<t>" ([feature_dims[t], embed], types with features only, in type order), then
// "layers.<l>.<name>".
class RGCNImpl : public torch::nn::Module {
 public:
  // feature_dims[t] = width of type t's features, 0 for a featureless type
  // (its embedding rows are given to Embed). ConfigError on a bad size,
  // num_layers < 1 or dropout outside [0, 1).
  // `edges`: every layer takes the edges' features so (RGCN only).
  RGCNImpl(std::vector<int64_t> feature_dims, int64_t embed, int64_t hidden, int64_t classes,
           int64_t num_rels, int64_t num_bases, int num_layers, double dropout, bool self_loop,
           const GatOptions* gat = nullptr, const RelEdgeOptions& edges = RelEdgeOptions());
  // The layer-0 input [num_src, embed]: each type's rows (times its
  // projection when it has features) placed at their positions by one
  // differentiable index_copy; rows no type covers stay zero. inputs[t] is
  // type t (inputs.size() == feature_dims.size()); a type absent from the
  // batch may leave both tensors undefined. DataError on a bad shape or a
  // position outside [0, num_src).
  torch::Tensor Embed(int64_t num_src, const std::vector<TypedInput>& inputs);
  // One relation block per layer, input -> output; h0 [blocks[0].num_src,
  // embed]. Returns [blocks.back().num_dst, classes]. DataError when the
  // blocks do not match the layers. `edges` (one per layer) when the model
  // takes edge features.
  torch::Tensor forward(const std::vector<RelationBlock>& blocks, torch::Tensor h0);
  torch::Tensor forward(const std::vector<RelationBlock>& blocks, torch::Tensor h0,
                        const std::vector<RelEdgeTensors>& edges, int capture_layer = -1,
                        torch::Tensor* captured = nullptr);
  // The same with the first layer's means given (EmbedMeans): h0 is then
  // [blocks[0].num_dst, embed], the destinations' own rows. RGCN only (RGAT
  // attends over every source: ConfigError).
  // With `captured`, also layer `capture_layer`'s output (0-based, after
  // its activation: the next layer's input) for the last block's
  // destinations (the batch's seeds).
  torch::Tensor forward(const std::vector<RelationBlock>& blocks, torch::Tensor h0,
                        const torch::Tensor& means0, int capture_layer = -1,
                        torch::Tensor* captured = nullptr);
  // The first layer's relation-major mean [num_rels * num_dst, embed] from
  // means of raw rows: a featured type's times its projection (the mean of
  // projected rows, as the projection is linear), an embedding's as they
  // are, placed by one differentiable index_copy; rows no entry covers are
  // zero. DataError on a bad shape or row.
  torch::Tensor EmbedMeans(int64_t num_dst, const std::vector<RelationMeans>& means);
  int num_layers() const { return static_cast<int>(layers_->size()); }
  bool takes_edges() const { return edges_.used(); }

 private:
  torch::Tensor Run(const std::vector<RelationBlock>& blocks, torch::Tensor h0,
                    const torch::Tensor& means0, const std::vector<RelEdgeTensors>* edges,
                    int capture_layer, torch::Tensor* captured);

  std::vector<int64_t> feature_dims_;
  int64_t embed_;
  int64_t num_rels_;
  double dropout_;
  bool gat_ = false;
  RelEdgeOptions edges_;
  std::vector<torch::Tensor> projs_;  // [type]; undefined for featureless types
  torch::nn::ModuleList layers_;
};
TORCH_MODULE(RGCN);

}  // namespace gnn
