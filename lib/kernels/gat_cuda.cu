#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/gat_cuda.h"

namespace gnn::kernels {
namespace {

// Grid-stride over rows, one thread block per row: every output element
// (and every per-edge value) has one writer, so no atomics.
constexpr int64_t kMaxBlocks = int64_t{1} << 20;

unsigned Blocks(int64_t rows) {
  return static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
}

int Threads(int64_t columns) { return columns >= 128 ? 128 : columns >= 64 ? 64 : 32; }

void Check(const char* what, int64_t rows) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA GAT ") + what + " over " + std::to_string(rows) +
                             " rows failed to launch: " + cudaGetErrorString(err));
  }
}

// Forward, row i: the heads' softmaxes (a thread per head), then the
// row's H x F columns over the block's threads (neighbouring threads read
// neighbouring columns of the same source row).
template <typename T>
__global__ void ForwardKernel(GatRowArgs<T> a, T* attn, T* out) {
  for (int64_t i = blockIdx.x; i < a.num_dst; i += gridDim.x) {
    for (int64_t h = threadIdx.x; h < a.heads; h += blockDim.x) GatRowSoftmax(a, i, h, attn);
    __syncthreads();
    GatRowForward(a, i, threadIdx.x, blockDim.x, attn, out);
    __syncthreads();
  }
}

// Backward per destination row i: d attn of each (edge, head) pair of the
// row over the block's threads, then the softmax and LeakyReLU per head.
template <typename T>
__global__ void RowGradKernel(GatRowArgs<T> a, const T* attn, const T* g, T* d_logit, T* g_er) {
  for (int64_t i = blockIdx.x; i < a.num_dst; i += gridDim.x) {
    const int64_t e0 = a.ptr[i], pairs = (a.ptr[i + 1] - e0) * a.heads;
    for (int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
      GatEdgeGrad(a, i, e0 + p / a.heads, p % a.heads, g, d_logit);
    }
    __syncthreads();
    for (int64_t h = threadIdx.x; h < a.heads; h += blockDim.x) {
      GatRowSoftmaxGrad(a, i, h, attn, d_logit, g_er);
    }
    __syncthreads();
  }
}

// Backward per source row s: its feature gradient's columns over the
// block's threads, and its el gradient per head.
template <typename T>
__global__ void SourceGradKernel(GatRowArgs<T> a, const T* attn, const T* g, const T* d_logit,
                                 T* g_feat, T* g_el) {
  for (int64_t s = blockIdx.x; s < a.num_src; s += gridDim.x) {
    GatSourceFeatGrad(a, s, threadIdx.x, blockDim.x, attn, g, g_feat);
    for (int64_t h = threadIdx.x; h < a.heads; h += blockDim.x) {
      GatSourceLogitGrad(a, s, h, d_logit, g_el);
    }
  }
}

template <typename T>
void Forward(const GatRowArgs<T>& a, T* attn, T* out, void* stream) {
  if (a.num_dst <= 0) return;
  ForwardKernel<T>
      <<<Blocks(a.num_dst), Threads(a.heads * a.width), 0, static_cast<cudaStream_t>(stream)>>>(
          a, attn, out);
  Check("forward", a.num_dst);
}

template <typename T>
void Backward(const GatRowArgs<T>& a, const T* attn, const T* g, T* d_logit, T* g_feat, T* g_el,
              T* g_er, void* stream) {
  auto* s = static_cast<cudaStream_t>(stream);
  if (a.num_dst > 0) {
    RowGradKernel<T><<<Blocks(a.num_dst), 64, 0, s>>>(a, attn, g, d_logit, g_er);
    Check("backward (destinations)", a.num_dst);
  }
  if (a.num_src > 0) {
    SourceGradKernel<T><<<Blocks(a.num_src), Threads(a.heads * a.width), 0, s>>>(
        a, attn, g, d_logit, g_feat, g_el);
    Check("backward (sources)", a.num_src);
  }
}

}  // namespace

void GatForwardCuda(const GatRowArgs<float>& a, float* attn, float* out, void* stream) {
  Forward(a, attn, out, stream);
}
void GatForwardCuda(const GatRowArgs<double>& a, double* attn, double* out, void* stream) {
  Forward(a, attn, out, stream);
}
void GatBackwardCuda(const GatRowArgs<float>& a, const float* attn, const float* g, float* d_logit,
                     float* g_feat, float* g_el, float* g_er, void* stream) {
  Backward(a, attn, g, d_logit, g_feat, g_el, g_er, stream);
}
void GatBackwardCuda(const GatRowArgs<double>& a, const double* attn, const double* g,
                     double* d_logit, double* g_feat, double* g_el, double* g_er, void* stream) {
  Backward(a, attn, g, d_logit, g_feat, g_el, g_er, stream);
}

}  // namespace gnn::kernels
