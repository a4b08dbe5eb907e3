#include "train/models/sparse_input.h"

#include <ATen/Parallel.h>
#include <torch/version.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/error.h"

namespace gnn {

namespace {

// out[r, :] = sum over r's entries k of val[k] * wt[col[k], :], rows [0, n).
template <typename scalar_t>
void ForwardRows(const int64_t* crow, const int64_t* col, const scalar_t* val, const scalar_t* wt,
                 int64_t n, int64_t out_dim, scalar_t* out) {
  const int64_t per_row = std::max<int64_t>(1, crow[n] / std::max<int64_t>(1, n));
  const int64_t grain = std::max<int64_t>(1, 16384 / (per_row * std::max<int64_t>(1, out_dim)));
  at::parallel_for(0, n, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      scalar_t* o = out + r * out_dim;
      std::fill(o, o + out_dim, scalar_t(0));
      for (int64_t k = crow[r]; k < crow[r + 1]; ++k) {
        const scalar_t v = val[k];
        const scalar_t* w = wt + col[k] * out_dim;
        for (int64_t j = 0; j < out_dim; ++j) o[j] += v * w[j];
      }
    }
  });
}

// dwt[col[k], j0:j1] += val[k] * grad[r, j0:j1] over the entries of rows
// [r0, r1).
template <typename scalar_t>
void AddEntries(const int64_t* crow, const int64_t* col, const scalar_t* val, const scalar_t* grad,
                int64_t r0, int64_t r1, int64_t out_dim, int64_t j0, int64_t j1, scalar_t* dwt) {
  for (int64_t r = r0; r < r1; ++r) {
    const scalar_t* g = grad + r * out_dim;
    for (int64_t k = crow[r]; k < crow[r + 1]; ++k) {
      const scalar_t v = val[k];
      scalar_t* d = dwt + col[k] * out_dim;
      for (int64_t j = j0; j < j1; ++j) d[j] += v * g[j];
    }
  }
}

// dwt ([in, out_dim], zeroed) = the sum over every entry of rows [0, n) of
// val[k] * grad[r, :] into row col[k]. Wide outputs: each task owns a
// slice of dwt's columns. Narrow ones (a 16-wide hidden layer has one
// slice): a fixed number of row chunks, each summed into its own copy,
// then added in chunk order. Either way the bits do not depend on the
// thread count.
template <typename scalar_t>
void BackwardWeight(const int64_t* crow, const int64_t* col, const scalar_t* val,
                    const scalar_t* grad, int64_t n, int64_t in, int64_t out_dim, scalar_t* dwt) {
  constexpr int64_t kSlice = 16;  // columns per task: a cache line of floats
  constexpr int64_t kChunks = 8;
  const int64_t slices = (out_dim + kSlice - 1) / kSlice;
  if (slices >= 4 || n < 1024 || in * out_dim > (int64_t{1} << 20)) {
    at::parallel_for(0, slices, 1, [&](int64_t s0, int64_t s1) {
      AddEntries(crow, col, val, grad, 0, n, out_dim, s0 * kSlice, std::min(out_dim, s1 * kSlice),
                 dwt);
    });
    return;
  }
  std::vector<scalar_t> partial(static_cast<size_t>((kChunks - 1) * in * out_dim), scalar_t(0));
  at::parallel_for(0, kChunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      scalar_t* out = c == 0 ? dwt : partial.data() + (c - 1) * in * out_dim;
      AddEntries(crow, col, val, grad, n * c / kChunks, n * (c + 1) / kChunks, out_dim, 0, out_dim,
                 out);
    }
  });
  at::parallel_for(0, in * out_dim, 4096, [&](int64_t e0, int64_t e1) {
    for (int64_t c = 1; c < kChunks; ++c) {
      const scalar_t* p = partial.data() + (c - 1) * in * out_dim;
      for (int64_t e = e0; e < e1; ++e) dwt[e] += p[e];
    }
  });
}

class SparseLinearFn : public torch::autograd::Function<SparseLinearFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& crow,
                               const torch::Tensor& col, const torch::Tensor& val,
                               const torch::Tensor& wt, int64_t rows) {
    ctx->save_for_backward({crow, col, val});
    ctx->saved_data["in"] = wt.size(0);
    ctx->saved_data["rows"] = rows;
    const int64_t out_dim = wt.size(1);
    torch::Tensor out = torch::empty({rows, out_dim}, wt.options());
    AT_DISPATCH_FLOATING_TYPES(wt.scalar_type(), "SparseLinear", [&] {
      ForwardRows(crow.data_ptr<int64_t>(), col.data_ptr<int64_t>(), val.data_ptr<scalar_t>(),
                  wt.data_ptr<scalar_t>(), rows, out_dim, out.data_ptr<scalar_t>());
    });
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &crow = saved[0], &col = saved[1], &val = saved[2];
    const int64_t in = ctx->saved_data["in"].toInt();
    const int64_t rows = ctx->saved_data["rows"].toInt();
    const torch::Tensor grad = grads[0].contiguous();
    const int64_t out_dim = grad.size(1);
    torch::Tensor dwt = torch::zeros({in, out_dim}, grad.options());
    AT_DISPATCH_FLOATING_TYPES(grad.scalar_type(), "SparseLinearBackward", [&] {
      BackwardWeight(crow.data_ptr<int64_t>(), col.data_ptr<int64_t>(), val.data_ptr<scalar_t>(),
                     grad.data_ptr<scalar_t>(), rows, in, out_dim, dwt.data_ptr<scalar_t>());
    });
    return {torch::Tensor(), torch::Tensor(), torch::Tensor(), dwt, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor SparseInput(const SparseRows& rows) {
  const int64_t n = rows.rows(), nnz = rows.nnz();
  torch::Tensor crow = torch::empty({n + 1}, torch::kInt64);
  std::memcpy(crow.data_ptr<int64_t>(), rows.indptr.data(), static_cast<size_t>(n + 1) * 8);
  torch::Tensor col =
      torch::from_blob(const_cast<int32_t*>(rows.indices.data()), {nnz}, torch::kInt32)
          .to(torch::kInt64);
  torch::Tensor val = rows.binary() ? torch::ones({nnz}, torch::kFloat32)
                                    : torch::from_blob(const_cast<float*>(rows.values.data()),
                                                       {nnz}, torch::kFloat32)
                                          .clone();
  return SparseInput(crow, col, val, rows.cols);
}

torch::Tensor SparseInput(const torch::Tensor& crow, const torch::Tensor& col,
                          const torch::Tensor& values, int64_t cols) {
  // LibTorch 1.13 says once per process, on stderr, that CSR tensors are
  // "in beta state"; gnn uses them as a carrier only. The first one is
  // made under a silent handler (the handler is global: swapped once).
  static std::once_flag said;
  std::call_once(said, [] {
#if TORCH_VERSION_MAJOR >= 2
    struct Quiet : c10::WarningHandler {
      void process(const c10::Warning&) override {}
    } quiet;
    c10::WarningUtils::WarningHandlerGuard guard(&quiet);
#else
    struct Quiet : c10::WarningHandler {
      void process(const c10::SourceLocation&, const std::string&, const bool) override {}
    } quiet;
    c10::Warning::WarningHandlerGuard guard(&quiet);
#endif
    const torch::Tensor zero = torch::zeros({2}, torch::kInt64);
    at::_sparse_csr_tensor_unsafe(zero, torch::zeros({0}, torch::kInt64), torch::zeros({0}), {1, 1},
                                  torch::TensorOptions().layout(torch::kSparseCsr));
  });
  return at::_sparse_csr_tensor_unsafe(crow, col, values, {crow.size(0) - 1, cols},
                                       values.options().layout(torch::kSparseCsr));
}

torch::Tensor SparseLinearIndexOps(const torch::Tensor& x, const torch::Tensor& wt, int64_t rows) {
  if (rows < 0) rows = x.size(0);
  const torch::Tensor crow = x.crow_indices().to(torch::kInt64);
  const int64_t nnz = crow[rows].item<int64_t>();
  const torch::Tensor col = x.col_indices().to(torch::kInt64).slice(0, 0, nnz);
  const torch::Tensor val = x.values().to(wt.scalar_type()).slice(0, 0, nnz);
  // Each entry's weighted row of wt, summed into its output row.
  const torch::Tensor counts = crow.slice(0, 1, rows + 1) - crow.slice(0, 0, rows);
  const torch::Tensor row = torch::repeat_interleave(torch::arange(rows, crow.options()), counts,
                                                     /*dim=*/0, /*output_size=*/nnz);
  return torch::zeros({rows, wt.size(1)}, wt.options())
      .index_add(0, row, wt.index_select(0, col) * val.unsqueeze(1));
}

torch::Tensor SparseLinear(const torch::Tensor& x, const torch::Tensor& wt, int64_t rows) {
  if (!IsSparse(x)) throw Error("SparseLinear: the input is not sparse rows");
  const int64_t n = x.size(0);
  if (rows < 0) rows = n;
  if (rows > n || x.size(1) != wt.size(0)) {
    throw Error("SparseLinear: " + std::to_string(rows) + " rows of [" + std::to_string(n) + ", " +
                std::to_string(x.size(1)) + "] times [" + std::to_string(wt.size(0)) + ", " +
                std::to_string(wt.size(1)) + "]");
  }
  if (!wt.is_cpu()) return SparseLinearIndexOps(x, wt, rows);
  const torch::Tensor crow = x.crow_indices().to(torch::kInt64).contiguous();
  const torch::Tensor col = x.col_indices().to(torch::kInt64).contiguous();
  const torch::Tensor val = x.values().to(wt.scalar_type()).contiguous();
  return SparseLinearFn::apply(crow, col, val, wt.contiguous(), rows);
}

torch::Tensor SparseHeadDense(const torch::Tensor& x, int64_t rows) {
  const torch::Tensor crow = x.crow_indices().to(torch::kInt64).cpu();
  const int64_t nnz = crow[rows].item<int64_t>();
  torch::Tensor head =
      SparseInput(crow.slice(0, 0, rows + 1).to(x.device()), x.col_indices().slice(0, 0, nnz),
                  x.values().slice(0, 0, nnz), x.size(1));
  return head.to_dense();
}

}  // namespace gnn
