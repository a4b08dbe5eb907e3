// Sparse input rows (bag-of-words, one-hot features kept as CSR) in the
// first layer: they reach a model as a LibTorch sparse CSR tensor in place
// of the dense [num_src, in] input, and each model's first projection
// becomes a sparse x dense product, the only place they are read. The
// inputs need no gradient; the weight's gradient is a sum over the stored
// entries. Same function as the dense layer up to float summation order.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "common/sparse_rows.h"

namespace gnn {

// Whether `x` is sparse input rows (a CSR tensor).
inline bool IsSparse(const torch::Tensor& x) {
  return x.defined() && x.layout() == torch::kSparseCsr;
}

// The rows as a CSR tensor [rows, cols] of float32 on the CPU (int64
// indices; values 1 when `rows` is binary); copies, so `rows` may go.
torch::Tensor SparseInput(const SparseRows& rows);
// The same from its parts where they are (a GPU's copies): crow [n + 1]
// and col [nnz] int64, values [nnz] float.
torch::Tensor SparseInput(const torch::Tensor& crow, const torch::Tensor& col,
                          const torch::Tensor& values, int64_t cols);

// x[:rows] @ wt: x sparse CSR [n, in], wt dense [in, out] (a linear
// layer's weight transposed, contiguous); rows < 0: every row. Returns
// [rows, out], differentiable in wt only. On the CPU one pass per output
// row forward, and per slice of the output columns backward (no atomics,
// the same bits whatever the thread count); elsewhere LibTorch's index
// ops.
torch::Tensor SparseLinear(const torch::Tensor& x, const torch::Tensor& wt, int64_t rows = -1);

// The same product with LibTorch's index ops (each entry's row of wt,
// scaled and summed into its output row; autograd's own gradient): what
// SparseLinear runs off the CPU, callable anywhere.
torch::Tensor SparseLinearIndexOps(const torch::Tensor& x, const torch::Tensor& wt,
                                   int64_t rows = -1);

// The first `rows` rows of sparse x made dense [rows, in] (an identity
// residual's input).
torch::Tensor SparseHeadDense(const torch::Tensor& x, int64_t rows);

}  // namespace gnn
