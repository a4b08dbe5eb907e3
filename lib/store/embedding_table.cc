// Node embeddings and DGL's sparse optimizers (see the header for the
// formulas and the blob layout's fields).
#include "store/embedding_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "common/crc32c.h"
#include "common/error.h"
#include "common/parallel.h"
#include "common/random.h"

namespace gnn {
namespace {

// Blobs are little-endian and the arrays are copied as they lie in memory,
// which is that order only on a little-endian host (as everywhere else in
// the project: wire frames and .npy files are raw copies too).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "embedding blobs assume little-endian");

// Blob header, 32 bytes:
//   0  u32 magic "GEMB"     4  u16 version      6  u16 optimizer (0 adagrad, 1 adam)
//   8  i64 dim             16  i64 rows        24  u32 CRC-32C of bytes [32, end)
//  28  u32 zero
// then values [rows, dim] f32, state1 [rows, dim] f32 and, for Adam,
// state2 [rows, dim] f32 and steps [rows] i64.
constexpr uint32_t kBlobMagic = 0x424d4547;  // "GEMB" as little-endian bytes
constexpr uint16_t kBlobVersion = 1;
constexpr size_t kHeaderBytes = 32;

// DGL's defaults (dgl.distributed.optim SparseAdagrad / SparseAdam).
constexpr double kAdagradEps = 1e-10;
constexpr double kAdamEps = 1e-8;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

uint16_t OptimizerCode(SparseOptimizerKind k) { return k == SparseOptimizerKind::kAdam ? 1 : 0; }

// Bytes of one row in a blob: values and state1, plus state2 and a step
// for Adam.
int64_t BlobRowBytes(SparseOptimizerKind k, int64_t dim) {
  int64_t floats = k == SparseOptimizerKind::kAdam ? 3 * dim : 2 * dim;
  return floats * 4 + (k == SparseOptimizerKind::kAdam ? 8 : 0);
}

template <typename T>
void Put(std::string* out, size_t offset, T v) {
  std::memcpy(&(*out)[offset], &v, sizeof(T));
}

template <typename T>
T Get(const std::string& in, size_t offset) {
  T v;
  std::memcpy(&v, in.data() + offset, sizeof(T));
  return v;
}

std::string RowRange(int64_t num_rows) { return "[0, " + std::to_string(num_rows) + ")"; }

}  // namespace

SparseOptimizerKind ParseSparseOptimizer(const std::string& name) {
  if (name == "adagrad") return SparseOptimizerKind::kAdagrad;
  if (name == "adam") return SparseOptimizerKind::kAdam;
  throw ConfigError("unknown sparse optimizer '" + name + "' (expected adagrad or adam)");
}

const char* SparseOptimizerName(SparseOptimizerKind k) {
  return k == SparseOptimizerKind::kAdam ? "adam" : "adagrad";
}

void EmbeddingOptions::Validate() const {
  if (dim < 1) throw ConfigError("embedding dim must be >= 1, got " + std::to_string(dim));
  if (optimizer != SparseOptimizerKind::kAdagrad && optimizer != SparseOptimizerKind::kAdam) {
    throw ConfigError("embedding optimizer is not adagrad or adam");
  }
  // !(x > 0) also catches NaN.
  if (!(lr > 0) || !std::isfinite(lr)) {
    throw ConfigError("embedding lr must be finite and > 0, got " + Num(lr));
  }
  if (std::isnan(eps) || std::isinf(eps) || eps == 0) {
    throw ConfigError("embedding eps must be > 0 (or < 0 for the optimizer's default), got " +
                      Num(eps));
  }
  if (optimizer == SparseOptimizerKind::kAdam) {
    if (!(beta1 >= 0 && beta1 < 1)) {
      throw ConfigError("embedding beta1 must be in [0, 1), got " + Num(beta1));
    }
    if (!(beta2 >= 0 && beta2 < 1)) {
      throw ConfigError("embedding beta2 must be in [0, 1), got " + Num(beta2));
    }
  }
}

EmbeddingTable::EmbeddingTable(const EmbeddingOptions& options, const std::vector<uint64_t>& keys,
                               int threads)
    : options_(options), num_rows_(static_cast<int64_t>(keys.size())) {
  options_.Validate();
  const bool adam = options_.optimizer == SparseOptimizerKind::kAdam;
  eps_ = options_.eps >= 0 ? options_.eps : (adam ? kAdamEps : kAdagradEps);
  const int64_t dim = options_.dim;
  values_.resize(static_cast<size_t>(num_rows_ * dim));
  state1_.assign(values_.size(), 0.0f);
  if (adam) {
    state2_.assign(values_.size(), 0.0f);
    steps_.assign(static_cast<size_t>(num_rows_), 0);
  }
  const uint64_t seed = options_.seed;
  ParallelFor(num_rows_, threads, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      // One stream per row, keyed by the node's input id rather than its
      // row, so repartitioning never changes a node's starting point.
      uint64_t s = MixSeed(seed, keys[r]);
      float* row = values_.data() + r * dim;
      for (int64_t j = 0; j < dim; ++j) {
        uint64_t x = Mix64(s += kGoldenGamma);
        // 24 random bits scaled to [-1, 1): every value is a float exactly,
        // so no rounding mode or compiler can change it.
        row[j] = static_cast<float>(static_cast<int64_t>(x >> 40) - (int64_t{1} << 23)) *
                 (1.0f / static_cast<float>(int64_t{1} << 23));
      }
    }
  });
}

void EmbeddingTable::Pull(const std::vector<int64_t>& rows, std::vector<float>* out,
                          int threads) const {
  for (int64_t r : rows) {
    if (r < 0 || r >= num_rows_) {
      throw DataError("embedding pull: row " + std::to_string(r) + " is outside the table's rows " +
                      RowRange(num_rows_));
    }
  }
  const int64_t dim = options_.dim;
  out->resize(rows.size() * static_cast<size_t>(dim));
  ParallelFor(static_cast<int64_t>(rows.size()), threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      std::memcpy(out->data() + i * dim, values_.data() + rows[i] * dim, dim * sizeof(float));
    }
  });
}

void EmbeddingTable::Apply(const std::vector<int64_t>& rows, const std::vector<float>& grads,
                           int threads) {
  const int64_t dim = options_.dim;
  const int64_t n = static_cast<int64_t>(rows.size());
  if (grads.size() != rows.size() * static_cast<size_t>(dim)) {
    throw DataError("embedding update: " + std::to_string(grads.size()) + " gradient floats for " +
                    std::to_string(n) + " rows of dim " + std::to_string(dim) + " (expected " +
                    std::to_string(n * dim) + ")");
  }
  // Everything is checked before any row changes, so a refused update
  // leaves the table as it was.
  for (int64_t r : rows) {
    if (r < 0 || r >= num_rows_) {
      throw DataError("embedding update: row " + std::to_string(r) +
                      " is outside the table's rows " + RowRange(num_rows_));
    }
  }
  // The update is not linear in the gradient, so a repeated row would be
  // stepped twice; callers combine first (CombineSparseGrads), as DGL does.
  std::vector<int64_t> sorted(rows);
  std::sort(sorted.begin(), sorted.end());
  auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end()) {
    throw DataError("embedding update: row " + std::to_string(*dup) +
                    " appears more than once (combine its gradients first)");
  }
  // Slices are contiguous and ParallelFor rethrows the lowest slice's
  // error, so the message names the first bad value whatever `threads` is.
  ParallelFor(n, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b * dim; i < e * dim; ++i) {
      if (!std::isfinite(grads[i])) {
        throw DataError("embedding update: gradient of row " + std::to_string(rows[i / dim]) +
                        " (element " + std::to_string(i % dim) + ") is " +
                        Num(static_cast<double>(grads[i])));
      }
    }
  });

  const double lr = options_.lr, eps = eps_;
  if (options_.optimizer == SparseOptimizerKind::kAdagrad) {
    ParallelFor(n, threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const float* g = grads.data() + i * dim;
        float* value = values_.data() + rows[i] * dim;
        float* sum = state1_.data() + rows[i] * dim;
        for (int64_t j = 0; j < dim; ++j) {
          const double gj = g[j];
          const double s = static_cast<double>(sum[j]) + gj * gj;
          sum[j] = static_cast<float>(s);
          value[j] = static_cast<float>(value[j] - lr * gj / (std::sqrt(s) + eps));
        }
      }
    });
    return;
  }
  const double b1 = options_.beta1, b2 = options_.beta2;
  ParallelFor(n, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t r = rows[i];
      // Each row counts its own steps (DGL's state_step), so the bias
      // correction of a rarely seen node stays that of an early step.
      const int64_t t = ++steps_[r];
      const double c1 = 1.0 - std::pow(b1, static_cast<double>(t));
      const double c2 = 1.0 - std::pow(b2, static_cast<double>(t));
      const float* g = grads.data() + i * dim;
      float* value = values_.data() + r * dim;
      float* m = state1_.data() + r * dim;
      float* v = state2_.data() + r * dim;
      for (int64_t j = 0; j < dim; ++j) {
        const double gj = g[j];
        const double mj = b1 * m[j] + (1.0 - b1) * gj;
        const double vj = b2 * v[j] + (1.0 - b2) * gj * gj;
        m[j] = static_cast<float>(mj);
        v[j] = static_cast<float>(vj);
        value[j] = static_cast<float>(value[j] - lr * (mj / c1) / (std::sqrt(vj / c2) + eps));
      }
    }
  });
}

std::string EmbeddingTable::Save(int64_t begin, int64_t end) const {
  if (begin < 0 || begin > end || end > num_rows_) {
    throw DataError("embedding save: rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                    ") are not within the table's rows " + RowRange(num_rows_));
  }
  const SparseOptimizerKind kind = options_.optimizer;
  const int64_t dim = options_.dim, rows = end - begin;
  std::string out(kHeaderBytes + static_cast<size_t>(rows * BlobRowBytes(kind, dim)), '\0');
  size_t at = kHeaderBytes;
  auto append = [&](const void* src, size_t bytes) {
    if (bytes > 0) std::memcpy(&out[at], src, bytes);
    at += bytes;
  };
  const size_t floats = static_cast<size_t>(rows * dim) * sizeof(float);
  append(values_.data() + begin * dim, floats);
  append(state1_.data() + begin * dim, floats);
  if (kind == SparseOptimizerKind::kAdam) {
    append(state2_.data() + begin * dim, floats);
    append(steps_.data() + begin, static_cast<size_t>(rows) * sizeof(int64_t));
  }
  Put<uint32_t>(&out, 0, kBlobMagic);
  Put<uint16_t>(&out, 4, kBlobVersion);
  Put<uint16_t>(&out, 6, OptimizerCode(kind));
  Put<int64_t>(&out, 8, dim);
  Put<int64_t>(&out, 16, rows);
  Put<uint32_t>(&out, 24, Crc32c(out.data() + kHeaderBytes, out.size() - kHeaderBytes));
  Put<uint32_t>(&out, 28, 0);
  return out;
}

void EmbeddingTable::SetValues(int64_t begin, const float* values, int64_t n) {
  if (begin < 0 || n < 0 || begin > num_rows_ || n > num_rows_ - begin) {
    throw DataError("embedding rows " + std::to_string(n) + " from row " + std::to_string(begin) +
                    " do not fit in the table's rows " + RowRange(num_rows_));
  }
  const size_t at = static_cast<size_t>(begin * options_.dim);
  const size_t count = static_cast<size_t>(n * options_.dim);
  std::copy(values, values + count, values_.begin() + at);
  std::fill(state1_.begin() + at, state1_.begin() + at + count, 0.0f);
  if (!state2_.empty()) std::fill(state2_.begin() + at, state2_.begin() + at + count, 0.0f);
  if (!steps_.empty()) std::fill(steps_.begin() + begin, steps_.begin() + begin + n, 0);
}

void EmbeddingTable::Restore(const std::string& bytes, int64_t begin, const std::string& source) {
  const std::string what = "embedding blob from " + source + ": ";
  if (bytes.size() < kHeaderBytes) {
    throw DataError(what + "truncated (" + std::to_string(bytes.size()) +
                    " bytes, shorter than its " + std::to_string(kHeaderBytes) + "-byte header)");
  }
  if (Get<uint32_t>(bytes, 0) != kBlobMagic) throw DataError(what + "not an embedding blob");
  const uint16_t version = Get<uint16_t>(bytes, 4);
  if (version != kBlobVersion) {
    throw DataError(what + "format version " + std::to_string(version) + ", expected " +
                    std::to_string(kBlobVersion));
  }
  const SparseOptimizerKind kind = options_.optimizer;
  const uint16_t code = Get<uint16_t>(bytes, 6);
  if (code != OptimizerCode(kind)) {
    throw DataError(what + "holds " +
                    (code == 1   ? std::string("adam")
                     : code == 0 ? std::string("adagrad")
                                 : "unknown (" + std::to_string(code) + ")") +
                    " optimizer state, this table uses " + SparseOptimizerName(kind));
  }
  const int64_t dim = options_.dim;
  const int64_t blob_dim = Get<int64_t>(bytes, 8), rows = Get<int64_t>(bytes, 16);
  if (blob_dim != dim) {
    throw DataError(what + "rows of dim " + std::to_string(blob_dim) + ", this table's are " +
                    std::to_string(dim));
  }
  // Sizes are compared by division first: a hostile row count must not
  // overflow the product.
  const int64_t row_bytes = BlobRowBytes(kind, dim);
  const int64_t payload = static_cast<int64_t>(bytes.size() - kHeaderBytes);
  if (rows < 0 || rows > payload / row_bytes || rows * row_bytes != payload) {
    throw DataError(what + std::to_string(bytes.size()) + " bytes do not hold the " +
                    std::to_string(rows) + " rows its header names (truncated or corrupt)");
  }
  if (begin < 0 || begin > num_rows_ || rows > num_rows_ - begin) {
    throw DataError(what + std::to_string(rows) + " rows do not fit from row " +
                    std::to_string(begin) + " in the table's rows " + RowRange(num_rows_));
  }
  if (Crc32c(bytes.data() + kHeaderBytes, bytes.size() - kHeaderBytes) !=
      Get<uint32_t>(bytes, 24)) {
    throw DataError(what + "checksum mismatch (corrupt)");
  }
  // The checksum proves the bytes arrived intact, not that a writer put
  // sane values in; an Adagrad sum or Adam's v below zero would make
  // sqrt() NaN on the next step, so every array is checked before any row
  // is overwritten.
  const size_t count = static_cast<size_t>(rows * dim);
  std::vector<float> values(count), state1(count), state2;
  std::vector<int64_t> steps;
  size_t at = kHeaderBytes;
  auto take = [&](void* dst, size_t n) {
    if (n > 0) std::memcpy(dst, bytes.data() + at, n);
    at += n;
  };
  take(values.data(), count * sizeof(float));
  take(state1.data(), count * sizeof(float));
  if (kind == SparseOptimizerKind::kAdam) {
    state2.resize(count);
    steps.resize(static_cast<size_t>(rows));
    take(state2.data(), count * sizeof(float));
    take(steps.data(), steps.size() * sizeof(int64_t));
  }
  auto check = [&](const std::vector<float>& a, const char* name, bool non_negative) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (!std::isfinite(a[i]) || (non_negative && a[i] < 0)) {
        throw DataError(what + name + " of row " + std::to_string(begin + int64_t(i) / dim) +
                        " is " + Num(a[i]));
      }
    }
  };
  check(values, "value", false);
  const bool adam = kind == SparseOptimizerKind::kAdam;
  check(state1, adam ? "Adam's first moment" : "Adagrad's sum of squares", !adam);
  if (adam) {
    check(state2, "Adam's second moment", true);
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i] < 0) {
        throw DataError(what + "Adam's step count of row " + std::to_string(begin + int64_t(i)) +
                        " is " + std::to_string(steps[i]));
      }
    }
  }
  std::copy(values.begin(), values.end(), values_.begin() + begin * dim);
  std::copy(state1.begin(), state1.end(), state1_.begin() + begin * dim);
  if (adam) {
    std::copy(state2.begin(), state2.end(), state2_.begin() + begin * dim);
    std::copy(steps.begin(), steps.end(), steps_.begin() + begin);
  }
}

void CombineSparseGrads(const std::vector<const std::vector<int64_t>*>& ids,
                        const std::vector<const std::vector<float>*>& grads, int64_t dim,
                        std::vector<int64_t>* out_ids, std::vector<float>* out_grads) {
  if (dim < 1) throw DataError("combining gradients: dim must be >= 1, got " + std::to_string(dim));
  if (ids.size() != grads.size()) {
    throw DataError("combining gradients: " + std::to_string(ids.size()) + " id arrays but " +
                    std::to_string(grads.size()) + " gradient arrays");
  }
  std::vector<const float*> row_ptr;               // the gradient row of each concatenated id
  std::vector<std::pair<int64_t, int64_t>> order;  // (id, position in the concatenation)
  for (size_t k = 0; k < ids.size(); ++k) {
    if (ids[k] == nullptr || grads[k] == nullptr) {
      throw DataError("combining gradients: array " + std::to_string(k) + " is missing");
    }
    if (grads[k]->size() != ids[k]->size() * static_cast<size_t>(dim)) {
      throw DataError("combining gradients: array " + std::to_string(k) + " has " +
                      std::to_string(ids[k]->size()) + " ids but " +
                      std::to_string(grads[k]->size()) + " gradient floats (dim " +
                      std::to_string(dim) + ")");
    }
    for (size_t i = 0; i < ids[k]->size(); ++i) {
      order.emplace_back((*ids[k])[i], static_cast<int64_t>(row_ptr.size()));
      row_ptr.push_back(grads[k]->data() + i * dim);
    }
  }
  // Sorting by (id, position) groups each id with its rows in input order,
  // so the sums below add in the same order on every run.
  std::sort(order.begin(), order.end());
  std::vector<int64_t> uniq;
  std::vector<float> combined;
  std::vector<double> acc(static_cast<size_t>(dim));
  for (size_t a = 0; a < order.size();) {
    size_t z = a;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (; z < order.size() && order[z].first == order[a].first; ++z) {
      const float* g = row_ptr[order[z].second];
      for (int64_t j = 0; j < dim; ++j) acc[j] += g[j];
    }
    const double count = static_cast<double>(z - a);
    uniq.push_back(order[a].first);
    for (int64_t j = 0; j < dim; ++j) combined.push_back(static_cast<float>(acc[j] / count));
    a = z;
  }
  // Built aside and swapped in, so an output may alias an input.
  out_ids->swap(uniq);
  out_grads->swap(combined);
}

}  // namespace gnn
