#include "train/models/dropout.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "train/models/sparse_input.h"

namespace gnn {
namespace {

// murmur3's 32-bit finalizer: a bijection that mixes every input bit into
// every output bit, in 32-bit lanes (8 at a time with AVX2).
inline uint32_t Mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  return h ^ (h >> 16);
}

// Elements [b, e): keep[i] when Mix32((i + s0) ^ s1) >= threshold; out[i] =
// in[i] * keep (in == nullptr: the mask itself; kRelu: max(in[i], 0) in
// place of in[i], the very values relu then the mask give). Branch-free,
// so the compiler vectorizes it; built for AVX2 and for the baseline,
// picked at load time.
template <bool kRelu, typename scalar_t>
inline void KeepRange(const scalar_t* in, scalar_t* out, int64_t b, int64_t e, uint32_t s0,
                      uint32_t s1, uint32_t threshold, scalar_t keep) {
  if (in == nullptr) {
    for (int64_t i = b; i < e; ++i) {
      out[i] = Mix32((static_cast<uint32_t>(i) + s0) ^ s1) >= threshold ? keep : scalar_t(0);
    }
  } else {
    for (int64_t i = b; i < e; ++i) {
      const scalar_t v = kRelu && in[i] < scalar_t(0) ? scalar_t(0) : in[i];
      out[i] = v * (Mix32((static_cast<uint32_t>(i) + s0) ^ s1) >= threshold ? keep : scalar_t(0));
    }
  }
}
__attribute__((target_clones("avx512f", "avx2", "default"))) void KeepRangeOf(
    const float* in, float* out, int64_t b, int64_t e, uint32_t s0, uint32_t s1, uint32_t threshold,
    float keep, bool relu) {
  if (relu) {
    KeepRange<true>(in, out, b, e, s0, s1, threshold, keep);
  } else {
    KeepRange<false>(in, out, b, e, s0, s1, threshold, keep);
  }
}
__attribute__((target_clones("avx512f", "avx2", "default"))) void KeepRangeOf(
    const double* in, double* out, int64_t b, int64_t e, uint32_t s0, uint32_t s1,
    uint32_t threshold, double keep, bool relu) {
  if (relu) {
    KeepRange<true>(in, out, b, e, s0, s1, threshold, keep);
  } else {
    KeepRange<false>(in, out, b, e, s0, s1, threshold, keep);
  }
}

// ReLU-then-mask's gradient from its output alone: grad * keep where the
// output is positive (the element passed the ReLU and was kept), else 0.
// Branch-free (both loads unconditional), so it vectorizes: kept elements
// fall at random, a branch would miss half the time.
template <typename scalar_t>
void PassPositive(const scalar_t* grad, const scalar_t* y, scalar_t* out, int64_t b, int64_t e,
                  scalar_t keep) {
  for (int64_t i = b; i < e; ++i) out[i] = grad[i] * (y[i] > scalar_t(0) ? keep : scalar_t(0));
}

// One seed per mask from LibTorch's generator: reproducible under
// torch::manual_seed.
uint64_t DrawSeed() {
  return static_cast<uint64_t>(
      torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>());
}

// out[i] = in[i] * (element i kept ? 1 / (1 - p) : 0), element i kept when
// the hash of (seed, i), as a 32-bit fraction, is >= p. With in ==
// nullptr, out holds the mask itself.
// With relu, max(in[i], 0) in place of in[i].
template <typename scalar_t>
void ApplyKeepMask(const scalar_t* in, scalar_t* out, int64_t n, double p, uint64_t seed,
                   bool relu = false) {
  const auto threshold = static_cast<uint32_t>(std::min(p * 4294967296.0, 4294967295.0));
  const scalar_t keep = static_cast<scalar_t>(1.0 / (1.0 - p));
  const auto s0 = static_cast<uint32_t>(seed), s1 = static_cast<uint32_t>(seed >> 32);
  at::parallel_for(0, n, 1 << 16, [&](int64_t b, int64_t e) {
    KeepRangeOf(in, out, b, e, s0, s1, threshold, keep, relu);
  });
}

// x * KeepMask(x's shape) without the mask: the backward pass draws the
// same bits again from the seed (gradient = grad * mask).
class DropoutFn : public torch::autograd::Function<DropoutFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               double p, int64_t seed) {
    ctx->saved_data["p"] = p;
    ctx->saved_data["seed"] = seed;
    return Apply(x, p, static_cast<uint64_t>(seed));
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const double p = ctx->saved_data["p"].toDouble();
    const auto seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
    return {Apply(grads[0], p, seed), torch::Tensor(), torch::Tensor()};
  }

 private:
  static torch::Tensor Apply(const torch::Tensor& t, double p, uint64_t seed) {
    torch::Tensor in = t.contiguous();
    torch::Tensor out = torch::empty_like(in);
    AT_DISPATCH_FLOATING_TYPES(in.scalar_type(), "Dropout", [&] {
      ApplyKeepMask(in.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), in.numel(), p, seed);
    });
    return out;
  }
};

// Dropout(relu(x)) in one pass; the backward pass reads the output
// alone (no mask drawn again, no input kept).
class ReluDropoutFn : public torch::autograd::Function<ReluDropoutFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               double p, int64_t seed) {
    torch::Tensor in = x.contiguous();
    torch::Tensor out = torch::empty_like(in);
    AT_DISPATCH_FLOATING_TYPES(in.scalar_type(), "ReluDropout", [&] {
      ApplyKeepMask(in.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), in.numel(), p,
                    static_cast<uint64_t>(seed), true);
    });
    ctx->saved_data["p"] = p;
    ctx->save_for_backward({out});
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const double p = ctx->saved_data["p"].toDouble();
    const torch::Tensor y = ctx->get_saved_variables()[0];
    const torch::Tensor g = grads[0].contiguous();
    torch::Tensor out = torch::empty_like(g);
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "ReluDropoutBackward", [&] {
      const auto keep = static_cast<scalar_t>(1.0 / (1.0 - p));
      const scalar_t* gp = g.data_ptr<scalar_t>();
      const scalar_t* yp = y.data_ptr<scalar_t>();
      scalar_t* op = out.data_ptr<scalar_t>();
      at::parallel_for(0, g.numel(), 1 << 16,
                       [&](int64_t b, int64_t e) { PassPositive(gp, yp, op, b, e, keep); });
    });
    return {out, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor KeepMask(torch::IntArrayRef shape, double p, const torch::TensorOptions& options) {
  // Off the CPU drawn where it is used, as Dropout's: a host-drawn mask
  // would cross to the device every layer of every step.
  if (options.device().type() != torch::kCPU) {
    return torch::empty(shape, options).bernoulli_(1.0 - p).div_(1.0 - p);
  }
  torch::Tensor mask = torch::empty(shape, options);
  const uint64_t seed = DrawSeed();
  AT_DISPATCH_FLOATING_TYPES(mask.scalar_type(), "KeepMask", [&] {
    ApplyKeepMask<scalar_t>(nullptr, mask.data_ptr<scalar_t>(), mask.numel(), p, seed);
  });
  return mask;
}

torch::Tensor DropoutSparse(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  torch::Tensor crow = x.crow_indices(), col = x.col_indices();
  torch::Tensor values;
  if (!x.is_cpu()) {
    values = torch::dropout(x.values(), p, true);
  } else {
    const uint64_t seed = DrawSeed();
    const auto threshold = static_cast<uint32_t>(std::min(p * 4294967296.0, 4294967295.0));
    const float keep = static_cast<float>(1.0 / (1.0 - p));
    const auto s0 = static_cast<uint32_t>(seed), s1 = static_cast<uint32_t>(seed >> 32);
    const torch::Tensor r64 = crow.to(torch::kInt64).contiguous();
    const torch::Tensor c64 = col.to(torch::kInt64).contiguous();
    const torch::Tensor in = x.values().to(torch::kFloat32).contiguous();
    values = torch::empty_like(in);
    const int64_t* rp = r64.data_ptr<int64_t>();
    const int64_t* cp = c64.data_ptr<int64_t>();
    const float* ip = in.data_ptr<float>();
    float* op = values.data_ptr<float>();
    const int64_t cols = x.size(1);
    at::parallel_for(0, x.size(0), 256, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t k = rp[r]; k < rp[r + 1]; ++k) {
          // The dense matrix's flat index, as Dropout hashes it.
          const auto i = static_cast<uint32_t>(r * cols + cp[k]);
          op[k] = ip[k] * (Mix32((i + s0) ^ s1) >= threshold ? keep : 0.0f);
        }
      }
    });
  }
  return SparseInput(crow, col, values, x.size(1));
}

torch::Tensor Dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  // Off the CPU torch's own dropout: its generator is fast there, and a
  // host-drawn mask would cross to the device every step.
  if (!x.is_cpu()) return torch::dropout(x, p, training);
  // The same bits as x * KeepMask, in one pass, and no mask kept for the
  // backward pass.
  return DropoutFn::apply(x, p, static_cast<int64_t>(DrawSeed()));
}

torch::Tensor ReluDropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0 || !x.is_cpu()) return Dropout(torch::relu(x), p, training);
  return ReluDropoutFn::apply(x, p, static_cast<int64_t>(DrawSeed()));
}

}  // namespace gnn
