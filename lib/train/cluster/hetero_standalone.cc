// The standalone heterogeneous source: one partition in memory, its
// embedding tables in this process (the same EmbeddingTable code the
// servers run, so a standalone run and a one-machine cluster agree).
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/random.h"
#include "common/timer.h"
#include "partition/hetero_local.h"
#include "sampling/typed_sampler.h"
#include "store/embedding_table.h"
#include "train/loop/hetero_source.h"
#include "train/loop/typed_edges.h"

namespace gnn {

std::vector<std::vector<int64_t>> EpochBatches(std::vector<int64_t> nodes, int64_t num_batches,
                                               uint64_t seed, int64_t epoch, bool shuffle) {
  if (shuffle) {
    uint64_t state = MixSeed(seed, static_cast<uint64_t>(epoch));
    for (size_t i = nodes.size(); i > 1; --i) {
      state = Mix64(state + kGoldenGamma);
      const size_t j = static_cast<size_t>(
          (static_cast<unsigned __int128>(state) * static_cast<uint64_t>(i)) >> 64);
      std::swap(nodes[i - 1], nodes[j]);
    }
  }
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(num_batches));
  const int64_t n = static_cast<int64_t>(nodes.size());
  for (int64_t b = 0; b < num_batches; ++b) {
    const int64_t begin = n * b / num_batches, end = n * (b + 1) / num_batches;
    out[static_cast<size_t>(b)].assign(nodes.begin() + begin, nodes.begin() + end);
  }
  return out;
}

namespace {

std::vector<EmbeddingTable> MakeEmbeddingTables(const TrainOptions& o, const HeteroPartition& p) {
  std::vector<EmbeddingTable> tables;
  EmbeddingOptions eo;
  eo.dim = o.num_hidden;
  eo.optimizer = ParseSparseOptimizer(o.sparse_optimizer);
  eo.lr = o.sparse_lr;
  eo.seed = MixSeed(o.seed, 0x656d62);  // "emb"
  for (size_t t = 0; t < p.ntype_ranges.size(); ++t) {
    std::vector<uint64_t> keys;
    if (p.feature_dims[t] == 0) {
      for (int64_t v = p.ntype_ranges[t].first; v < p.ntype_ranges[t].second; ++v)
        keys.push_back(static_cast<uint64_t>(p.rng_keys[static_cast<size_t>(v - p.node_start)]));
    }
    tables.emplace_back(eo, keys, 0);
  }
  return tables;
}

std::string SaveTables(const std::vector<EmbeddingTable>& tables) {
  std::string out;
  for (const EmbeddingTable& t : tables) {
    const std::string b = t.Save(0, t.num_rows());
    const uint64_t n = b.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out += b;
  }
  return out;
}

void RestoreTables(const std::string& bytes, const std::string& source,
                   std::vector<EmbeddingTable>* tables) {
  size_t pos = 0;
  for (EmbeddingTable& t : *tables) {
    uint64_t n = 0;
    if (bytes.size() - pos < sizeof n) throw DataError(source + ": embedding tables cut short");
    std::memcpy(&n, bytes.data() + pos, sizeof n);
    pos += sizeof n;
    if (bytes.size() - pos < n) throw DataError(source + ": embedding tables cut short");
    t.Restore(bytes.substr(pos, n), 0, source);
    pos += n;
  }
  if (pos != bytes.size()) {
    throw DataError(source + ": embedding tables of another layout (" +
                    std::to_string(bytes.size() - pos) + " bytes left over)");
  }
}

class StandaloneHeteroSource : public HeteroSource {
 public:
  StandaloneHeteroSource(const TrainOptions& o, const PartitionConfig& config)
      : o_(o), config_(config), threads_(std::max(1, ResolveThreads(0))) {
    Stopwatch watch;
    // The edge features only when the model reads them (an inference run's
    // model file may say so later: ReadEdgeData).
    reads_edges_ = o.edge_feat_mp_op != "none";
    part_ = LoadHeteroPartition(config, 0, o.verify_checksums, reads_edges_);
    g_.csc = CscView{part_.indptr.data(), part_.indices.data(), part_.node_start, part_.num_nodes,
                     part_.rng_keys.data()};
    g_.etypes = part_.etypes.data();
    g_.num_rels = static_cast<int64_t>(config.etypes.size());
    tables_ = MakeEmbeddingTables(o, part_);
    GNN_LOG(kInfo) << "loaded heterogeneous partition 0: " << part_.num_nodes << " nodes of "
                   << config.ntypes.size() << " types, " << part_.indices.size() << " edges of "
                   << config.etypes.size() << " relations in " << watch.Seconds() << " s";
  }

  ~StandaloneHeteroSource() override { StopAhead(); }

  std::string Label() const override { return "Part 0"; }

  std::vector<int64_t> SplitNodes(int m) override { return part_.Nodes(m); }

  // The planned batches are sampled ahead on a thread of their own (up to
  // --prefetch ready), as the plain loader's workers do: the trainer's
  // step, on the CPU's other threads or on a GPU, overlaps the next
  // batches' sampling. A batch depends only on its plan, so the batches
  // are the ones Sample makes when asked.
  void Start(std::vector<TypedBatchPlan> plans,
             const std::vector<std::vector<int>>& fanouts) override {
    StopAhead();
    plans_ = std::move(plans);
    fanouts_ = fanouts;
    taken_ = 0;
    ready_.clear();
    failed_ = nullptr;
    stop_ = false;
    ahead_ = std::thread([this] { SampleAhead(); });
  }

  HeteroBatch Next() override {
    if (taken_ >= plans_.size()) throw DataError("no typed batch planned");
    std::unique_lock<std::mutex> lock(mu_);
    // The sampling thread either adds a batch or records why it stopped.
    changed_.wait(lock, [&] { return !ready_.empty() || failed_; });
    if (ready_.empty()) std::rethrow_exception(failed_);
    HeteroBatch b = std::move(ready_.front());
    ready_.pop_front();
    ++taken_;
    changed_.notify_all();
    return b;
  }

  TypedEdgeSplits EdgeSplits() override { return ReadTypedEdgeSplits(o_, config_, 0, 1, 1, 0, 0); }

  HeteroBatch Sample(const std::vector<int64_t>& seeds,
                     const std::vector<std::vector<int>>& fanouts, uint64_t rng_seed,
                     const EdgeExclusion* exclude) override {
    HeteroBatch b;
    b.seeds = seeds;
    TypedCscView g = g_;
    if (reads_edges_ && part_.edge_dim > 0) {
      // The model's messages take the edges' features: each sampled edge's
      // row comes with its block.
      g.csc.edge_data = part_.edge_data.data();
      g.csc.edge_dim = part_.edge_dim;
    }
    b.blocks = SampleTypedBlocks(g, seeds, fanouts, o_.sample_replace, rng_seed, threads_, exclude);
    const size_t T = part_.ntype_ranges.size();
    b.GroupInputsByType(T, [&](int64_t v) { return part_.TypeOf(v); });
    for (size_t t = 0; t < T; ++t) {
      if (part_.feature_dims[t] == 0) continue;
      GatherRows(part_.features[t].data(), part_.ntype_ranges[t].first, part_.feature_dims[t],
                 b.ids[t], &b.features[t], threads_);
    }
    // The target type's labels; -1 for seeds of other types.
    const auto [first, end] = part_.ntype_ranges[static_cast<size_t>(part_.target)];
    for (int64_t s : seeds)
      b.labels.push_back(s >= first && s < end ? part_.labels[static_cast<size_t>(s - first)] : -1);
    return b;
  }

  void PullEmbeddings(int t, const std::vector<int64_t>& ids, std::vector<float>* out) override {
    tables_[static_cast<size_t>(t)].Pull(Rows(t, ids), out, threads_);
  }

  void PushEmbeddingGrads(int t, const std::vector<int64_t>& ids,
                          const std::vector<float>& grads) override {
    std::vector<int64_t> rows;
    std::vector<float> combined;
    EmbeddingTable& table = tables_[static_cast<size_t>(t)];
    CombineSparseGrads({&ids}, {&grads}, table.dim(), &rows, &combined);
    table.Apply(Rows(t, rows), combined, threads_);
  }

  std::string SaveEmbeddings() override { return SaveTables(tables_); }
  std::string EmbeddingChecksum() override {
    return CombineEmbeddingDigests(EmbeddingDigests(
        config_,
        [&](int t, const std::vector<int64_t>& ids, std::vector<float>* out) {
          PullEmbeddings(t, ids, out);
        },
        [](int) { return true; }));
  }
  void RestoreEmbeddings(const std::string& bytes, const std::string& source) override {
    RestoreTables(bytes, source, &tables_);
  }

  void OrigIds(const std::vector<int64_t>& ids, std::vector<int64_t>* out) override {
    out->resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < part_.node_start || ids[i] >= part_.node_start + part_.num_nodes)
        throw DataError("node " + std::to_string(ids[i]) + " is not in partition 0");
      (*out)[i] = part_.orig_nids[static_cast<size_t>(ids[i] - part_.node_start)];
    }
  }
  void SetEmbeddings(int t, int p, const std::vector<float>& rows) override {
    EmbeddingTable& table = tables_.at(static_cast<size_t>(t));
    if (p != 0 || static_cast<int64_t>(rows.size()) != table.num_rows() * table.dim()) {
      throw DataError("embedding rows for partition " + std::to_string(p) + " of type " +
                      config_.ntypes.at(static_cast<size_t>(t)) + ": " +
                      std::to_string(rows.size()) + " values for " +
                      std::to_string(table.num_rows()) + " rows of " + std::to_string(table.dim()));
    }
    table.SetValues(0, rows.data(), table.num_rows());
  }
  void ResetEmbeddings() override { tables_ = MakeEmbeddingTables(o_, part_); }
  void ReadEdgeData() override {
    LoadHeteroEdgeData(config_, 0, o_.verify_checksums, &part_);
    reads_edges_ = true;
  }
  std::vector<int64_t> AllSplitNodes(int m) override { return part_.Nodes(m); }

 private:
  void SampleAhead() {
    const size_t depth = static_cast<size_t>(std::max(1, o_.prefetch));
    for (const TypedBatchPlan& p : plans_) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        changed_.wait(lock, [&] { return stop_ || ready_.size() < depth; });
        if (stop_) return;
      }
      try {
        const EdgeExclusion exclude(p.exclude);
        HeteroBatch b =
            Sample(p.seeds, fanouts_, p.rng_seed, p.exclude.empty() ? nullptr : &exclude);
        b.index = p.index;
        std::lock_guard<std::mutex> lock(mu_);
        ready_.push_back(std::move(b));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        failed_ = std::current_exception();
        changed_.notify_all();
        return;
      }
      changed_.notify_all();
    }
  }

  void StopAhead() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    changed_.notify_all();
    if (ahead_.joinable()) ahead_.join();
  }

  std::vector<int64_t> Rows(int t, std::vector<int64_t> ids) const {
    const int64_t first = part_.ntype_ranges[static_cast<size_t>(t)].first;
    for (int64_t& v : ids) v -= first;
    return ids;
  }

  const TrainOptions& o_;
  const PartitionConfig& config_;
  const int threads_;
  HeteroPartition part_;
  bool reads_edges_ = false;  // samples carry each edge's row of part_.edge_data
  TypedCscView g_;
  std::vector<EmbeddingTable> tables_;
  // Sampling ahead: the plan (read by the thread until StopAhead), the
  // batches ready, and why sampling stopped early.
  std::vector<TypedBatchPlan> plans_;
  std::vector<std::vector<int>> fanouts_;
  size_t taken_ = 0;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<HeteroBatch> ready_;
  std::exception_ptr failed_;
  bool stop_ = false;
  std::thread ahead_;
};

}  // namespace

std::unique_ptr<HeteroSource> MakeStandaloneHeteroSource(const TrainOptions& o,
                                                         const PartitionConfig& config) {
  return std::make_unique<StandaloneHeteroSource>(o, config);
}

}  // namespace gnn
