#include <algorithm>
#include <iomanip>
#include <limits>

#include "common/error.h"
#include "common/log.h"
#include "common/memory.h"
#include "common/timer.h"
#include "partition/local_partition.h"
#include "sampling/edge_batch.h"
#include "sampling/hot_rows.h"
#include "sampling/loader.h"
#include "sampling/sampler.h"
#include "train/loop/device.h"
#include "train/loop/inference.h"
#include "train/loop/train_env.h"
#include "train/models/sparse_input.h"

namespace gnn {

namespace {

// Layer-wise full-neighbour inference over every node of the partition:
// neighbours and features from memory, nothing to exchange.
torch::Tensor Inference(NodeModel& model, const LocalPartition& part, int64_t batch_size,
                        int threads, int capture_layer = -1, torch::Tensor* captured = nullptr) {
  CscView csc{part.indptr.data(), part.indices.data(), part.node_start, part.num_nodes};
  csc.edge_data = part.edge_data.empty() ? nullptr : part.edge_data.data();
  csc.edge_dim = part.edge_dim;
  torch::Tensor x = part.sparse()
                        ? torch::Tensor()
                        : torch::from_blob(const_cast<float*>(part.features.data()),
                                           {part.num_nodes, part.feature_dim}, torch::kFloat32);
  InferenceSource source;
  source.edge_dim = csc.edge_dim;
  source.neighbors = [&](const std::vector<int64_t>& dst, std::vector<int64_t>* ptr,
                         std::vector<int64_t>* idx, std::vector<float>* rows) {
    std::vector<int64_t> edges;
    SampleNeighbors(csc, dst.data(), static_cast<int64_t>(dst.size()), -1, false, 0, threads, ptr,
                    idx, csc.edge_dim > 0 ? &edges : nullptr);
    GatherEdgeRows(csc, edges, rows);
  };
  source.features = [&](const std::vector<int64_t>& ids) {
    if (part.sparse()) {
      SparseRows rows;
      GatherSparseRows(part.sparse_features.view(), ids.data(), static_cast<int64_t>(ids.size()),
                       part.node_start, &rows, threads);
      return SparseInput(rows);
    }
    torch::Tensor rows = torch::from_blob(const_cast<int64_t*>(ids.data()),
                                          {static_cast<int64_t>(ids.size())}, torch::kInt64);
    return x.index_select(0, rows - part.node_start);
  };
  source.exchange = [](const torch::Tensor& rows) { return rows; };
  source.base = part.node_start;
  return LayerwiseInference(model, source, part.node_start, part.node_start + part.num_nodes,
                            batch_size, true, capture_layer, captured);
}

double Accuracy(const torch::Tensor& logits, const LocalPartition& part,
                const std::vector<int64_t>& nodes) {
  if (nodes.empty()) return 0.0;
  torch::Tensor idx = torch::from_blob(const_cast<int64_t*>(nodes.data()),
                                       {static_cast<int64_t>(nodes.size())}, torch::kInt64) -
                      part.node_start;
  torch::Tensor labels =
      torch::from_blob(const_cast<int64_t*>(part.labels.data()), {part.num_nodes}, torch::kInt64);
  torch::Tensor pred = logits.index_select(0, idx).argmax(1);
  return pred.eq(labels.index_select(0, idx)).to(torch::kFloat64).mean().item<double>();
}

class StandaloneEnv : public TrainEnv {
 public:
  StandaloneEnv(const TrainOptions& o, const PartitionConfig& config) : o_(o), config_(config) {
    Stopwatch load_watch;
    // Sparse features stay sparse (the first layer reads them as they
    // are) unless the model builds messages from whole input rows.
    part_ = LoadLocalPartition(config, 0, o.verify_checksums, o.ReadsEdgeData(),
                               config.sparse_features && o.edge_feat_dim == 0);
    // Sampling reads the neighbour lists, and gathering the rows, at random
    // over hundreds of MB: on 2 MiB pages most reads no longer miss the TLB.
    auto huge = [](const auto& v) {
      return CollapseToHugePages(v.data(), v.size() * sizeof(v[0]));
    };
    const bool on_huge_pages = huge(part_.indices);
    huge(part_.indptr);
    huge(part_.features);
    huge(part_.edge_data);
    huge(part_.orig_nids);
    train_ = part_.Nodes(part_.train_mask);
    valid_ = part_.Nodes(part_.valid_mask);
    test_ = part_.Nodes(part_.test_mask);
    if (train_.empty() && !o.inference && !o.EdgeTask()) {
      throw DataError(o.part_config + ": partition 0 has no train nodes");
    }
    GNN_LOG(kInfo) << "loaded " << config.graph_name << ": " << part_.num_nodes << " nodes, "
                   << part_.indices.size() << " in-edges, " << train_.size() << " train / "
                   << valid_.size() << " valid / " << test_.size() << " test, in " << std::fixed
                   << std::setprecision(2) << load_watch.Seconds() << " s"
                   << (on_huge_pages ? " (neighbour lists on 2 MiB pages)" : "");
    graph_.csc = CscView{part_.indptr.data(), part_.indices.data(), part_.node_start,
                         part_.num_nodes, part_.orig_nids.data()};
    if (o.ReadsEdgeData()) {
      graph_.csc.edge_data = part_.edge_data.data();
      graph_.csc.edge_dim = part_.edge_dim;
    }
    graph_.feature_dim = part_.feature_dim;
    if (part_.sparse()) {
      graph_.sparse = part_.sparse_features.view();
      GNN_LOG(kInfo) << "node features sparse: " << part_.sparse_features.nnz()
                     << " stored entries, " << std::setprecision(3)
                     << 100.0 * part_.sparse_features.density()
                     << " % of the matrix; the first layer reads them as they are";
    } else {
      graph_.features = part_.features.data();
    }
    if (config.label_width > 0) {
      graph_.targets = part_.targets.data();
      graph_.label_width = config.label_width;
    } else {
      graph_.labels = part_.labels.data();
    }
    lo_.fanouts = o.Fanouts();
    lo_.batch_size = o.batch_size;
    lo_.replace = o.sample_replace;
    lo_.num_workers = o.num_workers;
    lo_.prefetch = o.prefetch;
    lo_.seed = o.seed;
    lo_.transpose = true;
    lo_.input_means = o.TakesMeans() && !part_.sparse();
    // GAT's and GCN's self-loops and their blocks' transposes (edge ids
    // included) made by the sampling workers, off the training thread.
    lo_.self_loops = o.model == "gat" || o.model == "gcn";
    if (o.Kind() == TaskKind::kLink) {
      // Every stored in-edge is a training edge (held-out ones were removed
      // by gnn-partition --val_edges).
      lo_.link = true;
      lo_.num_negs = o.num_negs;
      lo_.remove_edge = o.remove_edge;
      edges_.resize(part_.indices.size());
      for (size_t i = 0; i < edges_.size(); ++i) edges_[i] = static_cast<int64_t>(i);
      if (edges_.empty()) throw DataError(o.part_config + ": partition 0 has no edges");
    }
    if (o.EdgeTask()) {
      // The labelled train edges are the items; each batch carries their
      // labels (LocalGraph::edge_labels), no negatives, and keeps them
      // and their reverses out of its blocks unless told otherwise.
      edge_labels_ = ReadEdgeLabels(config, 0, o.verify_checksums, o.decoder_edge_dim > 0);
      graph_.edge_inputs = edge_labels_.features.empty() ? nullptr : edge_labels_.features.data();
      graph_.edge_input_dim = edge_labels_.feature_dim;
      lo_.link = true;
      lo_.num_negs = 0;
      lo_.remove_edge = o.exclude_target_edges;
      graph_.labels = nullptr;
      graph_.targets = nullptr;
      if (edge_labels_.labels.empty()) {
        graph_.edge_targets = edge_labels_.targets.data();
      } else {
        graph_.edge_labels = edge_labels_.labels.data();
      }
      edges_ = EdgesInSplit(1);
      if (edges_.empty()) throw DataError(o.part_config + ": partition 0 has no train edges");
      GNN_LOG(kInfo) << "edge task: " << edges_.size() << " train, " << EdgesInSplit(2).size()
                     << " valid, " << EdgesInSplit(3).size() << " test edges";
    }
    if (part_.feature_dim > 0 && !o.inference && !part_.sparse()) {
      const int64_t bytes = DeviceCacheBytes(o);
      if (bytes > 0) MakeDeviceCache(bytes);
    }
    for (int k = 0; k < 3; ++k) {
      const std::vector<int64_t>& nodes = k == 0 ? train_ : k == 1 ? valid_ : test_;
      labeled_.nodes[k] = nodes;
      if (part_.label_width > 0) continue;  // label rows: EvaluateRows
      for (int64_t v : nodes) labeled_.labels[k].push_back(part_.labels[v - part_.node_start]);
    }
  }

  std::string Label() const override { return "Part 0"; }

  void ReadEdgeData() override {
    LoadEdgeData(config_, 0, o_.verify_checksums, &part_);
    graph_.csc.edge_data = part_.edge_data.data();
    graph_.csc.edge_dim = part_.edge_dim;
  }

  InferenceShard Shard() override {
    InferenceShard s;
    s.part = 0;
    s.node_start = part_.node_start;
    s.orig_ids = part_.orig_nids;
    s.labels = part_.labels;
    s.targets = part_.targets;
    s.masks[0] = part_.train_mask;
    s.masks[1] = part_.valid_mask;
    s.masks[2] = part_.test_mask;
    return s;
  }
  void InferShard(NodeModel& model, int capture_layer, InferenceShard* shard) override {
    torch::Tensor* emb = capture_layer >= 0 ? &shard->emb : nullptr;
    if (o_.infer_fan_out.empty()) {
      shard->logits =
          Inference(model, part_, o_.batch_size_eval, o_.num_workers, capture_layer, emb);
      return;
    }
    const std::vector<int> fanouts = ParseFanouts(o_.infer_fan_out);
    const int threads = std::max(1, o_.num_workers);
    shard->logits = PredictSampled(
        model, part_.node_start, part_.num_nodes, o_.batch_size_eval, o_.seed, capture_layer, emb,
        [&](const std::vector<int64_t>& seeds, uint64_t rng_seed) {
          MiniBatch mb;
          mb.seeds = seeds;
          mb.feature_dim = part_.feature_dim;
          mb.blocks = SampleBlocks(graph_.csc, seeds, fanouts, false, rng_seed, threads);
          const std::vector<int64_t>& input = mb.blocks.front().src_nodes;
          if (part_.sparse()) {
            GatherSparseRows(part_.sparse_features.view(), input.data(),
                             static_cast<int64_t>(input.size()), part_.node_start,
                             &mb.sparse_features, threads);
            mb.sparse = true;
          } else {
            ::gnn::GatherRows(part_.features.data(), part_.node_start, part_.feature_dim, input,
                              &mb.features, threads);
          }
          return mb;
        });
  }

  int64_t NumBatches() const override {
    const auto items = static_cast<int64_t>(lo_.link ? edges_.size() : train_.size());
    return (items + o_.batch_size - 1) / o_.batch_size;
  }
  void StartEpoch(int epoch, int64_t first_batch) override {
    loader_.reset();
    loader_ =
        std::make_unique<BatchLoader>(graph_, lo_.link ? edges_ : train_, lo_, epoch, first_batch);
  }
  torch::Tensor AllNodeOutputs(NodeModel& model) override {
    return Inference(model, part_, o_.batch_size_eval, o_.num_workers);
  }
  const LabeledSplits& Labeled() override { return labeled_; }
  HeldOutEdges HeldOut() override { return LoadHeldOutEdges(config_, 0, false); }
  std::optional<MiniBatch> Next() override { return loader_->Next(); }
  void SetStager(std::function<void(MiniBatch&)> stage) override { lo_.stage = std::move(stage); }
  torch::Tensor DeviceCache() const override { return cache_; }

  LabeledEdges EvalEdges(int k) override {
    LabeledEdges le;
    const std::vector<int64_t> edges = EdgesInSplit(k + 2);
    EdgeEndpoints(graph_.csc, edges, &le.heads, &le.tails);
    for (int64_t e : edges) AppendEdgeRow(edge_labels_, e, &le.labels, &le.targets, &le.features);
    return le;
  }

  std::pair<double, double> Evaluate(NodeModel& model) override {
    torch::Tensor logits = Inference(model, part_, o_.batch_size_eval, o_.num_workers);
    return {Accuracy(logits, part_, valid_), Accuracy(logits, part_, test_)};
  }
  EvalRows EvaluateRows(NodeModel& model) override {
    torch::Tensor out = Inference(model, part_, o_.batch_size_eval, o_.num_workers);
    torch::Tensor targets = torch::from_blob(part_.targets.data(),
                                             {part_.num_nodes, part_.label_width}, torch::kFloat32);
    EvalRows rows;
    for (int k = 0; k < 2; ++k) {
      std::vector<int64_t>& nodes = k == 0 ? valid_ : test_;
      torch::Tensor idx =
          torch::from_blob(nodes.data(), {static_cast<int64_t>(nodes.size())}, torch::kInt64) -
          part_.node_start;
      rows.out[k] = out.index_select(0, idx).contiguous();
      rows.target[k] = targets.index_select(0, idx).contiguous();
    }
    return rows;
  }
  torch::Tensor Embeddings(NodeModel& model) override {
    torch::Tensor emb = Inference(model, part_, o_.batch_size_eval, o_.num_workers);
    // Rows in the input dataset's node order, so users can join on their ids.
    torch::Tensor order =
        torch::from_blob(part_.orig_nids.data(), {part_.num_nodes}, torch::kInt64);
    torch::Tensor out = torch::empty_like(emb);
    out.index_copy_(0, order, emb);
    return out;
  }

 private:
  // --gpu_cache_mb: the rows an epoch is expected to read most
  // (HotLocalRows, from the train nodes and fan-outs) on the GPU, as many
  // as fit; the loader leaves them out of the batches.
  void MakeDeviceCache(int64_t bytes) {
    Stopwatch watch;
    const int64_t row_bytes = part_.feature_dim * static_cast<int64_t>(sizeof(float));
    // Rows that fit, in double (a huge --gpu_cache_mb must not overflow),
    // at most every node and what a 32-bit slot can name.
    const double fit = static_cast<double>(bytes) / row_bytes;
    const int64_t rows = static_cast<int64_t>(std::min<double>(
        {fit, static_cast<double>(part_.num_nodes), std::numeric_limits<int32_t>::max()}));
    std::vector<int64_t> hot = HotLocalRows(graph_.csc, part_.train_mask.data(), lo_.fanouts, rows);
    slots_.assign(static_cast<size_t>(part_.num_nodes), -1);
    for (size_t i = 0; i < hot.size(); ++i) {
      slots_[hot[i] - part_.node_start] = static_cast<int32_t>(i);
    }
    torch::Tensor x = torch::from_blob(part_.features.data(), {part_.num_nodes, part_.feature_dim},
                                       torch::kFloat32);
    torch::Tensor ids =
        torch::from_blob(hot.data(), {static_cast<int64_t>(hot.size())}, torch::kInt64) -
        part_.node_start;
    // Gathered and copied in slices of 64 MiB: the host holds one slice,
    // not a second copy of every cached row.
    const int64_t n = ids.numel();
    cache_ = torch::empty({n, part_.feature_dim}, x.options().device(TrainDevice(o_)));
    const int64_t slice = std::max<int64_t>(1, (int64_t{64} << 20) / row_bytes);
    for (int64_t begin = 0; begin < n; begin += slice) {
      const int64_t end = std::min(n, begin + slice);
      cache_.slice(0, begin, end).copy_(x.index_select(0, ids.slice(0, begin, end)));
    }
    lo_.cache_slot = slots_.data();
    GNN_LOG(kInfo) << "GPU feature cache: " << hot.size() << " of " << part_.num_nodes << " rows ("
                   << std::fixed << std::setprecision(1)
                   << static_cast<double>(hot.size()) * row_bytes / (1 << 20) << " MiB of "
                   << static_cast<double>(bytes) / (1 << 20) << " MiB"
                   << (o_.gpu_cache_mb < 0 ? ", half the GPU's free memory" : "") << ") on "
                   << cache_.device() << ", in " << std::setprecision(2) << watch.Seconds() << " s";
  }

  // Positions of the stored in-edges in `split` (1 train, 2 valid, 3 test;
  // 4: none).
  std::vector<int64_t> EdgesInSplit(uint8_t split) const {
    std::vector<int64_t> edges;
    for (size_t e = 0; e < edge_labels_.split.size(); ++e) {
      if (edge_labels_.split[e] == split) edges.push_back(static_cast<int64_t>(e));
    }
    return edges;
  }

  const TrainOptions& o_;
  const PartitionConfig& config_;
  LocalPartition part_;
  EdgeLabelFiles edge_labels_;  // the edge tasks' labels and splits
  std::vector<int64_t> train_, valid_, test_;
  std::vector<int64_t> edges_;  // --task link, edge tasks: positions of the training in-edges
  LabeledSplits labeled_;
  LocalGraph graph_;
  LoaderOptions lo_;
  std::unique_ptr<BatchLoader> loader_;
  std::vector<int32_t> slots_;  // --gpu_cache_mb: each node's row in cache_, or -1
  torch::Tensor cache_;         // [cached rows, feature_dim] on the GPU
};

}  // namespace

std::unique_ptr<TrainEnv> MakeStandaloneEnv(const TrainOptions& o, const PartitionConfig& config) {
  return std::make_unique<StandaloneEnv>(o, config);
}

}  // namespace gnn
