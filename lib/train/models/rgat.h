// RGAT's layer (DGL's HeteroGraphConv of one GATConv per relation, summed
// over relations, as GraphStorm's RGAT and GLT's IGBH example): for each
// relation r, GAT attention over each destination's in-edges of r alone
// (softmax per (relation, destination)), with r's own projection and
// attention vectors; the relations' outputs summed, plus a self-loop
// weight and a bias as RelGraphConv has them. A relation is computed over
// its own sources only (those its edges reach), so the projections cost
// what its edges touch, not R x every source. Parameter names:
// "mods.<r>.fc.weight", "mods.<r>.attn_l", "mods.<r>.attn_r",
// "mods.<r>.bias" (r in the config's relation order, DGL's GATConv names
// under HeteroGraphConv's "mods"), "loop_weight" [in, heads x width],
// "h_bias" [heads x width]. With edge features (RelEdgeOptions: add, sub
// or mul) a relation that has them takes them into its messages as GATConv
// does (its "mods.<r>.fc_edge.weight" [heads x width, its width]); the
// others stay plain.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "train/models/aggregate.h"
#include "train/models/gat.h"

namespace gnn {

struct RelEdgeOptions;
struct RelEdgeTensors;

class RelGATConvImpl : public torch::nn::Module {
 public:
  // `edges` null or unused: no edge features.
  RelGATConvImpl(int64_t in, int64_t width, int heads, int64_t num_rels, bool self_loop,
                 const GatOptions& o, const RelEdgeOptions* edges = nullptr);
  // relation_block: a RelationBlock's tensors (row r * num_dst + d: d's
  // in-edges of relation r); h_src [num_src, in], destinations first;
  // `edges` the block's edge rows when the layer takes them.
  // Returns [num_dst, heads, width].
  torch::Tensor forward(const BlockTensors& relation_block, int64_t num_dst,
                        const torch::Tensor& h_src, const RelEdgeTensors* edges = nullptr);
  int heads() const { return heads_; }

 private:
  int64_t in_, width_, num_rels_;
  std::vector<int64_t> edge_dims_;  // per relation; empty: no edge features
  int heads_;
  torch::nn::ModuleList mods_;
  torch::Tensor loop_weight_, h_bias_;
};
TORCH_MODULE(RelGATConv);

}  // namespace gnn
