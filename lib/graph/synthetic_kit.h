// The tools every synthetic generator shares: seeded random streams
// (splitmix64, one per purpose and chunk, so output never depends on the
// thread count), sorting and merging of 64-bit pair keys, and Walker/Vose
// alias tables for O(1) weighted draws.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/random.h"

namespace gnn {

// The seed of stream (`stream`, `index`) of generator seed `seed`: one tag
// per use of randomness, so streams never overlap between uses.
uint64_t StreamSeed(uint64_t seed, uint64_t stream, uint64_t index);

// Random numbers: splitmix64 is tiny, fast, and its streams from
// well-mixed seeds are independent enough for data generation; std::
// distributions are avoided because their output is implementation-defined.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return Mix64(state_ += 0x9e3779b97f4a7c15ULL); }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1p-53; }
  // Uniform in [0, n) for n < 2^32 (multiply-shift; the bias is < n / 2^32).
  uint32_t Below(uint64_t n) { return static_cast<uint32_t>(((Next() >> 32) * n) >> 32); }
  // Uniform in [0, n) for any n > 0 (bias < n / 2^64).
  uint64_t Below64(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  // Two independent standard normals (Marsaglia's polar method).
  void Gaussian2(double* a, double* b) {
    double x, y, s;
    do {
      x = 2.0 * Uniform() - 1.0;
      y = 2.0 * Uniform() - 1.0;
      s = x * x + y * y;
    } while (s >= 1.0 || s == 0.0);
    double f = std::sqrt(-2.0 * std::log(s) / s);
    *a = x * f;
    *b = y * f;
  }

 private:
  uint64_t state_;
};

// ---------------------------------------------------------------------------
// Threads: chunks are handed out dynamically, but each chunk writes only its
// own output range with its own stream, so scheduling never shows in results.

inline int64_t NumChunks(int64_t n, int64_t chunk) { return (n + chunk - 1) / chunk; }

// Sorts 64-bit keys (LSD radix sort, parallel over contiguous parts; any
// correct sort gives the same bytes, so the part count is free).
void RadixSort(std::vector<uint64_t>* keys, uint64_t max_key, int num_threads);
// RadixSort, then duplicates removed.
void SortUnique(std::vector<uint64_t>* keys, uint64_t max_key, int num_threads);
// Merges sorted unique `add` into sorted unique `*keys`.
void Union(std::vector<uint64_t>* keys, const std::vector<uint64_t>& add);

// ---------------------------------------------------------------------------
// Walker/Vose alias tables: O(1) weighted draws with one 64-bit random number
// (upper half picks the slot, lower half decides slot vs alias), which keeps
// the edge sampler far faster than binary search over prefix sums.

class AliasBuilder {
 public:
  // Builds the table for weights w[0, n) (all > 0): slot i keeps i when
  // (uint32)r < threshold(i), else yields alias(i). Reuses its buffers.
  void Build(const double* w, uint32_t n);
  uint32_t threshold(uint32_t i) const { return threshold_[i]; }
  uint32_t alias(uint32_t i) const { return alias_[i]; }

 private:
  std::vector<double> prob_;
  std::vector<uint32_t> threshold_, alias_, small_, large_;
};

// Node weights (expected degrees up to a factor) follow P(w) ~ w^-2.5 for
// w >= 1, the tail of many real graphs; capped so the hubs stay plausible
// (ogbn-products: mean degree ~50, max ~17K, i.e. ~330 x mean).
constexpr double kPowerLawExponent = 2.5;
constexpr double kMaxWeight = 1000.0;
// The weight drawn from uniform `u` in [0, 1), at most `cap`.
inline double PowerLawWeight(double u, double cap) {
  return std::min(cap, std::pow(1.0 - u, -1.0 / (kPowerLawExponent - 1.0)));
}

// Separation z of the class centroids in the features: for one pair of
// classes, a node's own features pick the wrong one with probability ~Phi(-z).
// z grows slowly with the number of classes so that a per-node classifier
// lands near 50% accuracy whatever C is, well below what neighbours allow.
double FeatureSeparation(int64_t num_classes);

// Features [n, f] of nodes whose classes are classes[0, n): a Gaussian
// centroid per class (drawn from `centroid_seed`) plus Gaussian noise of
// the strength FeatureSeparation asks for, scaled to unit variance. Rows
// are drawn in chunks of 4096 nodes from StreamSeed(seed, feature_stream,
// index_base + chunk), so the bytes do not depend on num_threads.
std::vector<float> ClassFeatures(int64_t n, int64_t f, int64_t num_classes, const int64_t* classes,
                                 uint64_t centroid_seed, uint64_t seed, uint64_t feature_stream,
                                 uint64_t index_base, int num_threads);

// A random permutation of [0, n) (from `stream_seed`) cut into train,
// valid and test by the fractions (each rounded on its own; valid yields
// to train when both would exceed n), each returned sorted.
void RandomSplit(int64_t n, double train_fraction, double valid_fraction, uint64_t stream_seed,
                 std::vector<int64_t>* train, std::vector<int64_t>* valid,
                 std::vector<int64_t>* test);

inline uint32_t SlotIndex(uint64_t r, uint32_t n) {
  return static_cast<uint32_t>(((r >> 32) * n) >> 32);
}

}  // namespace gnn
