#include "train/loop/predict.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/npy.h"
#include "common/timer.h"
#include "partition/local_partition.h"
#include "sampling/sampler.h"
#include "train/loop/model_file.h"
#include "train/loop/scores.h"
#include "train/loop/task.h"
#include "train/loop/train_env.h"
#include "train/loop/training_loop.h"
#include "train/models/node_model.h"

namespace gnn {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// This rank's inference helpers over its TrainEnv.
BroadcastFn Broadcast(TrainEnv& env) {
  return [&env](std::string* bytes) { env.BroadcastBytes(bytes); };
}

// The model file's description, checked against the graph by schema (not
// by name: a model trained on one graph applies to another of its shape).
// An edge model's decoder against the graph's edge labels: predictions are
// per labelled edge, of the same kind and classes.
void CheckEdgeModel(const PartitionConfig& config, const std::string& path, int64_t classes,
                    const std::string& task) {
  const bool want_classes = task == "edge_class";
  const std::string predicts = want_classes ? std::to_string(classes) + " classes per edge"
                                            : std::string("a value per edge");
  if (!config.edge_labels) {
    throw DataError(path + " is a --task " + task + " model (" + predicts + "); " +
                    config.graph_name + " has no edge labels to predict");
  }
  const bool has_classes = config.edge_label_kind == LabelKind::kClass;
  if (want_classes != has_classes || (has_classes && classes != config.num_edge_classes)) {
    throw DataError(path + " predicts " + predicts + "; " + config.graph_name + "'s edge labels " +
                    (has_classes ? "are " + std::to_string(config.num_edge_classes) + " classes"
                                 : std::string("are values")));
  }
}

void TakeModelMeta(const json& meta, const PartitionConfig& config, const std::string& path,
                   TrainOptions* o) {
  auto get = [&](const char* key) -> const json& { return ModelMetaField(meta, path, key); };
  try {
    o->model = get("model").get<std::string>();
    if (o->model == "rgcn" || o->model == "rgat") {
      throw DataError(path + " holds a --model " + o->model + " model (node and edge types); " +
                      config.graph_name +
                      " has one node type: apply it to a heterogeneous partitioning");
    }
    if (o->model != "graphsage" && o->model != "gat" && o->model != "gcn") {
      throw DataError(path + ": unknown model '" + o->model + "'");
    }
    o->task = get("task").get<std::string>();
    o->num_hidden = get("num_hidden").get<int64_t>();
    o->num_layers = get("num_layers").get<int>();
    if (meta.contains("fan_out")) {
      std::string fan;
      for (const json& f : meta.at("fan_out")) fan += (fan.empty() ? "" : ",") + f.dump();
      o->fan_out = fan;
    }
    if (o->model == "gat") {
      o->num_heads = get("num_heads").get<int>();
      o->num_out_heads = get("num_out_heads").get<int>();
      o->residual = get("residual").get<bool>();
    }
    o->use_edge_weight = meta.value("edge_weight", false);
    o->edge_feat_mp_op = meta.value("edge_feat_mp_op", std::string("none"));
    o->edge_feat_dim = meta.value("edge_feat_dim", int64_t{0});
    if (o->edge_feat_dim > 0 && (config.hetero() || config.edge_feature_dim != o->edge_feat_dim)) {
      throw DataError(path + " reads " + std::to_string(o->edge_feat_dim) +
                      " features per edge (--edge_feat_mp_op " + o->edge_feat_mp_op + "); " +
                      config.graph_name + " has " +
                      std::to_string(config.hetero() ? 0 : config.edge_feature_dim));
    }
    if (o->use_edge_weight && (config.hetero() || config.edge_feature_dim != 1)) {
      throw DataError(path + " weighs messages by edge weights; " + config.graph_name +
                      (config.edge_feature_dim == 0
                           ? std::string(" has no edge data")
                           : " has " + std::to_string(config.edge_feature_dim) +
                                 " features per edge, not one weight"));
    }
    const int64_t in = get("in_feats").get<int64_t>();
    if (in != config.feature_dim) {
      throw DataError(path + " takes " + std::to_string(in) + " input features; " +
                      config.graph_name + " has " + std::to_string(config.feature_dim));
    }
    const bool edge_task = o->task == "edge_class" || o->task == "edge_regression";
    if (edge_task) {
      CheckEdgeModel(config, path, get("edge_classes").get<int64_t>(), o->task);
      o->decoder_edge_dim = meta.value("decoder_edge_feat_dim", int64_t{0});
      const int64_t has = config.hetero() ? 0 : config.edge_feature_dim;
      if (o->decoder_edge_dim > 0 && has != o->decoder_edge_dim) {
        throw DataError(path + "'s decoder reads " + std::to_string(o->decoder_edge_dim) +
                        " features per edge; " + config.graph_name + " has " + std::to_string(has));
      }
    }
    const bool rows_task = o->task == "multilabel" || o->task == "node_regression";
    if (!edge_task && (rows_task != (config.label_kind != LabelKind::kClass) ||
                       (rows_task && o->task != LabelTaskName(config.label_kind)))) {
      throw DataError(path + " was trained for --task " + o->task + "; " + config.graph_name +
                      (config.label_kind == LabelKind::kClass
                           ? std::string(" has class ids")
                           : " has " + std::string(LabelKindName(config.label_kind)) +
                                 " label rows (--task " + LabelTaskName(config.label_kind) + ")"));
    }
    if (rows_task && get("out_feats").get<int64_t>() != config.label_width) {
      throw DataError(path + " predicts " + std::to_string(get("out_feats").get<int64_t>()) +
                      " values per node; " + config.graph_name + " has " +
                      std::to_string(config.label_width) + " label columns");
    }
    if (o->task == "node") {
      const int64_t classes = get("n_classes").get<int64_t>();
      if (config.num_classes > 0 && classes != config.num_classes) {
        throw DataError(path + " predicts " + std::to_string(classes) + " classes; " +
                        config.graph_name + " has " + std::to_string(config.num_classes));
      }
    }
  } catch (const json::exception& e) {
    throw DataError(path + ": malformed metadata (" + e.what() + ")");
  }
  o->Kind();  // a task it does not know
}

// The rows of the shard to write (positions in it), as --nodes or
// --node_mask choose them.
std::vector<int64_t> ChooseRows(const TrainOptions& o, const InferenceShard& s,
                                const std::vector<int64_t>& requested) {
  std::vector<int64_t> rows;
  if (!o.nodes.empty()) {
    for (int64_t i = 0; i < s.size(); ++i) {
      if (std::binary_search(requested.begin(), requested.end(), s.orig_ids[i])) rows.push_back(i);
    }
    return rows;
  }
  const int mask = o.node_mask == "train"   ? 0
                   : o.node_mask == "valid" ? 1
                   : o.node_mask == "test"  ? 2
                                            : -1;
  for (int64_t i = 0; i < s.size(); ++i) {
    if (mask < 0 || s.masks[mask][i]) rows.push_back(i);
  }
  return rows;
}

std::string PartDir(int p) { return "part" + std::to_string(p); }

// One --inference run: the steps of RunInference, in order.
class Inference {
 public:
  Inference(const TrainOptions& given, const PartitionConfig& config)
      : o_(given), config_(config) {}

  json Run() {
    CheckOutputs();
    env_ = o_.standalone ? MakeStandaloneEnv(o_, config_) : MakeDistEnv(o_, config_);
    lead_ = env_->rank() == 0;
    LoadModel();
    if (o_.EdgeTask()) return RunEdges();
    ChooseNodes();
    GNN_LOG(kInfo) << "inference with " << o_.model << " (" << model_->num_layers()
                   << " layers, from " << o_.restore_model_path << ") over " << config_.num_nodes
                   << " nodes; writing " << static_cast<int64_t>(written_);
    Stopwatch infer_watch;
    {
      AllCoresWhileIdle all_cores(o_);
      env_->InferShard(*model_, o_.save_embed_path.empty() ? -1 : embed_layer_ - 1, &shard_);
    }
    infer_s_ = infer_watch.Seconds();
    if (shard_.part >= 0) WriteShard();
    WriteManifests();
    if (!o_.save_embeddings.empty()) {
      AllCoresWhileIdle all_cores(o_);
      torch::Tensor emb = env_->Embeddings(*model_).contiguous();
      if (lead_) WriteNpy(o_.save_embeddings, emb.data_ptr<float>(), {emb.size(0), emb.size(1)});
    }
    GNN_LOG(kInfo) << "inference done in " << infer_s_ << " s: " << static_cast<int64_t>(written_)
                   << " nodes written";
    return Summary();
  }

 private:
  // An edge model (--task edge_class / edge_regression): every node's
  // embedding (a collective), then each writer decodes the labelled edges
  // its partition stores (--node_mask picks them by split) and writes them
  // keyed by input edge id: part<i>/edge_ids.npy, logits.npy and pred.npy
  // (int64 class), or pred.npy (float32 value).
  json RunEdges() {
    if (!o_.nodes.empty() || !o_.save_embed_path.empty() || !o_.save_embeddings.empty()) {
      throw ConfigError(o_.restore_model_path + " is a --task " + o_.task +
                        " model: its inference writes a prediction per labelled edge "
                        "(--save_prediction_path; --node_mask picks the edges by split, "
                        "--edge_ids lists them), not --nodes, --save_embed_path or "
                        "--save_embeddings");
    }
    if (!o_.infer_fan_out.empty()) {
      throw ConfigError("--fan_out " + o_.infer_fan_out + ": " + o_.restore_model_path +
                        " is a --task " + o_.task +
                        " model, whose inference takes every neighbour of every node "
                        "(layer-wise); leave --fan_out unset");
    }
    // --edge_ids: the listed input edges, labelled or not (an id that is
    // not an edge of the graph is named before any work).
    std::vector<int64_t> listed;
    if (!o_.edge_ids.empty())
      listed = ReadRequestedIds(env_->rank(), Broadcast(*env_), o_.edge_ids);
    shard_ = env_->Shard();
    const bool classes = o_.Kind() == TaskKind::kEdgeClass;
    LabeledEdgeRows edges;
    std::vector<int64_t> pick;  // positions in `edges` to write
    if (shard_.part >= 0) {
      edges = ReadLabeledEdges(config_, shard_.part, o_.verify_checksums, o_.decoder_edge_dim > 0);
      pick = ChooseEdges(o_, edges, listed);
    }
    written_ = env_->SumOverRanks(static_cast<double>(pick.size()));
    CheckListedEdges(o_, config_, listed, written_);
    GNN_LOG(kInfo) << "inference with " << o_.model << " (" << model_->num_layers()
                   << " layers and an edge decoder, from " << o_.restore_model_path << ") over "
                   << config_.num_nodes << " nodes; writing " << static_cast<int64_t>(written_)
                   << " labelled edges";
    Stopwatch infer_watch;
    torch::Tensor emb;
    {
      AllCoresWhileIdle all_cores(o_);
      emb = env_->AllNodeOutputs(*model_);
    }
    if (shard_.part >= 0) {
      torch::NoGradGuard no_grad;
      auto take = [&](std::vector<int64_t>& v) {
        return torch::from_blob(v.data(), {static_cast<int64_t>(v.size())}, torch::kInt64)
            .index_select(0, torch::from_blob(pick.data(), {static_cast<int64_t>(pick.size())},
                                              torch::kInt64));
      };
      const int64_t w = edges.feature_dim;
      const torch::Tensor features =
          w == 0 ? torch::Tensor()
                 : torch::from_blob(edges.features.data(),
                                    {static_cast<int64_t>(edges.split.size()), w}, torch::kFloat32)
                       .index_select(
                           0, torch::from_blob(pick.data(), {static_cast<int64_t>(pick.size())},
                                               torch::kInt64));
      const torch::Tensor out =
          DecodeEdges(*model_, emb, take(edges.heads), take(edges.tails), classes, features)
              .contiguous();
      WriteEdgePredictions((fs::path(o_.save_prediction_path) / PartDir(shard_.part)).string(),
                           edges, pick, out, classes, correct_, total_);
    }
    infer_s_ = infer_watch.Seconds();
    std::vector<double> counts(static_cast<size_t>(config_.num_parts), 0.0);
    for (int p = 0; p < config_.num_parts; ++p) {
      counts[p] = env_->SumOverRanks(shard_.part == p ? static_cast<double>(pick.size()) : 0.0);
    }
    for (int k = 0; k < 2; ++k) {
      correct_[k] = env_->SumOverRanks(correct_[k]);
      total_[k] = env_->SumOverRanks(total_[k]);
    }
    if (lead_) {
      WriteEdgeManifest(o_, config_, model_meta_, static_cast<int64_t>(written_), counts,
                        [&](int p) { return env_->WriterMachine(p); });
    }
    GNN_LOG(kInfo) << "inference done in " << infer_s_ << " s: " << static_cast<int64_t>(written_)
                   << " edges written";
    json summary = {{"mode", "inference"},
                    {"model", o_.model},
                    {"task", o_.task},
                    {"graph_name", config_.graph_name},
                    {"edges_written", static_cast<int64_t>(written_)},
                    {"inference_time_s", infer_s_},
                    {"total_time_s", watch_.Seconds()},
                    {"saved_model_epoch", SavedEpoch()},
                    {"prediction_path", o_.save_prediction_path}};
    AddEdgeFigures(classes, correct_, total_, &summary);
    return summary;
  }

  // Rank 0 writes the manifests and every writer its shards: where these
  // are folders on a shared disk their parents must exist on machine 0,
  // checked before any work (each writer makes its own part<i>).
  void CheckOutputs() const {
    CheckOutputDir("--save_prediction_path", o_.save_prediction_path);
    CheckOutputDir("--save_embed_path", o_.save_embed_path);
    CheckCanWriteFile("--save_embeddings", o_.save_embeddings);
  }

  // Rank 0 reads the file, every rank checks and loads it.
  void LoadModel() {
    const std::string bytes = ReadModelBytes(env_->rank(), Broadcast(*env_), o_.restore_model_path);
    RestoredModel restored = RestoreModel(std::vector<char>(bytes.begin(), bytes.end()),
                                          o_.restore_model_path, config_, &o_);
    model_ = restored.model;
    model_meta_ = restored.meta;
    if (o_.ReadsEdgeData()) env_->ReadEdgeData();
    embed_layer_ = restored.embed_layer;
    if (o_.Kind() == TaskKind::kLink && !o_.save_prediction_path.empty()) {
      throw ConfigError("--save_prediction_path: " + o_.restore_model_path +
                        " is a --task link model, which has embeddings (--save_embed_path), no "
                        "classes");
    }
  }

  // --nodes / --node_mask: the rows this rank writes. Input ids are
  // 0..N-1 (orig_nids is a permutation of them), or the user's own
  // (gnn-partition --node_ids): an id that is not a node is named before
  // any work.
  void ChooseNodes() {
    std::vector<int64_t> requested;
    if (!o_.nodes.empty()) {
      requested = ReadRequestedIds(env_->rank(), Broadcast(*env_), o_.nodes);
      for (int64_t id :
           {requested.empty() ? 0 : requested.front(), requested.empty() ? 0 : requested.back()}) {
        if (!config_.user_node_ids && (id < 0 || id >= config_.num_nodes)) {
          throw DataError("--nodes " + o_.nodes + ": id " + std::to_string(id) +
                          " is not a node of " + config_.graph_name + " (input ids are 0.." +
                          std::to_string(config_.num_nodes - 1) + ")");
        }
      }
    }
    shard_ = env_->Shard();
    // The files speak the user's ids when the partitions keep them.
    if (shard_.part >= 0 && config_.user_node_ids) {
      shard_.orig_ids = LoadUserNodeIds(config_, shard_.part);
    }
    if (shard_.part >= 0) rows_ = ChooseRows(o_, shard_, requested);
    written_ = env_->SumOverRanks(static_cast<double>(rows_.size()));
    if (!o_.nodes.empty() && written_ < static_cast<double>(requested.size())) {
      throw DataError(
          "--nodes " + o_.nodes + ": " +
          std::to_string(requested.size() - static_cast<size_t>(written_)) + " of its " +
          std::to_string(requested.size()) + " ids are not nodes of " + config_.graph_name +
          (config_.user_node_ids ? " (its ids are those of gnn-partition --node_ids)" : ""));
    }
  }

  // This writer's shard: its rows, in the partition's (new id) order; the
  // written predictions of labelled valid/test nodes scored.
  void WriteShard() {
    torch::Tensor pick =
        torch::from_blob(rows_.data(), {static_cast<int64_t>(rows_.size())}, torch::kInt64);
    std::vector<int64_t> ids(rows_.size());
    for (size_t i = 0; i < rows_.size(); ++i) ids[i] = shard_.orig_ids[rows_[i]];
    const std::string part = PartDir(shard_.part);
    if (!o_.save_prediction_path.empty() && config_.label_kind != LabelKind::kClass) {
      WriteRowPredictions(pick, ids, part);
    } else if (!o_.save_prediction_path.empty()) {
      const torch::Tensor logits = shard_.logits.index_select(0, pick).contiguous();
      const torch::Tensor pred = logits.argmax(1).contiguous();
      const fs::path dir = fs::path(o_.save_prediction_path) / part;
      MakeDirs(dir.string());
      WriteNpy((dir / "ids.npy").string(), ids);
      WriteNpy((dir / "logits.npy").string(), logits.data_ptr<float>(),
               {logits.size(0), logits.size(1)});
      WriteNpy((dir / "pred.npy").string(), pred.data_ptr<int64_t>(), {pred.size(0)});
      const int64_t* p = pred.data_ptr<int64_t>();
      for (size_t i = 0; i < rows_.size(); ++i) {
        const int64_t label = shard_.labels[rows_[i]];
        for (int k = 0; k < 2; ++k) {
          if (label < 0 || !shard_.masks[k + 1][rows_[i]]) continue;
          total_[k] += 1;
          correct_[k] += p[i] == label;
        }
      }
    }
    if (!o_.save_embed_path.empty()) {
      const torch::Tensor emb = shard_.emb.index_select(0, pick).contiguous();
      const fs::path dir = fs::path(o_.save_embed_path) / part;
      MakeDirs(dir.string());
      WriteNpy((dir / "ids.npy").string(), ids);
      WriteNpy((dir / "emb.npy").string(), emb.data_ptr<float>(), {emb.size(0), emb.size(1)});
    }
  }

  // A multi-label shard: logits, prob (sigmoid) and pred (prob >= 0.5, uint8);
  // a regression shard: pred, the predicted values. The valid/test rows'
  // outputs and labels are kept for the summary's figures.
  void WriteRowPredictions(const torch::Tensor& pick, const std::vector<int64_t>& ids,
                           const std::string& part) {
    const bool multilabel = config_.label_kind == LabelKind::kMultilabel;
    const torch::Tensor out = shard_.logits.index_select(0, pick).contiguous();
    const fs::path dir = fs::path(o_.save_prediction_path) / part;
    MakeDirs(dir.string());
    WriteNpy((dir / "ids.npy").string(), ids);
    const std::vector<int64_t> shape = {out.size(0), out.size(1)};
    if (multilabel) {
      const torch::Tensor prob = torch::sigmoid(out).contiguous();
      const torch::Tensor pred = prob.ge(0.5).to(torch::kUInt8).contiguous();
      WriteNpy((dir / "logits.npy").string(), out.data_ptr<float>(), shape);
      WriteNpy((dir / "prob.npy").string(), prob.data_ptr<float>(), shape);
      WriteNpy((dir / "pred.npy").string(), pred.data_ptr<uint8_t>(), shape);
    } else {
      WriteNpy((dir / "pred.npy").string(), out.data_ptr<float>(), shape);
    }
    const int64_t w = config_.label_width;
    torch::Tensor targets =
        torch::from_blob(shard_.targets.data(), {shard_.size(), w}, torch::kFloat32);
    for (int k = 0; k < 2; ++k) {
      std::vector<int64_t> keep;
      for (int64_t i = 0; i < pick.size(0); ++i) {
        if (shard_.masks[k + 1][rows_[i]]) keep.push_back(i);
      }
      torch::Tensor at =
          torch::from_blob(keep.data(), {static_cast<int64_t>(keep.size())}, torch::kInt64);
      scored_[k] =
          torch::cat({out.index_select(0, at), targets.index_select(0, pick).index_select(0, at)},
                     1)
              .contiguous();
    }
  }

  // The multi-label ROC-AUC / regression RMSE of the written valid and
  // test rows, from every writer's (a collective).
  void ScoreRows() {
    const int64_t w = config_.label_width;
    for (int k = 0; k < 2; ++k) {
      if (!scored_[k].defined()) scored_[k] = torch::empty({0, 2 * w}, torch::kFloat32);
      const torch::Tensor all = env_->GatherRows(scored_[k]).contiguous();
      const torch::Tensor out = all.slice(1, 0, w).contiguous();
      const torch::Tensor y = all.slice(1, w).contiguous();
      figure_rows_[k] = all.size(0);
      figure_[k] = config_.label_kind == LabelKind::kMultilabel
                       ? MeanRocAuc(out.data_ptr<float>(), y.data_ptr<float>(), all.size(0), w)
                       : Rmse(out.data_ptr<float>(), y.data_ptr<float>(), all.size(0), w);
    }
  }

  // After every shard is written (the sums are collectives), rank 0 says
  // what they are.
  void WriteManifests() {
    if (!o_.save_prediction_path.empty() && config_.label_kind != LabelKind::kClass) ScoreRows();
    std::vector<double> counts(static_cast<size_t>(config_.num_parts), 0.0);
    for (int p = 0; p < config_.num_parts; ++p) {
      counts[p] = env_->SumOverRanks(shard_.part == p ? static_cast<double>(rows_.size()) : 0.0);
    }
    for (int k = 0; k < 2; ++k) {
      correct_[k] = env_->SumOverRanks(correct_[k]);
      total_[k] = env_->SumOverRanks(total_[k]);
    }
    if (!lead_) return;
    for (const bool predictions : {true, false}) {
      const std::string& dir = predictions ? o_.save_prediction_path : o_.save_embed_path;
      if (dir.empty()) continue;
      json shards = json::array();
      for (int p = 0; p < config_.num_parts; ++p) {
        json s = {{"part", p},
                  {"machine", env_->WriterMachine(p)},
                  {"num_nodes", static_cast<int64_t>(counts[p])},
                  {"ids", PartDir(p) + "/ids.npy"}};
        if (predictions && config_.label_kind == LabelKind::kRegression) {
          s["pred"] = PartDir(p) + "/pred.npy";
        } else if (predictions) {
          s["logits"] = PartDir(p) + "/logits.npy";
          if (config_.label_kind == LabelKind::kMultilabel) s["prob"] = PartDir(p) + "/prob.npy";
          s["pred"] = PartDir(p) + "/pred.npy";
        } else {
          s["emb"] = PartDir(p) + "/emb.npy";
        }
        shards.push_back(s);
      }
      json m = {{"format_version", kInferenceManifestVersion},
                {"kind", predictions ? "predictions" : "embeddings"},
                {"graph_name", config_.graph_name},
                {"num_parts", config_.num_parts},
                {"num_nodes", static_cast<int64_t>(written_)},
                {"nodes", o_.nodes.empty() ? o_.node_mask : "--nodes " + o_.nodes},
                {"ids", config_.user_node_ids ? "node_ids" : "input rows"},
                {"model_path", o_.restore_model_path},
                {"model", model_meta_},
                {"saved_model_epoch", SavedEpoch()},
                {"shards", shards}};
      if (!predictions) m["embed_layer"] = embed_layer_;
      MakeDirs(dir);
      WriteFileAtomic((fs::path(dir) / "manifest.json").string(), m.dump(2) + "\n");
    }
  }

  json SavedEpoch() const { return model_meta_.value("saved_epoch", json(nullptr)); }

  json Summary() const {
    json summary = {{"mode", "inference"},
                    {"model", o_.model},
                    {"task", o_.task},
                    {"graph_name", config_.graph_name},
                    {"nodes_written", static_cast<int64_t>(written_)},
                    {"inference_time_s", infer_s_},
                    {"total_time_s", watch_.Seconds()},
                    {"saved_model_epoch", SavedEpoch()}};
    if (!o_.save_prediction_path.empty()) {
      summary["prediction_path"] = o_.save_prediction_path;
      if (config_.label_kind != LabelKind::kClass) {
        const std::string key = config_.label_kind == LabelKind::kMultilabel ? "rocauc" : "rmse";
        if (figure_rows_[0] > 0) summary["val_" + key] = figure_[0];
        if (figure_rows_[1] > 0) summary["test_" + key] = figure_[1];
      } else {
        if (total_[0] > 0) summary["val_acc"] = correct_[0] / total_[0];
        if (total_[1] > 0) summary["test_acc"] = correct_[1] / total_[1];
      }
    }
    if (!o_.save_embed_path.empty()) {
      summary["embed_path"] = o_.save_embed_path;
      summary["embed_layer"] = embed_layer_;
    }
    return summary;
  }

  Stopwatch watch_;
  TrainOptions o_;  // the model's fields come from its file (LoadModel)
  const PartitionConfig& config_;
  std::unique_ptr<TrainEnv> env_;
  bool lead_ = false;
  json model_meta_;
  std::shared_ptr<NodeModel> model_;
  int embed_layer_ = 1;
  InferenceShard shard_;
  std::vector<int64_t> rows_;  // of shard_ to write
  double written_ = 0;         // rows every writer writes
  double infer_s_ = 0;
  double correct_[2] = {0, 0}, total_[2] = {0, 0};  // valid, test
  // Label rows: each written valid/test row's output and labels side by
  // side (ScoreRows), and their figures.
  torch::Tensor scored_[2];
  double figure_[2] = {0, 0};
  int64_t figure_rows_[2] = {0, 0};
};

}  // namespace

std::string ReadOnRankZero(int rank, const BroadcastFn& broadcast,
                           const std::function<std::string()>& read) {
  std::string bytes;
  if (rank == 0) {
    try {
      bytes = "+" + read();
    } catch (const std::exception& e) {
      bytes = std::string("!") + e.what();
    }
  }
  broadcast(&bytes);
  if (bytes.empty() || bytes[0] != '+')
    throw DataError(bytes.empty() ? "no bytes" : bytes.substr(1));
  return bytes.substr(1);
}

std::string ReadModelBytes(int rank, const BroadcastFn& broadcast, const std::string& path) {
  return ReadOnRankZero(rank, broadcast, [&] {
    if (!PathExists(path)) {
      throw DataError("--restore_model_path " + path + ": No such file or directory");
    }
    return ReadFile(path);
  });
}

std::vector<int64_t> ReadRequestedIds(int rank, const BroadcastFn& broadcast,
                                      const std::string& path) {
  const std::string bytes = ReadOnRankZero(rank, broadcast, [&] {
    const std::vector<int64_t> ids = ReadNpy<int64_t>(path, {-1});
    return std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int64_t));
  });
  std::vector<int64_t> ids(bytes.size() / sizeof(int64_t));
  std::memcpy(ids.data(), bytes.data(), ids.size() * sizeof(int64_t));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// Before any work: DIR is a folder that can hold manifest.json, or does
// not exist yet and its parent can hold it (made when written).
void CheckOutputDir(const std::string& flag, const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    CheckCanWriteFile(flag, (fs::path(dir) / "manifest.json").string());
  } else {
    CheckCanWriteFile(flag, dir);
  }
}

const json& ModelMetaField(const json& meta, const std::string& path, const char* key) {
  if (!meta.is_object() || !meta.contains("model")) {
    throw DataError(path +
                    ": no gnn metadata (_metadata[\"gnn\"]): --inference needs a file "
                    "--save_model wrote, which says what model it holds");
  }
  if (!meta.contains(key)) throw DataError(path + ": its metadata has no " + key);
  return meta.at(key);
}

RestoredModel RestoreModel(const std::vector<char>& bytes, const std::string& path,
                           const PartitionConfig& config, TrainOptions* o) {
  const ModelFile file = ParseModelFileBytes(bytes, path);
  TakeModelMeta(file.meta, config, path, o);
  RestoredModel r;
  r.meta = file.meta;
  r.model = MakeNodeModel(*o, config.feature_dim, file.meta.at("out_feats").get<int64_t>());
  if (o->EdgeTask()) {
    const int64_t classes = file.meta.at("edge_classes").get<int64_t>();
    AttachEdgeDecoder(*r.model, o->num_hidden, classes > 0 ? classes : 1, o->decoder_edge_dim);
  }
  LoadParams(*r.model, o->model, file, path);
  r.model->eval();
  const int layers = r.model->num_layers();
  const size_t fanouts = o->infer_fan_out.empty() ? 0 : ParseFanouts(o->infer_fan_out).size();
  if (fanouts > 0 && static_cast<int>(fanouts) != layers) {
    throw ConfigError("--fan_out '" + o->infer_fan_out + "' has " + std::to_string(fanouts) +
                      " entries; the model in " + path + " has " + std::to_string(layers) +
                      " layers");
  }
  r.embed_layer = o->embed_layer > 0 ? o->embed_layer : std::max(1, layers - 1);
  if (r.embed_layer > layers) {
    throw ConfigError("--embed_layer " + std::to_string(r.embed_layer) + ": the model has " +
                      std::to_string(layers) + " layers");
  }
  return r;
}

json RunInference(const TrainOptions& options, const PartitionConfig& config) {
  return Inference(options, config).Run();
}

}  // namespace gnn
