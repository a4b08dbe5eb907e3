#include "train/loop/typed_edges.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "common/error.h"
#include "common/log.h"
#include "common/random.h"
#include "partition/local_partition.h"
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
  const LabeledEdgeRows rows = ReadLabeledEdges(config, part, o.verify_checksums);
  auto sharers_of = [&](int p) {
    return static_cast<int64_t>(PartitionMachines(p, config.num_parts, num_machines).size()) *
           num_trainers;
  };
  TypedEdgeSplits out;
  for (int p = 0; p < config.num_parts; ++p) {
    const int64_t s = sharers_of(p);
    out.max_train_share =
        std::max(out.max_train_share, (config.parts[p].num_split_edges[0] + s - 1) / s);
  }
  if (out.max_train_share == 0) {
    throw DataError(o.part_config + ": no " + config.target_etype + " edge is in the train split");
  }
  const int64_t sharers = sharers_of(part);
  const int64_t me = (machine_id / config.num_parts) * num_trainers + trainer_id;
  std::vector<size_t> in_split[3];
  for (size_t e = 0; e < rows.split.size(); ++e) {
    const uint8_t s = rows.split[e];
    if (s >= 1 && s <= 3) in_split[s - 1].push_back(e);
  }
  const bool classes = config.edge_label_kind == LabelKind::kClass;
  for (int k = 0; k < 3; ++k) {
    const int64_t n = static_cast<int64_t>(in_split[k].size());
    LabeledEdges& le = out.split[k];
    for (int64_t i = n * me / sharers; i < n * (me + 1) / sharers; ++i) {
      const size_t e = in_split[k][static_cast<size_t>(i)];
      le.heads.push_back(rows.heads[e]);
      le.tails.push_back(rows.tails[e]);
      if (classes) {
        le.labels.push_back(rows.labels[e]);
      } else {
        le.targets.push_back(rows.targets[e]);
      }
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
  AttachEdgeDecoder(model, o_.num_hidden, out_);
  model_ = &model;
}

std::string TypedEdgeTask::Signature() const {
  return " task=" + o_.task + " target_etype=" + config_.target_etype +
         " out=" + std::to_string(out_) + (o_.exclude_target_edges ? "" : " keep_targets");
}

TypedBatchPlan TypedEdgeTask::Plan(int64_t index, const LabeledEdges& edges,
                                   const std::vector<int64_t>& which, uint64_t rng_seed,
                                   bool exclude) {
  Batch b;
  std::unordered_map<int64_t, int64_t> at;
  auto position = [&](int64_t v) {
    auto [it, fresh] = at.emplace(v, static_cast<int64_t>(b.seeds.size()));
    if (fresh) b.seeds.push_back(v);
    return it->second;
  };
  TypedBatchPlan plan;
  plan.index = index;
  plan.rng_seed = rng_seed;
  for (int64_t i : which) {
    const size_t e = static_cast<size_t>(i);
    b.heads.push_back(position(edges.heads[e]));
    b.tails.push_back(position(edges.tails[e]));
    if (classes_) {
      b.labels.push_back(edges.labels[e]);
    } else {
      b.targets.push_back(edges.targets[e]);
    }
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
  return DecodeEdges(*model_, out, Ids(current_.heads), Ids(current_.tails), classes_);
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

}  // namespace gnn
