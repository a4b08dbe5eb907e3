// RGCN's and RGAT's Learner (DGL's entity_classify_dist.py; RGAT swaps
// RelGraphConv for RelGATConv, train/rgat.h): node classification on
// the labelled type of a heterogeneous graph, standalone or as one trainer
// of a cluster: typed sampling from a HeteroSource, learnable embeddings
// for featureless types updated by a sparse optimizer where they live
// (after backward, before the dense all-reduce), evaluation on sampled
// neighbourhoods, the embedding tables in checkpoints.
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "common/error.h"
#include "common/log.h"
#include "common/random.h"
#include "sampling/relation_block.h"
#include "sampling/typed_sampler.h"
#include "train/loop/checkpoint.h"
#include "train/loop/device.h"
#include "train/loop/hetero_source.h"
#include "train/loop/model_file.h"
#include "train/loop/task.h"
#include "train/loop/training_loop.h"
#include "train/loop/typed_edges.h"
#include "train/loop/typed_model.h"
#include "train/models/rgcn.h"

namespace gnn {

using nlohmann::json;

namespace {

// RGAT's attention settings (unused by RGCN).
GatOptions GatLayers(const TrainOptions& o) {
  GatOptions g;
  g.heads = o.num_heads;
  g.out_heads = o.num_out_heads;
  g.feat_drop = 0;  // RGCN's skeleton: dropout after each hidden layer
  g.attn_drop = o.attn_drop;
  g.negative_slope = o.negative_slope;
  return g;
}

std::string RgcnSignature(const TrainOptions& o, const PartitionConfig& c) {
  std::ostringstream s;
  s << o.model << " graph=" << c.graph_name << " ntypes=" << c.ntypes.size()
    << " rels=" << c.etypes.size() << " hidden=" << o.num_hidden << " classes=" << c.num_classes
    << " layers=" << o.num_layers << " bases=" << o.num_bases << " self_loop=" << o.self_loop
    << " sparse="
    << o.sparse_optimizer
    // The embedding tables' layout: one per type in this process, or one
    // per type and partition at the servers.
    << " tables="
    << (o.standalone ? std::string("local") : "servers/" + std::to_string(c.num_parts));
  if (o.model == "rgat") s << " heads=" << o.num_heads << " out_heads=" << o.num_out_heads;
  if (o.edge_feat_mp_op != "none") s << " edge_feat_mp_op=" << o.edge_feat_mp_op;
  return s.str();
}

class RgcnLearner : public TypedModel {
 public:
  RgcnLearner(const TrainOptions& o, const PartitionConfig& config,
              std::unique_ptr<HeteroSource> source)
      : o_(o),
        config_(config),
        source_(std::move(source)),
        fanouts_(ParseTypedFanouts(o.fan_out, config.etypes)),
        device_(TrainDevice(o)),
        gat_(GatLayers(o)),
        feature_dims_(FeatureDims(config)),
        rel_src_type_(config.RelationSrcTypes()),
        model_(
            (torch::manual_seed(o.seed),
             RGCN(feature_dims_, o.num_hidden, o.num_hidden,
                  o.EdgeTask() ? o.num_hidden : config.num_classes,
                  static_cast<int64_t>(config.etypes.size()), o.num_bases, o.num_layers, o.dropout,
                  o.self_loop, o.model == "rgat" ? &gat_ : nullptr, EdgeOptions(o, config)))) {
    if (static_cast<int>(fanouts_.size()) != o.num_layers) {
      throw ConfigError("--fan_out '" + o.fan_out + "' has " + std::to_string(fanouts_.size()) +
                        " layers but --num_layers is " + std::to_string(o.num_layers));
    }
    // --num_gpus: the dense model computes there; sampling, the feature
    // rows and the embedding tables (with their sparse optimizer) stay on
    // the host, each batch's rows copied over.
    if (o.EdgeTask() && o.inference) {
      // The decoder's parameters come from the model file.
      AttachEdgeDecoder(*model_, o.num_hidden,
                        config.edge_label_kind == LabelKind::kClass ? config.num_edge_classes : 1,
                        o.decoder_edge_dim);
    } else if (o.EdgeTask()) {
      // The labelled relation's edges are the seeds; the decoder trains
      // and saves with the model.
      edges_ = std::make_unique<TypedEdgeTask>(o, config, source_->EdgeSplits());
      edges_->Attach(*model_);
      num_batches_ = edges_->NumBatches();
    }
    model_->to(device_);
    if (edges_) return;
    train_nodes_ = source_->SplitNodes(0);
    const double total = source_->SumOverRanks({static_cast<double>(train_nodes_.size())})[0];
    const int64_t per_rank =
        (static_cast<int64_t>(total) + source_->world() - 1) / source_->world();
    num_batches_ = std::max<int64_t>(1, (per_rank + o.batch_size - 1) / o.batch_size);
  }

  HeteroSource& source() override { return *source_; }
  torch::Tensor Predict(HeteroBatch& b, int capture_layer, torch::Tensor* emb) override {
    torch::NoGradGuard no_grad;
    model_->eval();
    return Forward(b, false, capture_layer, emb);
  }

  int rank() const override { return source_->rank(); }
  int world() const override { return source_->world(); }
  std::string Label() const override { return source_->Label(); }
  torch::nn::Module& module() override { return *model_; }
  std::string Signature() const override {
    return RgcnSignature(o_, config_) + (edges_ ? edges_->Signature() : "");
  }
  EvalMetric Metric() const override { return edges_ ? edges_->Metric() : EvalMetric(); }
  int64_t NumBatches() const override { return num_batches_; }

  // The epoch's batches from `first` on, planned at once: gnn-sampler
  // processes sample them ahead (the seeds and sampling seed of batch i do
  // not depend on where it is sampled, nor on where the epoch resumed).
  void StartEpoch(int epoch, int64_t first) override {
    if (edges_) return source_->Start(edges_->EpochPlans(epoch, first), fanouts_);
    std::vector<std::vector<int64_t>> batches =
        EpochBatches(train_nodes_, num_batches_, o_.seed, static_cast<int64_t>(epoch), true);
    std::vector<TypedBatchPlan> plans;
    for (int64_t i = first; i < num_batches_; ++i) {
      plans.push_back(
          {i,
           std::move(batches[static_cast<size_t>(i)]),
           MixSeed(MixSeed(o_.seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(i)),
           {}});
    }
    source_->Start(std::move(plans), fanouts_);
  }
  bool NextBatch(int, int64_t i) override {
    rbs_.clear();
    emb_rows_.clear();
    emb_.clear();
    mean_rows_.clear();
    mean_leaf_.clear();
    mean_groups_.clear();
    if (i >= num_batches_) return false;
    batch_ = source_->Next();
    if (batch_.index != i) {
      throw ProtocolError("typed batch " + std::to_string(batch_.index) + " came in place of " +
                          std::to_string(i));
    }
    if (edges_) edges_->Use(batch_.index, batch_.seeds);
    cache_lookups_ += batch_.cache_lookups;
    cache_hits_ += batch_.cache_hits;
    ++steps_;
    return true;
  }
  torch::Tensor Loss() override {
    if (batch_.seeds.empty()) return torch::Tensor();
    torch::Tensor out = Forward(batch_, true);
    if (edges_) {
      torch::Tensor loss = edges_->Loss(out);
      last_acc_ = edges_->last_figure();
      return loss;
    }
    torch::Tensor labels =
        torch::from_blob(batch_.labels.data(), {static_cast<int64_t>(batch_.labels.size())},
                         torch::kInt64)
            .to(device_);
    last_acc_ = out.argmax(1).eq(labels).to(torch::kFloat64).mean().item<double>();
    return torch::nn::functional::cross_entropy(out, labels);
  }
  // A parameter the batch did not reach (a featured type absent from it)
  // steps with a zero gradient, as the all-reduce makes it in a cluster:
  // standalone and distributed runs take the same steps. Then every
  // featureless type's embedding rows take their sparse step (a collective).
  bool AfterBackward() override {
    if (!batch_.seeds.empty()) {
      for (auto& p : model_->parameters()) {
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      }
    }
    for (size_t ty = 0; ty < feature_dims_.size(); ++ty) {
      if (feature_dims_[ty] > 0) continue;
      std::vector<int64_t> ids;
      std::vector<float> g;
      EmbeddingGrads(ty, &ids, &g);
      source_->PushEmbeddingGrads(static_cast<int>(ty), ids, g);
    }
    return true;
  }
  int64_t AllreduceGrads() override { return source_->AllreduceGrads(*model_); }
  int64_t BatchExamples() const override {
    return edges_ ? edges_->Examples() : static_cast<int64_t>(batch_.seeds.size());
  }
  int64_t BatchInputs() const override {
    return batch_.blocks.empty() ? 0 : batch_.blocks.front().num_src();
  }
  double TrainAccuracy() override { return last_acc_; }
  bool CountsWire() const override { return true; }
  uint64_t WireBytes() const override { return source_->WireBytes(); }

  std::pair<double, double> Evaluate(int, const RecordFn&) override {
    torch::NoGradGuard no_grad;
    model_->eval();
    if (edges_) return {EdgeFigure(1), EdgeFigure(2)};
    return {SplitAccuracy(1), SplitAccuracy(2)};
  }

  // The embedding tables with their optimizer state (a collective), after
  // the best epoch's rows --save_model will write when rank 0 keeps them
  // (kBestTag, their length, PackTables' bytes): a resumed run saves the
  // same file.
  std::string CheckpointExtra() override {
    std::string tables = source_->SaveEmbeddings();
    if (best_tables_.empty()) return tables;
    const std::string best = PackTables(best_tables_);
    const uint64_t n = best.size();
    return std::string(kBestTag) + std::string(reinterpret_cast<const char*>(&n), sizeof n) + best +
           tables;
  }
  void RestoreExtra(const std::string& bytes, const std::string& source) override {
    best_tables_.clear();
    const size_t tag = std::strlen(kBestTag);
    if (bytes.compare(0, tag, kBestTag) != 0) return source_->RestoreEmbeddings(bytes, source);
    uint64_t n = 0;
    if (bytes.size() < tag + sizeof n) throw DataError(source + ": best embedding rows cut short");
    std::memcpy(&n, bytes.data() + tag, sizeof n);
    if (bytes.size() - tag - sizeof n < n)
      throw DataError(source + ": best embedding rows cut short");
    best_tables_ = UnpackTables(bytes.substr(tag + sizeof n, n), source);
    source_->RestoreEmbeddings(bytes.substr(tag + sizeof n + n), source);
  }

  void SyncParams() override { source_->SyncParams(*model_); }
  void BroadcastBytes(std::string* bytes) override { source_->BroadcastBytes(bytes); }
  double SumOverRanks(double v) override { return source_->SumOverRanks({v})[0]; }

  // --save_model: the dense parameters and the featureless types' learned
  // embeddings of the best validation's epoch (rank 0 reads every
  // partition's rows when an epoch is the best so far; the others wait,
  // as their servers must answer and no row may change meanwhile).
  // Kept for checkpoints too: a run resumed with --save_model saves them.
  void OnBestEpoch() override {
    if ((o_.save_model.empty() && o_.checkpoint_dir.empty()) || o_.save_model_last) return;
    std::string error;
    if (source_->rank() == 0) {
      try {
        best_tables_ = GatherNodeEmbeddings(*source_, config_, o_.num_hidden);
      } catch (const Error& e) {
        error = e.what();
      }
    }
    source_->Barrier();
    if (!error.empty()) throw DataError(error);
  }
  void SaveOutputs(bool lead, int epochs_done, int saved_epoch) override {
    if (o_.save_model.empty()) return;
    std::string error;
    if (lead) {
      try {
        SaveModel(epochs_done, saved_epoch);
      } catch (const DataError& e) {
        error = e.what();
      }
    }
    source_->Barrier();
    if (!error.empty()) throw DataError(error);
  }

  void SaveModel(int epochs_done, int saved_epoch) {
    json meta = {{"model", o_.model},
                 {"parameter_names",
                  o_.model == "rgat" ? "dgl.nn.HeteroGraphConv(GATConv)" : "dgl.nn.RelGraphConv"},
                 {"task", o_.task},
                 {"graph_name", config_.graph_name},
                 {"predict_category", config_.target_ntype},
                 {"ntypes", config_.ntypes},
                 {"etypes", config_.etypes},
                 {"in_feats", feature_dims_},
                 {"num_hidden", o_.num_hidden},
                 {"n_classes", config_.num_classes},
                 {"num_layers", o_.num_layers},
                 {"num_bases", o_.num_bases},
                 {"self_loop", o_.self_loop},
                 {"fan_out", o_.fan_out},
                 {"epochs", epochs_done},
                 {"saved_epoch", saved_epoch}};
    if (edges_) {
      // The decoder's keys (decoder.0.*, decoder.2.*) beside the layers'.
      meta["target_etype"] = config_.target_etype;
      meta["edge_classes"] = edges_->classes() ? edges_->out_dim() : 0;
      meta["decoder_edge_feat_dim"] = o_.decoder_edge_dim;
    }
    if (o_.edge_feat_mp_op != "none") {
      // Extra keys beyond DGL's RelGraphConv: layers.<l>.edge_proj (and
      // edge_weight for concat).
      meta["edge_feat_mp_op"] = o_.edge_feat_mp_op;
      meta["etype_edge_feature_dims"] = config_.etype_edge_feature_dims;
    }
    if (o_.model == "rgat") {
      meta["num_heads"] = o_.num_heads;
      meta["num_out_heads"] = o_.num_out_heads;
    }
    // The loop put the saved epoch's dense parameters in place; its rows
    // are the live tables' (the last epoch) or those kept at its end.
    if (saved_epoch != epochs_done && best_tables_.empty() && HasFeaturelessTypes()) {
      throw DataError("--save_model " + o_.save_model + ": epoch " + std::to_string(saved_epoch) +
                      "'s embedding rows were not kept (a checkpoint of an older gnn-train); "
                      "--save_model_last saves the last epoch");
    }
    const auto tables = saved_epoch == epochs_done
                            ? GatherNodeEmbeddings(*source_, config_, o_.num_hidden)
                            : best_tables_;
    json keys = json::object();
    for (const auto& [key, rows] : tables) keys[key.substr(key.find('.') + 1)] = key;
    meta["node_embeddings"] = keys;
    SaveModelFile(o_.save_model, *model_, meta, tables);
  }

  void Summarize(json* summary) override {
    (*summary)["embedding_checksum"] = source_->EmbeddingChecksum();
    if (edges_) {
      (*summary)["edges_per_s"] = (*summary)["seeds_per_s"];
      (*summary)["exclude_target_edges"] = o_.exclude_target_edges;
      (*summary)["target_etype"] = config_.target_etype;
    }
    if (o_.standalone) return;
    // What the machine's hot-row caches saved: of the other partitions'
    // feature rows the batches needed, the share they held.
    const double rate = cache_lookups_ ? static_cast<double>(cache_hits_) / cache_lookups_ : 0.0;
    (*summary)["cache_hit_rate"] = rate;
    (*summary)["remote_rows_per_step"] =
        steps_ ? static_cast<double>(cache_lookups_) / static_cast<double>(steps_) : 0.0;
    GNN_LOG(kInfo) << Label() << ": hot-row cache held " << cache_hits_ << " of " << cache_lookups_
                   << " feature rows of other partitions the batches read (hit rate " << rate
                   << ")";
  }

 private:
  bool HasFeaturelessTypes() const {
    return std::any_of(feature_dims_.begin(), feature_dims_.end(),
                       [](int64_t d) { return d == 0; });
  }

  // Named row tables as bytes: per table its name's length, name, rows,
  // width (int64 little-endian) and float32 rows; and back (DataError
  // naming `source` when they are not such bytes).
  static std::string PackTables(const std::vector<std::pair<std::string, torch::Tensor>>& tables) {
    std::string out;
    auto put = [&](int64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
    for (const auto& [name, t] : tables) {
      const torch::Tensor c = t.contiguous();
      put(static_cast<int64_t>(name.size()));
      out += name;
      put(c.size(0));
      put(c.size(1));
      out.append(static_cast<const char*>(c.data_ptr()), c.numel() * sizeof(float));
    }
    return out;
  }
  static std::vector<std::pair<std::string, torch::Tensor>> UnpackTables(
      const std::string& bytes, const std::string& source) {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    size_t at = 0;
    auto get = [&]() {
      int64_t v = 0;
      if (bytes.size() - at < sizeof v) throw DataError(source + ": best embedding rows cut short");
      std::memcpy(&v, bytes.data() + at, sizeof v);
      at += sizeof v;
      return v;
    };
    while (at < bytes.size()) {
      const int64_t len = get();
      if (len < 0 || static_cast<uint64_t>(len) > bytes.size() - at)
        throw DataError(source + ": best embedding rows cut short");
      std::string name = bytes.substr(at, static_cast<size_t>(len));
      at += static_cast<size_t>(len);
      const int64_t rows = get(), dim = get();
      if (rows < 0 || dim < 1 ||
          static_cast<uint64_t>(rows) > (bytes.size() - at) / sizeof(float) / dim)
        throw DataError(source + ": best embedding rows cut short");
      torch::Tensor t = torch::empty({rows, dim}, torch::kFloat32);
      std::memcpy(t.data_ptr(), bytes.data() + at, t.numel() * sizeof(float));
      at += t.numel() * sizeof(float);
      out.emplace_back(std::move(name), t);
    }
    return out;
  }

  static RelEdgeOptions EdgeOptions(const TrainOptions& o, const PartitionConfig& c) {
    RelEdgeOptions e;
    if (o.edge_feat_mp_op == "none") return e;
    e.op = o.edge_feat_mp_op;
    e.dims = c.etype_edge_feature_dims;
    return e;
  }

  static std::vector<int64_t> FeatureDims(const PartitionConfig& c) {
    std::vector<int64_t> d = c.ntype_feature_dims;
    d.resize(c.ntypes.size(), 0);
    return d;
  }

  // Type ty's embedding rows the batch used and their gradients: the
  // layer-0 inputs' (emb_), and, in an input_means batch, each group
  // member's share of its group mean's gradient (1 / the group's size, as
  // the mean's backward gives it), summed per row.
  void EmbeddingGrads(size_t ty, std::vector<int64_t>* ids, std::vector<float>* grads) {
    const size_t dim = static_cast<size_t>(o_.num_hidden);
    std::unordered_map<int64_t, size_t> row;
    auto add = [&](int64_t id, const float* g, float scale) {
      auto [it, fresh] = row.emplace(id, ids->size());
      if (fresh) {
        ids->push_back(id);
        grads->resize(grads->size() + dim, 0.0f);
      }
      float* out = grads->data() + it->second * dim;
      for (size_t j = 0; j < dim; ++j) out[j] += g[j] * scale;
    };
    if (ty < emb_.size() && emb_[ty].defined() && emb_[ty].grad().defined()) {
      torch::Tensor gt = emb_[ty].grad().contiguous();
      for (size_t i = 0; i < batch_.ids[ty].size(); ++i)
        add(batch_.ids[ty][i], gt.data_ptr<float>() + i * dim, 1.0f);
    }
    if (ty < mean_leaf_.size() && mean_leaf_[ty].defined() && mean_leaf_[ty].grad().defined()) {
      torch::Tensor gt = mean_leaf_[ty].grad().contiguous();
      const RelationGroups& g = mean_groups_[ty];
      for (size_t k = 0; k < g.size(); ++k) {
        const float inv = 1.0f / static_cast<float>(g.ptr[k + 1] - g.ptr[k]);
        for (int64_t e = g.ptr[k]; e < g.ptr[k + 1]; ++e)
          add(g.ids[static_cast<size_t>(e)], gt.data_ptr<float>() + k * dim, inv);
      }
    }
  }

  // An input_means batch's first-layer means (RelationMeans per relation):
  // the featured relations' as the batch brought them, the featureless
  // types' summed now from their current embedding rows (a leaf per type
  // whose gradient EmbeddingGrads spreads over the groups' rows).
  std::vector<RelationMeans> LayerZeroMeans(HeteroBatch& b, bool grad) {
    const Block& b0 = b.blocks.front();
    const RelationBlock& rb = rbs_.front();
    const int64_t nd = b0.num_dst;
    std::vector<RelationMeans> out;
    auto tensor_of = [](const std::vector<int64_t>& v) {
      return torch::tensor(torch::ArrayRef<int64_t>(v), torch::kInt64);
    };
    for (size_t r = 0; r < rel_src_type_.size(); ++r) {
      const int t = rel_src_type_[r];
      if (feature_dims_[static_cast<size_t>(t)] == 0) continue;
      const RelationGroups g = GroupSources(rb, b0.src_nodes, {static_cast<int64_t>(r)});
      const int64_t dim = feature_dims_[static_cast<size_t>(t)];
      std::vector<float>& m = b.means.at(r);
      if (m.size() != g.size() * static_cast<size_t>(dim)) {
        throw DataError("typed batch " + std::to_string(b.index) + ": " + std::to_string(m.size()) +
                        " mean values for relation " + config_.etypes[r] + "'s " +
                        std::to_string(g.size()) + " groups");
      }
      if (g.size() == 0) continue;
      out.push_back(
          {static_cast<int64_t>(r), t, tensor_of(g.rows).to(device_),
           torch::from_blob(m.data(), {static_cast<int64_t>(g.size()), dim}, torch::kFloat32)
               .to(device_)});
    }
    const size_t T = feature_dims_.size();
    mean_rows_.assign(T, {});
    mean_leaf_.assign(T, torch::Tensor());
    mean_groups_.assign(T, {});
    for (size_t t = 0; t < T; ++t) {
      if (feature_dims_[t] > 0) continue;
      std::vector<int64_t> rels;
      for (size_t r = 0; r < rel_src_type_.size(); ++r)
        if (rel_src_type_[r] == static_cast<int>(t)) rels.push_back(static_cast<int64_t>(r));
      RelationGroups g = GroupSources(rb, b0.src_nodes, rels);
      if (g.size() == 0) continue;
      const int64_t k = static_cast<int64_t>(g.size());
      std::vector<float>& rows = mean_rows_[t];
      source_->SumEmbeddings(static_cast<int>(t), g.ids, g.ptr, &rows);
      for (size_t i = 0; i < g.size(); ++i) {
        const float inv = 1.0f / static_cast<float>(g.ptr[i + 1] - g.ptr[i]);
        for (int64_t j = 0; j < o_.num_hidden; ++j) rows[i * o_.num_hidden + j] *= inv;
      }
      torch::Tensor leaf = torch::from_blob(rows.data(), {k, o_.num_hidden}, torch::kFloat32);
      if (grad) leaf.requires_grad_(true);
      mean_leaf_[t] = leaf;
      torch::Tensor placed = leaf.to(device_);
      // One entry per relation: its groups are a run of g (relations in order).
      for (size_t i = 0; i < g.size();) {
        const int64_t r = g.rows[i] / nd;
        size_t e = i;
        while (e < g.size() && g.rows[e] / nd == r) ++e;
        out.push_back({r, static_cast<int>(t),
                       tensor_of({g.rows.begin() + i, g.rows.begin() + e}).to(device_),
                       placed.slice(0, static_cast<int64_t>(i), static_cast<int64_t>(e))});
        i = e;
      }
      mean_groups_[t] = std::move(g);
    }
    return out;
  }

  // The layer-0 input of a batch: projected features, and embedding rows
  // (leaves whose gradients the sparse optimizer applies) in emb_.
  torch::Tensor Inputs(HeteroBatch& b, bool grad) {
    const size_t T = feature_dims_.size();
    emb_rows_.assign(T, {});
    emb_.assign(T, torch::Tensor());
    std::vector<TypedInput> inputs(T);
    for (size_t t = 0; t < T; ++t) {
      const int64_t n = static_cast<int64_t>(b.ids[t].size());
      if (n == 0) continue;
      TypedInput& in = inputs[t];
      in.positions = torch::from_blob(b.positions[t].data(), {n}, torch::kInt64).to(device_);
      if (feature_dims_[t] > 0) {
        in.rows = torch::from_blob(b.features[t].data(), {n, feature_dims_[t]}, torch::kFloat32)
                      .to(device_);
      } else {
        source_->PullEmbeddings(static_cast<int>(t), b.ids[t], &emb_rows_[t]);
        // The leaf stays on the host, where its gradient is applied; on a
        // GPU the model reads a copy and the gradient flows back through it.
        torch::Tensor leaf =
            torch::from_blob(emb_rows_[t].data(), {n, o_.num_hidden}, torch::kFloat32);
        if (grad) leaf.requires_grad_(true);
        emb_[t] = leaf;
        in.rows = leaf.to(device_);
      }
    }
    const Block& b0 = b.blocks.front();
    return model_->Embed(b.input_means ? b0.num_dst : b0.num_src(), inputs);
  }

  // The autograd graph views the relation blocks (rbs_), the batch and the
  // embedding rows (emb_rows_): they live until the next batch.
  torch::Tensor Forward(HeteroBatch& b, bool grad, int capture_layer = -1,
                        torch::Tensor* captured = nullptr) {
    rbs_.clear();
    for (const Block& blk : b.blocks)
      rbs_.push_back(ToRelationBlock(blk, static_cast<int64_t>(config_.etypes.size())));
    torch::Tensor h0 = Inputs(b, grad);
    if (model_->takes_edges()) {
      if (b.input_means) throw DataError("a typed batch of first-layer means for edge features");
      std::vector<RelEdgeTensors> edges;
      for (size_t l = 0; l < rbs_.size(); ++l) edges.push_back(ToEdgeTensors(rbs_[l], b.blocks[l]));
      return model_->forward(rbs_, h0, edges, capture_layer, captured);
    }
    if (!b.input_means) return model_->forward(rbs_, h0, torch::Tensor(), capture_layer, captured);
    const std::vector<RelationMeans> means = LayerZeroMeans(b, grad);
    return model_->forward(rbs_, h0, model_->EmbedMeans(b.blocks.front().num_dst, means),
                           capture_layer, captured);
  }

  // The typed edge task's accuracy or RMSE over split m's edges (every
  // rank's share, summed), decoded from sampled neighbourhoods.
  double EdgeFigure(int m) {
    std::vector<TypedBatchPlan> plans = edges_->EvalPlans(m);
    const size_t count = plans.size();
    source_->Start(std::move(plans), fanouts_);
    double sum = 0;
    for (size_t i = 0; i < count; ++i) {
      HeteroBatch b = source_->Next();
      edges_->Use(b.index, b.seeds);
      sum += edges_->Score(Forward(b, false));
    }
    const std::vector<double> sums = source_->SumOverRanks({sum, edges_->EvalCount(m)});
    return edges_->Figure(sums[0], sums[1]);
  }

  // Accuracy on this rank's share of split m, summed over ranks: sampled
  // neighbourhoods with the training fan-outs (as DGL's distributed RGCN
  // example evaluates), a fixed seed per batch.
  double SplitAccuracy(int m) {
    const std::vector<int64_t> nodes = source_->SplitNodes(m);
    double correct = 0;
    const int64_t n = static_cast<int64_t>(nodes.size());
    std::vector<TypedBatchPlan> plans;
    for (int64_t begin = 0, i = 0; begin < n; begin += o_.batch_size_eval, ++i) {
      const int64_t end = std::min(n, begin + o_.batch_size_eval);
      plans.push_back({i,
                       {nodes.begin() + begin, nodes.begin() + end},
                       MixSeed(MixSeed(o_.seed, 0x6576616c), static_cast<uint64_t>(i)),
                       {}});
    }
    const size_t count = plans.size();
    source_->Start(std::move(plans), fanouts_);
    for (size_t i = 0; i < count; ++i) {
      HeteroBatch b = source_->Next();
      torch::Tensor out = Forward(b, false);
      torch::Tensor labels =
          torch::from_blob(b.labels.data(), {static_cast<int64_t>(b.labels.size())}, torch::kInt64)
              .to(device_);
      correct += out.argmax(1).eq(labels).sum().item<double>();
    }
    const std::vector<double> sums = source_->SumOverRanks({correct, static_cast<double>(n)});
    return sums[1] > 0 ? sums[0] / sums[1] : 0.0;
  }

  const TrainOptions& o_;
  const PartitionConfig& config_;
  std::unique_ptr<HeteroSource> source_;
  const std::vector<std::vector<int>> fanouts_;
  const torch::Device device_;  // --num_gpus: where the dense model computes
  const GatOptions gat_;        // --model rgat's layers
  const std::vector<int64_t> feature_dims_;
  const std::vector<int> rel_src_type_;  // each relation's source node type
  RGCN model_;
  std::unique_ptr<TypedEdgeTask> edges_;  // --task edge_class|edge_regression
  std::vector<int64_t> train_nodes_;
  int64_t num_batches_ = 0;
  // The current batch and what its autograd graph views.
  HeteroBatch batch_;
  uint64_t cache_lookups_ = 0;  // other partitions' feature rows the batches read
  uint64_t cache_hits_ = 0;     // of which the hot-row caches held
  int64_t steps_ = 0;
  std::vector<RelationBlock> rbs_;
  std::vector<std::vector<float>> emb_rows_;
  std::vector<torch::Tensor> emb_;
  // input_means batches: each featureless type's group means (values, the
  // leaf the model reads, the groups).
  std::vector<std::vector<float>> mean_rows_;
  std::vector<torch::Tensor> mean_leaf_;
  std::vector<RelationGroups> mean_groups_;
  double last_acc_ = 0;
  // The best validation's embedding rows by input id (rank 0; --save_model).
  std::vector<std::pair<std::string, torch::Tensor>> best_tables_;
  static constexpr const char* kBestTag = "GNNBEST1";
};

}  // namespace

std::unique_ptr<Learner> MakeRgcnLearner(const TrainOptions& o, const PartitionConfig& config) {
  return std::make_unique<RgcnLearner>(
      o, config,
      o.standalone ? MakeStandaloneHeteroSource(o, config) : MakeDistHeteroSource(o, config));
}

std::unique_ptr<TypedModel> MakeTypedModel(const TrainOptions& o, const PartitionConfig& config,
                                           std::unique_ptr<HeteroSource> source) {
  return std::make_unique<RgcnLearner>(o, config, std::move(source));
}

std::vector<std::pair<std::string, torch::Tensor>> GatherNodeEmbeddings(
    HeteroSource& source, const PartitionConfig& config, int64_t dim) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (size_t t = 0; t < config.ntypes.size(); ++t) {
    if (t < config.ntype_feature_dims.size() && config.ntype_feature_dims[t] > 0) continue;
    int64_t n = 0;
    for (const PartInfo& p : config.parts) n += p.ntype_ranges[t].second - p.ntype_ranges[t].first;
    torch::Tensor table = torch::empty({n, dim}, torch::kFloat32);
    std::vector<char> seen(static_cast<size_t>(n), 0);
    float* at = table.data_ptr<float>();
    std::vector<int64_t> ids, orig;
    std::vector<float> rows;
    for (const PartInfo& p : config.parts) {
      const auto [first, end] = p.ntype_ranges[t];
      for (int64_t b = first; b < end; b += 65536) {
        ids.clear();
        for (int64_t v = b; v < std::min(end, b + 65536); ++v) ids.push_back(v);
        source.ReadEmbeddings(static_cast<int>(t), ids, &rows);
        source.OrigIds(ids, &orig);
        for (size_t i = 0; i < ids.size(); ++i) {
          const int64_t o = orig[i];
          if (o < 0 || o >= n || seen[static_cast<size_t>(o)]) {
            throw DataError(config.ntypes[t] + " node " + std::to_string(ids[i]) +
                            " has input id " + std::to_string(o) + ", not a new one of 0.." +
                            std::to_string(n - 1));
          }
          seen[static_cast<size_t>(o)] = 1;
          std::memcpy(at + o * dim, rows.data() + i * dim,
                      static_cast<size_t>(dim) * sizeof(float));
        }
      }
    }
    out.emplace_back(NodeEmbeddingKey(config.ntypes[t]), table);
  }
  return out;
}

}  // namespace gnn
