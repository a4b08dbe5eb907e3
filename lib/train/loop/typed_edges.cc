#include "train/loop/typed_edges.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/log.h"
#include "common/random.h"
#include "common/timer.h"
#include "partition/local_partition.h"
#include "sampling/sampler.h"
#include "train/loop/predict.h"
#include "train/loop/task.h"

namespace gnn {

namespace {

torch::Tensor Ids(std::vector<int64_t>& v) {
  return torch::from_blob(v.data(), {static_cast<int64_t>(v.size())}, torch::kInt64);
}

}  // namespace

TypedEdgeSplits ReadTypedEdgeSplits(const TrainOptions& o, const PartitionConfig& config, int part,
                                    int num_machines, int num_trainers, int machine_id,
                                    int trainer_id) {
  if (!config.edge_labels || config.target_etype.empty()) {
    throw DataError(o.part_config + ": no relation's edges are labelled");
  }
  // The decoder's edge features: the labelled relation's first columns of
  // the partition's rows (as wide as the widest relation's).
  const int64_t w = o.decoder_edge_dim;
  const LabeledEdgeRows rows = ReadLabeledEdges(config, part, o.verify_checksums, w > 0);
  const EdgeShares shares = ShareLabeledEdges(config, part, rows.split, num_machines, num_trainers,
                                              machine_id, trainer_id);
  TypedEdgeSplits out;
  out.max_train_share = shares.max_train_share;
  if (out.max_train_share == 0) {
    throw DataError(o.part_config + ": no " + config.target_etype + " edge is in the train split");
  }
  const bool classes = config.edge_label_kind == LabelKind::kClass;
  for (int k = 0; k < 3; ++k) {
    LabeledEdges& le = out.split[k];
    for (const int64_t i : shares.split[k]) {
      const size_t e = static_cast<size_t>(i);
      le.heads.push_back(rows.heads[e]);
      le.tails.push_back(rows.tails[e]);
      if (classes) {
        le.labels.push_back(rows.labels[e]);
      } else {
        le.targets.push_back(rows.targets[e]);
      }
      const float* f = rows.features.data() + static_cast<int64_t>(e) * rows.feature_dim;
      le.features.insert(le.features.end(), f, f + w);
    }
  }
  return out;
}

TypedEdgeTask::TypedEdgeTask(const TrainOptions& o, const PartitionConfig& config,
                             TypedEdgeSplits splits)
    : o_(o),
      config_(config),
      splits_(std::move(splits)),
      classes_(config.edge_label_kind == LabelKind::kClass),
      out_(classes_ ? config.num_edge_classes : 1),
      num_batches_(
          std::max<int64_t>(1, (splits_.max_train_share + o.batch_size - 1) / o.batch_size)) {}

void TypedEdgeTask::Attach(torch::nn::Module& model) {
  AttachEdgeDecoder(model, o_.num_hidden, out_, o_.decoder_edge_dim);
  model_ = &model;
}

std::string TypedEdgeTask::Signature() const {
  return " task=" + o_.task + " target_etype=" + config_.target_etype +
         " out=" + std::to_string(out_) + (o_.exclude_target_edges ? "" : " keep_targets") +
         (o_.decoder_edge_dim > 0 ? " decoder_edge_dim=" + std::to_string(o_.decoder_edge_dim)
                                  : "");
}

TypedBatchPlan TypedEdgeTask::Plan(int64_t index, const LabeledEdges& edges,
                                   const std::vector<int64_t>& which, uint64_t rng_seed,
                                   bool exclude) {
  Batch b;
  SeedNumbering position(&b.seeds);
  TypedBatchPlan plan;
  plan.index = index;
  plan.rng_seed = rng_seed;
  for (int64_t i : which) {
    const size_t e = static_cast<size_t>(i);
    b.heads.push_back(position.Add(edges.heads[e]));
    b.tails.push_back(position.Add(edges.tails[e]));
    if (classes_) {
      b.labels.push_back(edges.labels[e]);
    } else {
      b.targets.push_back(edges.targets[e]);
    }
    const int64_t w = o_.decoder_edge_dim;
    b.features.insert(b.features.end(), edges.features.begin() + static_cast<int64_t>(e) * w,
                      edges.features.begin() + static_cast<int64_t>(e + 1) * w);
    if (exclude) {
      plan.exclude.push_back(edges.heads[e]);
      plan.exclude.push_back(edges.tails[e]);
    }
  }
  plan.seeds = b.seeds;
  batches_[index] = std::move(b);
  return plan;
}

std::vector<TypedBatchPlan> TypedEdgeTask::EpochPlans(int epoch, int64_t first) {
  batches_.clear();
  const LabeledEdges& train = splits_.split[0];
  std::vector<int64_t> order(static_cast<size_t>(train.size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  const std::vector<std::vector<int64_t>> batches =
      EpochBatches(std::move(order), num_batches_, o_.seed, static_cast<int64_t>(epoch), true);
  std::vector<TypedBatchPlan> plans;
  for (int64_t i = first; i < num_batches_; ++i) {
    plans.push_back(
        Plan(i, train, batches[static_cast<size_t>(i)],
             MixSeed(MixSeed(o_.seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(i)),
             o_.exclude_target_edges));
  }
  return plans;
}

std::vector<TypedBatchPlan> TypedEdgeTask::EvalPlans(int k) {
  batches_.clear();
  const LabeledEdges& edges = splits_.split[k];
  std::vector<TypedBatchPlan> plans;
  const int64_t n = edges.size();
  for (int64_t begin = 0, i = 0; begin < n; begin += o_.batch_size_eval, ++i) {
    std::vector<int64_t> which;
    for (int64_t e = begin; e < std::min(n, begin + o_.batch_size_eval); ++e) which.push_back(e);
    plans.push_back(Plan(i, edges, which,
                         MixSeed(MixSeed(o_.seed, 0x6576616c), static_cast<uint64_t>(i)), false));
  }
  return plans;
}

void TypedEdgeTask::Use(int64_t index, const std::vector<int64_t>& seeds) {
  auto it = batches_.find(index);
  if (it == batches_.end() || it->second.seeds != seeds) {
    throw ProtocolError("typed edge batch " + std::to_string(index) +
                        " came with seeds it was not planned with");
  }
  current_ = std::move(it->second);
  batches_.erase(it);
}

torch::Tensor TypedEdgeTask::Decode(const torch::Tensor& out) {
  if (out.size(0) != static_cast<int64_t>(current_.seeds.size())) {
    throw DataError("a typed edge batch's model gave " + std::to_string(out.size(0)) +
                    " rows for " + std::to_string(current_.seeds.size()) + " seeds");
  }
  const int64_t w = o_.decoder_edge_dim;
  const torch::Tensor x =
      w == 0 ? torch::Tensor()
             : torch::from_blob(current_.features.data(), {Examples(), w}, torch::kFloat32);
  return DecodeEdges(*model_, out, Ids(current_.heads), Ids(current_.tails), classes_, x);
}

torch::Tensor TypedEdgeTask::Truth(const torch::Device& device) {
  const int64_t n = Examples();
  if (classes_) return Ids(current_.labels).to(device);
  return torch::from_blob(current_.targets.data(), {n}, torch::kFloat32).to(device);
}

torch::Tensor TypedEdgeTask::Loss(const torch::Tensor& out) {
  const torch::Tensor y = Decode(out);
  const torch::Tensor t = Truth(y.device());
  {
    torch::NoGradGuard no_grad;
    last_figure_ = classes_ ? y.argmax(1).eq(t).to(torch::kFloat64).mean().item<double>()
                            : (y - t).pow(2).mean().sqrt().item<double>();
  }
  return classes_ ? torch::nn::functional::cross_entropy(y, t)
                  : torch::nn::functional::mse_loss(y, t);
}

double TypedEdgeTask::Score(const torch::Tensor& out) {
  torch::NoGradGuard no_grad;
  const torch::Tensor y = Decode(out);
  const torch::Tensor t = Truth(y.device());
  return classes_ ? y.argmax(1).eq(t).sum().item<double>()
                  : (y - t).to(torch::kFloat64).pow(2).sum().item<double>();
}

EvalMetric TypedEdgeTask::Metric() const { return classes_ ? EvalMetric() : RmseMetric(); }

double TypedEdgeTask::Figure(double sum, double n) const {
  if (n == 0) return 0.0;
  return classes_ ? sum / n : std::sqrt(sum / n);
}

namespace {

// One partition's chosen edges (the writer's) and what the model made of
// them.
struct EdgeShard {
  int part = -1;
  LabeledEdgeRows edges;
  std::vector<int64_t> pick;  // positions in `edges` to write
};

// The chosen edges' rows [k, C] (or values [k]) from their ends' typed
// neighbourhoods, batch_size_eval edges at a time.
torch::Tensor DecodeShard(TypedModel& model, const TrainOptions& o, EdgeShard& s,
                          const std::vector<std::vector<int>>& fanouts, bool classes) {
  std::vector<TypedBatchPlan> plans;
  std::vector<std::vector<int64_t>> heads, tails;
  std::vector<std::vector<float>> features;  // the decoder's, [batch edges, w]
  const int64_t n = static_cast<int64_t>(s.pick.size()), w = o.decoder_edge_dim;
  for (int64_t b = 0, i = 0; b < n; b += o.batch_size_eval, ++i) {
    TypedBatchPlan plan;
    plan.index = i;
    plan.rng_seed = MixSeed(MixSeed(o.seed, 0x6576616c), static_cast<uint64_t>(i));
    SeedNumbering position(&plan.seeds);
    heads.emplace_back();
    tails.emplace_back();
    features.emplace_back();
    for (int64_t j = b; j < std::min(n, b + o.batch_size_eval); ++j) {
      const size_t e = static_cast<size_t>(s.pick[static_cast<size_t>(j)]);
      heads.back().push_back(position.Add(s.edges.heads[e]));
      tails.back().push_back(position.Add(s.edges.tails[e]));
      const float* f = s.edges.features.data() + static_cast<int64_t>(e) * s.edges.feature_dim;
      features.back().insert(features.back().end(), f, f + w);
    }
    plans.push_back(std::move(plan));
  }
  const size_t count = plans.size();
  model.source().Start(std::move(plans), fanouts);
  std::vector<torch::Tensor> out;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < count; ++i) {
    HeteroBatch b = model.source().Next();
    const torch::Tensor emb = model.Predict(b);
    const int64_t k = static_cast<int64_t>(heads[i].size());
    const torch::Tensor x =
        w == 0 ? torch::Tensor() : torch::from_blob(features[i].data(), {k, w}, torch::kFloat32);
    out.push_back(
        DecodeEdges(model.module(), emb, Ids(heads[i]), Ids(tails[i]), classes, x).to(torch::kCPU));
  }
  if (out.empty()) {
    return classes ? torch::empty({0, 1}, torch::kFloat32) : torch::empty({0}, torch::kFloat32);
  }
  return torch::cat(out, 0).contiguous();
}

}  // namespace

nlohmann::json RunTypedEdgeInference(TypedModel& model, const TrainOptions& o,
                                     const PartitionConfig& config, const nlohmann::json& meta,
                                     const std::vector<std::vector<int>>& fanouts) {
  using nlohmann::json;
  HeteroSource& src = model.source();
  if (!o.nodes.empty() || !o.save_embed_path.empty()) {
    throw ConfigError(o.restore_model_path + " is a --task " + o.task + " model of " +
                      config.target_etype +
                      " edges: its inference writes a prediction per labelled edge "
                      "(--save_prediction_path; --node_mask picks the edges by split, --edge_ids "
                      "lists them), not --nodes or --save_embed_path");
  }
  Stopwatch watch;
  const BroadcastFn broadcast = [&src](std::string* bytes) { src.BroadcastBytes(bytes); };
  std::vector<int64_t> listed;
  if (!o.edge_ids.empty()) listed = ReadRequestedIds(src.rank(), broadcast, o.edge_ids);
  const bool classes = o.Kind() == TaskKind::kEdgeClass;
  auto writer = [&](int p) { return o.standalone ? 0 : p * o.num_trainers; };
  EdgeShard s;
  for (int p = 0; p < config.num_parts; ++p) {
    if (writer(p) == src.rank()) s.part = p;
  }
  if (s.part >= 0) {
    s.edges = ReadLabeledEdges(config, s.part, o.verify_checksums, o.decoder_edge_dim > 0);
    s.pick = ChooseEdges(o, s.edges, listed);
  }
  const double written = src.SumOverRanks({static_cast<double>(s.pick.size())})[0];
  CheckListedEdges(o, config, listed, written);
  GNN_LOG(kInfo) << "inference with " << o.model << " (" << o.num_layers
                 << " layers and an edge decoder, from " << o.restore_model_path << ") over "
                 << config.target_etype << " edges; writing " << static_cast<int64_t>(written);
  double score[2] = {0, 0}, total[2] = {0, 0};  // valid, test
  if (s.part >= 0) {
    WriteEdgePredictions(o.save_prediction_path + "/part" + std::to_string(s.part), s.edges, s.pick,
                         DecodeShard(model, o, s, fanouts, classes), classes, score, total);
  }
  const double infer_s = watch.Seconds();
  std::vector<double> sums = {score[0], total[0], score[1], total[1]};
  for (int p = 0; p < config.num_parts; ++p)
    sums.push_back(s.part == p ? static_cast<double>(s.pick.size()) : 0.0);
  sums = src.SumOverRanks(sums);
  if (src.rank() == 0) {
    WriteEdgeManifest(o, config, meta, static_cast<int64_t>(written),
                      std::vector<double>(sums.begin() + 4, sums.end()),
                      [&](int p) { return writer(p) / std::max(1, o.num_trainers); });
  }
  json summary = {{"mode", "inference"},
                  {"model", o.model},
                  {"task", o.task},
                  {"graph_name", config.graph_name},
                  {"target_etype", config.target_etype},
                  {"edges_written", static_cast<int64_t>(written)},
                  {"inference_time_s", infer_s},
                  {"prediction_path", o.save_prediction_path},
                  {"saved_model_epoch", meta.value("saved_epoch", json(nullptr))}};
  const double score_sums[2] = {sums[0], sums[2]}, total_sums[2] = {sums[1], sums[3]};
  AddEdgeFigures(classes, score_sums, total_sums, &summary);
  GNN_LOG(kInfo) << "inference done in " << infer_s << " s: " << static_cast<int64_t>(written)
                 << " " << config.target_etype << " edges written";
  return summary;
}

}  // namespace gnn
