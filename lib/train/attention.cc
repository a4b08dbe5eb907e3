#include "train/attention.h"

#include <ATen/AccumulateType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"

namespace gnn {
namespace {

// Sizes and raw pointers of one call, shared by the passes.
template <typename T>
struct GatArgs {
  const int64_t* ptr;  // [D + 1]
  const int64_t* idx;  // [E]
  int64_t num_dst, heads, width;
  const T* feat;  // [S, H, F]
  const T* el;    // [S, H]
  const T* er;    // [D, H]
  const T* mask;  // [E, H] or null
  T slope;
  T Leaky(T z) const { return z > T(0) ? z : z * slope; }
  T Keep(int64_t eh) const { return mask != nullptr ? mask[eh] : T(1); }
};

// Grain for parallel_for over rows: about 32k edges' work per task.
int64_t RowGrain(int64_t rows, int64_t edges) {
  return std::max<int64_t>(1, rows * 32768 / std::max<int64_t>(1, edges));
}

// attn[e, h] for row i's edges: the softmax of its logits, head by head
// (the largest logit subtracted first, accumulating in acc_type).
template <typename T>
void RowSoftmax(const GatArgs<T>& a, int64_t i, T* attn) {
  using Acc = at::acc_type<T, false>;
  const int64_t e0 = a.ptr[i], e1 = a.ptr[i + 1], H = a.heads;
  for (int64_t h = 0; h < H; ++h) {
    const T er = a.er[i * H + h];
    T top = -std::numeric_limits<T>::infinity();
    for (int64_t e = e0; e < e1; ++e) {
      const T z = a.Leaky(a.el[a.idx[e] * H + h] + er);
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

// out[i] = sum over row i's edges of attn * keep * feat[src], every head.
template <typename T>
void Forward(const GatArgs<T>& a, T* attn, T* out) {
  const int64_t H = a.heads, F = a.width, edges = a.ptr[a.num_dst];
  at::parallel_for(0, a.num_dst, RowGrain(a.num_dst, edges), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      RowSoftmax(a, i, attn);
      T* o = out + i * H * F;
      std::fill(o, o + H * F, T(0));
      for (int64_t e = a.ptr[i]; e < a.ptr[i + 1]; ++e) {
        const T* x = a.feat + a.idx[e] * H * F;
        for (int64_t h = 0; h < H; ++h) {
          const T w = attn[e * H + h] * a.Keep(e * H + h);
          T* oh = o + h * F;
          const T* xh = x + h * F;
          for (int64_t k = 0; k < F; ++k) oh[k] += w * xh[k];
        }
      }
    }
  });
}

// sum of a[k] * b[k]: eight partial sums, so the compiler vectorizes it
// (a single float accumulator is a serial chain).
template <typename T>
T Dot(const T* a, const T* b, int64_t n) {
  T s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) s[j] += a[k + j] * b[k + j];
  }
  T total = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; k < n; ++k) total += a[k] * b[k];
  return total;
}

// Per destination: d logit[e, h] into g_logit (through the dropout, the
// softmax and the LeakyReLU) and d er[i, h] = its row's sum. Each edge's
// source row is read once, every head at a time.
template <typename T>
void BackwardRows(const GatArgs<T>& a, const T* attn, const T* g, T* g_logit, T* g_er) {
  using Acc = at::acc_type<T, false>;
  const int64_t H = a.heads, F = a.width, edges = a.ptr[a.num_dst];
  at::parallel_for(0, a.num_dst, RowGrain(a.num_dst, edges), [&](int64_t r0, int64_t r1) {
    std::vector<Acc> weighted(H), row_sum(H);  // per head: sum of attn * d attn; of d logit
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t e0 = a.ptr[i], e1 = a.ptr[i + 1];
      const T* gi = g + i * H * F;
      std::fill(weighted.begin(), weighted.end(), Acc(0));
      for (int64_t e = e0; e < e1; ++e) {
        const T* x = a.feat + a.idx[e] * H * F;
        for (int64_t h = 0; h < H; ++h) {
          const T d_attn = Dot(gi + h * F, x + h * F, F) * a.Keep(e * H + h);
          g_logit[e * H + h] = d_attn;
          weighted[h] += static_cast<Acc>(attn[e * H + h]) * d_attn;
        }
      }
      std::fill(row_sum.begin(), row_sum.end(), Acc(0));
      for (int64_t e = e0; e < e1; ++e) {
        const T* el = a.el + a.idx[e] * H;
        for (int64_t h = 0; h < H; ++h) {
          const T d_soft = attn[e * H + h] * (g_logit[e * H + h] - static_cast<T>(weighted[h]));
          const T z = el[h] + a.er[i * H + h];
          const T d_z = z > T(0) ? d_soft : d_soft * a.slope;
          g_logit[e * H + h] = d_z;
          row_sum[h] += d_z;
        }
      }
      for (int64_t h = 0; h < H; ++h) g_er[i * H + h] = static_cast<T>(row_sum[h]);
    }
  });
}

// Per source s (edges grouped by source: t_ptr, t_eid, dst_of): d feat[s]
// = sum of attn * keep * g[dst], d el[s] = sum of d logit.
template <typename T>
void BackwardSources(const GatArgs<T>& a, int64_t num_src, const int64_t* t_ptr,
                     const int64_t* t_eid, const int64_t* dst_of, const T* attn, const T* g,
                     const T* g_logit, T* g_feat, T* g_el) {
  const int64_t H = a.heads, F = a.width;
  at::parallel_for(0, num_src, RowGrain(num_src, t_ptr[num_src]), [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      T* gf = g_feat + s * H * F;
      std::fill(gf, gf + H * F, T(0));
      std::fill(g_el + s * H, g_el + (s + 1) * H, T(0));
      for (int64_t k = t_ptr[s]; k < t_ptr[s + 1]; ++k) {
        const int64_t e = t_eid[k];
        const T* gi = g + dst_of[e] * H * F;
        for (int64_t h = 0; h < H; ++h) {
          const T w = attn[e * H + h] * a.Keep(e * H + h);
          const T* gh = gi + h * F;
          T* gfh = gf + h * F;
          for (int64_t c = 0; c < F; ++c) gfh[c] += w * gh[c];
          g_el[s * H + h] += g_logit[e * H + h];
        }
      }
    }
  });
}

// The block's edges grouped by source (t_ptr [S + 1], t_eid: edge ids) and
// each edge's destination (dst_of [E]).
void EdgesBySource(const torch::Tensor& indptr, const torch::Tensor& indices, int64_t num_src,
                   torch::Tensor* t_ptr, torch::Tensor* t_eid, torch::Tensor* dst_of) {
  const int64_t num_dst = indptr.size(0) - 1, edges = indices.size(0);
  const int64_t* ptr = indptr.data_ptr<int64_t>();
  const int64_t* idx = indices.data_ptr<int64_t>();
  *t_ptr = torch::zeros({num_src + 1}, torch::kInt64);
  *t_eid = torch::empty({edges}, torch::kInt64);
  *dst_of = torch::empty({edges}, torch::kInt64);
  int64_t* tp = t_ptr->data_ptr<int64_t>();
  int64_t* te = t_eid->data_ptr<int64_t>();
  int64_t* d = dst_of->data_ptr<int64_t>();
  for (int64_t e = 0; e < edges; ++e) ++tp[idx[e] + 1];
  for (int64_t s = 0; s < num_src; ++s) tp[s + 1] += tp[s];
  std::vector<int64_t> cursor(tp, tp + num_src);
  for (int64_t i = 0; i < num_dst; ++i) {
    for (int64_t e = ptr[i]; e < ptr[i + 1]; ++e) {
      d[e] = i;
      te[cursor[idx[e]]++] = e;
    }
  }
}

template <typename T>
GatArgs<T> Args(const torch::Tensor& indptr, const torch::Tensor& indices,
                const torch::Tensor& feat, const torch::Tensor& el, const torch::Tensor& er,
                const torch::Tensor& mask, double slope) {
  return GatArgs<T>{indptr.data_ptr<int64_t>(),
                    indices.data_ptr<int64_t>(),
                    indptr.size(0) - 1,
                    feat.size(1),
                    feat.size(2),
                    feat.data_ptr<T>(),
                    el.data_ptr<T>(),
                    er.data_ptr<T>(),
                    mask.numel() > 0 ? mask.data_ptr<T>() : nullptr,
                    static_cast<T>(slope)};
}

class GatAggregateFn : public torch::autograd::Function<GatAggregateFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& feat,
                               const torch::Tensor& el, const torch::Tensor& er,
                               const torch::Tensor& mask, const torch::Tensor& indptr,
                               const torch::Tensor& indices, double slope) {
    const int64_t num_dst = indptr.size(0) - 1, H = feat.size(1), F = feat.size(2);
    torch::Tensor attn = torch::empty({indices.size(0), H}, feat.options());
    torch::Tensor out = torch::empty({num_dst, H, F}, feat.options());
    AT_DISPATCH_FLOATING_TYPES(feat.scalar_type(), "GatAggregate", [&] {
      Forward(Args<scalar_t>(indptr, indices, feat, el, er, mask, slope), attn.data_ptr<scalar_t>(),
              out.data_ptr<scalar_t>());
    });
    ctx->save_for_backward({feat, el, er, mask, indptr, indices, attn});
    ctx->saved_data["slope"] = slope;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &feat = saved[0], &el = saved[1], &er = saved[2], &mask = saved[3];
    const torch::Tensor &indptr = saved[4], &indices = saved[5], &attn = saved[6];
    const double slope = ctx->saved_data["slope"].toDouble();
    torch::Tensor g = grads[0].contiguous();
    const int64_t num_src = feat.size(0);
    torch::Tensor t_ptr, t_eid, dst_of;
    EdgesBySource(indptr, indices, num_src, &t_ptr, &t_eid, &dst_of);
    torch::Tensor g_logit = torch::empty_like(attn);
    torch::Tensor g_er = torch::empty_like(er);
    torch::Tensor g_feat = torch::empty_like(feat);
    torch::Tensor g_el = torch::empty_like(el);
    AT_DISPATCH_FLOATING_TYPES(feat.scalar_type(), "GatAggregateBackward", [&] {
      const GatArgs<scalar_t> a = Args<scalar_t>(indptr, indices, feat, el, er, mask, slope);
      BackwardRows(a, attn.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(),
                   g_logit.data_ptr<scalar_t>(), g_er.data_ptr<scalar_t>());
      BackwardSources(a, num_src, t_ptr.data_ptr<int64_t>(), t_eid.data_ptr<int64_t>(),
                      dst_of.data_ptr<int64_t>(), attn.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(),
                      g_logit.data_ptr<scalar_t>(), g_feat.data_ptr<scalar_t>(),
                      g_el.data_ptr<scalar_t>());
    });
    return {g_feat, g_el, g_er, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

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
  return GatAggregateFn::apply(feat.contiguous(), el.contiguous(), er.contiguous(), mask,
                               block.indptr, block.indices, negative_slope);
}

torch::Tensor GatAttention(const BlockTensors& block, const torch::Tensor& el,
                           const torch::Tensor& er, double negative_slope) {
  CheckShapes(block, el, er);
  torch::Tensor elc = el.contiguous(), erc = er.contiguous();
  torch::Tensor attn = torch::empty({block.indices.numel(), el.size(1)}, el.options());
  torch::Tensor no_feat = torch::empty({block.num_src, el.size(1), 0}, el.options());
  AT_DISPATCH_FLOATING_TYPES(el.scalar_type(), "GatAttention", [&] {
    const GatArgs<scalar_t> a = Args<scalar_t>(block.indptr, block.indices, no_feat, elc, erc,
                                               torch::empty({0}, el.options()), negative_slope);
    for (int64_t i = 0; i < block.num_dst; ++i) RowSoftmax(a, i, attn.data_ptr<scalar_t>());
  });
  return attn;
}

BlockTensors WithSelfLoops(const BlockTensors& block) {
  if (!block.indptr.is_cpu()) {  // built on the CPU, then moved back
    return WithSelfLoops(block.To(torch::Device(torch::kCPU))).To(block.indptr.device());
  }
  const int64_t D = block.num_dst, E = block.indices.numel();
  BlockTensors out;
  out.num_dst = D;
  out.num_src = block.num_src;
  out.indptr = torch::empty({D + 1}, torch::kInt64);
  out.indices = torch::empty({E + D}, torch::kInt64);
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
  return out;
}

}  // namespace gnn
