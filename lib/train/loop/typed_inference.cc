// gnn-train --inference with an RGCN or RGAT model on a heterogeneous
// partitioning: the target type's predictions, written per partition as
// the homogeneous inference writes them (predict.h), ids being the target
// type's input ids; with --save_embed_path, layer --embed_layer's output of
// every node of every type (the target type's chosen nodes), written
// DIR/<type>/part<i>/{ids,emb}.npy.
//
// The model file carries the dense parameters and the featureless types'
// learned embeddings keyed by input id; each rank puts the rows of the
// partitions it restores (p mod world == rank) into the tables that serve
// them (its own, standalone; the partition's server, distributed), so the
// model applies to any partitioning. Every chosen target node's
// neighbourhood is taken in full (fan-out -1 on every relation; --fan_out
// samples it), in batches of --batch_size_eval, the chosen nodes split
// evenly over the ranks; each rank sends its rows to the writer of their
// partition (the first trainer of the machine serving it), which writes
// them in id order.
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/npy.h"
#include "common/random.h"
#include "common/timer.h"
#include "sampling/typed_sampler.h"
#include "train/loop/model_file.h"
#include "train/loop/predict.h"
#include "train/loop/typed_edges.h"
#include "train/loop/typed_model.h"

namespace gnn {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return "[" + out + "]";
}

std::string Join(const std::vector<int64_t>& v) {
  std::vector<std::string> text;
  for (int64_t x : v) text.push_back(std::to_string(x));
  return Join(text);
}

std::vector<int64_t> FeatureDims(const PartitionConfig& c) {
  std::vector<int64_t> d = c.ntype_feature_dims;
  d.resize(c.ntypes.size(), 0);
  return d;
}

// The file's description against the graph's schema (node types,
// relations, feature widths, classes, target type), copied into *o.
void TakeTypedMeta(const json& meta, const PartitionConfig& config, const std::string& path,
                   TrainOptions* o) {
  auto get = [&](const char* key) -> const json& { return ModelMetaField(meta, path, key); };
  try {
    o->model = get("model").get<std::string>();
    if (o->model != "rgcn" && o->model != "rgat") {
      throw DataError(path + " holds a --model " + o->model + " model (one node type); " +
                      config.graph_name +
                      " is a heterogeneous partitioning: apply it to a homogeneous one");
    }
    const auto ntypes = get("ntypes").get<std::vector<std::string>>();
    if (ntypes != config.ntypes) {
      throw DataError(path + " was trained on node types " + Join(ntypes) + "; " +
                      config.graph_name + " has " + Join(config.ntypes));
    }
    const auto etypes = get("etypes").get<std::vector<std::string>>();
    if (etypes != config.etypes) {
      throw DataError(path + " was trained on relations " + Join(etypes) + "; " +
                      config.graph_name + " has " + Join(config.etypes));
    }
    const auto in = get("in_feats").get<std::vector<int64_t>>();
    const std::vector<int64_t> dims = FeatureDims(config);
    for (size_t t = 0; t < dims.size(); ++t) {
      const int64_t want = t < in.size() ? in[t] : -1;
      if (want != dims[t]) {
        throw DataError(path + " takes " + std::to_string(want) + " input features for " +
                        config.ntypes[t] + " nodes; " + config.graph_name + " has " +
                        std::to_string(dims[t]));
      }
    }
    const std::string target = get("predict_category").get<std::string>();
    if (target != config.target_ntype) {
      throw DataError(path + " predicts " + target + " nodes; " + config.graph_name +
                      "'s labels are on " + config.target_ntype);
    }
    o->task = "node";
    if (meta.contains("target_etype")) {
      // An edge model: the relation it scores, and its decoder's classes.
      const std::string etype = meta["target_etype"].get<std::string>();
      const int64_t edge_classes = get("edge_classes").get<int64_t>();
      const bool classes = config.edge_label_kind == LabelKind::kClass;
      if (!config.edge_labels || etype != config.target_etype) {
        throw DataError(path + " scores " + etype + " edges; " + config.graph_name + " labels " +
                        (config.edge_labels ? config.target_etype + "'s" : std::string("no")) +
                        " edges");
      }
      if (edge_classes != (classes ? config.num_edge_classes : 0)) {
        throw DataError(path + " gives " +
                        (edge_classes > 0 ? std::to_string(edge_classes) + " edge classes"
                                          : std::string("a value per edge")) +
                        "; " + config.graph_name + "'s " + etype + " edges have " +
                        (classes ? std::to_string(config.num_edge_classes) + " classes"
                                 : std::string("values")));
      }
      o->task = edge_classes > 0 ? "edge_class" : "edge_regression";
      o->decoder_edge_dim = meta.value("decoder_edge_feat_dim", int64_t{0});
      const int64_t has = config.LabelledEdgeFeatureDim();
      if (o->decoder_edge_dim > 0 && has != o->decoder_edge_dim) {
        throw DataError(path + "'s decoder reads " + std::to_string(o->decoder_edge_dim) +
                        " features per " + etype + " edge; " + config.graph_name + " has " +
                        std::to_string(has));
      }
    }
    const int64_t classes = get("n_classes").get<int64_t>();
    if (classes != config.num_classes) {
      throw DataError(path + " predicts " + std::to_string(classes) + " classes; " +
                      config.graph_name + " has " + std::to_string(config.num_classes));
    }
    o->num_hidden = get("num_hidden").get<int64_t>();
    o->num_layers = get("num_layers").get<int>();
    o->num_bases = get("num_bases").get<int>();
    o->self_loop = get("self_loop").get<bool>();
    o->fan_out = get("fan_out").get<std::string>();
    o->edge_feat_mp_op = meta.value("edge_feat_mp_op", std::string("none"));
    if (o->edge_feat_mp_op != "none") {
      const auto dims = get("etype_edge_feature_dims").get<std::vector<int64_t>>();
      if (dims != config.etype_edge_feature_dims) {
        throw DataError(path + " takes edge features " + Join(dims) + " wide per relation; " +
                        config.graph_name + " has " + Join(config.etype_edge_feature_dims));
      }
      o->edge_feat_dim = config.edge_feature_dim;
    }
    if (o->model == "rgat") {
      o->num_heads = get("num_heads").get<int>();
      o->num_out_heads = get("num_out_heads").get<int>();
    }
    if (!meta.contains("node_embeddings")) {
      throw DataError(path + " holds no learned node embeddings (node_embeddings." +
                      "<type> tensors): it was saved before --save_model kept them; train and "
                      "save it again");
    }
  } catch (const json::exception& e) {
    throw DataError(path + ": malformed metadata (" + e.what() + ")");
  }
}

class TypedInference {
 public:
  TypedInference(const TrainOptions& given, const PartitionConfig& config)
      : o_(given), config_(config) {}

  json Run() {
    if (!o_.save_embeddings.empty()) {
      throw ConfigError("--save_embeddings: " + o_.part_config +
                        " is heterogeneous; its embeddings are written per node type and "
                        "partition (--save_embed_path DIR)");
    }
    CheckOutputDir("--save_prediction_path", o_.save_prediction_path);
    CheckOutputDir("--save_embed_path", o_.save_embed_path);
    std::unique_ptr<HeteroSource> source =
        o_.standalone ? MakeStandaloneHeteroSource(o_, config_) : MakeDistHeteroSource(o_, config_);
    const int rank = source->rank();
    lead_ = rank == 0;
    ModelFile file = ReadModel(*source);
    TakeTypedMeta(file.meta, config_, o_.restore_model_path, &o_);
    if (o_.edge_feat_mp_op != "none") source->ReadEdgeData();
    source->ResetEmbeddings();
    model_meta_ = file.meta;
    std::map<std::string, torch::Tensor> tables;
    ModelFile dense;
    for (auto& [key, t] : file.params) {
      if (key.rfind("node_embeddings.", 0) == 0) {
        tables[key.substr(16)] = t;
      } else {
        dense.params.emplace_back(key, t);
      }
    }
    model_ = MakeTypedModel(o_, config_, std::move(source));
    LoadParams(model_->module(), o_.model, dense, o_.restore_model_path);
    RestoreTables(tables);
    fanouts_ = o_.infer_fan_out.empty()
                   ? std::vector<std::vector<int>>(static_cast<size_t>(o_.num_layers),
                                                   std::vector<int>(config_.etypes.size(), -1))
                   : ParseTypedFanouts(o_.infer_fan_out, config_.etypes);
    if (static_cast<int>(fanouts_.size()) != o_.num_layers) {
      throw ConfigError("--fan_out '" + o_.infer_fan_out + "' has " +
                        std::to_string(fanouts_.size()) + " layers; the model in " +
                        o_.restore_model_path + " has " + std::to_string(o_.num_layers));
    }
    if (o_.EdgeTask()) {
      if (o_.save_prediction_path.empty()) {
        throw ConfigError(o_.restore_model_path + " is an edge model: --save_prediction_path " +
                          "says where its predictions go");
      }
      AllCoresWhileIdle all_cores(o_);
      return RunTypedEdgeInference(*model_, o_, config_, model_meta_, fanouts_);
    }
    ChooseNodes();
    embed_layer_ = o_.embed_layer > 0 ? o_.embed_layer : std::max(1, o_.num_layers - 1);
    if (embed_layer_ > o_.num_layers) {
      throw ConfigError("--embed_layer " + std::to_string(embed_layer_) + ": the model has " +
                        std::to_string(o_.num_layers) + " layers");
    }
    GNN_LOG(kInfo) << "inference with " << o_.model << " (" << o_.num_layers << " layers, from "
                   << o_.restore_model_path << ") over " << config_.target_ntype << " nodes ("
                   << (o_.infer_fan_out.empty() ? std::string("every neighbour")
                                                : "fan-out " + o_.infer_fan_out)
                   << "); writing " << chosen_.size();
    Stopwatch infer_watch;
    const bool predict = !o_.save_prediction_path.empty();
    const bool embed = !o_.save_embed_path.empty();
    const int capture = embed ? embed_layer_ - 1 : -1;
    const int target = TargetType();
    // The target type's chosen nodes, then (embeddings) every node of
    // each other type; every rank makes the same passes in the same order.
    AllCoresWhileIdle all_cores(o_);
    for (size_t t = 0; t < config_.ntypes.size(); ++t) {
      const bool is_target = static_cast<int>(t) == target;
      if (!is_target && !embed) continue;
      Written w =
          Pass(is_target ? chosen_ : NodesOf(static_cast<int>(t)), is_target && predict, capture);
      if (is_target && predict) WritePredictions(w);
      if (embed) WriteEmbeddings(static_cast<int>(t), w);
    }
    infer_s_ = infer_watch.Seconds();
    WriteManifests();
    GNN_LOG(kInfo) << "inference done in " << infer_s_ << " s: " << chosen_.size() << " "
                   << config_.target_ntype << " nodes written";
    return Summary();
  }

 private:
  HeteroSource& src() { return model_->source(); }

  int TargetType() const {
    return static_cast<int>(
        std::find(config_.ntypes.begin(), config_.ntypes.end(), config_.target_ntype) -
        config_.ntypes.begin());
  }

  // Every node of type t, in id order.
  std::vector<int64_t> NodesOf(int t) const {
    std::vector<int64_t> all;
    for (const PartInfo& p : config_.parts) {
      const auto [first, end] = p.ntype_ranges[static_cast<size_t>(t)];
      for (int64_t v = first; v < end; ++v) all.push_back(v);
    }
    return all;
  }

  // Rank 0 reads the file and every rank gets its bytes, or the same error.
  ModelFile ReadModel(HeteroSource& source) {
    const std::string bytes =
        ReadModelBytes(source.rank(), Broadcast(source), o_.restore_model_path);
    return ParseModelFileBytes(std::vector<char>(bytes.begin(), bytes.end()),
                               o_.restore_model_path);
  }

  static BroadcastFn Broadcast(HeteroSource& source) {
    return [&source](std::string* bytes) { source.BroadcastBytes(bytes); };
  }

  // Each featureless type's learned rows, by input id, into the tables of
  // the partitions this rank restores; any rank's error is every rank's.
  void RestoreTables(const std::map<std::string, torch::Tensor>& tables) {
    const std::string& path = o_.restore_model_path;
    std::string error;
    try {
      for (size_t t = 0; t < config_.ntypes.size(); ++t) {
        if (FeatureDims(config_)[t] > 0) continue;
        const std::string& name = config_.ntypes[t];
        auto it = tables.find(name);
        if (it == tables.end()) {
          throw DataError(path + " holds no learned embeddings for " + name + " nodes (" +
                          NodeEmbeddingKey(name) + ")");
        }
        const torch::Tensor table = it->second.to(torch::kFloat32).contiguous();
        if (table.dim() != 2 || table.size(1) != o_.num_hidden) {
          throw DataError(path + ": " + NodeEmbeddingKey(name) + " is not [rows, " +
                          std::to_string(o_.num_hidden) + "]");
        }
        const int64_t rows = table.size(0), dim = o_.num_hidden;
        for (int p = 0; p < config_.num_parts; ++p) {
          if (p % src().world() != src().rank()) continue;
          const auto [first, end] = config_.parts[static_cast<size_t>(p)].ntype_ranges[t];
          std::vector<int64_t> ids, orig;
          for (int64_t v = first; v < end; ++v) ids.push_back(v);
          src().OrigIds(ids, &orig);
          std::vector<float> values(ids.size() * static_cast<size_t>(dim));
          for (size_t i = 0; i < ids.size(); ++i) {
            if (orig[i] < 0 || orig[i] >= rows) {
              throw DataError(path + " has learned embeddings for " + std::to_string(rows) + " " +
                              name + " nodes; " + config_.graph_name + " has one of input id " +
                              std::to_string(orig[i]));
            }
            std::memcpy(values.data() + i * dim, table.data_ptr<float>() + orig[i] * dim,
                        static_cast<size_t>(dim) * sizeof(float));
          }
          src().SetEmbeddings(static_cast<int>(t), p, values);
        }
      }
    } catch (const Error& e) {
      error = e.what();
    }
    if (src().SumOverRanks({error.empty() ? 0.0 : 1.0})[0] > 0) {
      throw DataError(error.empty() ? "another trainer could not restore the model's embeddings "
                                      "(its log says why)"
                                    : error);
    }
  }

  // The target nodes to write (global new ids, ascending): --nodes (the
  // type's input ids), or --node_mask; the valid and test nodes for the
  // summary's figures.
  void ChooseNodes() {
    const auto target =
        std::find(config_.ntypes.begin(), config_.ntypes.end(), config_.target_ntype) -
        config_.ntypes.begin();
    std::vector<int64_t> all;
    for (const PartInfo& p : config_.parts) {
      const auto [first, end] = p.ntype_ranges[static_cast<size_t>(target)];
      for (int64_t v = first; v < end; ++v) all.push_back(v);
    }
    const int m = o_.node_mask == "train"   ? 0
                  : o_.node_mask == "valid" ? 1
                  : o_.node_mask == "test"  ? 2
                                            : -1;
    if (!o_.nodes.empty()) {
      chosen_ = FromInputIds(all, ReadRequestedIds(src().rank(), Broadcast(src()), o_.nodes));
    } else {
      chosen_ = m < 0 ? all : src().AllSplitNodes(m);
    }
    valid_ = src().AllSplitNodes(1);
    test_ = src().AllSplitNodes(2);
  }

  // The target type's input ids -> new ids (sorted, without repeats); an
  // id that is not such a node is one line.
  std::vector<int64_t> FromInputIds(const std::vector<int64_t>& all,
                                    const std::vector<int64_t>& input) {
    std::vector<int64_t> orig;
    src().OrigIds(all, &orig);
    std::vector<int64_t> new_of(all.size(), -1);
    for (size_t i = 0; i < all.size(); ++i) {
      if (orig[i] >= 0 && orig[i] < static_cast<int64_t>(all.size())) new_of[orig[i]] = all[i];
    }
    std::vector<int64_t> out;
    for (int64_t id : input) {
      if (id < 0 || id >= static_cast<int64_t>(all.size()) || new_of[id] < 0) {
        throw DataError("--nodes " + o_.nodes + ": id " + std::to_string(id) + " is not a " +
                        config_.target_ntype + " node of " + config_.graph_name +
                        " (its input ids are 0.." + std::to_string(all.size() - 1) + ")");
      }
      out.push_back(new_of[id]);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  int WriterRank(int p) const { return o_.standalone ? 0 : p * o_.num_trainers; }

  // What a partition's writer got in one pass: its rows in id order.
  struct Written {
    int part = -1;  // the partition this rank writes (-1: none)
    std::vector<int64_t> ids, labels, split;
    std::vector<float> logits;  // [n, classes] when predicted
    std::vector<float> emb;     // [n, emb_dim] when captured
    int64_t emb_dim = 0;
    int64_t size() const { return static_cast<int64_t>(ids.size()); }
  };

  // One pass over `nodes` (ascending global ids of one type): this rank's
  // share predicted batch by batch, each row (id, label, split, logits?,
  // layer capture's output?) sent to its partition's writer.
  Written Pass(const std::vector<int64_t>& nodes, bool logits, int capture) {
    const int64_t n = static_cast<int64_t>(nodes.size());
    const int w = src().world(), r = src().rank();
    const int64_t lo = n * r / w, hi = n * (r + 1) / w;
    const int64_t classes = config_.num_classes;
    const int64_t emb_dim = capture < 0                    ? 0
                            : capture + 1 == o_.num_layers ? classes
                                                           : o_.num_hidden;
    // Batch i samples with the evaluation's seed of its batch i: with the
    // training fan-outs, --node_mask valid/test standalone draws exactly
    // the neighbourhoods the training run's evaluation drew.
    std::vector<TypedBatchPlan> plans;
    for (int64_t b = lo, i = 0; b < hi; b += o_.batch_size_eval, ++i) {
      plans.push_back({i,
                       {nodes.begin() + b, nodes.begin() + std::min(hi, b + o_.batch_size_eval)},
                       MixSeed(MixSeed(o_.seed, 0x6576616c), static_cast<uint64_t>(i)),
                       {}});
    }
    const size_t count = plans.size();
    src().Start(std::move(plans), fanouts_);
    std::vector<std::string> to(static_cast<size_t>(w));
    for (size_t i = 0; i < count; ++i) {
      HeteroBatch b = src().Next();
      torch::Tensor emb;
      const torch::Tensor out =
          model_->Predict(b, capture, capture >= 0 ? &emb : nullptr).to(torch::kCPU).contiguous();
      if (emb.defined()) emb = emb.to(torch::kCPU).contiguous();
      const int64_t k = static_cast<int64_t>(b.seeds.size());
      if (out.size(0) != k || out.size(1) != classes ||
          (capture >= 0 && (!emb.defined() || emb.size(0) != k || emb.size(1) != emb_dim))) {
        throw DataError("inference: a batch of " + std::to_string(k) +
                        " seeds gave outputs of another shape");
      }
      for (int64_t j = 0; j < k; ++j) {
        const int64_t v = b.seeds[static_cast<size_t>(j)];
        const int64_t head[3] = {
            v, j < static_cast<int64_t>(b.labels.size()) ? b.labels[static_cast<size_t>(j)] : -1,
            std::binary_search(valid_.begin(), valid_.end(), v) ? 1
            : std::binary_search(test_.begin(), test_.end(), v) ? 2
                                                                : 0};
        std::string& row = to[static_cast<size_t>(WriterRank(config_.PartOf(v)))];
        row.append(reinterpret_cast<const char*>(head), sizeof head);
        if (logits) {
          row.append(static_cast<const char*>(out[j].data_ptr()),
                     static_cast<size_t>(classes) * sizeof(float));
        }
        if (emb_dim > 0) {
          row.append(static_cast<const char*>(emb[j].data_ptr()),
                     static_cast<size_t>(emb_dim) * sizeof(float));
        }
      }
    }
    const std::vector<std::string> got = src().Alltoall(std::move(to));
    Written wr;
    wr.emb_dim = emb_dim;
    for (int p = 0; p < config_.num_parts; ++p) {
      if (WriterRank(p) == r) wr.part = p;
    }
    const size_t width = (logits ? static_cast<size_t>(classes) : 0) + emb_dim;
    const size_t row_bytes = 3 * sizeof(int64_t) + width * sizeof(float);
    for (size_t from = 0; from < got.size(); ++from) {
      if (got[from].size() % row_bytes != 0) {
        throw PeerError("inference: rank " + std::to_string(from) + " sent " +
                        std::to_string(got[from].size()) + " bytes, not rows of " +
                        std::to_string(row_bytes));
      }
      for (size_t at = 0; at < got[from].size(); at += row_bytes) {
        int64_t head[3];
        const char* p = got[from].data() + at;
        std::memcpy(head, p, sizeof head);
        p += sizeof head;
        wr.ids.push_back(head[0]);
        wr.labels.push_back(head[1]);
        wr.split.push_back(head[2]);
        auto take = [&](std::vector<float>* v, int64_t floats) {
          const size_t before = v->size();
          v->resize(before + static_cast<size_t>(floats));
          std::memcpy(v->data() + before, p, static_cast<size_t>(floats) * sizeof(float));
          p += floats * static_cast<int64_t>(sizeof(float));
        };
        if (logits) take(&wr.logits, classes);
        if (emb_dim > 0) take(&wr.emb, emb_dim);
      }
    }
    if (wr.part < 0 && !wr.ids.empty()) {
      throw PeerError("inference: rows came to a rank that writes no partition");
    }
    // Rank shares are consecutive runs of the ascending ids.
    for (size_t i = 1; i < wr.ids.size(); ++i) {
      if (wr.ids[i] <= wr.ids[i - 1]) throw PeerError("inference: rows came out of id order");
    }
    return wr;
  }

  // The writer's target rows: input ids, logits, pred; valid and test rows
  // scored (summed over ranks).
  void WritePredictions(const Written& w) {
    const int64_t classes = config_.num_classes, n = w.size();
    for (int p = 0; p < config_.num_parts; ++p) {
      pred_counts_.push_back(src().SumOverRanks({p == w.part ? static_cast<double>(n) : 0.0})[0]);
    }
    if (w.part >= 0) {
      std::vector<int64_t> orig;
      src().OrigIds(w.ids, &orig);
      const torch::Tensor out =
          torch::from_blob(const_cast<float*>(w.logits.data()), {n, classes}, torch::kFloat32);
      const torch::Tensor pred = out.argmax(1).contiguous();
      const fs::path dir = fs::path(o_.save_prediction_path) / ("part" + std::to_string(w.part));
      MakeDirs(dir.string());
      WriteNpy((dir / "ids.npy").string(), orig);
      WriteNpy((dir / "logits.npy").string(), w.logits.data(), {n, classes});
      WriteNpy((dir / "pred.npy").string(), pred.data_ptr<int64_t>(), {n});
      for (int64_t i = 0; i < n; ++i) {
        const int k = static_cast<int>(w.split[static_cast<size_t>(i)]) - 1;
        if (k < 0 || w.labels[static_cast<size_t>(i)] < 0) continue;
        total_[k] += 1;
        correct_[k] += pred.data_ptr<int64_t>()[i] == w.labels[static_cast<size_t>(i)];
      }
    }
    const std::vector<double> sums =
        src().SumOverRanks({correct_[0], total_[0], correct_[1], total_[1]});
    correct_[0] = sums[0];
    total_[0] = sums[1];
    correct_[1] = sums[2];
    total_[1] = sums[3];
  }

  // The writer's rows of type t: DIR/<type>/part<i>/{ids,emb}.npy.
  void WriteEmbeddings(int t, const Written& w) {
    const std::string& name = config_.ntypes[static_cast<size_t>(t)];
    for (int p = 0; p < config_.num_parts; ++p) {
      emb_counts_[name].push_back(
          src().SumOverRanks({p == w.part ? static_cast<double>(w.size()) : 0.0})[0]);
    }
    emb_dim_ = w.emb_dim;
    if (w.part < 0) return;
    std::vector<int64_t> orig;
    src().OrigIds(w.ids, &orig);
    const fs::path dir = fs::path(o_.save_embed_path) / name / ("part" + std::to_string(w.part));
    MakeDirs(dir.string());
    WriteNpy((dir / "ids.npy").string(), orig);
    WriteNpy((dir / "emb.npy").string(), w.emb.data(), {w.size(), w.emb_dim});
  }

  json SavedEpoch() const { return model_meta_.value("saved_epoch", json(nullptr)); }

  json ManifestHead(const char* kind, int64_t nodes) const {
    return {{"format_version", kInferenceManifestVersion},
            {"kind", kind},
            {"graph_name", config_.graph_name},
            {"num_parts", config_.num_parts},
            {"num_nodes", nodes},
            {"nodes", o_.nodes.empty() ? o_.node_mask : "--nodes " + o_.nodes},
            {"fan_out", o_.infer_fan_out.empty() ? "every neighbour" : o_.infer_fan_out},
            {"model_path", o_.restore_model_path},
            {"model", model_meta_},
            {"saved_model_epoch", SavedEpoch()}};
  }

  int Machine(int p) const { return WriterRank(p) / std::max(1, o_.num_trainers); }

  void WriteManifests() {
    if (!lead_) return;
    if (!o_.save_prediction_path.empty()) {
      json shards = json::array();
      for (int p = 0; p < config_.num_parts; ++p) {
        const std::string d = "part" + std::to_string(p);
        shards.push_back({{"part", p},
                          {"machine", Machine(p)},
                          {"num_nodes", static_cast<int64_t>(pred_counts_[static_cast<size_t>(p)])},
                          {"ids", d + "/ids.npy"},
                          {"logits", d + "/logits.npy"},
                          {"pred", d + "/pred.npy"}});
      }
      json m = ManifestHead("predictions", static_cast<int64_t>(chosen_.size()));
      m["ntype"] = config_.target_ntype;
      m["ids"] = "input ids of " + config_.target_ntype + " nodes";
      m["shards"] = shards;
      MakeDirs(o_.save_prediction_path);
      WriteFileAtomic((fs::path(o_.save_prediction_path) / "manifest.json").string(),
                      m.dump(2) + "\n");
    }
    if (!o_.save_embed_path.empty()) {
      json shards = json::array();
      int64_t total = 0;
      for (const std::string& name : config_.ntypes) {
        const std::vector<double>& counts = emb_counts_.at(name);
        for (int p = 0; p < config_.num_parts; ++p) {
          const std::string d = name + "/part" + std::to_string(p);
          const auto n = static_cast<int64_t>(counts[static_cast<size_t>(p)]);
          total += n;
          shards.push_back({{"ntype", name},
                            {"part", p},
                            {"machine", Machine(p)},
                            {"num_nodes", n},
                            {"ids", d + "/ids.npy"},
                            {"emb", d + "/emb.npy"}});
        }
      }
      json m = ManifestHead("embeddings", total);
      m["ntypes"] = config_.ntypes;
      m["ids"] = "input ids of each shard's node type";
      m["embed_layer"] = embed_layer_;
      m["emb_dim"] = emb_dim_;
      m["shards"] = shards;
      MakeDirs(o_.save_embed_path);
      WriteFileAtomic((fs::path(o_.save_embed_path) / "manifest.json").string(), m.dump(2) + "\n");
    }
  }

  json Summary() const {
    json s = {{"mode", "inference"},
              {"model", o_.model},
              {"task", o_.task},
              {"graph_name", config_.graph_name},
              {"ntype", config_.target_ntype},
              {"nodes_written", static_cast<int64_t>(chosen_.size())},
              {"inference_time_s", infer_s_},
              {"total_time_s", watch_.Seconds()},
              {"saved_model_epoch", SavedEpoch()}};
    if (!o_.save_prediction_path.empty()) s["prediction_path"] = o_.save_prediction_path;
    if (!o_.save_embed_path.empty()) {
      s["embed_path"] = o_.save_embed_path;
      s["embed_layer"] = embed_layer_;
    }
    if (total_[0] > 0) s["val_acc"] = correct_[0] / total_[0];
    if (total_[1] > 0) s["test_acc"] = correct_[1] / total_[1];
    return s;
  }

  Stopwatch watch_;
  TrainOptions o_;  // the model's fields come from its file
  const PartitionConfig& config_;
  bool lead_ = false;
  json model_meta_;
  std::unique_ptr<TypedModel> model_;
  std::vector<std::vector<int>> fanouts_;
  std::vector<int64_t> chosen_, valid_, test_;
  std::vector<double> pred_counts_;                        // target rows per partition
  std::map<std::string, std::vector<double>> emb_counts_;  // per type, rows per partition
  int embed_layer_ = 1;                                    // 1-based
  int64_t emb_dim_ = 0;
  double infer_s_ = 0;
  double correct_[2] = {0, 0}, total_[2] = {0, 0};  // valid, test
};

}  // namespace

json RunTypedInference(const TrainOptions& options, const PartitionConfig& config) {
  return TypedInference(options, config).Run();
}

}  // namespace gnn
