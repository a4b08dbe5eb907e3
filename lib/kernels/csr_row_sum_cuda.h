// CsrRowSumRow (kernels/csr_row_sum.h) over every row of a CSR on a CUDA
// stream: device pointers in `a`, `stream` a cudaStream_t (void* here so
// that callers need no CUDA header). Built only when CMake finds nvcc
// (GNN_HAVE_CUDA_KERNELS); throws std::runtime_error naming the CUDA error
// when the launch fails.
#pragma once

#include <cstdint>

#include "kernels/csr_row_sum.h"

namespace gnn::kernels {

void CsrRowSumCuda(const CsrRowSumArgs<float>& a, int64_t rows, void* stream);
void CsrRowSumCuda(const CsrRowSumArgs<double>& a, int64_t rows, void* stream);

}  // namespace gnn::kernels
