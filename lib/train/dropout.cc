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

}  // namespace

torch::Tensor KeepMask(torch::IntArrayRef shape, double p, const torch::TensorOptions& options) {
  // Drawn on the CPU and moved: the same mask bits on every device.
  torch::Tensor mask = torch::empty(shape, options.device(torch::kCPU));
  const uint64_t seed = static_cast<uint64_t>(
      torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>());
  // Keep when the hash's top 24 bits, as a fraction, are >= p.
  const uint64_t threshold = static_cast<uint64_t>(p * static_cast<double>(1 << 24));
  const int64_t n = mask.numel();
  AT_DISPATCH_FLOATING_TYPES(mask.scalar_type(), "KeepMask", [&] {
    scalar_t* m = mask.data_ptr<scalar_t>();
    const scalar_t keep = static_cast<scalar_t>(1.0 / (1.0 - p));
    // Two elements per hash: its top 24 bits decide element 2j, the next
    // 24 element 2j + 1.
    const int64_t pairs = (n + 1) / 2;
    at::parallel_for(0, pairs, 1 << 15, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) {
        // splitmix64 is made for consecutive counters: one round per pair.
        const uint64_t h = SplitMix64(seed + static_cast<uint64_t>(j));
        m[2 * j] = (h >> 40) >= threshold ? keep : scalar_t(0);
        if (2 * j + 1 < n) m[2 * j + 1] = ((h >> 16) & 0xffffff) >= threshold ? keep : scalar_t(0);
      }
    });
  });
  return mask.to(options.device());
}

torch::Tensor Dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  return x * KeepMask(x.sizes(), p, x.options());
}

}  // namespace gnn
