#include "train/models/aggregate.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/row_sums.h"
#include "kernels/csr_row_sum.h"
#include "sampling/sampler.h"

#if GNN_CUDA_KERNELS
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "kernels/csr_row_sum_cuda.h"
#endif

namespace gnn {
namespace {

torch::Tensor View(const std::vector<int64_t>& v) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::kInt64);
}

// out[r, :] = scale_r * sum over j in [ptr[r], ptr[r+1]) of w_j * x[idx[j], :]
// where scale_r = 1/(row length) when `mean` (0 for an empty row), else
// row_scale[r] when given, else 1, and w_j = col_weight[idx[j]] when
// given, else 1. x rows are
// `x_stride` apart; out is dense [rows, d]. Row ranges are split so that
// every task gets about the same number of edges (degrees are skewed).
template <typename T>
void CsrRowSum(const int64_t* ptr, const int64_t* idx, int64_t rows, const T* x, int64_t x_stride,
               int64_t d, bool mean, const T* col_weight, const T* row_scale, T* out) {
  const int64_t edges = ptr[rows];
  const int64_t tasks = std::max<int64_t>(1, std::min<int64_t>(rows, 4 * at::get_num_threads()));
  // Work of a row ~ its edges plus the write of its output row.
  auto task_begin = [&](int64_t t) -> int64_t {
    if (t == 0) return 0;
    if (t >= tasks) return rows;
    const int64_t target = (edges + rows) * t / tasks;
    // First row r with ptr[r] + r >= target (ptr[r] + r is increasing).
    int64_t lo = 0, hi = rows;
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (ptr[mid] + mid < target)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  };
  CsrSum<T> sum = PlainCsrSum(ptr, idx, x, x_stride, d, out);
  sum.col_weight = col_weight;
  sum.mean = mean;
  sum.row_scale = row_scale;
  at::parallel_for(0, tasks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) SumCsrRows(sum, task_begin(t), task_begin(t + 1));
  });
}

// The row sum on the device `on` lives on: the CPU loop above, or the CUDA
// kernel running kernels::CsrRowSumRow (the same arithmetic) on the
// current stream. Every pointer must be on that device.
template <typename T>
void RowSum(const torch::Tensor& on, const int64_t* ptr, const int64_t* idx, int64_t rows,
            const T* x, int64_t x_stride, int64_t d, bool mean, const T* col_weight,
            const T* row_scale, T* out) {
  if (!on.is_cuda()) {
    CsrRowSum<T>(ptr, idx, rows, x, x_stride, d, mean, col_weight, row_scale, out);
    return;
  }
#if GNN_CUDA_KERNELS
  kernels::CsrRowSumArgs<T> a;
  a.ptr = ptr;
  a.idx = idx;
  a.x = x;
  a.x_stride = x_stride;
  a.d = d;
  a.mean = mean;
  a.col_weight = col_weight;
  a.row_scale = row_scale;
  a.out = out;
  // On the tensors' device, current while it launches (a machine's second
  // trainer uses GPU 1).
  const c10::cuda::CUDAGuard guard(on.device());
  kernels::CsrRowSumCuda(a, rows, at::cuda::getCurrentCUDAStream(on.device().index()).stream());
#else
  throw Error("a CUDA tensor reached the aggregation of a gnn-train built without CUDA kernels");
#endif
}

// A 2-D tensor whose rows are contiguous (column slices allowed).
torch::Tensor RowMajor(const torch::Tensor& t) {
  return t.dim() == 2 && t.stride(1) == 1 && t.stride(0) >= t.size(1) ? t : t.contiguous();
}

// The mean of each destination's in-neighbour rows of h, [num_dst, d].
torch::Tensor MeanOfRows(const torch::Tensor& h, const torch::Tensor& indptr,
                         const torch::Tensor& indices) {
  const int64_t num_dst = indptr.size(0) - 1, d = h.size(1);
  torch::Tensor x = RowMajor(h);
  torch::Tensor out = torch::empty({num_dst, d}, h.options());
  AT_DISPATCH_FLOATING_TYPES(h.scalar_type(), "MeanAggregate", [&] {
    RowSum<scalar_t>(h, indptr.data_ptr<int64_t>(), indices.data_ptr<int64_t>(), num_dst,
                     x.data_ptr<scalar_t>(), x.stride(0), d, /*mean=*/true, nullptr, nullptr,
                     out.data_ptr<scalar_t>());
  });
  return out;
}

// The mean's gradient with respect to its num_src input rows, given the
// gradient g of its output: one pass over the transpose.
torch::Tensor MeanGradient(const char* op, const torch::Tensor& g_in, const torch::Tensor& indptr,
                           const torch::Tensor& t_indptr, const torch::Tensor& t_indices,
                           int64_t num_src) {
  if (t_indptr.numel() == 0) {  // the op's caller builds one whenever h needs a gradient
    throw Error(std::string(op) + ": gradient needed but the block has no transpose");
  }
  torch::Tensor g = g_in.contiguous();
  const int64_t num_dst = g.size(0), d = g.size(1);
  // d out[i] / d h[s] = 1/deg(i) for each edge s -> i: weight each
  // destination's gradient row by its 1/deg while summing over s's edges.
  torch::Tensor deg = (indptr.slice(0, 1) - indptr.slice(0, 0, num_dst)).to(g.scalar_type());
  torch::Tensor inv_deg = deg.clamp_min(1).reciprocal();
  torch::Tensor grad_h = torch::empty({num_src, d}, g.options());
  AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "MeanAggregateBackward", [&] {
    RowSum<scalar_t>(g, t_indptr.data_ptr<int64_t>(), t_indices.data_ptr<int64_t>(), num_src,
                     g.data_ptr<scalar_t>(), d, d, /*mean=*/false, inv_deg.data_ptr<scalar_t>(),
                     nullptr, grad_h.data_ptr<scalar_t>());
  });
  return grad_h;
}

class MeanAggregateFn : public torch::autograd::Function<MeanAggregateFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& indptr, const torch::Tensor& indices,
                               const torch::Tensor& t_indptr, const torch::Tensor& t_indices) {
    ctx->save_for_backward({indptr, t_indptr, t_indices});
    ctx->saved_data["num_src"] = h.size(0);
    return MeanOfRows(h, indptr, indices);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor grad_h = MeanGradient("MeanAggregate", grads[0], saved[0], saved[1],
                                              saved[2], ctx->saved_data["num_src"].toInt());
    return {grad_h, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// (h's first num_dst rows, copied; their in-neighbours' mean). Backward
// gives h one gradient: the mean's, with the first rows' own added in
// place, where a slice and MeanAggregate would each give one, the slice's
// zero-padded to [num_src, d], for autograd to add in another pass.
class DestinationsAndMeanFn : public torch::autograd::Function<DestinationsAndMeanFn> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& h, const torch::Tensor& indptr,
                                                const torch::Tensor& indices,
                                                const torch::Tensor& t_indptr,
                                                const torch::Tensor& t_indices) {
    const int64_t num_dst = indptr.size(0) - 1;
    ctx->save_for_backward({indptr, t_indptr, t_indices});
    ctx->saved_data["num_src"] = h.size(0);
    // A copy: an output that were a view of the input would be autograd's
    // to track, not this op's.
    return {h.slice(0, 0, num_dst).clone(at::MemoryFormat::Contiguous),
            MeanOfRows(h, indptr, indices)};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    torch::Tensor grad_h = MeanGradient("DestinationsAndMean", grads[1], saved[0], saved[1],
                                        saved[2], ctx->saved_data["num_src"].toInt());
    // The same sum autograd would form (floating-point addition commutes).
    grad_h.slice(0, 0, grads[0].size(0)).add_(grads[0]);
    return {grad_h, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// out[i] = dst_w[i] * sum over i's in-edges of src_w[s] * h[s]; backward
// over the transpose: grad_h[s] = src_w[s] * sum over s's out-edges of
// dst_w[i] * g[i]. The weights are constants (degrees), not learnt.
class WeightedAggregateFn : public torch::autograd::Function<WeightedAggregateFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& src_w, const torch::Tensor& dst_w,
                               const torch::Tensor& indptr, const torch::Tensor& indices,
                               const torch::Tensor& t_indptr, const torch::Tensor& t_indices) {
    const int64_t num_dst = indptr.size(0) - 1, d = h.size(1);
    torch::Tensor x = RowMajor(h);
    torch::Tensor out = torch::empty({num_dst, d}, h.options());
    AT_DISPATCH_FLOATING_TYPES(h.scalar_type(), "WeightedAggregate", [&] {
      RowSum<scalar_t>(h, indptr.data_ptr<int64_t>(), indices.data_ptr<int64_t>(), num_dst,
                       x.data_ptr<scalar_t>(), x.stride(0), d, /*mean=*/false,
                       src_w.data_ptr<scalar_t>(), dst_w.data_ptr<scalar_t>(),
                       out.data_ptr<scalar_t>());
    });
    ctx->save_for_backward({src_w, dst_w, t_indptr, t_indices});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &src_w = saved[0], &dst_w = saved[1];
    const torch::Tensor &t_indptr = saved[2], &t_indices = saved[3];
    if (t_indptr.numel() == 0) {
      throw Error("WeightedAggregate: gradient needed but the block has no transpose");
    }
    torch::Tensor g = grads[0].contiguous();
    const int64_t num_src = src_w.size(0), d = g.size(1);
    torch::Tensor grad_h = torch::empty({num_src, d}, g.options());
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "WeightedAggregateBackward", [&] {
      RowSum<scalar_t>(g, t_indptr.data_ptr<int64_t>(), t_indices.data_ptr<int64_t>(), num_src,
                       g.data_ptr<scalar_t>(), d, d, /*mean=*/false, dst_w.data_ptr<scalar_t>(),
                       src_w.data_ptr<scalar_t>(), grad_h.data_ptr<scalar_t>());
    });
    return {grad_h,          torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// out[r, :] = sum over e in [ptr[r], ptr[r+1]) of coef[e] * x[idx[e], :]:
// CsrRowSum with a weight per edge, rows split the same way.
template <typename T>
void CsrEdgeSum(const int64_t* ptr, const int64_t* idx, int64_t rows, const T* x, int64_t x_stride,
                int64_t d, const T* coef, T* out) {
  const int64_t grain = std::max<int64_t>(1, rows * d > 0 ? (int64_t{1} << 14) / d : rows);
  CsrSum<T> sum = PlainCsrSum(ptr, idx, x, x_stride, d, out);
  sum.edge_weight = coef;
  at::parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) { SumCsrRows(sum, r0, r1); });
}

// out[i] = sum over i's in-edges e of coef[e] * h[src(e)]; backward over
// the transpose with each slot's coefficient: grad_h[s] = sum over s's
// out-edges e of coef[e] * g[dst(e)]. The coefficients are constants.
class EdgeWeightedAggregateFn : public torch::autograd::Function<EdgeWeightedAggregateFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& coef, const torch::Tensor& indptr,
                               const torch::Tensor& indices, const torch::Tensor& t_indptr,
                               const torch::Tensor& t_indices, const torch::Tensor& t_coef) {
    const int64_t num_dst = indptr.size(0) - 1, d = h.size(1);
    torch::Tensor x = RowMajor(h);
    torch::Tensor out = torch::empty({num_dst, d}, h.options());
    AT_DISPATCH_FLOATING_TYPES(h.scalar_type(), "EdgeWeightedAggregate", [&] {
      CsrEdgeSum<scalar_t>(indptr.data_ptr<int64_t>(), indices.data_ptr<int64_t>(), num_dst,
                           x.data_ptr<scalar_t>(), x.stride(0), d, coef.data_ptr<scalar_t>(),
                           out.data_ptr<scalar_t>());
    });
    ctx->save_for_backward({t_indptr, t_indices, t_coef});
    ctx->saved_data["num_src"] = h.size(0);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &t_indptr = saved[0], &t_indices = saved[1], &t_coef = saved[2];
    if (t_indptr.numel() == 0) {
      throw Error("EdgeWeightedAggregate: gradient needed but the block has no transpose");
    }
    const int64_t num_src = ctx->saved_data["num_src"].toInt();
    torch::Tensor g = grads[0].contiguous();
    const int64_t d = g.size(1);
    torch::Tensor grad_h = torch::empty({num_src, d}, g.options());
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "EdgeWeightedAggregateBackward", [&] {
      CsrEdgeSum<scalar_t>(t_indptr.data_ptr<int64_t>(), t_indices.data_ptr<int64_t>(), num_src,
                           g.data_ptr<scalar_t>(), d, d, t_coef.data_ptr<scalar_t>(),
                           grad_h.data_ptr<scalar_t>());
    });
    return {grad_h,          torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// The block's transpose when it has none and `h` will need a gradient;
// "none" (empty tensors: autograd inputs must be defined) otherwise.
void TransposeFor(const BlockTensors& block, const torch::Tensor& h, torch::Tensor* t_indptr,
                  torch::Tensor* t_indices) {
  *t_indptr = block.t_indptr;
  *t_indices = block.t_indices;
  if (t_indptr->defined()) return;
  if (torch::GradMode::is_enabled() && h.requires_grad()) {
    // Built on the CPU (the sampler builds it there too when it can).
    const torch::Tensor indptr = block.indptr.cpu(), indices = block.indices.cpu();
    *t_indptr = torch::empty({block.num_src + 1}, torch::kInt64);
    *t_indices = torch::empty({indices.numel()}, torch::kInt64);
    TransposeCsr(indptr.data_ptr<int64_t>(), indices.data_ptr<int64_t>(), block.num_dst,
                 block.num_src, t_indptr->data_ptr<int64_t>(), t_indices->data_ptr<int64_t>());
    *t_indptr = t_indptr->to(block.indptr.device());
    *t_indices = t_indices->to(block.indptr.device());
  } else {
    *t_indptr = *t_indices = torch::empty({0}, block.indptr.options());
  }
}

void CheckRows(const char* op, const BlockTensors& block, const torch::Tensor& h) {
  if (h.dim() != 2 || h.size(0) != block.num_src) {
    throw Error(std::string(op) + ": input has " + std::to_string(h.dim() ? h.size(0) : 0) +
                " rows, the block has " + std::to_string(block.num_src) + " sources");
  }
}

}  // namespace

BlockTensors BlockTensors::To(const torch::Device& device, bool non_blocking) const {
  BlockTensors t = *this;
  if (device == indptr.device()) return t;
  for (torch::Tensor* x :
       {&t.indptr, &t.indices, &t.t_indptr, &t.t_indices, &t.t_eids, &t.edge_data}) {
    if (x->defined()) *x = x->to(device, non_blocking);
  }
  return t;
}

BlockTensors ToTensors(const Block& block) {
  BlockTensors t;
  t.num_dst = block.num_dst;
  t.num_src = block.num_src();
  t.indptr = View(block.indptr);
  t.indices = View(block.indices);
  t.self_loops = block.self_loops;
  if (block.edge_dim > 0) {
    if (block.edge_data.size() != block.indices.size() * static_cast<size_t>(block.edge_dim)) {
      throw Error("a block's edge data (" + std::to_string(block.edge_data.size()) +
                  " values) does not match its " + std::to_string(block.indices.size()) +
                  " edges of width " + std::to_string(block.edge_dim));
    }
    t.edge_data = torch::from_blob(const_cast<float*>(block.edge_data.data()),
                                   {block.num_edges(), block.edge_dim}, torch::kFloat32);
  }
  if (!block.t_indptr.empty()) {
    t.t_indptr = View(block.t_indptr);
    t.t_indices = View(block.t_indices);
    if (!block.t_eids.empty()) t.t_eids = View(block.t_eids);
  }
  return t;
}

torch::Tensor MeanAggregate(const BlockTensors& block, const torch::Tensor& h) {
  CheckRows("MeanAggregate", block, h);
  torch::Tensor t_indptr, t_indices;
  TransposeFor(block, h, &t_indptr, &t_indices);
  return MeanAggregateFn::apply(h, block.indptr, block.indices, t_indptr, t_indices);
}

std::pair<torch::Tensor, torch::Tensor> DestinationsAndMean(const BlockTensors& block,
                                                            const torch::Tensor& h) {
  CheckRows("DestinationsAndMean", block, h);
  torch::Tensor t_indptr, t_indices;
  TransposeFor(block, h, &t_indptr, &t_indices);
  const torch::autograd::variable_list out =
      DestinationsAndMeanFn::apply(h, block.indptr, block.indices, t_indptr, t_indices);
  return {out[0], out[1]};
}

torch::Tensor WeightedAggregate(const BlockTensors& block, const torch::Tensor& h,
                                const torch::Tensor& src_w, const torch::Tensor& dst_w) {
  CheckRows("WeightedAggregate", block, h);
  if (src_w.numel() != block.num_src || dst_w.numel() != block.num_dst) {
    throw Error("WeightedAggregate: weights for " + std::to_string(src_w.numel()) +
                " sources and " + std::to_string(dst_w.numel()) + " destinations, the block has " +
                std::to_string(block.num_src) + " and " + std::to_string(block.num_dst));
  }
  torch::Tensor t_indptr, t_indices;
  TransposeFor(block, h, &t_indptr, &t_indices);
  return WeightedAggregateFn::apply(h, src_w.to(h.scalar_type()).contiguous(),
                                    dst_w.to(h.scalar_type()).contiguous(), block.indptr,
                                    block.indices, t_indptr, t_indices);
}

torch::Tensor EdgeWeightedAggregate(const BlockTensors& block, const torch::Tensor& h,
                                    const torch::Tensor& coef) {
  CheckRows("EdgeWeightedAggregate", block, h);
  if (coef.dim() != 1 || coef.size(0) != block.indices.numel()) {
    throw Error("EdgeWeightedAggregate: " + std::to_string(coef.numel()) +
                " coefficients for a block of " + std::to_string(block.indices.numel()) + " edges");
  }
  const torch::Tensor c = coef.to(h.scalar_type()).contiguous();
  if (h.is_cuda()) {
    // LibTorch's own ops (no CUDA kernel of this one yet): the messages
    // [E, d] are built, summed per destination by index_add_.
    const torch::Tensor dst = torch::repeat_interleave(
        DestinationInDegrees(block));  // the destination of every edge, in order
    return torch::zeros({block.num_dst, h.size(1)}, h.options())
        .index_add(0, dst, h.index_select(0, block.indices) * c.unsqueeze(1));
  }
  torch::Tensor t_indptr, t_indices, t_coef;
  if (torch::GradMode::is_enabled() && h.requires_grad() && block.t_eids.defined()) {
    // The sampler's transpose, with each slot's edge.
    t_indptr = block.t_indptr;
    t_indices = block.t_indices;
    t_coef = c.index_select(0, block.t_eids);
  } else if (torch::GradMode::is_enabled() && h.requires_grad()) {
    // The transpose with each slot's edge, so the slot takes its coefficient.
    const torch::Tensor indptr = block.indptr.cpu(), indices = block.indices.cpu();
    t_indptr = torch::empty({block.num_src + 1}, torch::kInt64);
    t_indices = torch::empty({indices.numel()}, torch::kInt64);
    torch::Tensor t_eids = torch::empty({indices.numel()}, torch::kInt64);
    TransposeCsr(indptr.data_ptr<int64_t>(), indices.data_ptr<int64_t>(), block.num_dst,
                 block.num_src, t_indptr.data_ptr<int64_t>(), t_indices.data_ptr<int64_t>(),
                 t_eids.data_ptr<int64_t>());
    t_coef = c.index_select(0, t_eids);
  } else {
    t_indptr = t_indices = torch::empty({0}, torch::kInt64);
    t_coef = torch::empty({0}, c.options());
  }
  return EdgeWeightedAggregateFn::apply(h, c, block.indptr, block.indices, t_indptr, t_indices,
                                        t_coef);
}

torch::Tensor EdgeWeights(const BlockTensors& block, const torch::ScalarType& dtype) {
  if (!block.edge_data.defined() || block.edge_data.dim() != 2 || block.edge_data.size(1) != 1 ||
      block.edge_data.size(0) != block.indices.numel()) {
    throw Error("the model weighs messages by edge weights, but the block carries " +
                (block.edge_data.defined()
                     ? std::to_string(block.edge_data.dim() == 2 ? block.edge_data.size(1) : 0) +
                           "-wide edge data"
                     : std::string("none")));
  }
  return block.edge_data.select(1, 0).to(dtype);
}

torch::Tensor SourceOutDegrees(const BlockTensors& block) {
  return torch::bincount(block.indices, {}, block.num_src);
}

torch::Tensor DestinationInDegrees(const BlockTensors& block) {
  return block.indptr.slice(0, 1) - block.indptr.slice(0, 0, block.num_dst);
}

// Estimated cost in multiply-adds, a gathered row element counting as
// kGather of them (a neighbour row is a random read).
bool ProjectFirst(const BlockTensors& b, int64_t in, int64_t out, bool weight_grad,
                  bool input_grad) {
  constexpr double kGather = 4;
  const double edges = static_cast<double>(b.indices.numel());
  const double gemm = static_cast<double>(in) * out;
  const double gemm_passes = 1.0 + (weight_grad ? 1 : 0) + (input_grad ? 1 : 0);
  const double project_first = static_cast<double>(b.num_src) * gemm * gemm_passes +
                               kGather * edges * out * (weight_grad || input_grad ? 2 : 1);
  const double aggregate_first = kGather * edges * in * (input_grad ? 2 : 1) +
                                 static_cast<double>(b.num_dst) * gemm * gemm_passes;
  return project_first < aggregate_first;
}

}  // namespace gnn
