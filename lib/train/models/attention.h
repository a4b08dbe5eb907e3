// GAT's edge softmax and attention-weighted aggregation over a
// message-flow block as one LibTorch autograd op (DGL's GATConv:
// leaky_relu(el[src] + er[dst]) -> softmax over each destination's
// in-edges -> attention dropout -> sum of a * feat[src]).
//
// Forward is one pass per destination row (rows in parallel): the row's
// edge logits, their softmax and the weighted sum of its sources' rows,
// head by head. Nothing edges x heads x width is ever built: the only
// per-edge state is the attention itself, [E, H], kept for backward.
// Backward is a pass per source over the block's transpose (d attention,
// and d feat from the destinations' gradient rows: the large [S, H, F]
// rows are read and written in order, only the destinations' rows are
// gathered), a pass per destination (the softmax and the LeakyReLU: d
// logits and d er) and a pass per source again (d el), so every gradient
// row is written by one thread: no atomics. The passes prefetch the rows
// they gather a few edges ahead, and are built for AVX-512, AVX2 and the
// baseline (picked at load time), all rounding alike (no fused
// multiply-adds).
#pragma once

#include <torch/torch.h>

#include "train/models/aggregate.h"

namespace gnn {

// out[i, h, :] = sum over the edges e = (s -> i) of a[e, h] * feat[s, h, :]
// with a[e, .] = softmax over i's in-edges of leaky_relu(el[s, .] +
// er[i, .], negative_slope), times drop_mask[e, .] when given (dropout's
// keep-mask already divided by the keep probability). feat [num_src, H, F],
// el [num_src, H], er [num_dst, H], drop_mask [E, H] or undefined; float or
// double, all one dtype. A destination without in-edges gets zeros.
// Differentiable in feat, el and er.
torch::Tensor GatAggregate(const BlockTensors& block, const torch::Tensor& feat,
                           const torch::Tensor& el, const torch::Tensor& er, double negative_slope,
                           const torch::Tensor& drop_mask);

// GatAggregate over the columns of one projection, so that one GEMM
// gives all three: proj [num_src, H x F + 2H] holds each source's
// projected row (feat, H x F), its el (H) and its er (H, read for the
// destinations only: they are the first num_dst sources). Differentiable
// in proj (one gradient buffer of the same layout; the er columns of rows
// past num_dst get zeros). The same kernels, and the same numbers, as
// GatAggregate on the three slices.
torch::Tensor GatAggregateProjected(const BlockTensors& block, const torch::Tensor& proj,
                                    int64_t heads, double negative_slope,
                                    const torch::Tensor& drop_mask);

// The attention GatAggregate uses (before dropout), [E, H]: for tests and
// for looking at what a model attends to.
torch::Tensor GatAttention(const BlockTensors& block, const torch::Tensor& el,
                           const torch::Tensor& er, double negative_slope);

// `block` with each destination one of its own in-neighbours (a self-loop
// as the first edge of its row: destinations are the first sources), the
// convention of DGL's GAT and GCN examples (dgl.add_self_loop). No
// transpose: the ops build one when a gradient needs it.
BlockTensors WithSelfLoops(const BlockTensors& block);

}  // namespace gnn
