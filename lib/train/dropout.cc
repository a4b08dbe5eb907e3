#include "train/dropout.h"

#include <ATen/Parallel.h>

#include <cstdint>
#include <limits>

namespace gnn {
namespace {

uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// One seed per mask from LibTorch's generator: reproducible under
// torch::manual_seed.
uint64_t DrawSeed() {
  return static_cast<uint64_t>(
      torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>());
}

// out[i] = in[i] * (element i kept ? 1 / (1 - p) : 0), the mask's bits from
// (seed, i): two elements per hash, element 2j kept when the hash's top 24
// bits, as a fraction, are >= p, element 2j + 1 by the next 24. With
// in == nullptr, out holds the mask itself.
template <typename scalar_t>
void ApplyKeepMask(const scalar_t* in, scalar_t* out, int64_t n, double p, uint64_t seed) {
  const uint64_t threshold = static_cast<uint64_t>(p * static_cast<double>(1 << 24));
  const scalar_t keep = static_cast<scalar_t>(1.0 / (1.0 - p));
  const int64_t pairs = (n + 1) / 2;
  at::parallel_for(0, pairs, 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      // splitmix64 is made for consecutive counters: one round per pair.
      const uint64_t h = SplitMix64(seed + static_cast<uint64_t>(j));
      const scalar_t k0 = (h >> 40) >= threshold ? keep : scalar_t(0);
      out[2 * j] = in != nullptr ? in[2 * j] * k0 : k0;
      if (2 * j + 1 < n) {
        const scalar_t k1 = ((h >> 16) & 0xffffff) >= threshold ? keep : scalar_t(0);
        out[2 * j + 1] = in != nullptr ? in[2 * j + 1] * k1 : k1;
      }
    }
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

}  // namespace

torch::Tensor KeepMask(torch::IntArrayRef shape, double p, const torch::TensorOptions& options) {
  // Drawn on the CPU and moved: the same mask bits on every device.
  torch::Tensor mask = torch::empty(shape, options.device(torch::kCPU));
  const uint64_t seed = DrawSeed();
  AT_DISPATCH_FLOATING_TYPES(mask.scalar_type(), "KeepMask", [&] {
    ApplyKeepMask<scalar_t>(nullptr, mask.data_ptr<scalar_t>(), mask.numel(), p, seed);
  });
  return mask.to(options.device());
}

torch::Tensor Dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  // Off the CPU the mask is drawn on the host and moved (the same bits).
  if (!x.is_cpu()) return x * KeepMask(x.sizes(), p, x.options());
  // The same bits as x * KeepMask, in one pass, and no mask kept for the
  // backward pass.
  return DropoutFn::apply(x, p, static_cast<int64_t>(DrawSeed()));
}

}  // namespace gnn
