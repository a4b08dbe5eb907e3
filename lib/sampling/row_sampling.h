// How one row of a CSC is sampled (shared by the homogeneous and the typed
// samplers): the per-node random stream, Floyd's sampling without
// replacement and the count a row yields. Internal to lib/sampling.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/random.h"

namespace gnn::sampling_detail {

// splitmix64 stream. Seeded per seed node from MixSeed(rng_seed, node), so a
// node's draw never depends on which thread or slice handled it. std::
// distributions are avoided: their output is implementation-defined.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return Mix64(state_ += kGoldenGamma); }
  // Uniform in [0, n), n > 0 (Lemire's multiply-shift; bias < n / 2^64).
  int64_t Below(int64_t n) {
    return static_cast<int64_t>(
        (static_cast<unsigned __int128>(Next()) * static_cast<uint64_t>(n)) >> 64);
  }

 private:
  uint64_t state_;
};

// Floyd's algorithm keeps its chosen positions in a linear list up to this
// fanout (a scan of <= 32 int64 is cheaper than hashing); above it, in an
// open-addressing set.
constexpr int kLinearFloydMax = 32;

// Scratch for one thread's slice of SampleNeighbors: allocated once per
// slice, never per seed.
struct FloydScratch {
  std::vector<int64_t> set;  // open addressing, -1 = empty; size is a power of 2
  uint64_t mask = 0;
  explicit FloydScratch(int fanout) {
    if (fanout > kLinearFloydMax) {
      uint64_t cap = 64;
      while (cap < 2 * static_cast<uint64_t>(fanout)) cap <<= 1;
      set.assign(cap, -1);
      mask = cap - 1;
    }
  }
  // Inserts p; false if already present.
  bool Insert(int64_t p) {
    uint64_t h = (static_cast<uint64_t>(p) * kGoldenGamma) & mask;
    while (set[h] != -1) {
      if (set[h] == p) return false;
      h = (h + 1) & mask;
    }
    set[h] = p;
    return true;
  }
};

// Number of neighbours seed with in-degree `deg` gets (see header).
inline int64_t SampleCount(int64_t deg, int fanout, bool replace) {
  if (fanout < 0) return deg;
  if (replace) return deg == 0 ? 0 : fanout;
  return std::min<int64_t>(deg, fanout);
}

// Writes `k` < deg distinct uniformly chosen positions of a row of `deg`
// entries to pos_out (Floyd: k draws whatever deg is, so hub nodes cost the
// same as others). Positions only: a caller that draws ahead can prefetch
// the very lines it will read.
inline void DrawPositions(int64_t deg, int64_t k, Rng* rng, FloydScratch* scratch,
                          int64_t* pos_out) {
  int64_t m = 0;
  if (deg <= 64) {
    // Rows of at most 64 entries (most rows of most graphs): the chosen
    // positions are bits of one word, so the duplicate check is one test and
    // a conditional move, not a scan whose exit the branch predictor misses.
    // The same draws and the same positions as the scan below.
    uint64_t taken = 0;
    for (int64_t j = deg - k; j < deg; ++j) {
      int64_t t = rng->Below(j + 1);
      t = (taken >> t) & 1 ? j : t;
      taken |= uint64_t{1} << t;
      pos_out[m++] = t;
    }
    return;
  }
  if (k <= kLinearFloydMax) {
    // The duplicate check scans the positions drawn so far (not ids: a
    // multigraph row may repeat an id).
    for (int64_t j = deg - k; j < deg; ++j) {
      int64_t t = rng->Below(j + 1);
      for (int64_t q = 0; q < m; ++q) {
        if (pos_out[q] == t) {
          t = j;
          break;
        }
      }
      pos_out[m++] = t;
    }
    return;
  }
  std::fill(scratch->set.begin(), scratch->set.end(), -1);
  for (int64_t j = deg - k; j < deg; ++j) {
    int64_t t = rng->Below(j + 1);
    if (!scratch->Insert(t)) {
      t = j;
      scratch->Insert(t);
    }
    pos_out[m++] = t;
  }
}

// DrawPositions, then the entries: out[q] = row[position q], and the
// positions themselves to `pos_out` when given.
inline void SampleWithoutReplacement(const int64_t* row, int64_t deg, int64_t k, Rng* rng,
                                     FloydScratch* scratch, int64_t* out,
                                     int64_t* pos_out = nullptr) {
  DrawPositions(deg, k, rng, scratch, out);
  for (int64_t q = 0; q < k; ++q) {
    const int64_t t = out[q];
    if (pos_out) pos_out[q] = t;
    out[q] = row[t];
  }
}

}  // namespace gnn::sampling_detail
