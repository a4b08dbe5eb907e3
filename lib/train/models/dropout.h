// Dropout whose mask costs a hash per element instead of a draw from
// LibTorch's CPU generator: at::bernoulli_ on Debian's LibTorch 1.13 calls
// CPUGeneratorImpl::random64 once per element, serially (a tenth of a GAT
// step on synthetic:small). The mask comes from a counter-based hash
// (murmur3's 32-bit finalizer, vectorized) of one seed drawn from LibTorch's
// generator per call and the element's index, filled in parallel: as
// reproducible under torch::manual_seed as torch::dropout, a different stream.
#pragma once

#include <torch/torch.h>

namespace gnn {

// 1 / (1 - p) where kept (probability 1 - p), 0 where dropped; float32 or
// the dtype of `options`, on its device (off the CPU drawn by torch's
// generator there, as torch::dropout).
torch::Tensor KeepMask(torch::IntArrayRef shape, double p, const torch::TensorOptions& options);

// x * KeepMask(x's shape, p) when `training` and p > 0, else x (on the
// CPU; elsewhere torch::dropout). Every model's feature dropout.
torch::Tensor Dropout(const torch::Tensor& x, double p, bool training);

// Dropout(relu(x), p, training), the same values and gradients and the same
// draw from LibTorch's generator, in one pass each way on the CPU (the
// backward pass reads the output: no mask drawn again, no input kept).
torch::Tensor ReluDropout(const torch::Tensor& x, double p, bool training);

// Dropout of sparse input rows (a CSR tensor, models/sparse_input.h): the
// stored values masked and scaled, on the CPU with the very mask Dropout
// gives the dense matrix (element r * cols + c of the same seed); no
// gradient (raw inputs).
torch::Tensor DropoutSparse(const torch::Tensor& x, double p, bool training);

}  // namespace gnn
