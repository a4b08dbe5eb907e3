// Where an RGCN trainer's mini-batches and node embeddings come from: one
// heterogeneous partition in this process (standalone), or the cluster
// (servers hold the partitions and the embedding rows of their nodes).
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/sha256.h"
#include "partition/config.h"
#include "sampling/edge_batch.h"
#include "sampling/typed_sampler.h"
#include "train/options/train_options.h"

namespace gnn {

// One batch a Learner will take: its number, seeds and sampling seed.
struct TypedBatchPlan {
  int64_t index = 0;
  std::vector<int64_t> seeds;
  uint64_t rng_seed = 0;
  // A typed edge task's batch: flat (head, tail) pairs kept out of its
  // sampled neighbourhoods (EdgeExclusion).
  std::vector<int64_t> exclude;
};

struct TypedEdgeSplits;  // train/loop/typed_edges.h

class HeteroSource {
 public:
  virtual ~HeteroSource() = default;
  virtual int rank() const { return 0; }
  virtual int world() const { return 1; }
  virtual std::string Label() const = 0;
  // This rank's share of the target nodes of split m (0 train, 1 valid,
  // 2 test): DGL's node_split with force_even over the id-ordered list.
  virtual std::vector<int64_t> SplitNodes(int m) = 0;
  // From now on samples carry their edges' features (an inference run's
  // model file says its RGCN reads them; training says so at the start).
  virtual void ReadEdgeData() {}
  // A typed edge task's labelled edges this rank takes (ReadTypedEdgeSplits
  // over the partition this machine serves).
  virtual TypedEdgeSplits EdgeSplits() = 0;
  // Samples and gathers a batch for `seeds` (fanouts[layer][relation]),
  // without the edges between `exclude`'s pairs when given.
  virtual HeteroBatch Sample(const std::vector<int64_t>& seeds,
                             const std::vector<std::vector<int>>& fanouts, uint64_t rng_seed,
                             const EdgeExclusion* exclude = nullptr) = 0;
  // The batches the Learner takes next, in order (an epoch's from its first
  // batch, or an evaluation's), in place of any earlier plan; Next returns
  // them one by one, each what Sample returns for it. A source with
  // gnn-sampler processes starts sampling them ahead at once; this one
  // samples each when it is asked for.
  virtual void Start(std::vector<TypedBatchPlan> plans,
                     const std::vector<std::vector<int>>& fanouts) {
    plans_ = std::move(plans);
    fanouts_ = fanouts;
    next_ = 0;
  }
  // The next planned batch (DataError past the last).
  virtual HeteroBatch Next() {
    if (next_ >= plans_.size()) throw DataError("no typed batch planned");
    TypedBatchPlan p = std::move(plans_[next_++]);
    const EdgeExclusion exclude(p.exclude);
    HeteroBatch b = Sample(p.seeds, fanouts_, p.rng_seed, p.exclude.empty() ? nullptr : &exclude);
    b.index = p.index;
    return b;
  }
  // Embedding rows [ids.size(), dim] of featureless type t.
  virtual void PullEmbeddings(int t, const std::vector<int64_t>& ids, std::vector<float>* out) = 0;
  // Sums [groups, dim] of groups of type t's embedding rows (group k:
  // ids[group_ptr[k], group_ptr[k + 1])), for the first layer's means of
  // input_means batches. Here from PullEmbeddings; a cluster sums them
  // where they live.
  virtual void SumEmbeddings(int t, const std::vector<int64_t>& ids,
                             const std::vector<int64_t>& group_ptr, std::vector<float>* out) {
    std::vector<float> rows;
    PullEmbeddings(t, ids, &rows);
    const size_t groups = group_ptr.empty() ? 0 : group_ptr.size() - 1;
    const size_t dim = ids.empty() ? 0 : rows.size() / ids.size();
    out->assign(groups * dim, 0.0f);
    for (size_t k = 0; k < groups; ++k) {
      for (int64_t e = group_ptr[k]; e < group_ptr[k + 1]; ++e) {
        for (size_t j = 0; j < dim; ++j)
          (*out)[k * dim + j] += rows[static_cast<size_t>(e) * dim + j];
      }
    }
  }
  // One sparse optimizer step for type t: every rank calls it with the rows
  // its batch used and their gradients; the rows' gradients are combined
  // across ranks as DGL does (mean over the ranks that used a row) and
  // applied where the rows live. On return every rank's next pull sees it.
  virtual void PushEmbeddingGrads(int t, const std::vector<int64_t>& ids,
                                  const std::vector<float>& grads) = 0;
  // Every embedding table with its optimizer state (rank 0's result is the
  // one that counts; every rank calls), and back (every rank calls with
  // rank 0's bytes).
  virtual std::string SaveEmbeddings() = 0;
  virtual void RestoreEmbeddings(const std::string& bytes, const std::string& source) = 0;
  // sha256 prefix of every embedding row's values, types in order and rows
  // in global id order (rank 0's result counts; every rank calls): equal
  // for a standalone run and a cluster run of the same partitioning.
  virtual std::string EmbeddingChecksum() = 0;
  // Inference with a saved model (typed_inference.cc):
  // Each node's id in the input dataset (type-local: its partition's
  // orig_nids).
  virtual void OrigIds(const std::vector<int64_t>& ids, std::vector<int64_t>* out) = 0;
  // Embedding rows exactly as the tables hold them (float32 whatever the
  // wire carries).
  virtual void ReadEmbeddings(int t, const std::vector<int64_t>& ids, std::vector<float>* out) {
    PullEmbeddings(t, ids, out);
  }
  // The rows of partition p's type-t nodes ([n, dim], new-id order)
  // replace the table's, with fresh optimizer state. Ranks call it for
  // the partitions they restore, then Barrier.
  virtual void SetEmbeddings(int t, int p, const std::vector<float>& rows) = 0;
  // The tables' settings (row width, optimizer) taken from the options
  // again: an inference run learns them from the model file after the
  // source is up (it reads the file through BroadcastBytes).
  virtual void ResetEmbeddings() = 0;
  // Every node of split m (0 train, 1 valid, 2 test) in global id order.
  virtual std::vector<int64_t> AllSplitNodes(int m) = 0;
  // Collective byte exchange: to[r] goes to rank r; returns what each
  // rank sent this one.
  virtual std::vector<std::string> Alltoall(std::vector<std::string> to) { return to; }
  virtual void Barrier() {}
  // Dense collectives, as TrainEnv's.
  virtual int64_t AllreduceGrads(torch::nn::Module& /*model*/) { return 0; }
  virtual void SyncParams(torch::nn::Module& /*model*/) {}
  virtual void BroadcastBytes(std::string* /*bytes*/) {}
  virtual std::vector<double> SumOverRanks(std::vector<double> v) { return v; }
  // Bytes this rank sent and received over sockets (0 standalone).
  virtual uint64_t WireBytes() const { return 0; }

 private:
  std::vector<TypedBatchPlan> plans_;
  std::vector<std::vector<int>> fanouts_;
  size_t next_ = 0;
};

// Loads partition 0 of a 1-partition heterogeneous config.
std::unique_ptr<HeteroSource> MakeStandaloneHeteroSource(const TrainOptions& o,
                                                         const PartitionConfig& config);
// Joins the cluster (servers, rendezvous, the other trainers).
std::unique_ptr<HeteroSource> MakeDistHeteroSource(const TrainOptions& o,
                                                   const PartitionConfig& config);

// The checksum EmbeddingChecksum reports: SHA-256 over the hex digests of
// each (featureless type, partition)'s rows, types then partitions in
// order, each digest over its rows in global id order. EmbeddingDigests
// gives those digests, pulling rows with `pull(t, ids, out)`, for the
// partitions p where mine(p) ("" for the others): distributed trainers
// each hash a share and gather the digests, so no trainer waits on one
// that reads every table.
template <typename Pull, typename Mine>
std::vector<std::string> EmbeddingDigests(const PartitionConfig& c, Pull pull, Mine mine) {
  std::vector<std::string> out;
  std::vector<float> rows;
  for (size_t t = 0; t < c.ntypes.size(); ++t) {
    if (t < c.ntype_feature_dims.size() && c.ntype_feature_dims[t] > 0) continue;
    for (int p = 0; p < c.num_parts; ++p) {
      out.emplace_back();
      if (!mine(p)) continue;
      Sha256 h;
      const auto [first, end] = c.parts[static_cast<size_t>(p)].ntype_ranges[t];
      for (int64_t b = first; b < end; b += 65536) {
        std::vector<int64_t> ids;
        for (int64_t v = b; v < std::min(end, b + 65536); ++v) ids.push_back(v);
        pull(static_cast<int>(t), ids, &rows);
        h.Update(rows.data(), rows.size() * sizeof(float));
      }
      out.back() = h.HexDigest();
    }
  }
  return out;
}

// The checksum of EmbeddingDigests' digests (every one filled).
inline std::string CombineEmbeddingDigests(const std::vector<std::string>& digests) {
  Sha256 h;
  for (const std::string& d : digests) h.Update(d.data(), d.size());
  return h.HexDigest().substr(0, 16);
}

// Batches of one epoch over `nodes` (shuffled from MixSeed(seed, epoch)
// when asked), sized so every rank runs `num_batches` of them.
std::vector<std::vector<int64_t>> EpochBatches(std::vector<int64_t> nodes, int64_t num_batches,
                                               uint64_t seed, int64_t epoch, bool shuffle);

}  // namespace gnn
