#include "sampling/edge_batch.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "common/error.h"

namespace gnn {

EdgeExclusion::EdgeExclusion(const std::vector<int64_t>& flat) {
  if (flat.size() % 2 != 0) {
    throw DataError("excluded edges: odd number of ids (" + std::to_string(flat.size()) + ")");
  }
  keys_.reserve(flat.size() / 2);
  for (size_t i = 0; i < flat.size(); i += 2) {
    keys_.emplace_back(std::min(flat[i], flat[i + 1]), std::max(flat[i], flat[i + 1]));
  }
  std::sort(keys_.begin(), keys_.end());
  keys_.erase(std::unique(keys_.begin(), keys_.end()), keys_.end());
  endpoints_ = flat;
  std::sort(endpoints_.begin(), endpoints_.end());
  endpoints_.erase(std::unique(endpoints_.begin(), endpoints_.end()), endpoints_.end());
}

bool EdgeExclusion::Contains(int64_t u, int64_t v) const {
  return std::binary_search(keys_.begin(), keys_.end(),
                            std::make_pair(std::min(u, v), std::max(u, v)));
}

void EdgeExclusion::Filter(const int64_t* dst, int64_t num_dst, std::vector<int64_t>* indptr,
                           std::vector<int64_t>* indices, std::vector<int64_t>* kept) const {
  if (kept) {
    kept->resize(indices->size());
    for (size_t k = 0; k < kept->size(); ++k) (*kept)[k] = static_cast<int64_t>(k);
  }
  if (keys_.empty()) return;
  int64_t* ptr = indptr->data();
  int64_t* idx = indices->data();
  int64_t out = 0, begin = ptr[0];
  for (int64_t i = 0; i < num_dst; ++i) {
    const int64_t end = ptr[i + 1];
    // Most destinations touch no batch edge: one binary search skips them.
    const bool touched = std::binary_search(endpoints_.begin(), endpoints_.end(), dst[i]);
    for (int64_t k = begin; k < end; ++k) {
      if (touched && Contains(dst[i], idx[k])) continue;
      if (kept) (*kept)[static_cast<size_t>(out)] = k;
      idx[out++] = idx[k];
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
  std::unordered_map<int64_t, int64_t> pos;
  pos.reserve(n * (2 + num_negs));
  auto local = [&](int64_t v) {
    auto [it, added] = pos.emplace(v, static_cast<int64_t>(p.seeds.size()));
    if (added) p.seeds.push_back(v);
    return it->second;
  };
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
