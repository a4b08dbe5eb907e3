// Edge mini-batches for link prediction (unsupervised GraphSAGE, as DGL's
// train_dist_unsupervised): positive edges, uniformly drawn negative
// destinations, the seed nodes whose embeddings the batch needs, and the
// batch's own edges to keep out of the sampled neighbourhoods. Plain arrays;
// no LibTorch.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sampling/sampler.h"

namespace gnn {

// A set of unordered node pairs: {u, v} matches the edge u->v and its
// reverse v->u. Immutable after construction; thread-safe to read.
class EdgeExclusion {
 public:
  EdgeExclusion() = default;
  // From flat pairs [u0, v0, u1, v1, ...] (odd sizes throw DataError).
  explicit EdgeExclusion(const std::vector<int64_t>& flat_pairs);
  bool empty() const { return endpoints_.empty(); }
  bool Contains(int64_t u, int64_t v) const;
  // Removes from a neighbour CSR over `dst` (as SampleNeighbors returns it)
  // every entry (dst[i], neighbour) whose pair is in the set; sizes shrink
  // in place. `kept`, when given, receives the positions (in the CSR as it
  // was) of the entries kept, so parallel edge data can follow
  // (KeepEdgeRows).
  void Filter(const int64_t* dst, int64_t num_dst, std::vector<int64_t>* indptr,
              std::vector<int64_t>* indices, std::vector<int64_t>* kept = nullptr) const;
  // Appends to `flat` the pairs (ids[i], partner) of the set whose first
  // node is one of `ids` (in ids' order): what an owner sampling those
  // nodes' neighbours needs of the set.
  void PairsOf(const int64_t* ids, size_t n, std::vector<int64_t>* flat) const;

 private:
  // The pairs' nodes, sorted and unique (a quick reject), and each one's
  // partners in the set: partners_[partner_ptr_[j]..partner_ptr_[j + 1])
  // for endpoints_[j], sorted (one or two for most batches' nodes).
  std::vector<int64_t> endpoints_;
  std::vector<int64_t> partner_ptr_, partners_;
  // A bit per hash of each endpoint (about 32 bits per endpoint, an L1- or
  // L2-sized table): most nodes a batch samples are no endpoint, and one
  // bit says so before any search.
  std::vector<uint64_t> bits_;
  int shift_ = 64;
  size_t Hash(int64_t v) const {
    return static_cast<size_t>((static_cast<uint64_t>(v) * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  // Endpoint j's partners, or an empty range when v is no endpoint.
  std::pair<const int64_t*, const int64_t*> PartnersOf(int64_t v) const;
};

// One edge batch: positives (heads[i] -> tails[i]) and num_negs negatives
// per positive (heads[i] -> a uniform node of [neg_lo, neg_hi)), as local
// positions into `seeds` (unique, heads/tails/negatives in first-seen order).
struct EdgeBatchPlan {
  std::vector<int64_t> seeds;
  std::vector<int64_t> pos_head, pos_tail;  // [num positives] positions in seeds
  std::vector<int64_t> neg_head, neg_tail;  // [num positives * num_negs]
  std::vector<int64_t> exclude;             // flat (head, tail) pairs of the positives
  // The edge tasks: each positive's class or value (set by the caller).
  std::vector<int64_t> labels;
  std::vector<float> targets;
  std::vector<float> edge_inputs;  // and their own features (MiniBatch::edge_inputs)
};

// Pure: negative j of positive i is drawn from MixSeed(rng_seed, i * num_negs + j),
// so a plan reproduces from its seed. Throws ConfigError if num_negs < 0 or
// the node range is empty while negatives are asked for.
EdgeBatchPlan PlanEdgeBatch(const std::vector<int64_t>& heads, const std::vector<int64_t>& tails,
                            int num_negs, int64_t neg_lo, int64_t neg_hi, uint64_t rng_seed);

// Endpoints of the in-edges at positions `offsets` of `csc.indices`: the
// source (neighbour) is the head, the owning row the tail. Throws DataError
// on an offset outside [0, number of in-edges).
void EdgeEndpoints(const CscView& csc, const std::vector<int64_t>& offsets,
                   std::vector<int64_t>* heads, std::vector<int64_t>* tails);

}  // namespace gnn
