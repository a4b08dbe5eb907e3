#include "train/serve/served_model.h"

#include <torch/torch.h>

#include "common/error.h"
#include "common/fs.h"
#include "common/random.h"
#include "net/ip_config.h"
#include "train/loop/task.h"
#include "train/models/aggregate.h"
#include "train/models/node_model.h"

namespace gnn {

namespace {

// The model's forward pass over a mini-batch, layer by layer, keeping the
// embed layer's rows when asked (as gnn-train --inference does).
class TorchRunner : public ModelRunner {
 public:
  TorchRunner(std::shared_ptr<NodeModel> model, int embed_layer, bool dot_product)
      : model_(std::move(model)), embed_layer_(embed_layer), dot_product_(dot_product) {}

  void FirstLayer(const MiniBatch& mb, std::vector<float>* out) override {
    const torch::Tensor h = PredictFirstLayer(*model_, mb).contiguous();
    out->assign(h.data_ptr<float>(), h.data_ptr<float>() + h.numel());
  }

  void UpperLayers(const std::vector<Block>& blocks, const float* h1, int64_t rows, bool embedding,
                   Answer* out) override {
    torch::NoGradGuard no_grad;
    const int capture = embedding ? embed_layer_ - 1 : -1;
    torch::Tensor h = torch::from_blob(
        const_cast<float*>(h1), {blocks.at(1).num_src(), model_->OutDim(0)}, torch::kFloat32);
    torch::Tensor emb;
    if (capture == 0) emb = h.slice(0, 0, rows).contiguous();
    for (int l = 1; l < model_->num_layers(); ++l) {
      h = model_->ForwardLayer(l, ToTensors(blocks[static_cast<size_t>(l)]), h);
      if (l == capture) emb = h.slice(0, 0, rows).contiguous();
    }
    Fill(h.slice(0, 0, rows).contiguous(), emb, rows, out);
  }

  void DecodeEdges(const std::vector<float>& node_rows, int64_t width,
                   const std::vector<int64_t>& heads, const std::vector<int64_t>& tails,
                   const std::vector<float>& edge_features, std::vector<float>* out) override {
    torch::NoGradGuard no_grad;
    const auto k = static_cast<int64_t>(heads.size());
    auto ids = [&](const std::vector<int64_t>& v) {
      return torch::from_blob(const_cast<int64_t*>(v.data()), {k}, torch::kInt64);
    };
    const torch::Tensor emb =
        torch::from_blob(const_cast<float*>(node_rows.data()),
                         {static_cast<int64_t>(node_rows.size()) / width, width}, torch::kFloat32);
    const torch::Tensor x =
        edge_features.empty()
            ? torch::Tensor()
            : torch::from_blob(const_cast<float*>(edge_features.data()),
                               {k, static_cast<int64_t>(edge_features.size()) / k},
                               torch::kFloat32);
    // Classes or not, the decoder's [k, C] (a value: [k, 1]) rows; a link
    // model's dot products [k, 1], as its training scores pairs.
    const torch::Tensor y =
        dot_product_ ? (emb.index_select(0, ids(heads)) * emb.index_select(0, ids(tails)))
                           .sum(1, /*keepdim=*/true)
                           .contiguous()
                     : gnn::DecodeEdges(*model_, emb, ids(heads), ids(tails), true, x).contiguous();
    out->assign(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
  }

  void Run(const MiniBatch& mb, int64_t rows, bool embedding, Answer* out) override {
    torch::Tensor emb;
    const torch::Tensor h =
        PredictBatch(*model_, mb, rows, embedding ? embed_layer_ - 1 : -1, &emb);
    Fill(h, emb, rows, out);
  }

 private:
  static void Fill(const torch::Tensor& h, const torch::Tensor& emb, int64_t rows, Answer* out) {
    out->rows = rows;
    out->classes = h.size(1);
    out->logits.assign(h.data_ptr<float>(), h.data_ptr<float>() + h.numel());
    out->emb_dim = emb.defined() ? emb.size(1) : 0;
    if (emb.defined())
      out->embedding.assign(emb.data_ptr<float>(), emb.data_ptr<float>() + emb.numel());
  }

  std::shared_ptr<NodeModel> model_;
  int embed_layer_;
  bool dot_product_;  // a link model: pairs scored by their rows' dot product
};

}  // namespace

std::pair<std::string, int> ListenAddress(const TrainOptions& o, const ServeOptions& s) {
  if (o.standalone) return {s.http_host.empty() ? "127.0.0.1" : s.http_host, s.http_port};
  const std::vector<MachineAddress> machines = ReadIpConfig(o.ip_config);
  if (o.machine_id < 0 || o.machine_id >= static_cast<int>(machines.size())) {
    throw ConfigError("--machine_id " + std::to_string(o.machine_id) + " is not a line of " +
                      o.ip_config);
  }
  const std::string& host = machines[static_cast<size_t>(o.machine_id)].host;
  int index = 0;
  for (int m = 0; m < o.machine_id; ++m) index += machines[static_cast<size_t>(m)].host == host;
  return {s.http_host.empty() ? host : s.http_host, s.http_port + index};
}

Served LoadServed(TrainOptions& o, const ServeOptions& s) {
  if (o.restore_model_path.empty()) {
    throw ConfigError(
        "--restore_model_path: gnn-serve needs a model file gnn-train --save_model "
        "wrote");
  }
  if (o.part_config.empty()) throw ConfigError("--part_config is required");
  if (!o.standalone) {
    if (o.ip_config.empty()) {
      throw ConfigError("--ip_config is required (or --standalone on a 1-partition config)");
    }
    if (o.trainer_id != 0 || o.num_trainers != 1) {
      throw ConfigError("gnn-serve runs once per machine: launch it with --num_trainers 1");
    }
  }
  Served v;
  v.config = LoadPartitionConfig(o.part_config);
  if (!o.graph_name.empty() && o.graph_name != v.config.graph_name) {
    throw ConfigError("--graph_name " + o.graph_name + " does not match " + o.part_config +
                      " (graph '" + v.config.graph_name + "')");
  }
  if (v.config.hetero()) {
    throw ConfigError(o.part_config +
                      " is a typed graph: gnn-serve serves graphsage, gat and gcn "
                      "models of homogeneous graphs so far");
  }
  if (!PathExists(o.restore_model_path)) {
    throw DataError("--restore_model_path " + o.restore_model_path + ": No such file or directory");
  }
  const std::string bytes = ReadFile(o.restore_model_path);
  v.model = RestoreModel(std::vector<char>(bytes.begin(), bytes.end()), o.restore_model_path,
                         v.config, &o);
  const int layers = v.model.model->num_layers();
  // Every neighbour at every layer unless --fan_out bounds it.
  o.fan_out = s.fan_out;
  if (s.fan_out.empty()) {
    for (int l = 0; l < layers; ++l) o.fan_out += l ? ",-1" : "-1";
  }
  ModelInfo& info = v.info;
  info.fanouts = o.Fanouts();
  if (static_cast<int>(info.fanouts.size()) != layers) {
    throw ConfigError("--fan_out " + s.fan_out + " has " + std::to_string(info.fanouts.size()) +
                      " layers; the model has " + std::to_string(layers));
  }
  info.graph_name = v.config.graph_name;
  info.num_nodes = v.config.num_nodes;
  info.user_ids = v.config.user_node_ids;
  info.feature_dim = v.config.feature_dim;
  info.classes = v.model.meta.at("out_feats").get<int64_t>();
  info.kind = v.config.label_kind;
  info.embed_layer = v.model.embed_layer;
  info.emb_dim = v.model.model->OutDim(v.model.embed_layer - 1);
  info.undirected = v.config.undirected;
  info.model = v.model.meta;
  info.task = o.task;
  if (o.EdgeTask() && o.embed_layer != -1) {
    throw ConfigError("--embed_layer: " + o.restore_model_path + " is a --task " + o.task +
                      " model, which answers edges' predictions, not embeddings");
  }
  if (o.Kind() == TaskKind::kLink) {
    // Rows are embeddings; a pair's score is their dot product.
    info.edge_model = true;
    info.edge_outputs = 1;
  } else if (o.EdgeTask()) {
    // The GNN's rows are node embeddings; the decoder scores the pairs.
    info.edge_model = true;
    info.kind = o.Kind() == TaskKind::kEdgeClass ? LabelKind::kClass : LabelKind::kRegression;
    const int64_t edge_classes = v.model.meta.at("edge_classes").get<int64_t>();
    info.edge_outputs = edge_classes > 0 ? edge_classes : 1;
    info.edge_feature_dim = o.decoder_edge_dim;
  }
  info.edge_data = o.ReadsEdgeData();
  // gnn-train --inference --fan_out's sampling seed (PredictSampled's).
  info.sample_seed = MixSeed(o.seed, 0x5a3b1ed);
  info.first_layer_dim = v.model.model->OutDim(0);
  // GCN's block normalisation counts the batch's other destinations; edge
  // data would have to travel with the cached blocks.
  info.layer_cacheable = o.model != "gcn" && !info.edge_data;
  info.layer_cache_bytes = s.layer_cache_mb << 20;
  return v;
}

std::unique_ptr<ModelRunner> MakeTorchRunner(const RestoredModel& model, bool dot_product) {
  return std::make_unique<TorchRunner>(model.model, model.embed_layer, dot_product);
}

}  // namespace gnn
