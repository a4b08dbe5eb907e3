// GAT's attention op (kernels/gat_rows.h) over a whole block on a CUDA
// stream: device pointers in `a`, `stream` a cudaStream_t (void* here so
// that callers need no CUDA header). Built only when CMake finds nvcc
// (GNN_HAVE_CUDA_KERNELS); throws std::runtime_error naming the CUDA error
// when a launch fails.
#pragma once

#include <cstdint>

#include "kernels/gat_rows.h"

namespace gnn::kernels {

// attn [E, H] and out [D, H x F] (dense) of every destination row.
void GatForwardCuda(const GatRowArgs<float>& a, float* attn, float* out, void* stream);
void GatForwardCuda(const GatRowArgs<double>& a, double* attn, double* out, void* stream);

// The gradients of feat, el and er (written with a's strides; every row of
// each written) from g [D, H x F] (dense) and the forward's attn; d_logit
// [E, H] is scratch. Needs a's transpose.
void GatBackwardCuda(const GatRowArgs<float>& a, const float* attn, const float* g, float* d_logit,
                     float* g_feat, float* g_el, float* g_er, void* stream);
void GatBackwardCuda(const GatRowArgs<double>& a, const double* attn, const double* g,
                     double* d_logit, double* g_feat, double* g_el, double* g_er, void* stream);

}  // namespace gnn::kernels
