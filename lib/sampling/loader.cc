#include "sampling/loader.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/error.h"
#include "common/parallel.h"
#include "common/timer.h"
#include "sampling/edge_batch.h"

namespace gnn {
namespace {

// splitmix64 stream for the epoch shuffle (the sampler has its own; both
// are fixed algorithms so orders reproduce across platforms).
class ShuffleRng {
 public:
  explicit ShuffleRng(uint64_t seed) : state_(seed) {}
  // Uniform in [0, n), n > 0.
  uint64_t Below(uint64_t n) {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<uint64_t>((static_cast<unsigned __int128>(z) * n) >> 64);
  }

 private:
  uint64_t state_;
};

void ValidateOptions(const LocalGraph& graph, const LoaderOptions& o) {
  o.Validate();
  if (graph.csc.num_nodes < 0 ||
      (graph.csc.num_nodes > 0 && (graph.csc.indptr == nullptr || graph.csc.indices == nullptr))) {
    throw ConfigError("loader graph has no CSC arrays");
  }
  if (graph.sparse.indptr != nullptr) {
    if (graph.sparse.rows != graph.csc.num_nodes || graph.sparse.cols != graph.feature_dim)
      throw ConfigError("loader graph's sparse rows do not match its nodes and feature_dim");
    if (o.input_means || o.cache_slot != nullptr)
      throw ConfigError("a loader over sparse rows makes neither means nor cache splits");
  } else if (graph.feature_dim < 0 || (graph.feature_dim > 0 && graph.features == nullptr)) {
    throw ConfigError("loader graph has feature_dim " + std::to_string(graph.feature_dim) +
                      " but no feature rows");
  }
}

}  // namespace

void LoaderOptions::Validate() const {
  if (fanouts.empty()) throw ConfigError("fanouts: at least one layer is required");
  for (size_t l = 0; l < fanouts.size(); ++l) {
    if (fanouts[l] < -1) {
      throw ConfigError("fanouts: " + std::to_string(fanouts[l]) + " of layer " +
                        std::to_string(l) + " is invalid (>= 0, or -1 for all neighbours)");
    }
  }
  if (batch_size <= 0) {
    throw ConfigError("batch_size must be positive, got " + std::to_string(batch_size));
  }
  if (num_workers < 0) {
    throw ConfigError("num_workers must be >= 0, got " + std::to_string(num_workers));
  }
  if (prefetch < 1) throw ConfigError("prefetch must be >= 1, got " + std::to_string(prefetch));
  if (self_loops && input_means) {
    throw ConfigError("self_loops and input_means: the sources' means would count the self-loops");
  }
  if (link && num_negs < 0)
    throw ConfigError("num_negs must be >= 0, got " + std::to_string(num_negs));
}

BatchLoader::BatchLoader(const LocalGraph& graph, std::vector<int64_t> seeds,
                         const LoaderOptions& options, int64_t epoch, int64_t first_batch)
    : graph_(graph), seeds_(std::move(seeds)), options_(options), epoch_(epoch) {
  ValidateOptions(graph_, options_);
  const int64_t n = static_cast<int64_t>(seeds_.size());
  if (options_.shuffle && n > 1) {
    ShuffleRng rng(MixSeed(options_.seed, static_cast<uint64_t>(epoch_)));
    for (int64_t i = n - 1; i > 0; --i) {
      std::swap(seeds_[i], seeds_[rng.Below(static_cast<uint64_t>(i) + 1)]);
    }
  }
  num_batches_ = options_.drop_last ? n / options_.batch_size
                                    : (n + options_.batch_size - 1) / options_.batch_size;
  if (first_batch < 0 || first_batch > num_batches_) {
    throw ConfigError("batch " + std::to_string(first_batch) + " is not in an epoch of " +
                      std::to_string(num_batches_) + " batches");
  }
  next_to_claim_ = next_to_return_ = first_batch;
  for (int w = 0; w < options_.num_workers && w < num_batches_ - first_batch; ++w) {
    workers_.emplace_back([this] { Work(); });
  }
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  // A worker in the middle of Make() finishes that one batch, then sees stop_.
  for (auto& t : workers_) t.join();
}

int64_t BatchLoader::peak_ready() {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_ready_;
}

void BatchLoader::Work() {
  for (;;) {
    int64_t index;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Claim in order, never more than `prefetch` batches past the one the
      // consumer waits for, and nothing past a failed batch.
      cv_.wait(lock, [&] {
        return stop_ || next_to_claim_ >= num_batches_ ||
               (error_index_ >= 0 && next_to_claim_ > error_index_) ||
               next_to_claim_ < next_to_return_ + options_.prefetch;
      });
      if (stop_ || next_to_claim_ >= num_batches_ ||
          (error_index_ >= 0 && next_to_claim_ > error_index_)) {
        return;
      }
      index = next_to_claim_++;
    }
    try {
      // One thread per batch: the workers are the parallelism.
      MiniBatch batch = Make(index, 1);
      if (options_.stage) options_.stage(batch);
      std::lock_guard<std::mutex> lock(mu_);
      ready_.emplace(index, std::move(batch));
      peak_ready_ = std::max<int64_t>(peak_ready_, static_cast<int64_t>(ready_.size()));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (error_index_ < 0 || index < error_index_) {
        error_ = std::current_exception();
        error_index_ = index;
      }
    }
    cv_.notify_all();
  }
}

std::optional<MiniBatch> BatchLoader::Next() {
  if (workers_.empty()) {
    // Synchronous mode (num_workers == 0): all cores on this one batch.
    if (error_) std::rethrow_exception(error_);
    if (next_to_return_ >= num_batches_) return std::nullopt;
    try {
      MiniBatch batch = Make(next_to_return_, 0);
      if (options_.stage) options_.stage(batch);
      ++next_to_return_;
      return batch;
    } catch (...) {
      error_ = std::current_exception();
      error_index_ = next_to_return_;
      throw;
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (next_to_return_ >= num_batches_) return std::nullopt;
  cv_.wait(lock, [&] {
    return ready_.count(next_to_return_) != 0 ||
           (error_index_ >= 0 && next_to_return_ >= error_index_);
  });
  auto it = ready_.find(next_to_return_);
  if (it == ready_.end()) std::rethrow_exception(error_);
  MiniBatch batch = std::move(it->second);
  ready_.erase(it);
  ++next_to_return_;
  lock.unlock();
  cv_.notify_all();
  return batch;
}

void BatchLoader::LabelEdges(const std::vector<int64_t>& offsets, MiniBatch* b) const {
  const int64_t num_edges = graph_.csc.num_nodes > 0 ? graph_.csc.indptr[graph_.csc.num_nodes] : 0;
  for (int64_t e : offsets) {
    if (e < 0 || e >= num_edges) {
      throw DataError("edge " + std::to_string(e) + " is outside the partition's " +
                      std::to_string(num_edges) + " in-edges");
    }
  }
  if (graph_.edge_inputs != nullptr) {
    const int64_t w = graph_.edge_input_dim;
    b->edge_input_dim = w;
    b->edge_inputs.resize(offsets.size() * static_cast<size_t>(w));
    for (size_t i = 0; i < offsets.size(); ++i) {
      std::copy_n(graph_.edge_inputs + offsets[i] * w, w, b->edge_inputs.data() + i * w);
    }
  }
  if (graph_.edge_targets != nullptr) {
    b->label_width = 1;
    for (int64_t e : offsets) b->targets.push_back(graph_.edge_targets[e]);
  } else {
    for (int64_t e : offsets) b->labels.push_back(graph_.edge_labels[e]);
  }
}

MiniBatch BatchLoader::Make(int64_t index, int threads) const {
  Stopwatch watch;
  MiniBatch b;
  b.index = index;
  const int64_t begin = index * options_.batch_size;
  const int64_t end = std::min<int64_t>(begin + options_.batch_size, seeds_.size());
  const uint64_t batch_seed =
      MixSeed(MixSeed(options_.seed, static_cast<uint64_t>(epoch_)), static_cast<uint64_t>(index));
  const CscView& csc = graph_.csc;
  const bool edge_labels = graph_.edge_labels != nullptr || graph_.edge_targets != nullptr;
  if (options_.link) {
    std::vector<int64_t> offsets(seeds_.begin() + begin, seeds_.begin() + end), heads, tails;
    if (edge_labels) LabelEdges(offsets, &b);
    EdgeEndpoints(csc, offsets, &heads, &tails);
    EdgeBatchPlan plan = PlanEdgeBatch(heads, tails, options_.num_negs, csc.node_start,
                                       csc.node_start + csc.num_nodes, MixSeed(batch_seed, 1));
    EdgeExclusion exclude(options_.remove_edge ? plan.exclude : std::vector<int64_t>());
    b.seeds = std::move(plan.seeds);
    b.pos_head = std::move(plan.pos_head);
    b.pos_tail = std::move(plan.pos_tail);
    b.neg_head = std::move(plan.neg_head);
    b.neg_tail = std::move(plan.neg_tail);
    b.blocks = SampleBlocks(csc, b.seeds, options_.fanouts, options_.replace, batch_seed, threads,
                            exclude.empty() ? nullptr : &exclude);
  } else {
    b.seeds.assign(seeds_.begin() + begin, seeds_.begin() + end);
    b.blocks = SampleBlocks(csc, b.seeds, options_.fanouts, options_.replace, batch_seed, threads);
  }
  if (options_.self_loops) {
    for (Block& block : b.blocks) AddSelfLoops(&block);
  }
  if (options_.transpose) {
    // Sparse rows: every first layer projects before it aggregates, so a
    // gradient flows through block 0 too.
    const bool all = options_.self_loops || graph_.sparse.indptr != nullptr;
    for (size_t l = all ? 0 : 1; l < b.blocks.size(); ++l) {
      BuildTranspose(&b.blocks[l]);
    }
  }
  GatherInputs(&b, threads);
  if (options_.link && edge_labels) {
    // The positives' labels: set above.
  } else if (graph_.targets != nullptr) {
    const int64_t w = graph_.label_width;
    b.label_width = w;
    b.targets.resize(b.seeds.size() * static_cast<size_t>(w));
    for (size_t i = 0; i < b.seeds.size(); ++i) {
      std::copy_n(graph_.targets + (b.seeds[i] - csc.node_start) * w, w, b.targets.data() + i * w);
    }
  } else if (graph_.labels != nullptr) {
    b.labels.resize(b.seeds.size());
    for (size_t i = 0; i < b.seeds.size(); ++i) {
      b.labels[i] = graph_.labels[b.seeds[i] - csc.node_start];
    }
  }
  b.sample_seconds = watch.Seconds();
  return b;
}

void BatchLoader::GatherInputs(MiniBatch* b, int threads) const {
  const CscView& csc = graph_.csc;
  b->feature_dim = graph_.feature_dim;
  if (graph_.feature_dim > 0) {
    // Seeds were checked by the sampler; sampled neighbours may be ids the
    // CSC lists but does not own (a corrupt or halo graph): no row to read.
    for (int64_t v : b->input_nodes()) {
      if (v < csc.node_start || v >= csc.node_start + csc.num_nodes) {
        throw DataError("sampled node " + std::to_string(v) + " has no feature row (rows cover [" +
                        std::to_string(csc.node_start) + ", " +
                        std::to_string(csc.node_start + csc.num_nodes) + "))");
      }
    }
    if (graph_.sparse.indptr != nullptr) {
      const std::vector<int64_t>& input = b->input_nodes();
      GatherSparseRows(graph_.sparse, input.data(), static_cast<int64_t>(input.size()),
                       csc.node_start, &b->sparse_features, threads);
      b->sparse = true;
    } else if (options_.cache_slot != nullptr && !b->blocks.empty()) {
      // The device holds the hot rows: gather the others only.
      std::vector<int64_t> host_ids;
      const std::vector<int64_t>& input = b->input_nodes();
      for (size_t i = 0; i < input.size(); ++i) {
        const int32_t slot = options_.cache_slot[input[i] - csc.node_start];
        if (slot >= 0) {
          b->cached_rows.push_back(static_cast<int64_t>(i));
          b->cached_slots.push_back(slot);
        } else {
          b->host_rows.push_back(static_cast<int64_t>(i));
          host_ids.push_back(input[i]);
        }
      }
      GatherRows(graph_.features, csc.node_start, graph_.feature_dim, host_ids, &b->features,
                 threads);
      b->split_rows = true;
      b->cache_lookups = input.size();
      b->cache_hits = b->cached_rows.size();
    } else if (options_.input_means && !b->blocks.empty()) {
      const Block& first = b->blocks.front();
      const std::vector<int64_t> dst(first.src_nodes.begin(),
                                     first.src_nodes.begin() + first.num_dst);
      GatherRows(graph_.features, csc.node_start, graph_.feature_dim, dst, &b->features, threads);
      b->features.resize(2 * dst.size() * graph_.feature_dim);
      MeanOfSources(graph_.features, csc.node_start, graph_.feature_dim, first,
                    b->features.data() + dst.size() * graph_.feature_dim, threads);
      b->input_means = true;
    } else {
      GatherRows(graph_.features, csc.node_start, graph_.feature_dim, b->input_nodes(),
                 &b->features, threads);
    }
  }
}

}  // namespace gnn
