// Learnable node embeddings held by a server (DGL's DistEmbedding) and the
// sparse optimizers that update them (DGL's dgl.distributed.optim
// SparseAdagrad and SparseAdam), in plain C++: trainers pull rows, compute
// gradients, and push them back; each push is one optimizer step for the
// rows it names. Only the rows a mini-batch touched move, and each row keeps
// its own optimizer state, so a table can be split across servers by rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gnn {

enum class SparseOptimizerKind { kAdagrad, kAdam };

// "adagrad" | "adam"; ConfigError naming the value otherwise.
SparseOptimizerKind ParseSparseOptimizer(const std::string& name);
// The name ParseSparseOptimizer accepts for `k`.
const char* SparseOptimizerName(SparseOptimizerKind k);

struct EmbeddingOptions {
  int64_t dim = 0;  // floats per row, >= 1
  SparseOptimizerKind optimizer = SparseOptimizerKind::kAdagrad;
  double lr = 0.01;  // > 0
  // Added to the denominator. < 0: DGL's default for the optimizer (1e-10
  // Adagrad, 1e-8 Adam). 0 is refused: a zero gradient on a fresh row would
  // divide 0 by 0.
  double eps = -1;
  double beta1 = 0.9, beta2 = 0.999;  // Adam only; each in [0, 1)
  uint64_t seed = 0;                  // of the initial values
  // ConfigError naming the bad field.
  void Validate() const;
};

// One table of rows [0, num_rows) with their optimizer state.
//
// Initial values: row i, element j is the j-th draw of a splitmix64 stream
// (state s = MixSeed(options.seed, keys[i]); draw x = Mix64(s += kGoldenGamma),
// see common/random.h) mapped to ((x >> 40) - 2^23) / 2^23, uniform in
// [-1, 1) like DGL's DistEmbedding example. keys are the nodes' ids in the
// input dataset, so a node starts with the same row whichever partition,
// process or position holds it.
//
// Optimizers (DGL's dgl.distributed.optim, per row r with gradient g; DGL
// keeps every state array elementwise, [num_rows, dim], except Adam's step):
//   Adagrad: s[r,j] += g_j^2;  emb[r,j] -= lr * g_j / (sqrt(s[r,j]) + eps)
//   Adam:    t[r] += 1;  m[r,j] = b1*m + (1-b1)*g_j;  v[r,j] = b2*v + (1-b2)*g_j^2
//            emb[r,j] -= lr * (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps)
// (One sum per row, the mean of g_j^2, was DGL's older
// dgl.distributed.SparseAdagrad, replaced in 2021.) Arithmetic is in
// double; values and state are stored as float (t as int64). State starts
// at zero.
//
// Thread safety: rows are independent. Pull and Save may run concurrently
// with each other on any rows; Apply and Restore may run concurrently with
// any call that touches DISJOINT rows. Calls on overlapping rows where one
// of them writes (Apply, Restore) must be serialised by the caller.
class EmbeddingTable {
 public:
  // num_rows = keys.size(). ConfigError from options.Validate(). Uses
  // `threads` threads (<= 0: all cores) to fill the initial values.
  EmbeddingTable(const EmbeddingOptions& options, const std::vector<uint64_t>& keys,
                 int threads = 1);

  int64_t num_rows() const { return num_rows_; }
  int64_t dim() const { return options_.dim; }
  const EmbeddingOptions& options() const { return options_; }

  // out[i*dim, (i+1)*dim) = row rows[i]; `out` is resized to rows.size()*dim.
  // DataError on a row outside [0, num_rows) (before anything is written).
  // Blocking; uses `threads` threads (<= 0: all cores).
  void Pull(const std::vector<int64_t>& rows, std::vector<float>* out, int threads) const;

  // One optimizer step for `rows` with `grads` (row-major [rows.size(), dim],
  // already combined across trainers: see CombineSparseGrads). DataError,
  // with nothing changed, when a row repeats or is outside [0, num_rows),
  // when grads.size() != rows.size()*dim, or on a non-finite gradient.
  // Rows not listed are untouched (their state too). Blocking; uses
  // `threads` threads (<= 0: all cores); the result does not depend on it.
  void Apply(const std::vector<int64_t>& rows, const std::vector<float>& grads, int threads);

  // Rows [begin, end) with their optimizer state as bytes: a little-endian
  // header (magic, version, optimizer, dim, row count, CRC-32C of the rest)
  // then the arrays. DataError unless 0 <= begin <= end <= num_rows.
  std::string Save(int64_t begin, int64_t end) const;

  // Overwrites rows [begin, begin + n) with a Save blob of n rows (from
  // this table or another with the same dim and optimizer). DataError
  // naming `source` (a file or peer) and nothing changed when the blob is
  // malformed, truncated, corrupt, of another dim or optimizer, or does
  // not fit from `begin`.
  void Restore(const std::string& bytes, int64_t begin, const std::string& source);

  // Rows [begin, begin + n) take `values` (row-major [n, dim]) with fresh
  // optimizer state (zero): a saved model's learned rows put in place for
  // inference. DataError, nothing changed, unless they fit.
  void SetValues(int64_t begin, const float* values, int64_t n);

 private:
  EmbeddingOptions options_;
  double eps_;  // options_.eps resolved
  int64_t num_rows_;
  std::vector<float> values_;  // [num_rows, dim]
  // Adagrad: the sum of squared gradients. Adam: m (first moment).
  std::vector<float> state1_;   // [num_rows, dim]
  std::vector<float> state2_;   // Adam: v (second moment), [num_rows, dim]
  std::vector<int64_t> steps_;  // Adam: t, [num_rows]
};

// DGL's combination of the gradients several trainers computed for one
// step: concatenate the (ids[k], grads[k]) pairs in order, then per unique
// id the sum of its gradient rows divided by the number of times it
// occurs. out_ids are sorted ascending, out_grads row-major
// [out_ids.size(), dim]. Sums run in double in input order, so the result
// is deterministic. Null entries are refused. DataError when ids.size() !=
// grads.size(), grads[k]->size() != ids[k]->size()*dim or dim < 1.
// Single-threaded.
void CombineSparseGrads(const std::vector<const std::vector<int64_t>*>& ids,
                        const std::vector<const std::vector<float>*>& grads, int64_t dim,
                        std::vector<int64_t>* out_ids, std::vector<float>* out_grads);

}  // namespace gnn
