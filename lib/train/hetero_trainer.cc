#include "train/hetero_trainer.h"

#include <torch/torch.h>

#include <filesystem>
#include <iomanip>
#include <iostream>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/random.h"
#include "common/sha256.h"
#include "common/timer.h"
#include "sampling/typed_sampler.h"
#include "train/checkpoint.h"
#include "train/hetero_source.h"
#include "train/metrics.h"
#include "train/rgcn.h"

namespace gnn {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string RgcnSignature(const TrainOptions& o, const PartitionConfig& c) {
  std::ostringstream s;
  s << "rgcn graph=" << c.graph_name << " ntypes=" << c.ntypes.size() << " rels=" << c.etypes.size()
    << " hidden=" << o.num_hidden << " classes=" << c.num_classes << " layers=" << o.num_layers
    << " bases=" << o.num_bases << " self_loop=" << o.self_loop << " sparse="
    << o.sparse_optimizer
    // The embedding tables' layout: one per type in this process, or one
    // per type and partition at the servers.
    << " tables="
    << (o.standalone ? std::string("local") : "servers/" + std::to_string(c.num_parts));
  return s.str();
}

// One RGCN training run over a HeteroSource: the loop of trainer.cc's
// Training (epochs of steps, evaluation, checkpoints, summary), with the
// embedding rows pulled before and pushed after each step.
class HeteroTraining {
 public:
  HeteroTraining(const TrainOptions& o, const PartitionConfig& config)
      : o_(o),
        config_(config),
        source_(o.standalone ? MakeStandaloneHeteroSource(o, config)
                             : MakeDistHeteroSource(o, config)),
        lead_(source_->rank() == 0),
        label_(source_->Label()),
        fanouts_(ParseTypedFanouts(o.fan_out, config.etypes)),
        feature_dims_(FeatureDims(config)),
        model_((torch::manual_seed(o.seed),
                RGCN(feature_dims_, o.num_hidden, o.num_hidden, config.num_classes,
                     static_cast<int64_t>(config.etypes.size()), o.num_bases, o.num_layers,
                     o.dropout, o.self_loop))),
        opt_(model_->parameters(), torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay)),
        signature_(RgcnSignature(o, config)),
        metrics_(lead_ ? o.metrics_file : std::string(), o.resume || o.restart > 0,
                 lead_ ? o.tensorboard_dir : std::string()) {
    if (static_cast<int>(fanouts_.size()) != o.num_layers) {
      throw ConfigError("--fan_out '" + o.fan_out + "' has " + std::to_string(fanouts_.size()) +
                        " layers but --num_layers is " + std::to_string(o.num_layers));
    }
    train_nodes_ = source_->SplitNodes(0);
    const double total = source_->SumOverRanks({static_cast<double>(train_nodes_.size())})[0];
    const int64_t per_rank =
        (static_cast<int64_t>(total) + source_->world() - 1) / source_->world();
    num_batches_ = std::max<int64_t>(1, (per_rank + o.batch_size - 1) / o.batch_size);
    Resume();
    source_->SyncParams(*model_);
  }

  json Run() {
    for (int epoch = st_.epochs_done; epoch < o_.num_epochs; ++epoch) {
      RunEpoch(epoch, epoch == st_.epochs_done ? st_.batches_done : 0);
      st_.epochs_done = epoch + 1;
      st_.batches_done = 0;
      if (o_.eval_every > 0 && ((epoch + 1) % o_.eval_every == 0 || epoch + 1 == o_.num_epochs)) {
        Evaluate(epoch + 1);
      }
      Checkpoint();
    }
    SaveModel();
    return Summary();
  }

 private:
  static std::vector<int64_t> FeatureDims(const PartitionConfig& c) {
    std::vector<int64_t> d = c.ntype_feature_dims;
    d.resize(c.ntypes.size(), 0);
    return d;
  }

  void Resume() {
    if (lead_ && !o_.checkpoint_dir.empty()) RemoveCheckpointTemporaries(o_.checkpoint_dir);
    if (!o_.resume && o_.restart == 0) return;
    std::string bytes = lead_ ? ReadResumeBytes(o_) : std::string();
    source_->BroadcastBytes(&bytes);
    if (bytes.empty()) {
      GNN_LOG(kWarn) << "restart " << o_.restart << ": no checkpoint; training from the start";
    } else {
      std::string tables;
      const std::string path = CheckpointPath(o_.checkpoint_dir);
      st_ = RestoreCheckpoint(bytes, path, *model_, opt_, signature_, &tables);
      source_->RestoreEmbeddings(tables, path);
      GNN_LOG(kInfo) << "resumed from " << path << " at epoch " << st_.epochs_done + 1 << " batch "
                     << st_.batches_done << " (step " << st_.global_step << ")";
      if (st_.batches_done > 0 &&
          (st_.world != source_->world() || st_.num_batches != num_batches_)) {
        GNN_LOG(kWarn) << "the checkpoint's epoch was cut differently: epoch "
                       << st_.epochs_done + 1 << " starts again at batch 0";
        st_.batches_done = 0;
      }
    }
    metrics_.Rewind(st_.global_step);
    Report("resumed " + std::to_string(st_.global_step));
  }

  // Every rank gathers the embedding tables (a collective when
  // distributed); rank 0 writes them beside the model.
  void Checkpoint() {
    if (o_.checkpoint_dir.empty()) return;
    const std::string tables = source_->SaveEmbeddings();
    if (!lead_) return;
    st_.world = source_->world();
    st_.num_batches = num_batches_;
    metrics_.Flush();
    SaveCheckpoint(o_.checkpoint_dir, *model_, opt_, st_, signature_, tables);
    Report("checkpoint " + std::to_string(st_.global_step) + " " +
           fs::absolute(CheckpointPath(o_.checkpoint_dir)).lexically_normal().string());
  }

  void Report(const std::string& what) const {
    if (o_.report_progress) std::cout << "@gnn " << what << std::endl;
  }

  // The layer-0 input of a batch: projected features, and embedding rows
  // (leaves whose gradients the sparse optimizer applies) in `emb`.
  torch::Tensor Inputs(HeteroBatch& b, bool grad, std::vector<std::vector<float>>* emb_rows,
                       std::vector<torch::Tensor>* emb) {
    const size_t T = feature_dims_.size();
    emb_rows->assign(T, {});
    emb->assign(T, torch::Tensor());
    std::vector<TypedInput> inputs(T);
    for (size_t t = 0; t < T; ++t) {
      const int64_t n = static_cast<int64_t>(b.ids[t].size());
      if (n == 0) continue;
      TypedInput& in = inputs[t];
      in.positions = torch::from_blob(b.positions[t].data(), {n}, torch::kInt64);
      if (feature_dims_[t] > 0) {
        in.rows = torch::from_blob(b.features[t].data(), {n, feature_dims_[t]}, torch::kFloat32);
      } else {
        source_->PullEmbeddings(static_cast<int>(t), b.ids[t], &(*emb_rows)[t]);
        in.rows = torch::from_blob((*emb_rows)[t].data(), {n, o_.num_hidden}, torch::kFloat32);
        if (grad) in.rows.requires_grad_(true);
        (*emb)[t] = in.rows;
      }
    }
    return model_->Embed(b.blocks.front().num_src(), inputs);
  }

  // The autograd graph views the relation blocks (`rbs`), the batch and
  // the embedding rows: the caller keeps them until after backward.
  torch::Tensor Forward(HeteroBatch& b, bool grad, std::vector<RelationBlock>* rbs,
                        std::vector<std::vector<float>>* emb_rows,
                        std::vector<torch::Tensor>* emb) {
    rbs->clear();
    for (const Block& blk : b.blocks)
      rbs->push_back(ToRelationBlock(blk, static_cast<int64_t>(config_.etypes.size())));
    torch::Tensor h0 = Inputs(b, grad, emb_rows, emb);
    return model_->forward(*rbs, h0);
  }

  void RunEpoch(int epoch, int64_t first) {
    model_->train();
    Stopwatch epoch_watch, log_watch;
    double sample_s = 0, compute_s = 0, sparse_s = 0, allreduce_s = 0;
    int64_t seeds = 0, seeds_at_log = 0, inputs = 0, steps = 0, steps_at_log = 0;
    uint64_t wire_at_log = train_wire_bytes_;
    const auto batches =
        EpochBatches(train_nodes_, num_batches_, o_.seed, static_cast<int64_t>(epoch), true);
    Progress progress("epoch " + std::to_string(epoch + 1), num_batches_ - first, "batches");
    for (int64_t i = first; i < num_batches_; ++i) {
      torch::manual_seed(
          MixSeed(MixSeed(MixSeed(o_.seed, static_cast<uint64_t>(epoch) + 1), source_->rank()),
                  static_cast<uint64_t>(i)));
      const uint64_t wire_before = source_->WireBytes();
      Stopwatch t;
      HeteroBatch b = source_->Sample(
          batches[static_cast<size_t>(i)], fanouts_,
          MixSeed(MixSeed(o_.seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(i)));
      sample_s += t.Seconds();
      t.Reset();
      opt_.zero_grad();
      std::vector<RelationBlock> rbs;
      std::vector<std::vector<float>> emb_rows;
      std::vector<torch::Tensor> emb;
      torch::Tensor out, loss;
      if (!b.seeds.empty()) {
        out = Forward(b, true, &rbs, &emb_rows, &emb);
        torch::Tensor labels = torch::from_blob(
            b.labels.data(), {static_cast<int64_t>(b.labels.size())}, torch::kInt64);
        loss = torch::nn::functional::cross_entropy(out, labels);
        loss.backward();
        // A parameter the batch did not reach (a featured type absent from
        // it) steps with a zero gradient, as the all-reduce makes it in a
        // cluster: standalone and distributed runs take the same steps.
        for (auto& p : model_->parameters()) {
          if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
        }
        last_acc_ = out.argmax(1).eq(labels).to(torch::kFloat64).mean().item<double>();
      }
      compute_s += t.Seconds();
      t.Reset();
      for (size_t ty = 0; ty < feature_dims_.size(); ++ty) {
        if (feature_dims_[ty] > 0) continue;
        std::vector<float> g;
        const std::vector<int64_t> none;
        const bool used = ty < emb.size() && emb[ty].defined() && emb[ty].grad().defined();
        if (used) {
          torch::Tensor gt = emb[ty].grad().contiguous();
          g.assign(gt.data_ptr<float>(), gt.data_ptr<float>() + gt.numel());
        }
        source_->PushEmbeddingGrads(static_cast<int>(ty), used ? b.ids[ty] : none, g);
      }
      sparse_s += t.Seconds();
      train_wire_bytes_ += source_->WireBytes() - wire_before;
      t.Reset();
      allreduce_bytes_ += source_->AllreduceGrads(*model_);
      allreduce_s += t.Seconds();
      opt_.step();
      seeds += static_cast<int64_t>(b.seeds.size());
      if (!b.blocks.empty()) inputs += b.blocks.front().num_src();
      ++steps;
      ++steps_run_;
      st_.batches_done = i + 1;
      ++st_.global_step;
      Report("step " + std::to_string(st_.global_step));
      progress.Add();
      if (steps % o_.log_every == 0 && loss.defined()) {
        const double speed = static_cast<double>(seeds - seeds_at_log) / log_watch.Seconds();
        const double wire_mb = static_cast<double>(train_wire_bytes_ - wire_at_log) / 1e6 /
                               static_cast<double>(steps - steps_at_log);
        log_watch.Reset();
        seeds_at_log = seeds;
        wire_at_log = train_wire_bytes_;
        steps_at_log = steps;
        GNN_LOG(kInfo) << label_ << " | Epoch " << std::setw(5) << std::setfill('0') << epoch + 1
                       << " | Step " << std::setw(5) << steps << std::setfill(' ') << std::fixed
                       << " | Loss " << std::setprecision(4) << loss.item<double>()
                       << " | Train Acc " << last_acc_ << " | Speed (samples/sec) "
                       << std::setprecision(1) << speed
                       << (source_->world() > 1 || !o_.standalone
                               ? " | Wire (MB/step) " + std::to_string(wire_mb)
                               : std::string());
        metrics_.Write({{"type", "step"},
                        {"epoch", epoch + 1},
                        {"step", steps},
                        {"loss", loss.item<double>()},
                        {"train_acc", last_acc_},
                        {"samples_per_s", speed},
                        {"wire_mb_per_step", wire_mb}},
                       st_.global_step);
      }
      if (o_.checkpoint_every > 0 && st_.global_step % o_.checkpoint_every == 0 &&
          st_.batches_done < num_batches_) {
        Checkpoint();
      }
    }
    progress.Done();
    const double epoch_s = epoch_watch.Seconds();
    train_s_ += epoch_s;
    seeds_ += seeds;
    ++epochs_run_;
    GNN_LOG(kInfo) << label_ << ", Epoch Time(s): " << std::fixed << std::setprecision(4) << epoch_s
                   << ", sample+data_copy: " << sample_s << ", forward+backward: " << compute_s
                   << ", sparse update: " << sparse_s << ", allreduce: " << allreduce_s
                   << ", #seeds: " << seeds << ", #inputs: " << inputs;
    metrics_.Write({{"type", "epoch"},
                    {"epoch", epoch + 1},
                    {"epoch_time_s", epoch_s},
                    {"sample_s", sample_s},
                    {"compute_s", compute_s},
                    {"sparse_update_s", sparse_s},
                    {"allreduce_s", allreduce_s},
                    {"seeds", seeds},
                    {"inputs", inputs},
                    {"param_checksum", ParamChecksum(*model_)}},
                   st_.global_step);
  }

  // Accuracy on this rank's share of split m, summed over ranks: sampled
  // neighbourhoods with the training fan-outs (as DGL's distributed RGCN
  // example evaluates), a fixed seed per batch.
  double SplitAccuracy(int m) {
    const std::vector<int64_t> nodes = source_->SplitNodes(m);
    double correct = 0;
    const int64_t n = static_cast<int64_t>(nodes.size());
    for (int64_t begin = 0, i = 0; begin < n; begin += o_.batch_size_eval, ++i) {
      const int64_t end = std::min(n, begin + o_.batch_size_eval);
      HeteroBatch b =
          source_->Sample({nodes.begin() + begin, nodes.begin() + end}, fanouts_,
                          MixSeed(MixSeed(o_.seed, 0x6576616c), static_cast<uint64_t>(i)));
      std::vector<RelationBlock> rbs;
      std::vector<std::vector<float>> emb_rows;
      std::vector<torch::Tensor> emb;
      torch::Tensor out = Forward(b, false, &rbs, &emb_rows, &emb);
      torch::Tensor labels =
          torch::from_blob(b.labels.data(), {static_cast<int64_t>(b.labels.size())}, torch::kInt64);
      correct += out.argmax(1).eq(labels).sum().item<double>();
    }
    const std::vector<double> sums = source_->SumOverRanks({correct, static_cast<double>(n)});
    return sums[1] > 0 ? sums[0] / sums[1] : 0.0;
  }

  void Evaluate(int epoch) {
    Stopwatch ev;
    torch::NoGradGuard no_grad;
    model_->eval();
    const double val = SplitAccuracy(1), test = SplitAccuracy(2);
    model_->train();
    st_.final_test = test;
    if (val > st_.best_val) {
      st_.best_val = val;
      st_.test_at_best = test;
      st_.best_epoch = epoch;
    }
    GNN_LOG(kInfo) << label_ << ", Val Acc " << std::fixed << std::setprecision(4) << val
                   << ", Test Acc " << test << ", time: " << ev.Seconds();
    metrics_.Write({{"type", "eval"},
                    {"epoch", epoch},
                    {"val_acc", val},
                    {"test_acc", test},
                    {"eval_time_s", ev.Seconds()}},
                   st_.global_step);
  }

  // --save_model: the dense parameters as a dict torch.load reads (the
  // embedding tables are in the checkpoint).
  void SaveModel() {
    if (!lead_ || o_.save_model.empty()) return;
    c10::Dict<std::string, torch::Tensor> dict;
    for (const auto& p : model_->named_parameters())
      dict.insert(p.key(), p.value().detach().clone());
    const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
    AtomicFile f(o_.save_model);
    f.Write(bytes.data(), bytes.size());
    f.Commit();
  }

  json Summary() {
    const std::string embedding_checksum = source_->EmbeddingChecksum();
    const double all_seeds = source_->SumOverRanks({static_cast<double>(seeds_)})[0];
    json summary = {
        {"graph_name", config_.graph_name},
        {"model", "rgcn"},
        {"task", o_.task},
        {"best_val_acc", st_.best_val < 0 ? 0.0 : st_.best_val},
        {"test_acc", st_.test_at_best},
        {"final_test_acc", st_.final_test},
        {"best_epoch", st_.best_epoch},
        {"test_acc_epoch", st_.best_epoch},
        {"final_test_acc_epoch", o_.eval_every > 0 ? st_.epochs_done : 0},
        {"epochs", st_.epochs_done},
        {"epochs_run", epochs_run_},
        {"steps", st_.global_step},
        {"mean_epoch_time_s", epochs_run_ ? train_s_ / epochs_run_ : 0.0},
        {"seeds_per_s", train_s_ > 0 ? all_seeds / train_s_ : 0.0},
        {"num_trainers", source_->world()},
        {"rank", source_->rank()},
        {"allreduce_bytes_per_step", steps_run_ ? allreduce_bytes_ / steps_run_ : 0},
        // Sampling, feature and embedding traffic of this rank per training
        // step (requests and replies; 0 standalone).
        {"wire_bytes_per_step",
         steps_run_ ? static_cast<double>(train_wire_bytes_) / steps_run_ : 0.0},
        {"param_checksum", ParamChecksum(*model_)},
        {"embedding_checksum", embedding_checksum},
    };
    metrics_.Write({{"type", "summary"}, {"summary", summary}}, st_.global_step);
    return summary;
  }

  const TrainOptions& o_;
  const PartitionConfig& config_;
  std::unique_ptr<HeteroSource> source_;
  const bool lead_;
  const std::string label_;
  const std::vector<std::vector<int>> fanouts_;
  const std::vector<int64_t> feature_dims_;
  RGCN model_;
  torch::optim::Adam opt_;
  const std::string signature_;
  MetricsWriter metrics_;
  TrainState st_;
  std::vector<int64_t> train_nodes_;
  int64_t num_batches_ = 0;
  double train_s_ = 0, last_acc_ = 0;
  int64_t seeds_ = 0, allreduce_bytes_ = 0, steps_run_ = 0;
  uint64_t train_wire_bytes_ = 0;
  int epochs_run_ = 0;
};

}  // namespace

json RunHeteroTrain(const TrainOptions& o, const PartitionConfig& config) {
  return HeteroTraining(o, config).Run();
}

}  // namespace gnn
