#include "train/models/attention.h"

#include <ATen/AccumulateType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/memory.h"
#include "kernels/gat_rows.h"

#if GNN_CUDA_KERNELS
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "kernels/gat_cuda.h"
#endif

namespace gnn {
namespace {

// Sizes and raw pointers of one call, shared by the passes: the CUDA
// kernels' (kernels/gat_rows.h: feat [S, H, F], el [S, H], er [D, H] rows
// fs, ls and rs apart, their gradients written with the same strides),
// with LeakyReLU's factor picked by index, not by a branch: the logits'
// signs are random, and a branch on them mispredicts half the time.
template <typename T>
struct GatArgs : kernels::GatRowArgs<T> {
  T factor[2];  // {negative slope, 1}
  T LeakyFactor(T z) const { return factor[z > T(0)]; }
  T Leaky(T z) const { return z * LeakyFactor(z); }
};

// Grain for parallel_for over rows: about 32k edges' work per task.
int64_t RowGrain(int64_t rows, int64_t edges) {
  return std::max<int64_t>(1, rows * 32768 / std::max<int64_t>(1, edges));
}

// The passes below read rows scattered over matrices far larger than the
// caches (each edge's source row, or its destination's gradient row): a
// plain loop waits for each row in turn. Touching the row kAhead edges
// ahead keeps several misses in flight (as CsrRowSum does).
constexpr int64_t kAhead = 8;
template <typename T>
inline void PrefetchRow(const T* row, int64_t n) {
  PrefetchBytes(row, static_cast<size_t>(n) * sizeof(T), 8);
}

// The kernels are built for AVX-512, AVX2 and the baseline and picked at
// load time (the inner loops are a head's width of multiply-adds); the
// row-range bodies are inlined into each build.
#define GNN_ROW_KERNEL __attribute__((target_clones("avx512f", "avx2", "default")))
#define GNN_INLINE inline __attribute__((always_inline))

// The el rows of row i's sources (a cache line each), fetched while the
// row before it is being worked on.
template <typename T>
GNN_INLINE void PrefetchLogits(const GatArgs<T>& a, int64_t i) {
  for (int64_t e = a.ptr[i]; e < a.ptr[i + 1]; ++e) __builtin_prefetch(a.el + a.idx[e] * a.ls);
}

// attn[e, h] for row i's edges: the softmax of its logits, head by head
// (the largest logit subtracted first, accumulating in acc_type).
template <typename T>
GNN_INLINE void RowSoftmax(const GatArgs<T>& a, int64_t i, T* attn) {
  using Acc = at::acc_type<T, false>;
  const int64_t e0 = a.ptr[i], e1 = a.ptr[i + 1], H = a.heads;
  for (int64_t h = 0; h < H; ++h) {
    const T er = a.er[i * a.rs + h];
    T top = -std::numeric_limits<T>::infinity();
    for (int64_t e = e0; e < e1; ++e) {
      const T z = a.Leaky(a.el[a.idx[e] * a.ls + h] + er);
      attn[e * H + h] = z;
      top = std::max(top, z);
    }
    Acc sum = 0;
    for (int64_t e = e0; e < e1; ++e) {
      const T p = std::exp(attn[e * H + h] - top);
      attn[e * H + h] = p;
      sum += p;
    }
    const T inv = static_cast<T>(Acc(1) / sum);
    for (int64_t e = e0; e < e1; ++e) attn[e * H + h] *= inv;
  }
}

// Rows [r0, r1): out[i] = sum over row i's edges of attn * keep *
// feat[src], every head.
template <typename T>
GNN_INLINE void ForwardRows(const GatArgs<T>& a, int64_t r0, int64_t r1, T* attn, T* out) {
  const int64_t H = a.heads, F = a.width, HF = H * F, edge_end = a.ptr[r1];
  for (int64_t i = r0; i < r1; ++i) {
    RowSoftmax(a, i, attn);
    if (i + 1 < r1) PrefetchLogits(a, i + 1);
    T* o = out + i * HF;
    std::fill(o, o + HF, T(0));
    for (int64_t e = a.ptr[i]; e < a.ptr[i + 1]; ++e) {
      if (e + kAhead < edge_end) PrefetchRow(a.feat + a.idx[e + kAhead] * a.fs, HF);
      const T* x = a.feat + a.idx[e] * a.fs;
      for (int64_t h = 0; h < H; ++h) {
        const T w = attn[e * H + h] * a.Keep(e * H + h);
        T* oh = o + h * F;
        const T* xh = x + h * F;
        for (int64_t k = 0; k < F; ++k) oh[k] += w * xh[k];
      }
    }
  }
}
GNN_ROW_KERNEL void ForwardRowsOf(const GatArgs<float>& a, int64_t r0, int64_t r1, float* attn,
                                  float* out) {
  ForwardRows(a, r0, r1, attn, out);
}
GNN_ROW_KERNEL void ForwardRowsOf(const GatArgs<double>& a, int64_t r0, int64_t r1, double* attn,
                                  double* out) {
  ForwardRows(a, r0, r1, attn, out);
}

template <typename T>
void Forward(const GatArgs<T>& a, T* attn, T* out) {
  at::parallel_for(0, a.num_dst, RowGrain(a.num_dst, a.ptr[a.num_dst]),
                   [&](int64_t r0, int64_t r1) { ForwardRowsOf(a, r0, r1, attn, out); });
}

// sum of a[k] * b[k]: eight partial sums, so the compiler vectorizes it
// (a single float accumulator is a serial chain).
template <typename T>
GNN_INLINE T Dot(const T* a, const T* b, int64_t n) {
  T s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) s[j] += a[k + j] * b[k + j];
  }
  T total = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; k < n; ++k) total += a[k] * b[k];
  return total;
}

// The block's transpose for the backward pass: the edges grouped by
// source (t_ptr [S + 1]), each slot's edge (t_eid [E]) and destination
// (t_dst [E]). Within a source, slots follow the edges' order, which is
// the destinations' order.
struct Transpose {
  torch::Tensor t_ptr, t_eid, t_dst;
};
Transpose TransposeOf(const torch::Tensor& indptr, const torch::Tensor& indices, int64_t num_src) {
  const int64_t num_dst = indptr.size(0) - 1, edges = indices.size(0);
  const int64_t* ptr = indptr.data_ptr<int64_t>();
  const int64_t* idx = indices.data_ptr<int64_t>();
  Transpose t{torch::zeros({num_src + 1}, torch::kInt64), torch::empty({edges}, torch::kInt64),
              torch::empty({edges}, torch::kInt64)};
  int64_t* tp = t.t_ptr.data_ptr<int64_t>();
  int64_t* te = t.t_eid.data_ptr<int64_t>();
  int64_t* td = t.t_dst.data_ptr<int64_t>();
  for (int64_t e = 0; e < edges; ++e) ++tp[idx[e] + 1];
  for (int64_t s = 0; s < num_src; ++s) tp[s + 1] += tp[s];
  std::vector<int64_t> cursor(tp, tp + num_src);
  for (int64_t i = 0; i < num_dst; ++i) {
    for (int64_t e = ptr[i]; e < ptr[i + 1]; ++e) {
      const int64_t k = cursor[idx[e]]++;
      te[k] = e;
      td[k] = i;
    }
  }
  return t;
}

// The backward pass in three passes, so that the large [S, H, F] rows
// (feat and its gradient) are only ever read and written in order, source
// by source; what is scattered is the destinations' gradient rows (g,
// [D, H, F]: the fewer rows) and [E, H] per-edge values.
//
// Pass 1, sources [s0, s1), over their slots (edge e = s -> i):
// d attn[e, h] = keep * (g[i, h] . feat[s, h]) into d_attn (edge order),
// and d feat[s] = sum of attn * keep * g[i].
template <typename T>
GNN_INLINE void BackwardSources(const GatArgs<T>& a, int64_t s0, int64_t s1, const int64_t* t_ptr,
                                const int64_t* t_eid, const int64_t* t_dst, const T* attn,
                                const T* g, T* d_attn, T* g_feat) {
  const int64_t H = a.heads, F = a.width, HF = H * F, slot_end = t_ptr[s1];
  for (int64_t s = s0; s < s1; ++s) {
    const T* x = a.feat + s * a.fs;
    T* gf = g_feat + s * a.fs;
    std::fill(gf, gf + HF, T(0));
    for (int64_t k = t_ptr[s]; k < t_ptr[s + 1]; ++k) {
      if (k + kAhead < slot_end) {
        const int64_t ahead = t_eid[k + kAhead] * H;
        PrefetchRow(g + t_dst[k + kAhead] * HF, HF);
        __builtin_prefetch(attn + ahead);
        if (a.mask != nullptr) __builtin_prefetch(a.mask + ahead);
        __builtin_prefetch(d_attn + ahead, 1);
      }
      const int64_t e = t_eid[k];
      const T* gi = g + t_dst[k] * HF;
      for (int64_t h = 0; h < H; ++h) {
        const T keep = a.Keep(e * H + h);
        const T* gh = gi + h * F;
        d_attn[e * H + h] = Dot(gh, x + h * F, F) * keep;
        const T w = attn[e * H + h] * keep;
        T* gfh = gf + h * F;
        for (int64_t c = 0; c < F; ++c) gfh[c] += w * gh[c];
      }
    }
  }
}
GNN_ROW_KERNEL void BackwardSourcesOf(const GatArgs<float>& a, int64_t s0, int64_t s1,
                                      const int64_t* t_ptr, const int64_t* t_eid,
                                      const int64_t* t_dst, const float* attn, const float* g,
                                      float* d_attn, float* g_feat) {
  BackwardSources(a, s0, s1, t_ptr, t_eid, t_dst, attn, g, d_attn, g_feat);
}
GNN_ROW_KERNEL void BackwardSourcesOf(const GatArgs<double>& a, int64_t s0, int64_t s1,
                                      const int64_t* t_ptr, const int64_t* t_eid,
                                      const int64_t* t_dst, const double* attn, const double* g,
                                      double* d_attn, double* g_feat) {
  BackwardSources(a, s0, s1, t_ptr, t_eid, t_dst, attn, g, d_attn, g_feat);
}

// Pass 2, destinations [r0, r1): d logit through the softmax and the
// LeakyReLU, in place of d attn (edge order, read in order), and d er[i]
// = the row's sum of d logit.
template <typename T>
GNN_INLINE void BackwardRows(const GatArgs<T>& a, int64_t r0, int64_t r1, const T* attn, T* d_logit,
                             T* g_er) {
  using Acc = at::acc_type<T, false>;
  const int64_t H = a.heads;
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t e0 = a.ptr[i], e1 = a.ptr[i + 1];
    if (i + 1 < r1) PrefetchLogits(a, i + 1);
    const T* er = a.er + i * a.rs;
    for (int64_t h = 0; h < H; ++h) {
      Acc weighted = 0;  // sum of attn * d attn
      for (int64_t e = e0; e < e1; ++e) {
        weighted += static_cast<Acc>(attn[e * H + h]) * d_logit[e * H + h];
      }
      Acc row_sum = 0;
      for (int64_t e = e0; e < e1; ++e) {
        const T d_soft = attn[e * H + h] * (d_logit[e * H + h] - static_cast<T>(weighted));
        const T dz = d_soft * a.LeakyFactor(a.el[a.idx[e] * a.ls + h] + er[h]);
        d_logit[e * H + h] = dz;
        row_sum += dz;
      }
      g_er[i * a.rs + h] = static_cast<T>(row_sum);
    }
  }
}
GNN_ROW_KERNEL void BackwardRowsOf(const GatArgs<float>& a, int64_t r0, int64_t r1,
                                   const float* attn, float* d_logit, float* g_er) {
  BackwardRows(a, r0, r1, attn, d_logit, g_er);
}
GNN_ROW_KERNEL void BackwardRowsOf(const GatArgs<double>& a, int64_t r0, int64_t r1,
                                   const double* attn, double* d_logit, double* g_er) {
  BackwardRows(a, r0, r1, attn, d_logit, g_er);
}

// Pass 3, sources [s0, s1): d el[s] = sum of d logit over its slots.
template <typename T>
void BackwardLogits(const GatArgs<T>& a, int64_t s0, int64_t s1, const int64_t* t_ptr,
                    const int64_t* t_eid, const T* d_logit, T* g_el) {
  const int64_t H = a.heads, slot_end = t_ptr[s1];
  for (int64_t s = s0; s < s1; ++s) {
    T* ge = g_el + s * a.ls;
    std::fill(ge, ge + H, T(0));
    for (int64_t k = t_ptr[s]; k < t_ptr[s + 1]; ++k) {
      if (k + kAhead < slot_end) __builtin_prefetch(d_logit + t_eid[k + kAhead] * H);
      const T* dz = d_logit + t_eid[k] * H;
      for (int64_t h = 0; h < H; ++h) ge[h] += dz[h];
    }
  }
}

// Where feat, el and er live: three contiguous tensors, or the columns
// of one projection [S, H x F + 2H] (feat | el | er, er read for the
// first D rows only).
struct GatInputs {
  torch::Tensor feat, el, er;  // separate; or
  torch::Tensor proj;          // one projection (then feat, el, er are undefined)
  int64_t heads = 0, width = 0;
};

template <typename T>
GatArgs<T> Args(const torch::Tensor& indptr, const torch::Tensor& indices, const GatInputs& in,
                const torch::Tensor& mask, double slope) {
  GatArgs<T> a{};
  a.ptr = indptr.data_ptr<int64_t>();
  a.idx = indices.data_ptr<int64_t>();
  a.num_dst = indptr.size(0) - 1;
  a.num_src = (in.proj.defined() ? in.proj : in.feat).size(0);
  a.heads = in.heads;
  a.width = in.width;
  const int64_t HF = in.heads * in.width;
  if (in.proj.defined()) {
    T* p = in.proj.data_ptr<T>();
    a.feat = p;
    a.el = p + HF;
    a.er = p + HF + in.heads;
    a.fs = a.ls = a.rs = HF + 2 * in.heads;
  } else {
    a.feat = in.feat.data_ptr<T>();
    a.el = in.el.data_ptr<T>();
    a.er = in.er.data_ptr<T>();
    a.fs = HF;
    a.ls = a.rs = in.heads;
  }
  a.mask = mask.numel() > 0 ? mask.data_ptr<T>() : nullptr;
  a.slope = a.factor[0] = static_cast<T>(slope);
  a.factor[1] = T(1);
  return a;
}

// The call as the CUDA kernels take it, with the block's transpose when
// given.
template <typename T>
kernels::GatRowArgs<T> RowArgs(const GatArgs<T>& a, const Transpose* t) {
  kernels::GatRowArgs<T> r = a;
  if (t != nullptr) {
    r.t_ptr = t->t_ptr.data_ptr<int64_t>();
    r.t_eid = t->t_eid.data_ptr<int64_t>();
    r.t_dst = t->t_dst.data_ptr<int64_t>();
  }
  return r;
}

// The kernels run on the current stream of the device the tensors are on,
// with that device current (a machine's second trainer uses GPU 1).
#if GNN_CUDA_KERNELS
using OnDevice = c10::cuda::CUDAGuard;
void* CurrentStream(const torch::Tensor& on) {
  return at::cuda::getCurrentCUDAStream(on.device().index()).stream();
}
#else
struct OnDevice {
  explicit OnDevice(const torch::Device&) {}
};
[[noreturn]] void* CurrentStream(const torch::Tensor&) {
  throw Error("a CUDA tensor reached GAT's attention in a gnn-train built without CUDA kernels");
}
#endif

// The forward pass: attn [E, H] (kept for backward) and out [D, H, F].
torch::Tensor RunForward(const GatInputs& in, const torch::Tensor& mask,
                         const torch::Tensor& indptr, const torch::Tensor& indices, double slope,
                         torch::Tensor* attn) {
  const torch::Tensor& any = in.proj.defined() ? in.proj : in.feat;
  const int64_t num_dst = indptr.size(0) - 1;
  *attn = torch::empty({indices.size(0), in.heads}, any.options());
  torch::Tensor out = torch::empty({num_dst, in.heads, in.width}, any.options());
  AT_DISPATCH_FLOATING_TYPES(any.scalar_type(), "GatAggregate", [&] {
    const GatArgs<scalar_t> a = Args<scalar_t>(indptr, indices, in, mask, slope);
    if (!any.is_cuda()) {
      Forward(a, attn->data_ptr<scalar_t>(), out.data_ptr<scalar_t>());
      return;
    }
    const OnDevice on(any.device());
    void* stream = CurrentStream(any);
#if GNN_CUDA_KERNELS
    kernels::GatForwardCuda(RowArgs(a, nullptr), attn->data_ptr<scalar_t>(),
                            out.data_ptr<scalar_t>(), stream);
#else
    (void)stream;
#endif
  });
  return out;
}

// The backward pass into g_in's buffers (the same layout as `in`; for a
// projection, its er columns past the destinations are zeroed).
// The block's transpose from the sampler (t_eids given), or built here.
Transpose TransposeFor(const torch::Tensor& indptr, const torch::Tensor& indices, int64_t num_src,
                       const torch::Tensor& t_indptr, const torch::Tensor& t_eids,
                       const torch::Tensor& t_indices) {
  if (t_indptr.numel() == num_src + 1 && t_eids.numel() == indices.numel() &&
      t_indices.numel() == indices.numel() && t_indptr.device() == indptr.device() &&
      t_eids.device() == indptr.device() && t_indices.device() == indptr.device()) {
    return {t_indptr, t_eids, t_indices};
  }
  if (indptr.is_cpu()) return TransposeOf(indptr, indices, num_src);
  // On a GPU (a block the sampler gave no transpose): built on the host.
  const Transpose t = TransposeOf(indptr.cpu(), indices.cpu(), num_src);
  return {t.t_ptr.to(indptr.device()), t.t_eid.to(indptr.device()), t.t_dst.to(indptr.device())};
}

void RunBackward(const GatInputs& in, const torch::Tensor& mask, const torch::Tensor& indptr,
                 const torch::Tensor& indices, const std::vector<torch::Tensor>& transpose,
                 double slope, const torch::Tensor& attn, const torch::Tensor& g,
                 const GatInputs& g_in) {
  const torch::Tensor& any = in.proj.defined() ? in.proj : in.feat;
  const int64_t num_src = any.size(0), num_dst = indptr.size(0) - 1, edges = indices.size(0);
  const Transpose t =
      TransposeFor(indptr, indices, num_src, transpose[0], transpose[1], transpose[2]);
  torch::Tensor d_logit = torch::empty_like(attn);
  AT_DISPATCH_FLOATING_TYPES(any.scalar_type(), "GatAggregateBackward", [&] {
    const GatArgs<scalar_t> a = Args<scalar_t>(indptr, indices, in, mask, slope);
    // The same strides, over the gradient's buffers.
    const GatArgs<scalar_t> ga = Args<scalar_t>(indptr, indices, g_in, mask, slope);
    auto* g_feat = const_cast<scalar_t*>(ga.feat);
    auto* g_el = const_cast<scalar_t*>(ga.el);
    auto* g_er = const_cast<scalar_t*>(ga.er);
    const int64_t* t_ptr = t.t_ptr.data_ptr<int64_t>();
    const int64_t* t_eid = t.t_eid.data_ptr<int64_t>();
    const int64_t* t_dst = t.t_dst.data_ptr<int64_t>();
    const auto* at = attn.data_ptr<scalar_t>();
    const auto* gp = g.data_ptr<scalar_t>();
    auto* dl = d_logit.data_ptr<scalar_t>();
    if (any.is_cuda()) {
      const OnDevice on(any.device());
      void* stream = CurrentStream(any);
#if GNN_CUDA_KERNELS
      kernels::GatBackwardCuda(RowArgs(a, &t), at, gp, dl, g_feat, g_el, g_er, stream);
#else
      (void)stream;
#endif
      return;
    }
    const int64_t src_grain = RowGrain(num_src, edges);
    at::parallel_for(0, num_src, src_grain, [&](int64_t s0, int64_t s1) {
      BackwardSourcesOf(a, s0, s1, t_ptr, t_eid, t_dst, at, gp, dl, g_feat);
    });
    at::parallel_for(0, num_dst, RowGrain(num_dst, edges),
                     [&](int64_t r0, int64_t r1) { BackwardRowsOf(a, r0, r1, at, dl, g_er); });
    at::parallel_for(0, num_src, src_grain, [&](int64_t s0, int64_t s1) {
      BackwardLogits(a, s0, s1, t_ptr, t_eid, dl, g_el);
    });
  });
  if (g_in.proj.defined() && num_src > num_dst) {
    const int64_t HF = in.heads * in.width;
    g_in.proj.slice(0, num_dst).slice(1, HF + in.heads, HF + 2 * in.heads).zero_();
  }
}

class GatAggregateFn : public torch::autograd::Function<GatAggregateFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& feat,
                               const torch::Tensor& el, const torch::Tensor& er,
                               const torch::Tensor& mask, const torch::Tensor& indptr,
                               const torch::Tensor& indices, const torch::Tensor& t_indptr,
                               const torch::Tensor& t_eids, const torch::Tensor& t_indices,
                               double slope) {
    torch::Tensor attn;
    torch::Tensor out = RunForward({feat, el, er, {}, feat.size(1), feat.size(2)}, mask, indptr,
                                   indices, slope, &attn);
    ctx->save_for_backward(
        {feat, el, er, mask, indptr, indices, attn, t_indptr, t_eids, t_indices});
    ctx->saved_data["slope"] = slope;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &feat = saved[0], &el = saved[1], &er = saved[2];
    const GatInputs in{feat, el, er, {}, feat.size(1), feat.size(2)};
    const GatInputs g_in{torch::empty_like(feat),
                         torch::empty_like(el),
                         torch::empty_like(er),
                         {},
                         feat.size(1),
                         feat.size(2)};
    RunBackward(in, saved[3], saved[4], saved[5], {saved[7], saved[8], saved[9]},
                ctx->saved_data["slope"].toDouble(), saved[6], grads[0].contiguous(), g_in);
    torch::autograd::variable_list out(10);
    out[0] = g_in.feat;
    out[1] = g_in.el;
    out[2] = g_in.er;
    return out;
  }
};

class GatProjectedFn : public torch::autograd::Function<GatProjectedFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& proj,
                               const torch::Tensor& mask, const torch::Tensor& indptr,
                               const torch::Tensor& indices, const torch::Tensor& t_indptr,
                               const torch::Tensor& t_eids, const torch::Tensor& t_indices,
                               int64_t heads, int64_t width, double slope) {
    torch::Tensor attn;
    torch::Tensor out =
        RunForward({{}, {}, {}, proj, heads, width}, mask, indptr, indices, slope, &attn);
    ctx->save_for_backward({proj, mask, indptr, indices, attn, t_indptr, t_eids, t_indices});
    ctx->saved_data["slope"] = slope;
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["width"] = width;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const int64_t width = ctx->saved_data["width"].toInt();
    const GatInputs in{{}, {}, {}, saved[0], heads, width};
    const GatInputs g_in{{}, {}, {}, torch::empty_like(saved[0]), heads, width};
    RunBackward(in, saved[1], saved[2], saved[3], {saved[5], saved[6], saved[7]},
                ctx->saved_data["slope"].toDouble(), saved[4], grads[0].contiguous(), g_in);
    torch::autograd::variable_list out(10);
    out[0] = g_in.proj;
    return out;
  }
};

// The block's transpose for the ops (empty tensors when it has none).
std::vector<torch::Tensor> TransposeOfBlock(const BlockTensors& block) {
  if (block.t_eids.defined() && block.t_indptr.defined() && block.t_indices.defined()) {
    return {block.t_indptr, block.t_eids, block.t_indices};
  }
  const torch::Tensor none = torch::empty({0}, torch::kInt64);
  return {none, none, none};
}

void CheckShapes(const BlockTensors& block, const torch::Tensor& el, const torch::Tensor& er) {
  if (el.dim() != 2 || el.size(0) != block.num_src) {
    throw Error("GatAggregate: el has " + std::to_string(el.dim() ? el.size(0) : 0) +
                " rows, the block has " + std::to_string(block.num_src) + " sources");
  }
  if (er.dim() != 2 || er.size(0) != block.num_dst || er.size(1) != el.size(1)) {
    throw Error("GatAggregate: er must be [" + std::to_string(block.num_dst) + ", " +
                std::to_string(el.size(1)) + "]");
  }
}

}  // namespace

torch::Tensor GatAggregate(const BlockTensors& block, const torch::Tensor& feat,
                           const torch::Tensor& el, const torch::Tensor& er, double negative_slope,
                           const torch::Tensor& drop_mask) {
  CheckShapes(block, el, er);
  if (feat.dim() != 3 || feat.size(0) != block.num_src || feat.size(1) != el.size(1)) {
    throw Error("GatAggregate: feat must be [" + std::to_string(block.num_src) + ", " +
                std::to_string(el.size(1)) + ", width]");
  }
  torch::Tensor mask =
      drop_mask.defined() ? drop_mask.contiguous() : torch::empty({0}, feat.options());
  if (mask.numel() > 0 && (mask.size(0) != block.indices.numel() || mask.size(1) != el.size(1))) {
    throw Error("GatAggregate: the dropout mask must be [edges, heads]");
  }
  const std::vector<torch::Tensor> t = TransposeOfBlock(block);
  return GatAggregateFn::apply(feat.contiguous(), el.contiguous(), er.contiguous(), mask,
                               block.indptr, block.indices, t[0], t[1], t[2], negative_slope);
}

torch::Tensor GatAggregateProjected(const BlockTensors& block, const torch::Tensor& proj,
                                    int64_t heads, double negative_slope,
                                    const torch::Tensor& drop_mask) {
  if (heads < 1 || proj.dim() != 2 || proj.size(0) != block.num_src || proj.size(1) < 2 * heads ||
      (proj.size(1) - 2 * heads) % heads != 0) {
    throw Error("GatAggregateProjected: proj must be [" + std::to_string(block.num_src) +
                ", heads x width + 2 x heads] with " + std::to_string(heads) + " heads");
  }
  if (block.num_dst > block.num_src) {
    throw Error("GatAggregateProjected: the destinations must be the first sources");
  }
  torch::Tensor mask =
      drop_mask.defined() ? drop_mask.contiguous() : torch::empty({0}, proj.options());
  if (mask.numel() > 0 && (mask.size(0) != block.indices.numel() || mask.size(1) != heads)) {
    throw Error("GatAggregate: the dropout mask must be [edges, heads]");
  }
  const int64_t width = (proj.size(1) - 2 * heads) / heads;
  const std::vector<torch::Tensor> t = TransposeOfBlock(block);
  return GatProjectedFn::apply(proj.contiguous(), mask, block.indptr, block.indices, t[0], t[1],
                               t[2], heads, width, negative_slope);
}

torch::Tensor GatAttention(const BlockTensors& block, const torch::Tensor& el,
                           const torch::Tensor& er, double negative_slope) {
  CheckShapes(block, el, er);
  if (!el.is_cpu()) {  // a look at the attention, computed on the host
    const torch::Device cpu(torch::kCPU);
    return GatAttention(block.To(cpu), el.to(cpu), er.to(cpu), negative_slope).to(el.device());
  }
  torch::Tensor elc = el.contiguous(), erc = er.contiguous();
  torch::Tensor attn = torch::empty({block.indices.numel(), el.size(1)}, el.options());
  torch::Tensor no_feat = torch::empty({block.num_src, el.size(1), 0}, el.options());
  AT_DISPATCH_FLOATING_TYPES(el.scalar_type(), "GatAttention", [&] {
    const GatArgs<scalar_t> a =
        Args<scalar_t>(block.indptr, block.indices, {no_feat, elc, erc, {}, el.size(1), 0},
                       torch::empty({0}, el.options()), negative_slope);
    for (int64_t i = 0; i < block.num_dst; ++i) RowSoftmax(a, i, attn.data_ptr<scalar_t>());
  });
  return attn;
}

BlockTensors WithSelfLoops(const BlockTensors& block) {
  if (block.self_loops) return block;  // the sampler added them
  if (!block.indptr.is_cpu()) {        // built on the CPU, then moved back
    return WithSelfLoops(block.To(torch::Device(torch::kCPU))).To(block.indptr.device());
  }
  const int64_t D = block.num_dst, E = block.indices.numel();
  BlockTensors out;
  out.num_dst = D;
  out.num_src = block.num_src;
  out.indptr = torch::empty({D + 1}, torch::kInt64);
  out.indices = torch::empty({E + D}, torch::kInt64);
  out.self_loops = true;
  const int64_t* ptr = block.indptr.data_ptr<int64_t>();
  const int64_t* idx = block.indices.data_ptr<int64_t>();
  int64_t* p = out.indptr.data_ptr<int64_t>();
  int64_t* x = out.indices.data_ptr<int64_t>();
  for (int64_t i = 0; i <= D; ++i) p[i] = ptr[i] + i;
  at::parallel_for(0, D, 4096, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      x[p[i]] = i;
      std::copy(idx + ptr[i], idx + ptr[i + 1], x + p[i] + 1);
    }
  });
  if (block.edge_data.defined()) {
    // A self-loop's edge data is 1.0 (dgl.add_self_loop's fill_data), as
    // AddSelfLoops gives it.
    const torch::Tensor ed = block.edge_data.contiguous();
    const int64_t w = ed.size(1);
    out.edge_data = torch::empty({E + D, w}, ed.options());
    const float* in = ed.data_ptr<float>();
    float* o = out.edge_data.data_ptr<float>();
    at::parallel_for(0, D, 4096, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i) {
        std::fill(o + p[i] * w, o + (p[i] + 1) * w, 1.0f);
        std::copy(in + ptr[i] * w, in + ptr[i + 1] * w, o + (p[i] + 1) * w);
      }
    });
  }
  return out;
}

}  // namespace gnn
