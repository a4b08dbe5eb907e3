#include "sampling/edge_batch.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>

#include "common/error.h"

namespace gnn {

EdgeExclusion::EdgeExclusion(const std::vector<int64_t>& flat) {
  if (flat.size() % 2 != 0) {
    throw DataError("excluded edges: odd number of ids (" + std::to_string(flat.size()) + ")");
  }
  // Both directions of every pair, grouped by their first node.
  std::vector<std::pair<int64_t, int64_t>> both;
  both.reserve(flat.size());
  for (size_t i = 0; i < flat.size(); i += 2) {
    both.emplace_back(flat[i], flat[i + 1]);
    both.emplace_back(flat[i + 1], flat[i]);
  }
  std::sort(both.begin(), both.end());
  both.erase(std::unique(both.begin(), both.end()), both.end());
  partner_ptr_.push_back(0);
  for (size_t k = 0; k < both.size(); ++k) {
    if (k == 0 || both[k].first != both[k - 1].first) {
      if (k > 0) partner_ptr_.push_back(static_cast<int64_t>(k));
      endpoints_.push_back(both[k].first);
    }
    partners_.push_back(both[k].second);
  }
  if (!both.empty()) partner_ptr_.push_back(static_cast<int64_t>(both.size()));
  if (endpoints_.empty()) return;
  int log2 = 12;  // at least 4096 bits
  while (log2 < 24 && (size_t{1} << log2) < endpoints_.size() * 32) ++log2;
  shift_ = 64 - log2;
  bits_.assign((size_t{1} << log2) / 64, 0);
  for (int64_t v : endpoints_) {
    const size_t h = Hash(v);
    bits_[h >> 6] |= uint64_t{1} << (h & 63);
  }
}

std::pair<const int64_t*, const int64_t*> EdgeExclusion::PartnersOf(int64_t v) const {
  if (bits_.empty()) return {nullptr, nullptr};
  const size_t h = Hash(v);
  if ((bits_[h >> 6] >> (h & 63) & 1) == 0) return {nullptr, nullptr};
  const auto it = std::lower_bound(endpoints_.begin(), endpoints_.end(), v);
  if (it == endpoints_.end() || *it != v) return {nullptr, nullptr};
  const size_t j = static_cast<size_t>(it - endpoints_.begin());
  return {partners_.data() + partner_ptr_[j], partners_.data() + partner_ptr_[j + 1]};
}

bool EdgeExclusion::Contains(int64_t u, int64_t v) const {
  const auto [first, last] = PartnersOf(u);
  return first != last && std::binary_search(first, last, v);
}

void EdgeExclusion::PairsOf(const int64_t* ids, size_t n, std::vector<int64_t>* flat) const {
  for (size_t i = 0; i < n; ++i) {
    const auto [first, last] = PartnersOf(ids[i]);
    for (const int64_t* p = first; p != last; ++p) {
      flat->push_back(ids[i]);
      flat->push_back(*p);
    }
  }
}

void EdgeExclusion::Filter(const int64_t* dst, int64_t num_dst, std::vector<int64_t>* indptr,
                           std::vector<int64_t>* indices, std::vector<int64_t>* kept) const {
  if (kept) {
    kept->resize(indices->size());
    for (size_t k = 0; k < kept->size(); ++k) (*kept)[k] = static_cast<int64_t>(k);
  }
  if (endpoints_.empty()) return;
  int64_t* ptr = indptr->data();
  int64_t* idx = indices->data();
  int64_t out = 0, begin = ptr[0];
  int64_t* kept_at = kept ? kept->data() : nullptr;
  for (int64_t i = 0; i < num_dst; ++i) {
    const int64_t end = ptr[i + 1];
    // Most destinations touch no batch edge (one search skips them, and
    // their row moves whole, or stays where it is until the first drop);
    // the others have a partner or two to drop.
    const auto [first, last] = PartnersOf(dst[i]);
    if (first == last) {
      if (out != begin) {
        const size_t len = static_cast<size_t>(end - begin);
        std::memmove(idx + out, idx + begin, len * sizeof(int64_t));
        if (kept_at) std::memmove(kept_at + out, kept_at + begin, len * sizeof(int64_t));
      }
      out += end - begin;
    } else {
      const bool few = last - first <= 8;
      for (int64_t k = begin; k < end; ++k) {
        if (few ? std::find(first, last, idx[k]) != last
                : std::binary_search(first, last, idx[k])) {
          continue;
        }
        if (kept_at) kept_at[out] = kept_at[k];
        idx[out++] = idx[k];
      }
    }
    begin = end;
    ptr[i + 1] = out;
  }
  indices->resize(out);
  if (kept) kept->resize(static_cast<size_t>(out));
}

EdgeBatchPlan PlanEdgeBatch(const std::vector<int64_t>& heads, const std::vector<int64_t>& tails,
                            int num_negs, int64_t neg_lo, int64_t neg_hi, uint64_t rng_seed) {
  if (heads.size() != tails.size()) {
    throw DataError("edge batch: " + std::to_string(heads.size()) + " heads but " +
                    std::to_string(tails.size()) + " tails");
  }
  if (num_negs < 0) throw ConfigError("--num_negs must be >= 0, got " + std::to_string(num_negs));
  if (num_negs > 0 && !heads.empty() && neg_hi <= neg_lo) {
    throw ConfigError("negative sampling needs a non-empty node range");
  }
  EdgeBatchPlan p;
  const size_t n = heads.size();
  SeedNumbering numbering(&p.seeds, n * (2 + num_negs));
  auto local = [&](int64_t v) { return numbering.Add(v); };
  p.pos_head.resize(n);
  p.pos_tail.resize(n);
  p.exclude.resize(2 * n);
  for (size_t i = 0; i < n; ++i) {
    p.pos_head[i] = local(heads[i]);
    p.pos_tail[i] = local(tails[i]);
    p.exclude[2 * i] = heads[i];
    p.exclude[2 * i + 1] = tails[i];
  }
  const uint64_t range = static_cast<uint64_t>(neg_hi - neg_lo);
  p.neg_head.resize(n * num_negs);
  p.neg_tail.resize(n * num_negs);
  for (size_t i = 0; i < n; ++i) {
    for (int j = 0; j < num_negs; ++j) {
      const size_t k = i * num_negs + j;
      const uint64_t r = MixSeed(rng_seed, k);
      const int64_t v =
          neg_lo + static_cast<int64_t>((static_cast<unsigned __int128>(r) * range) >> 64);
      p.neg_head[k] = p.pos_head[i];
      p.neg_tail[k] = local(v);
    }
  }
  return p;
}

void EdgeEndpoints(const CscView& csc, const std::vector<int64_t>& offsets,
                   std::vector<int64_t>* heads, std::vector<int64_t>* tails) {
  const int64_t num_edges = csc.num_nodes > 0 ? csc.indptr[csc.num_nodes] : 0;
  heads->resize(offsets.size());
  tails->resize(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    const int64_t e = offsets[i];
    if (e < 0 || e >= num_edges) {
      throw DataError("edge " + std::to_string(e) + " is outside the partition's " +
                      std::to_string(num_edges) + " in-edges");
    }
    // The row whose range holds e: last indptr entry <= e.
    const int64_t row =
        std::upper_bound(csc.indptr, csc.indptr + csc.num_nodes + 1, e) - csc.indptr - 1;
    (*heads)[i] = csc.indices[e];
    (*tails)[i] = csc.node_start + row;
  }
}

}  // namespace gnn
