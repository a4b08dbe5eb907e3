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

#include "sampling/block.h"

namespace gnn {

// A block's structure as int64 CPU tensors: from_blob views of the Block's
// vectors where it has them (the Block must outlive the tensors).
struct BlockTensors {
  int64_t num_dst = 0;
  int64_t num_src = 0;
  torch::Tensor indptr;   // [num_dst + 1]
  torch::Tensor indices;  // [E] local src index per edge
  // The transpose (only when gradients flow back through the block):
  torch::Tensor t_indptr;   // [num_src + 1]
  torch::Tensor t_indices;  // [E] local dst index, edges grouped by src
};

// Views of `block`; the transpose is the block's own when the sampler built
// it (Block::t_indptr), otherwise it is built here when `with_transpose`.
BlockTensors ToTensors(const Block& block, bool with_transpose = true);

// out[i, :] = mean of h[indices[j], :] over j in [indptr[i], indptr[i+1]),
// zero for a destination without in-edges. h: [num_src, d] float or double,
// rows may be strided (a column slice of a wider matrix). Differentiable in
// h (backward needs block.t_indptr/t_indices). Uses LibTorch's intra-op
// threads.
torch::Tensor MeanAggregate(const BlockTensors& block, const torch::Tensor& h);

}  // namespace gnn
