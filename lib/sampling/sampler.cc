#include "sampling/sampler.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>

#ifdef __linux__
#include <sys/mman.h>
#endif

#include "common/error.h"
#include "common/memory.h"
#include "common/parallel.h"
#include "common/row_sums.h"
#include "sampling/edge_batch.h"
#include "sampling/row_sampling.h"

namespace gnn {
namespace {

using sampling_detail::FloydScratch;
using sampling_detail::Rng;
using sampling_detail::SampleCount;

constexpr uint64_t kGolden = kGoldenGamma;

// Global id -> local index map for ToBlock: open addressing with linear
// probing over 16-byte slots, Fibonacci hashing, load factor <= 1/2. Kept
// thread-local and reused across calls, so a worker allocates it once; it
// grows by rehashing the keys already listed in `src` (their local ids are
// their positions), so it never needs a second copy of the entries.
class IdMap {
 public:
  struct Slot {
    int64_t key;
    int64_t local;
  };

  void Reset(int64_t expected) {
    int shift_bits = 6;
    while ((int64_t{1} << shift_bits) < 2 * expected) ++shift_bits;
    Resize(shift_bits);
  }

  Slot* Find(int64_t key) {
    uint64_t h = Hash(key);
    while (slots_[h].key != key && slots_[h].key != kEmpty) h = (h + 1) & mask_;
    return &slots_[h];
  }

  void Prefetch(int64_t key) const { __builtin_prefetch(&slots_[Hash(key)]); }

  // key's local index; a key not listed yet gets `fresh` (the caller then
  // appends it to its sources and calls Added).
  int64_t FindOrInsert(int64_t key, int64_t fresh) {
    Slot* s = Find(key);
    if (s->key != kEmpty) return s->local;
    *s = {key, fresh};
    return fresh;
  }

  // Call after filling an empty slot; rehashes `src` (local i = src[i]) when
  // the table is half full.
  void Added(const std::vector<int64_t>& src) {
    if (++size_ * 2 <= static_cast<int64_t>(mask_ + 1)) return;
    Resize(bits_ + 1);
    for (size_t i = 0; i < src.size(); ++i) {
      Slot* s = Find(src[i]);
      *s = {src[i], static_cast<int64_t>(i)};
    }
    size_ = static_cast<int64_t>(src.size());
  }

  static constexpr int64_t kEmpty = -1;

 private:
  uint64_t Hash(int64_t key) const { return (static_cast<uint64_t>(key) * kGolden) >> shift_; }

  void Resize(int bits) {
    bits_ = bits;
    size_t cap = size_t{1} << bits;
    if (slots_.size() < cap) slots_.resize(cap);
    std::fill(slots_.begin(), slots_.begin() + cap, Slot{kEmpty, 0});
    mask_ = cap - 1;
    shift_ = 64 - bits;
    size_ = 0;
  }

  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  int bits_ = 0;
  int shift_ = 64;
  int64_t size_ = 0;
};

// The same map for ids below a bound: one 8-byte slot per id, tagged with
// the call's generation so that a new call never clears the table. Where
// the ids are few (a graph of 100,000 nodes: 800 KB against the hash
// table's 4 MB for a 400,000-edge block) a probe is one read from a table
// that stays in the caches, and no hashing.
class DenseIdMap {
 public:
  // Ids above this bound use IdMap: a table of 2^23 slots is 64 MiB per
  // sampling thread.
  static constexpr int64_t kMaxBound = int64_t{1} << 23;

  // Every id in [0, bound) unlisted.
  void Reset(int64_t bound) {
    if (static_cast<int64_t>(slots_.size()) < bound) slots_.resize(static_cast<size_t>(bound), 0);
    if (++gen_ == 0) {  // after 2^32 calls: old tags would read as current
      std::fill(slots_.begin(), slots_.end(), 0);
      gen_ = 1;
    }
  }

  void Prefetch(int64_t key) const { __builtin_prefetch(&slots_[static_cast<size_t>(key)]); }

  int64_t FindOrInsert(int64_t key, int64_t fresh) {
    uint64_t& s = slots_[static_cast<size_t>(key)];
    if ((s >> 32) == gen_) return static_cast<int64_t>(s & 0xffffffffu);
    s = (static_cast<uint64_t>(gen_) << 32) | static_cast<uint64_t>(fresh);
    return fresh;
  }

  void Added(const std::vector<int64_t>&) {}

 private:
  std::vector<uint64_t> slots_;  // 0: never listed (generations start at 1)
  uint32_t gen_ = 0;
};

// The block of dst_nodes and their sampled neighbours, with `map` reset
// for this call.
template <typename Map>
Block FillBlock(Map* map, const std::vector<int64_t>& dst_nodes, std::vector<int64_t> nbr_indptr,
                const std::vector<int64_t>& nbr_indices) {
  const int64_t num_dst = static_cast<int64_t>(dst_nodes.size());
  const int64_t num_edges = static_cast<int64_t>(nbr_indices.size());
  thread_local std::vector<int64_t> src;
  src.clear();
  src.reserve(num_dst + num_edges);
  for (int64_t v : dst_nodes) {
    if (v < 0) throw DataError("ToBlock: negative node id " + std::to_string(v));
    const int64_t fresh = static_cast<int64_t>(src.size());
    if (map->FindOrInsert(v, fresh) != fresh) {
      throw DataError("destination node " + std::to_string(v) + " appears more than once");
    }
    src.push_back(v);
    map->Added(src);
  }
  Block block;
  block.num_dst = num_dst;
  block.indices.resize(num_edges);
  const int64_t* nbr = nbr_indices.data();
  int64_t* local = block.indices.data();
  // Probes are random accesses into a table of a few MB: prefetching a few
  // edges ahead hides most of the miss latency.
  constexpr int64_t kAhead = 16;
  for (int64_t i = 0; i < num_edges; ++i) {
    if (i + kAhead < num_edges && nbr[i + kAhead] >= 0) map->Prefetch(nbr[i + kAhead]);
    const int64_t v = nbr[i];
    if (v < 0) throw DataError("ToBlock: negative node id " + std::to_string(v));
    const int64_t fresh = static_cast<int64_t>(src.size());
    local[i] = map->FindOrInsert(v, fresh);
    if (local[i] == fresh) {
      src.push_back(v);
      map->Added(src);
    }
  }
  block.src_nodes.assign(src.begin(), src.end());
  block.indptr = std::move(nbr_indptr);
  return block;
}

[[noreturn]] void ThrowNotOwned(const CscView& csc, int64_t v) {
  throw DataError("seed node " + std::to_string(v) + " is outside the graph's node range [" +
                  std::to_string(csc.node_start) + ", " +
                  std::to_string(csc.node_start + csc.num_nodes) + ")");
}

}  // namespace

// A fresh feature buffer is tens of MB that malloc maps untouched: filling
// it costs one page fault per 4 KiB, which on a products-size batch (84 MB)
// took longer than the gather itself. Huge pages cut the faults 512-fold.
void AdviseHugePages(void* data, size_t bytes) {
#ifdef __linux__
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

void SampleNeighbors(const CscView& csc, const int64_t* seeds, int64_t num_seeds, int fanout,
                     bool replace, uint64_t rng_seed, int threads, std::vector<int64_t>* out_indptr,
                     std::vector<int64_t>* out_indices, std::vector<int64_t>* out_edges) {
  if (num_seeds < 0) throw DataError("negative number of seeds");
  if (num_seeds > 0 && csc.num_nodes > 0 && (csc.indptr == nullptr || csc.indices == nullptr)) {
    throw DataError("neighbour sampling over a CSC without arrays");
  }
  out_indptr->resize(num_seeds + 1);
  int64_t* optr = out_indptr->data();
  optr[0] = 0;
  // Pass 1: validate seeds, count, and note each seed's row (where it
  // starts, its length, its random-stream key) in a sequential array, so
  // pass 2 writes into exact arrays and reads nothing at random but the
  // rows. Seeds are scattered over the graph: every indptr and key read is
  // a cache miss, so pass 1 prefetches them a few seeds ahead; in pass 2
  // a key read missed the cache in spite of its prefetch, behind the
  // prefetches of the rows' lines.
  struct RowAt {
    int64_t begin, deg;
    uint64_t key;
  };
  thread_local NoInitVector<RowAt> tl_rows;
  NoInitVector<RowAt>& rows = tl_rows;  // bound here: the lambdas run on other threads
  rows.resize(static_cast<size_t>(num_seeds));
  RowAt* at_row = rows.data();
  constexpr int64_t kAhead = 16;
  ParallelFor(num_seeds, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if (i + kAhead < e) {
        const int64_t ahead = seeds[i + kAhead] - csc.node_start;
        if (ahead >= 0 && ahead < csc.num_nodes) {
          __builtin_prefetch(csc.indptr + ahead);
          if (csc.rng_keys != nullptr) __builtin_prefetch(csc.rng_keys + ahead);
        }
      }
      const int64_t r = seeds[i] - csc.node_start;
      if (r < 0 || r >= csc.num_nodes) ThrowNotOwned(csc, seeds[i]);
      const int64_t begin = csc.indptr[r];
      const int64_t deg = csc.indptr[r + 1] - begin;
      // Keyed by the node's id in the input dataset when known, so every
      // partitioning of a graph samples the same neighbours for a seed.
      at_row[i] = {
          begin, deg,
          csc.rng_keys ? static_cast<uint64_t>(csc.rng_keys[r]) : static_cast<uint64_t>(seeds[i])};
      optr[i + 1] = SampleCount(deg, fanout, replace);
    }
  });
  for (int64_t i = 0; i < num_seeds; ++i) optr[i + 1] += optr[i];
  out_indices->resize(optr[num_seeds]);
  int64_t* out = out_indices->data();
  if (out_edges) out_edges->resize(optr[num_seeds]);
  int64_t* out_pos = out_edges ? out_edges->data() : nullptr;
  // Pass 2 in two stages a few seeds apart: a seed's positions are drawn
  // first (into its output slots) and the very lines they fall on
  // prefetched; kDraw seeds later its entries are read. A row of hundreds
  // of neighbours spans tens of lines, and a sample of 10 of them misses
  // the cache on nearly every entry otherwise.
  constexpr int64_t kDraw = 8;
  ParallelFor(num_seeds, threads, [&](int64_t b, int64_t e) {
    FloydScratch scratch(replace ? 0 : fanout);
    auto draw = [&](int64_t i) {
      const int64_t k = optr[i + 1] - optr[i];
      if (k == 0) return;
      const RowAt& a = at_row[i];
      const int64_t* row = csc.indices + a.begin;
      if (fanout < 0 || (!replace && k == a.deg)) {  // the whole row
        PrefetchBytes(row, static_cast<size_t>(a.deg) * sizeof(int64_t), 8);
        return;
      }
      int64_t* at = out + optr[i];
      Rng rng(MixSeed(rng_seed, a.key));
      if (replace) {
        for (int64_t q = 0; q < k; ++q) at[q] = rng.Below(a.deg);
      } else {
        sampling_detail::DrawPositions(a.deg, k, &rng, &scratch, at);
      }
      for (int64_t q = 0; q < k; ++q) __builtin_prefetch(row + at[q]);
    };
    auto gather = [&](int64_t i) {
      const int64_t k = optr[i + 1] - optr[i];
      if (k == 0) return;
      const RowAt& a = at_row[i];
      const int64_t* row = csc.indices + a.begin;
      int64_t* dst = out + optr[i];
      int64_t* pos = out_pos ? out_pos + optr[i] : nullptr;
      if (fanout < 0 || (!replace && k == a.deg)) {
        std::memcpy(dst, row, static_cast<size_t>(a.deg) * sizeof(int64_t));
        if (pos) {
          for (int64_t q = 0; q < a.deg; ++q) pos[q] = a.begin + q;
        }
        return;
      }
      for (int64_t q = 0; q < k; ++q) {
        const int64_t t = dst[q];
        if (pos) pos[q] = a.begin + t;
        dst[q] = row[t];
      }
    };
    for (int64_t i = b; i < e + kDraw; ++i) {
      if (i < e) draw(i);
      if (i - kDraw >= b) gather(i - kDraw);
    }
  });
}

void GatherEdgeRows(const CscView& csc, const std::vector<int64_t>& positions,
                    std::vector<float>* out) {
  const int64_t w = csc.edge_dim;
  if (w <= 0 || csc.edge_data == nullptr) {
    out->clear();
    return;
  }
  out->resize(positions.size() * static_cast<size_t>(w));
  float* o = out->data();
  for (size_t i = 0; i < positions.size(); ++i) {
    std::memcpy(o + i * static_cast<size_t>(w), csc.edge_data + positions[i] * w,
                static_cast<size_t>(w) * sizeof(float));
  }
}

void KeepEdgeRows(const std::vector<int64_t>& kept, int64_t dim, std::vector<float>* rows) {
  if (dim <= 0) return;
  const size_t w = static_cast<size_t>(dim);
  float* r = rows->data();
  // kept is increasing and kept[i] >= i: moving forward never overwrites a
  // row still to be read.
  for (size_t i = 0; i < kept.size(); ++i) {
    const size_t from = static_cast<size_t>(kept[i]);
    if (from != i) std::memmove(r + i * w, r + from * w, w * sizeof(float));
  }
  rows->resize(kept.size() * w);
}

Block ToBlock(const std::vector<int64_t>& dst_nodes, std::vector<int64_t> nbr_indptr,
              const std::vector<int64_t>& nbr_indices) {
  const int64_t num_dst = static_cast<int64_t>(dst_nodes.size());
  const int64_t num_edges = static_cast<int64_t>(nbr_indices.size());
  if (static_cast<int64_t>(nbr_indptr.size()) != num_dst + 1 || nbr_indptr[0] != 0 ||
      nbr_indptr.back() != num_edges) {
    throw DataError("ToBlock: neighbour CSR does not match " + std::to_string(num_dst) +
                    " destination nodes and " + std::to_string(num_edges) + " edges");
  }
  // Ids below a bound a few times the block's size: the dense map.
  // (Local indices are tagged in 32 bits.)
  int64_t lo = 0, hi = -1;
  for (const std::vector<int64_t>* ids : {&dst_nodes, &nbr_indices}) {
    for (int64_t v : *ids) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (lo >= 0 && hi < DenseIdMap::kMaxBound && hi < 8 * (num_dst + num_edges) + 4096 &&
      num_dst + num_edges < (int64_t{1} << 32)) {
    thread_local DenseIdMap dense;
    dense.Reset(hi + 1);
    return FillBlock(&dense, dst_nodes, std::move(nbr_indptr), nbr_indices);
  }
  thread_local IdMap map;
  // Guess at the unique count (sampled neighbourhoods overlap); the map
  // grows if the guess is low.
  map.Reset(num_dst + num_edges / 4);
  return FillBlock(&map, dst_nodes, std::move(nbr_indptr), nbr_indices);
}

void TransposeCsr(const int64_t* ptr, const int64_t* idx, int64_t rows, int64_t cols,
                  int64_t* t_ptr, int64_t* t_idx, int64_t* t_eid) {
  const int64_t edges = ptr[rows];
  std::fill(t_ptr, t_ptr + cols + 1, 0);
  for (int64_t e = 0; e < edges; ++e) {
    if (idx[e] < 0 || idx[e] >= cols) {
      throw DataError("TransposeCsr: column " + std::to_string(idx[e]) + " is outside [0, " +
                      std::to_string(cols) + ")");
    }
    ++t_ptr[idx[e] + 1];
  }
  for (int64_t c = 0; c < cols; ++c) t_ptr[c + 1] += t_ptr[c];
  // t_ptr[c] serves as column c's cursor, so afterwards it holds the end of
  // column c, i.e. the start of c + 1: shift back by one.
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t e = ptr[r]; e < ptr[r + 1]; ++e) {
      const int64_t k = t_ptr[idx[e]]++;
      t_idx[k] = r;
      if (t_eid != nullptr) t_eid[k] = e;
    }
  }
  for (int64_t c = cols; c > 0; --c) t_ptr[c] = t_ptr[c - 1];
  t_ptr[0] = 0;
}

void BuildTranspose(Block* block) {
  const int64_t num_dst = block->num_dst, num_edges = block->num_edges();
  if (static_cast<int64_t>(block->indptr.size()) != num_dst + 1 || block->indptr[0] != 0 ||
      block->indptr.back() != num_edges) {
    throw DataError("BuildTranspose: block CSR does not match its " + std::to_string(num_dst) +
                    " destinations and " + std::to_string(num_edges) + " edges");
  }
  block->t_indptr.resize(block->num_src() + 1);
  block->t_indices.resize(num_edges);
  block->t_eids.resize(num_edges);
  TransposeCsr(block->indptr.data(), block->indices.data(), num_dst, block->num_src(),
               block->t_indptr.data(), block->t_indices.data(), block->t_eids.data());
}

void AddSelfLoops(Block* block) {
  const int64_t num_dst = block->num_dst, num_edges = block->num_edges();
  if (block->self_loops) throw DataError("AddSelfLoops: the block already has self-loops");
  if (!block->t_indptr.empty()) throw DataError("AddSelfLoops: the block has a transpose");
  if (!block->etypes.empty()) throw DataError("AddSelfLoops: a typed block has no self-relation");
  if (static_cast<int64_t>(block->indptr.size()) != num_dst + 1 || block->indptr[0] != 0 ||
      block->indptr.back() != num_edges || block->num_src() < num_dst) {
    throw DataError("AddSelfLoops: block CSR does not match its " + std::to_string(num_dst) +
                    " destinations and " + std::to_string(num_edges) + " edges");
  }
  const int64_t w = block->edge_dim;
  if (static_cast<int64_t>(block->edge_data.size()) != num_edges * w) {
    throw DataError("AddSelfLoops: " + std::to_string(block->edge_data.size()) +
                    " edge data values for " + std::to_string(num_edges) + " edges of width " +
                    std::to_string(w));
  }
  std::vector<int64_t> indices(static_cast<size_t>(num_edges + num_dst));
  std::vector<float> edge_data(static_cast<size_t>((num_edges + num_dst) * w));
  const std::vector<int64_t>& ptr = block->indptr;
  for (int64_t i = 0; i < num_dst; ++i) {
    int64_t* row = indices.data() + ptr[i] + i;
    row[0] = i;
    std::copy(block->indices.data() + ptr[i], block->indices.data() + ptr[i + 1], row + 1);
    if (w > 0) {
      // The self-loop's data is 1.0 (dgl.add_self_loop's fill_data).
      float* e = edge_data.data() + (ptr[i] + i) * w;
      std::fill(e, e + w, 1.0f);
      std::copy(block->edge_data.data() + ptr[i] * w, block->edge_data.data() + ptr[i + 1] * w,
                e + w);
    }
  }
  if (w > 0) block->edge_data = std::move(edge_data);
  for (int64_t i = 0; i <= num_dst; ++i) block->indptr[i] += i;
  block->indices = std::move(indices);
  block->self_loops = true;
}

std::vector<Block> SampleBlocks(const CscView& csc, const std::vector<int64_t>& seeds,
                                const std::vector<int>& fanouts, bool replace, uint64_t rng_seed,
                                int threads, const EdgeExclusion* exclude) {
  const int num_layers = static_cast<int>(fanouts.size());
  for (int l = 0; l < num_layers; ++l) {
    if (fanouts[l] < -1) {
      throw ConfigError("fanout " + std::to_string(fanouts[l]) + " of layer " + std::to_string(l) +
                        " is invalid (>= 0, or -1 for all neighbours)");
    }
  }
  std::vector<Block> blocks(num_layers);
  const std::vector<int64_t>* frontier = &seeds;
  std::vector<int64_t> indptr, indices, edges, kept;
  const bool edge_data = csc.edge_dim > 0 && csc.edge_data != nullptr;
  for (int l = num_layers - 1; l >= 0; --l) {
    SampleNeighbors(csc, frontier->data(), static_cast<int64_t>(frontier->size()), fanouts[l],
                    replace, MixSeed(rng_seed, static_cast<uint64_t>(l)), threads, &indptr,
                    &indices, edge_data ? &edges : nullptr);
    if (exclude) {
      exclude->Filter(frontier->data(), static_cast<int64_t>(frontier->size()), &indptr, &indices,
                      edge_data ? &kept : nullptr);
      if (edge_data) {
        for (size_t i = 0; i < kept.size(); ++i) edges[i] = edges[static_cast<size_t>(kept[i])];
        edges.resize(kept.size());
      }
    }
    blocks[l] = ToBlock(*frontier, std::move(indptr), indices);
    if (edge_data) {
      blocks[l].edge_dim = csc.edge_dim;
      GatherEdgeRows(csc, edges, &blocks[l].edge_data);
    }
    indptr.clear();
    frontier = &blocks[l].src_nodes;
  }
  return blocks;
}

void GatherRowsTo(const float* rows, int64_t row_start, int64_t dim,
                  const std::vector<int64_t>& ids, float* out, int threads) {
  const int64_t n = static_cast<int64_t>(ids.size());
  if (n == 0 || dim == 0) return;
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  // Thread start-up costs tens of microseconds: not worth it for small copies.
  constexpr size_t kMinBytesPerThread = size_t{1} << 20;
  int t = ResolveThreads(threads);
  t = static_cast<int>(
      std::max<size_t>(1, std::min<size_t>(t, n * row_bytes / kMinBytesPerThread)));
  float* dst = out;
  const int64_t* id = ids.data();
  // Rows are scattered over a matrix much larger than the caches: a plain
  // loop waits for each row in turn. Prefetching the first lines of a row
  // 8 rows ahead keeps several misses in flight (2-4x a plain loop on a
  // products-size matrix); the hardware prefetcher streams the rest of a row.
  constexpr int64_t kAhead = 8;
  ParallelFor(n, t, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if (i + kAhead < e) PrefetchBytes(rows + (id[i + kAhead] - row_start) * dim, row_bytes);
      std::memcpy(dst + i * dim, rows + (id[i] - row_start) * dim, row_bytes);
    }
  });
}

namespace {

// out[i, :] = mean over destination i's edges of the rows of its sources
// (rows[(row_of ? row_of[s] : s) - row_start]); zero without edges.
void MeanRows(const float* rows, int64_t dim, const Block& block, const int64_t* row_of,
              int64_t row_start, float* out, int threads) {
  const int64_t n = block.num_dst;
  if (n == 0 || dim == 0) return;
  CsrSum<float> sum = PlainCsrSum(block.indptr.data(), block.indices.data(), rows, dim, dim, out);
  sum.row_of = row_of;
  sum.row_start = row_start;
  sum.mean = true;
  const int64_t row_bytes = dim * static_cast<int64_t>(sizeof(float));
  constexpr int64_t kMinBytesPerThread = int64_t{1} << 20;
  const int t = static_cast<int>(std::max<int64_t>(
      1, std::min<int64_t>(ResolveThreads(threads), sum.ptr[n] * row_bytes / kMinBytesPerThread)));
  ParallelFor(n, t, [&](int64_t b, int64_t e) { SumCsrRows(sum, b, e); });
}

}  // namespace

void MeanOfSources(const float* rows, int64_t row_start, int64_t dim, const Block& block,
                   float* out, int threads) {
  MeanRows(rows, dim, block, block.src_nodes.data(), row_start, out, threads);
}

void PackInputMeans(MiniBatch* mb, int threads) {
  // Sparse rows: the first layer projects them before it aggregates.
  if (mb->input_means || mb->sparse || mb->blocks.empty() || mb->feature_dim == 0) return;
  const Block& first = mb->blocks.front();
  const int64_t dim = mb->feature_dim, n = first.num_dst;
  if (static_cast<int64_t>(mb->features.size()) != first.num_src() * dim) {
    throw DataError("PackInputMeans: " + std::to_string(mb->features.size()) +
                    " feature values for " + std::to_string(first.num_src()) + " input rows of " +
                    std::to_string(dim));
  }
  NoInitVector<float> packed(static_cast<size_t>(2 * n * dim));  // all written below
  // Destinations come first among the sources: their rows are the first n.
  std::copy(mb->features.begin(), mb->features.begin() + n * dim, packed.begin());
  MeanRows(mb->features.data(), dim, first, nullptr, 0, packed.data() + n * dim, threads);
  mb->features.swap(packed);
  mb->input_means = true;
}

int ParseFanoutCount(const std::string& text, const std::string& spec, const std::string& flag) {
  try {
    size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size() && v >= -1) return v;
  } catch (const std::exception&) {
  }
  throw ConfigError(flag + " '" + spec + "': '" + text +
                    "' is not a fan-out (an integer >= -1; -1 takes every neighbour)");
}

std::vector<int> ParseFanouts(const std::string& spec, const std::string& flag) {
  std::vector<int> out;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(ParseFanoutCount(item, spec, flag));
  if (out.empty()) throw ConfigError(flag + " is empty");
  return out;
}

}  // namespace gnn
