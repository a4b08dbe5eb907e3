#include "train/loop/predict.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/npy.h"
#include "common/timer.h"
#include "train/loop/model_file.h"
#include "train/loop/train_env.h"
#include "train/loop/training_loop.h"
#include "train/models/node_model.h"

namespace gnn {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kManifestVersion = 1;

// Rank 0 reads `path` and every rank gets its bytes, or the same error.
std::string ReadOnRankZero(TrainEnv& env, const std::function<std::string()>& read) {
  std::string bytes;
  if (env.rank() == 0) {
    try {
      bytes = "+" + read();
    } catch (const std::exception& e) {
      bytes = std::string("!") + e.what();
    }
  }
  env.BroadcastBytes(&bytes);
  if (bytes.empty() || bytes[0] != '+')
    throw DataError(bytes.empty() ? "no bytes" : bytes.substr(1));
  return bytes.substr(1);
}

// The model file's description, checked against the graph by schema (not
// by name: a model trained on one graph applies to another of its shape).
void TakeModelMeta(const json& meta, const PartitionConfig& config, const std::string& path,
                   TrainOptions* o) {
  if (!meta.is_object() || !meta.contains("model")) {
    throw DataError(path +
                    ": no gnn metadata (_metadata[\"gnn\"]): --inference needs a file "
                    "--save_model wrote, which says what model it holds");
  }
  auto get = [&](const char* key) -> const json& {
    if (!meta.contains(key)) throw DataError(path + ": its metadata has no " + key);
    return meta.at(key);
  };
  try {
    o->model = get("model").get<std::string>();
    if (o->model == "rgcn" || o->model == "rgat") {
      throw ConfigError(path + " holds --model " + o->model +
                        ": --inference applies graphsage, gat and gcn models so far");
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
    const int64_t in = get("in_feats").get<int64_t>();
    if (in != config.feature_dim) {
      throw DataError(path + " takes " + std::to_string(in) + " input features; " +
                      config.graph_name + " has " + std::to_string(config.feature_dim));
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

std::vector<int64_t> ReadRequestedIds(TrainEnv& env, const std::string& path) {
  const std::string bytes = ReadOnRankZero(env, [&] {
    const std::vector<int64_t> ids = ReadNpy<int64_t>(path, {-1});
    return std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int64_t));
  });
  std::vector<int64_t> ids(bytes.size() / sizeof(int64_t));
  std::memcpy(ids.data(), bytes.data(), ids.size() * sizeof(int64_t));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
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

}  // namespace

json RunInference(const TrainOptions& given, const PartitionConfig& config) {
  Stopwatch watch;
  TrainOptions o = given;  // the model's fields come from its file, below
  // Rank 0 writes the manifests and every writer its shards: where these
  // are folders on a shared disk their parents must exist on machine 0,
  // checked before any work (each writer makes its own part<i>).
  for (const auto& [flag, dir] :
       {std::pair<const char*, std::string>{"--save_prediction_path", o.save_prediction_path},
        {"--save_embed_path", o.save_embed_path}}) {
    CheckOutputDir(flag, dir);
  }
  CheckCanWriteFile("--save_embeddings", o.save_embeddings);
  std::unique_ptr<TrainEnv> env =
      o.standalone ? MakeStandaloneEnv(o, config) : MakeDistEnv(o, config);
  const bool lead = env->rank() == 0;

  const std::string bytes = ReadOnRankZero(*env, [&] {
    if (!PathExists(o.restore_model_path)) {
      throw DataError("--restore_model_path " + o.restore_model_path +
                      ": No such file or directory");
    }
    return ReadFile(o.restore_model_path);
  });
  const ModelFile file =
      ParseModelFileBytes(std::vector<char>(bytes.begin(), bytes.end()), o.restore_model_path);
  TakeModelMeta(file.meta, config, o.restore_model_path, &o);
  const int64_t out_dim = file.meta.at("out_feats").get<int64_t>();
  std::shared_ptr<NodeModel> model = MakeNodeModel(o, config.feature_dim, out_dim);
  LoadParams(*model, o.model, file, o.restore_model_path);
  const bool link = o.Kind() == TaskKind::kLink;
  if (link && !o.save_prediction_path.empty()) {
    throw ConfigError("--save_prediction_path: " + o.restore_model_path +
                      " is a --task link model, which has embeddings (--save_embed_path), no "
                      "classes");
  }
  const int layers = model->num_layers();
  const int embed_layer = o.embed_layer > 0 ? o.embed_layer : std::max(1, layers - 1);
  if (embed_layer > layers) {
    throw ConfigError("--embed_layer " + std::to_string(embed_layer) + ": the model has " +
                      std::to_string(layers) + " layers");
  }
  const int capture = o.save_embed_path.empty() ? -1 : embed_layer - 1;

  // Input ids are 0..N-1 (orig_nids is a permutation of them): one outside
  // is named before any work.
  std::vector<int64_t> requested;
  if (!o.nodes.empty()) {
    requested = ReadRequestedIds(*env, o.nodes);
    for (int64_t id :
         {requested.empty() ? 0 : requested.front(), requested.empty() ? 0 : requested.back()}) {
      if (id < 0 || id >= config.num_nodes) {
        throw DataError("--nodes " + o.nodes + ": id " + std::to_string(id) + " is not a node of " +
                        config.graph_name + " (input ids are 0.." +
                        std::to_string(config.num_nodes - 1) + ")");
      }
    }
  }
  InferenceShard shard = env->Shard();
  const std::vector<int64_t> rows =
      shard.part >= 0 ? ChooseRows(o, shard, requested) : std::vector<int64_t>();
  const double written = env->SumOverRanks(static_cast<double>(rows.size()));
  GNN_LOG(kInfo) << "inference with " << o.model << " (" << layers << " layers, "
                 << file.params.size() << " tensors from " << o.restore_model_path << ") over "
                 << config.num_nodes << " nodes; writing " << static_cast<int64_t>(written);
  Stopwatch infer_watch;
  {
    AllCoresWhileIdle all_cores(o);
    env->InferShard(*model, capture, &shard);
  }
  const double infer_s = infer_watch.Seconds();

  // This writer's shard: its rows, in the partition's (new id) order.
  double correct[2] = {0, 0}, total[2] = {0, 0};
  if (shard.part >= 0) {
    torch::Tensor pick = torch::from_blob(const_cast<int64_t*>(rows.data()),
                                          {static_cast<int64_t>(rows.size())}, torch::kInt64);
    std::vector<int64_t> ids(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) ids[i] = shard.orig_ids[rows[i]];
    const std::string part = PartDir(shard.part);
    if (!o.save_prediction_path.empty()) {
      const torch::Tensor logits = shard.logits.index_select(0, pick).contiguous();
      const torch::Tensor pred = logits.argmax(1).contiguous();
      const fs::path dir = fs::path(o.save_prediction_path) / part;
      MakeDirs(dir.string());
      WriteNpy((dir / "ids.npy").string(), ids);
      WriteNpy((dir / "logits.npy").string(), logits.data_ptr<float>(),
               {logits.size(0), logits.size(1)});
      WriteNpy((dir / "pred.npy").string(), pred.data_ptr<int64_t>(), {pred.size(0)});
      // The written predictions of labelled valid/test nodes, scored.
      const int64_t* p = pred.data_ptr<int64_t>();
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t label = shard.labels[rows[i]];
        for (int k = 0; k < 2; ++k) {
          if (label < 0 || !shard.masks[k + 1][rows[i]]) continue;
          total[k] += 1;
          correct[k] += p[i] == label;
        }
      }
    }
    if (!o.save_embed_path.empty()) {
      const torch::Tensor emb = shard.emb.index_select(0, pick).contiguous();
      const fs::path dir = fs::path(o.save_embed_path) / part;
      MakeDirs(dir.string());
      WriteNpy((dir / "ids.npy").string(), ids);
      WriteNpy((dir / "emb.npy").string(), emb.data_ptr<float>(), {emb.size(0), emb.size(1)});
    }
  }
  // Every shard is written before the manifests say so.
  std::vector<double> counts(static_cast<size_t>(config.num_parts), 0.0);
  for (int p = 0; p < config.num_parts; ++p) {
    counts[p] = env->SumOverRanks(shard.part == p ? static_cast<double>(rows.size()) : 0.0);
  }
  for (int k = 0; k < 2; ++k) {
    correct[k] = env->SumOverRanks(correct[k]);
    total[k] = env->SumOverRanks(total[k]);
  }
  json model_meta = file.meta;
  const json saved_epoch = file.meta.value("saved_epoch", json(nullptr));
  auto manifest = [&](const std::string& dir, bool predictions) {
    json shards = json::array();
    for (int p = 0; p < config.num_parts; ++p) {
      json s = {{"part", p},
                {"machine", env->WriterMachine(p)},
                {"num_nodes", static_cast<int64_t>(counts[p])},
                {"ids", PartDir(p) + "/ids.npy"}};
      if (predictions) {
        s["logits"] = PartDir(p) + "/logits.npy";
        s["pred"] = PartDir(p) + "/pred.npy";
      } else {
        s["emb"] = PartDir(p) + "/emb.npy";
      }
      shards.push_back(s);
    }
    json m = {{"format_version", kManifestVersion},
              {"kind", predictions ? "predictions" : "embeddings"},
              {"graph_name", config.graph_name},
              {"num_parts", config.num_parts},
              {"num_nodes", static_cast<int64_t>(written)},
              {"nodes", o.nodes.empty() ? o.node_mask : "--nodes " + o.nodes},
              {"model_path", o.restore_model_path},
              {"model", model_meta},
              {"saved_model_epoch", saved_epoch},
              {"shards", shards}};
    if (!predictions) m["embed_layer"] = embed_layer;
    MakeDirs(dir);
    WriteFileAtomic((fs::path(dir) / "manifest.json").string(), m.dump(2) + "\n");
  };
  if (lead && !o.save_prediction_path.empty()) manifest(o.save_prediction_path, true);
  if (lead && !o.save_embed_path.empty()) manifest(o.save_embed_path, false);
  if (!o.save_embeddings.empty()) {
    AllCoresWhileIdle all_cores(o);
    torch::Tensor emb = env->Embeddings(*model).contiguous();
    if (lead) WriteNpy(o.save_embeddings, emb.data_ptr<float>(), {emb.size(0), emb.size(1)});
  }
  json summary = {{"mode", "inference"},
                  {"model", o.model},
                  {"task", o.task},
                  {"graph_name", config.graph_name},
                  {"nodes_written", static_cast<int64_t>(written)},
                  {"inference_time_s", infer_s},
                  {"total_time_s", watch.Seconds()},
                  {"saved_model_epoch", saved_epoch}};
  if (!o.save_prediction_path.empty()) {
    summary["prediction_path"] = o.save_prediction_path;
    if (total[0] > 0) summary["val_acc"] = correct[0] / total[0];
    if (total[1] > 0) summary["test_acc"] = correct[1] / total[1];
  }
  if (!o.save_embed_path.empty()) {
    summary["embed_path"] = o.save_embed_path;
    summary["embed_layer"] = embed_layer;
  }
  GNN_LOG(kInfo) << "inference done in " << infer_s << " s: " << static_cast<int64_t>(written)
                 << " nodes written";
  return summary;
}

}  // namespace gnn
