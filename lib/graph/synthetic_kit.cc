#include "graph/synthetic_kit.h"

#include <algorithm>
#include <iterator>

#include "common/parallel.h"

namespace gnn {

uint64_t StreamSeed(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t h = Mix64(seed + 0x9e3779b97f4a7c15ULL * stream);
  return Mix64(h ^ Mix64(index + 0x632be59bd9b4e019ULL));
}

void RadixSort(std::vector<uint64_t>* keys, uint64_t max_key, int num_threads) {
  const int64_t n = static_cast<int64_t>(keys->size());
  if (n < (1 << 16)) {
    std::sort(keys->begin(), keys->end());
    return;
  }
  int bits = 1;
  while (bits < 64 && (max_key >> bits) != 0) ++bits;
  const int passes = (bits + 10) / 11;
  const int digit_bits = (bits + passes - 1) / passes;
  const int64_t buckets = int64_t{1} << digit_bits;
  const uint64_t mask = static_cast<uint64_t>(buckets - 1);
  const int parts = std::max(1, num_threads);
  std::vector<uint64_t> tmp(n);
  std::vector<int64_t> offsets(parts * buckets);
  for (int pass = 0; pass < passes; ++pass) {
    const int shift = pass * digit_bits;
    const uint64_t* in = keys->data();
    uint64_t* out = tmp.data();
    ParallelChunks(parts, parts, [&](int64_t p) {
      int64_t* count = &offsets[p * buckets];
      std::fill(count, count + buckets, 0);
      for (int64_t i = n * p / parts, end = n * (p + 1) / parts; i < end; ++i) {
        ++count[(in[i] >> shift) & mask];
      }
    });
    int64_t sum = 0;
    for (int64_t b = 0; b < buckets; ++b) {
      for (int p = 0; p < parts; ++p) {
        int64_t c = offsets[p * buckets + b];
        offsets[p * buckets + b] = sum;
        sum += c;
      }
    }
    ParallelChunks(parts, parts, [&](int64_t p) {
      int64_t* pos = &offsets[p * buckets];
      for (int64_t i = n * p / parts, end = n * (p + 1) / parts; i < end; ++i) {
        uint64_t k = in[i];
        out[pos[(k >> shift) & mask]++] = k;
      }
    });
    keys->swap(tmp);
  }
}

void SortUnique(std::vector<uint64_t>* keys, uint64_t max_key, int num_threads) {
  RadixSort(keys, max_key, num_threads);
  keys->erase(std::unique(keys->begin(), keys->end()), keys->end());
}

void Union(std::vector<uint64_t>* keys, const std::vector<uint64_t>& add) {
  std::vector<uint64_t> merged;
  merged.reserve(keys->size() + add.size());
  std::set_union(keys->begin(), keys->end(), add.begin(), add.end(), std::back_inserter(merged));
  keys->swap(merged);
}

void AliasBuilder::Build(const double* w, uint32_t n) {
  double sum = 0;
  for (uint32_t i = 0; i < n; ++i) sum += w[i];
  prob_.resize(n);
  threshold_.resize(n);
  alias_.resize(n);
  small_.clear();
  large_.clear();
  for (uint32_t i = 0; i < n; ++i) {
    prob_[i] = w[i] * n / sum;
    (prob_[i] < 1.0 ? small_ : large_).push_back(i);
  }
  while (!small_.empty() && !large_.empty()) {
    uint32_t s = small_.back();
    small_.pop_back();
    uint32_t l = large_.back();
    threshold_[s] = static_cast<uint32_t>(std::min(prob_[s] * 4294967296.0, 4294967295.0));
    alias_[s] = l;
    prob_[l] -= 1.0 - prob_[s];
    if (prob_[l] < 1.0) {
      large_.pop_back();
      small_.push_back(l);
    }
  }
  // Leftovers are 1 up to rounding: always keep them.
  for (uint32_t i : small_) threshold_[i] = UINT32_MAX, alias_[i] = i;
  for (uint32_t i : large_) threshold_[i] = UINT32_MAX, alias_[i] = i;
}

double FeatureSeparation(int64_t num_classes) {
  return 0.3 + 0.3 * std::log(static_cast<double>(std::max<int64_t>(num_classes, 2)));
}

std::vector<float> ClassFeatures(int64_t n, int64_t f, int64_t num_classes, const int64_t* classes,
                                 uint64_t centroid_seed, uint64_t seed, uint64_t feature_stream,
                                 uint64_t index_base, int num_threads) {
  std::vector<double> centroids(num_classes * f + 1);
  Rng centroid_rng(centroid_seed);
  for (int64_t i = 0; i < num_classes * f; i += 2) {
    centroid_rng.Gaussian2(&centroids[i], &centroids[i + 1]);
  }
  // Two centroids are sqrt(2F) apart on average; noise along that direction
  // has std sigma, so sigma = sqrt(F / 2) / z gives pairwise error Phi(-z).
  const double sigma = std::sqrt(static_cast<double>(f) / 2.0) / FeatureSeparation(num_classes);
  const double scale = 1.0 / std::sqrt(1.0 + sigma * sigma);

  std::vector<float> features(n * f);
  constexpr int64_t kFeatureChunk = 1 << 12;  // nodes per stream
  ParallelChunks(NumChunks(n, kFeatureChunk), num_threads, [&](int64_t c) {
    Rng rng(StreamSeed(seed, feature_stream, index_base + static_cast<uint64_t>(c)));
    for (int64_t v = c * kFeatureChunk, end = std::min(n, v + kFeatureChunk); v < end; ++v) {
      const double* mu = &centroids[classes[v] * f];
      float* x = &features[v * f];
      for (int64_t j = 0; j < f; j += 2) {
        double a, b;
        rng.Gaussian2(&a, &b);
        x[j] = static_cast<float>((mu[j] + sigma * a) * scale);
        if (j + 1 < f) x[j + 1] = static_cast<float>((mu[j + 1] + sigma * b) * scale);
      }
    }
  });
  return features;
}

void RandomSplit(int64_t n, double train_fraction, double valid_fraction, uint64_t stream_seed,
                 std::vector<int64_t>* train, std::vector<int64_t>* valid,
                 std::vector<int64_t>* test) {
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  Rng rng(stream_seed);
  for (int64_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.Below64(i + 1)]);
  const int64_t train_end = std::min<int64_t>(n, std::llround(train_fraction * n));
  const int64_t valid_end = std::min<int64_t>(n, train_end + std::llround(valid_fraction * n));
  train->assign(perm.begin(), perm.begin() + train_end);
  valid->assign(perm.begin() + train_end, perm.begin() + valid_end);
  test->assign(perm.begin() + valid_end, perm.end());
  std::sort(train->begin(), train->end());
  std::sort(valid->begin(), valid->end());
  std::sort(test->begin(), test->end());
}

}  // namespace gnn
