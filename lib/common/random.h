// The project's one source of hashing-based randomness: splitmix64. Its
// output is the same on every platform and compiler (std:: distributions
// are implementation-defined), so seeded runs reproduce everywhere.
#pragma once

#include <cstdint>

namespace gnn {

constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

// splitmix64's finalizer: a bijective 64-bit mix.
constexpr uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// splitmix64's output for state `z` (the state advanced by the golden gamma).
constexpr uint64_t SplitMix64(uint64_t z) { return Mix64(z + kGoldenGamma); }

// A seed for a (seed, stream) pair; order matters. Chains give seeds for
// (seed, epoch, batch, ...).
constexpr uint64_t MixSeed(uint64_t a, uint64_t b) {
  return Mix64(Mix64(a + kGoldenGamma) ^ Mix64(b + 0x632be59bd9b4e019ULL));
}

}  // namespace gnn
