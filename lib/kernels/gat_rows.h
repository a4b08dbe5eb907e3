// The per-row arithmetic of GAT's attention op (train/attention:
// leaky_relu(el[src] + er[dst]) -> softmax over each destination's
// in-edges -> dropout -> sum of a * feat[src], and its backward pass),
// written once for the CPU and for CUDA: plain C++ functions when a C++
// compiler reads this header, __host__ __device__ ones under nvcc. The CUDA
// kernels (gat_cuda.cu) run them with one thread block per destination row
// (forward; backward's d attention and softmax) or per source row
// (backward's d feat and d el), the columns or (edge, head) pairs spread
// over the block's threads; CPU unit tests run the same functions over
// every row and compare them with the CPU op.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/csr_row_sum.h"  // GNN_HD

namespace gnn::kernels {

// One call's sizes and device (or host) pointers. feat [S, H, F], el
// [S, H], er [D, H] have rows fs, ls and rs elements apart (the columns of
// one projection [S, H x F + 2H] when fs = ls = rs); the gradients are
// written with the same strides. The transpose (t_*) is needed by the
// per-source functions only.
template <typename T>
struct GatRowArgs {
  const int64_t* ptr = nullptr;  // [D + 1]
  const int64_t* idx = nullptr;  // [E] source per edge
  int64_t num_dst = 0, num_src = 0, heads = 0, width = 0;
  const T* feat = nullptr;
  const T* el = nullptr;
  const T* er = nullptr;
  int64_t fs = 0, ls = 0, rs = 0;
  const T* mask = nullptr;         // [E, H] keep-mask (already / keep probability) or null
  T slope = T(0.2);                // LeakyReLU's negative slope
  const int64_t* t_ptr = nullptr;  // [S + 1] slots per source
  const int64_t* t_eid = nullptr;  // [E] edge per slot
  const int64_t* t_dst = nullptr;  // [E] destination per slot

  GNN_HD T LeakyFactor(T z) const { return z > T(0) ? T(1) : slope; }
  GNN_HD T Keep(int64_t eh) const { return mask != nullptr ? mask[eh] : T(1); }
};

GNN_HD inline float GatExp(float x) { return expf(x); }
GNN_HD inline double GatExp(double x) { return exp(x); }

// attn[e, h] for row i's edges, head h: the softmax of the row's logits
// (the largest subtracted first, the sum accumulated in double).
template <typename T>
GNN_HD inline void GatRowSoftmax(const GatRowArgs<T>& a, int64_t i, int64_t h, T* attn) {
  const int64_t e0 = a.ptr[i], e1 = a.ptr[i + 1], H = a.heads;
  if (e1 == e0) return;
  const T er = a.er[i * a.rs + h];
  T top = T(0);
  for (int64_t e = e0; e < e1; ++e) {
    const T x = a.el[a.idx[e] * a.ls + h] + er;
    const T z = x * a.LeakyFactor(x);
    attn[e * H + h] = z;
    if (e == e0 || z > top) top = z;
  }
  double sum = 0;
  for (int64_t e = e0; e < e1; ++e) {
    const T p = GatExp(attn[e * H + h] - top);
    attn[e * H + h] = p;
    sum += p;
  }
  const T inv = static_cast<T>(1.0 / sum);
  for (int64_t e = e0; e < e1; ++e) attn[e * H + h] *= inv;
}

// out[i, c] for row i's columns c = first, first + step, ... (< H x F):
// the sum over the row's edges, in edge order, of attn * keep * feat[src,
// c]. `out` is dense [D, H x F]; a row without edges gets zeros.
template <typename T>
GNN_HD inline void GatRowForward(const GatRowArgs<T>& a, int64_t i, int64_t first, int64_t step,
                                 const T* attn, T* out) {
  const int64_t H = a.heads, F = a.width, HF = H * F;
  for (int64_t c = first; c < HF; c += step) {
    const int64_t h = c / F;
    T acc = T(0);
    for (int64_t e = a.ptr[i]; e < a.ptr[i + 1]; ++e) {
      const T w = attn[e * H + h] * a.Keep(e * H + h);
      acc += w * a.feat[a.idx[e] * a.fs + c];
    }
    out[i * HF + c] = acc;
  }
}

// Backward, edge e = (src -> i), head h: d attn[e, h] = keep * (g[i, h, :]
// . feat[src, h, :]), g dense [D, H x F].
template <typename T>
GNN_HD inline void GatEdgeGrad(const GatRowArgs<T>& a, int64_t i, int64_t e, int64_t h, const T* g,
                               T* d_attn) {
  const int64_t H = a.heads, F = a.width;
  const T* gi = g + i * H * F + h * F;
  const T* x = a.feat + a.idx[e] * a.fs + h * F;
  T dot = T(0);
  for (int64_t k = 0; k < F; ++k) dot += gi[k] * x[k];
  d_attn[e * H + h] = dot * a.Keep(e * H + h);
}

// Backward, row i, head h, once its edges' d attn are in d_logit: d logit
// through the softmax and the LeakyReLU (in place), and g_er[i, h] = the
// row's sum of d logit.
template <typename T>
GNN_HD inline void GatRowSoftmaxGrad(const GatRowArgs<T>& a, int64_t i, int64_t h, const T* attn,
                                     T* d_logit, T* g_er) {
  const int64_t e0 = a.ptr[i], e1 = a.ptr[i + 1], H = a.heads;
  double weighted = 0;  // sum of attn * d attn
  for (int64_t e = e0; e < e1; ++e) {
    weighted += static_cast<double>(attn[e * H + h]) * d_logit[e * H + h];
  }
  const T er = a.er[i * a.rs + h];
  double row_sum = 0;
  for (int64_t e = e0; e < e1; ++e) {
    const T d_soft = attn[e * H + h] * (d_logit[e * H + h] - static_cast<T>(weighted));
    const T dz = d_soft * a.LeakyFactor(a.el[a.idx[e] * a.ls + h] + er);
    d_logit[e * H + h] = dz;
    row_sum += dz;
  }
  g_er[i * a.rs + h] = static_cast<T>(row_sum);
}

// Backward, source s, columns c = first, first + step, ... (< H x F):
// g_feat[s, c] = the sum over s's slots of attn * keep * g[dst, c].
template <typename T>
GNN_HD inline void GatSourceFeatGrad(const GatRowArgs<T>& a, int64_t s, int64_t first, int64_t step,
                                     const T* attn, const T* g, T* g_feat) {
  const int64_t H = a.heads, F = a.width, HF = H * F;
  for (int64_t c = first; c < HF; c += step) {
    const int64_t h = c / F;
    T acc = T(0);
    for (int64_t k = a.t_ptr[s]; k < a.t_ptr[s + 1]; ++k) {
      const int64_t e = a.t_eid[k];
      const T w = attn[e * H + h] * a.Keep(e * H + h);
      acc += w * g[a.t_dst[k] * HF + c];
    }
    g_feat[s * a.fs + c] = acc;
  }
}

// Backward, source s, head h: g_el[s, h] = the sum of d logit over s's slots.
template <typename T>
GNN_HD inline void GatSourceLogitGrad(const GatRowArgs<T>& a, int64_t s, int64_t h,
                                      const T* d_logit, T* g_el) {
  T acc = T(0);
  for (int64_t k = a.t_ptr[s]; k < a.t_ptr[s + 1]; ++k) acc += d_logit[a.t_eid[k] * a.heads + h];
  g_el[s * a.ls + h] = acc;
}

}  // namespace gnn::kernels
