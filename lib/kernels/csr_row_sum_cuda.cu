#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/csr_row_sum_cuda.h"

namespace gnn::kernels {
namespace {

// One block per destination row (grid-stride over rows), the row's columns
// over the block's threads: neighbouring threads read neighbouring columns
// of the same source row (coalesced), and every output element has one
// writer (no atomics).
template <typename T>
__global__ void CsrRowSumKernel(CsrRowSumArgs<T> a, int64_t rows) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    CsrRowSumRow(a, r, threadIdx.x, blockDim.x);
  }
}

template <typename T>
void Launch(const CsrRowSumArgs<T>& a, int64_t rows, void* stream) {
  if (rows <= 0) return;
  const int threads = a.d >= 128 ? 128 : a.d >= 64 ? 64 : 32;
  const int64_t max_blocks = int64_t{1} << 20;
  const unsigned blocks = static_cast<unsigned>(rows < max_blocks ? rows : max_blocks);
  CsrRowSumKernel<T><<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(a, rows);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA CSR row sum over ") + std::to_string(rows) +
                             " rows failed to launch: " + cudaGetErrorString(err));
  }
}

}  // namespace

void CsrRowSumCuda(const CsrRowSumArgs<float>& a, int64_t rows, void* stream) {
  Launch(a, rows, stream);
}

void CsrRowSumCuda(const CsrRowSumArgs<double>& a, int64_t rows, void* stream) {
  Launch(a, rows, stream);
}

}  // namespace gnn::kernels
