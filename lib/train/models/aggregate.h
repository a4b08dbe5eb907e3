// Mean aggregation over a message-flow block as one LibTorch autograd op.
//
// Forward reads each destination's in-neighbour rows straight from the
// block's CSR (one pass per destination row, rows in parallel) and writes
// their mean; nothing edges x width is ever materialized. Backward is the
// same pass over the block's transpose (edges grouped by source), so every
// source row's gradient is written by exactly one thread: no atomics, no
// scatter.
#pragma once

#include <torch/torch.h>

#include <utility>

#include "sampling/block.h"

namespace gnn {

// A block's structure as int64 tensors: from_blob views of the Block's
// vectors on the CPU (the Block must outlive the tensors), or copies on a
// GPU (To). The aggregations run where the tensors are: CPU loops, or the
// CUDA kernels of lib/kernels in a CUDA build.
struct BlockTensors {
  int64_t num_dst = 0;
  int64_t num_src = 0;    // rows of the input the indices point into
  torch::Tensor indptr;   // [num_dst + 1]
  torch::Tensor indices;  // [E] input row per edge
  // The transpose, when the sampler built it (Block::t_indptr); undefined
  // otherwise (MeanAggregate then builds one if a gradient needs it).
  torch::Tensor t_indptr;   // [num_src + 1]
  torch::Tensor t_indices;  // [E] dst index, edges grouped by input row
  torch::Tensor t_eids;     // [E] the edge per slot (GAT's backward); may be undefined
  // Each destination is the first in-neighbour in its own row
  // (Block::self_loops): WithSelfLoops returns the block as it is.
  bool self_loops = false;
  // The sampled edges' data, [E, edge_dim] float32, parallel to `indices`
  // (Block::edge_data; 1 wide: edge weights); undefined without.
  torch::Tensor edge_data;

  // The same block on `device` (copies; itself when already there).
  BlockTensors To(const torch::Device& device, bool non_blocking = false) const;
};

// Views of `block` (and of its transpose, when it has one).
BlockTensors ToTensors(const Block& block);

// out[i, :] = mean of h[indices[j], :] over j in [indptr[i], indptr[i+1]),
// zero for a destination without in-edges. h: [num_src, d] float or double,
// rows may be strided (a column slice of a wider matrix). Differentiable in
// h; the backward pass reads the block's transpose, built here (once per
// call) when the block has none and a gradient will flow. Uses LibTorch's
// intra-op threads.
torch::Tensor MeanAggregate(const BlockTensors& block, const torch::Tensor& h);

// (h's first num_dst rows, the destinations' own, as a copy;
// MeanAggregate(block, h)) as one op, for SAGEConv's layers whose input
// needs a gradient: backward hands h a single gradient, the mean's with
// the destinations' own added to its first rows, instead of a slice's
// gradient zero-padded to [num_src, d] and a pass adding the two. Values
// and gradients are bit for bit those of the slice and MeanAggregate.
std::pair<torch::Tensor, torch::Tensor> DestinationsAndMean(const BlockTensors& block,
                                                            const torch::Tensor& h);

// out[i, :] = dst_w[i] * sum over i's in-edges of src_w[s] * h[s, :]: GCN's
// normalized sum (DGL's GraphConv) in one pass per destination, backward
// over the transpose like MeanAggregate. src_w [num_src], dst_w [num_dst]
// are constants (no gradient). Differentiable in h.
torch::Tensor WeightedAggregate(const BlockTensors& block, const torch::Tensor& h,
                                const torch::Tensor& src_w, const torch::Tensor& dst_w);

// out[i, :] = sum over i's in-edges e of coef[e] * h[indices[e], :]: a
// sum weighted per edge (DGL's u_mul_e then sum), coef [E] constants (no
// gradient). Differentiable in h; on the CPU one pass per destination and
// backward over the transpose as MeanAggregate, elsewhere LibTorch's
// index ops.
torch::Tensor EdgeWeightedAggregate(const BlockTensors& block, const torch::Tensor& h,
                                    const torch::Tensor& coef);

// The block's edge weights [E] (its 1-wide edge_data as h's dtype);
// Error when the block has none or they are not 1 wide.
torch::Tensor EdgeWeights(const BlockTensors& block, const torch::ScalarType& dtype);

// Whether a linear layer over a block's aggregation (SAGEConv's W_neigh
// over the mean, GraphConv's W over the normalized sum: both linear, so W
// can go on either side) is cheaper applied to the block's sources before
// aggregating than to its destinations after: an estimate of both orders'
// work, given which gradients the step needs. DGL projects first whenever
// in > out; with raw input features (no input gradient) aggregating first
// needs no backward pass through the aggregation at all, and a sampled
// first layer has several times more sources than destinations.
bool ProjectFirst(const BlockTensors& block, int64_t in, int64_t out, bool weight_grad,
                  bool input_grad);

// In-block degrees (int64): each source's out-edges, each destination's
// in-edges (DGL's block.out_degrees() / block.in_degrees()).
torch::Tensor SourceOutDegrees(const BlockTensors& block);
torch::Tensor DestinationInDegrees(const BlockTensors& block);

}  // namespace gnn
