// The Learner of the homogeneous models (GraphSAGE, GAT, GCN; DGL's
// train_dist.py and train_dist_unsupervised.py): batches from a TrainEnv
// (this process's partition, or the cluster's servers and samplers), the
// model (train/node_model.h), and a Task (node classification or link
// prediction) for the loss and the evaluation.
#include <torch/torch.h>

#include <optional>

#if GNN_CUDA_KERNELS
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "common/error.h"
#include "common/log.h"
#include "common/npy.h"
#include "train/loop/checkpoint.h"
#include "train/loop/device.h"
#include "train/loop/model_file.h"
#include "train/loop/task.h"
#include "train/loop/train_env.h"
#include "train/loop/training_loop.h"
#include "train/models/node_model.h"
#include "train/models/sparse_input.h"

namespace gnn {

using nlohmann::json;

namespace {

// The model on the host while it lives: evaluation and embeddings run
// layer-wise over CPU rows (on a GPU too, for now), then it goes back.
class OnHost {
 public:
  OnHost(torch::nn::Module& model, const torch::Device& device) : model_(model), device_(device) {
    if (!device_.is_cpu()) model_.to(torch::kCPU);
  }
  ~OnHost() {
    if (!device_.is_cpu()) model_.to(device_);
  }

 private:
  torch::nn::Module& model_;
  torch::Device device_;
};

torch::Tensor View(std::vector<int64_t>& v) {
  return torch::from_blob(v.data(), {static_cast<int64_t>(v.size())}, torch::kInt64);
}

// A batch's arrays in pinned host memory, ready for asynchronous copies to
// a GPU. Made by the thread that sampled the batch (TrainEnv::SetStager).
struct PinnedBatch {
  std::vector<BlockTensors> blocks;
  torch::Tensor x;  // the batch's rows (split_rows: only those the GPU cache lacks)
  torch::Tensor host_rows, cached_rows, cached_slots;  // split_rows only
  torch::Tensor crow, col, values;                     // sparse rows' parts (MiniBatch::sparse)
};

PinnedBatch Pin(MiniBatch& mb) {
  PinnedBatch p;
  if (mb.seeds.empty()) return p;
  for (const Block& b : mb.blocks) {
    BlockTensors t = ToTensors(b);
    for (torch::Tensor* q :
         {&t.indptr, &t.indices, &t.t_indptr, &t.t_indices, &t.t_eids, &t.edge_data}) {
      if (q->defined()) *q = q->pin_memory();
    }
    p.blocks.push_back(t);
  }
  const int64_t rows = mb.split_rows    ? static_cast<int64_t>(mb.host_rows.size())
                       : mb.input_means ? 2 * mb.blocks.front().num_dst
                                        : mb.blocks.front().num_src();
  if (mb.sparse) {
    // Dense parts, pinned: the CSR tensor is put together on the device.
    const torch::Tensor x = SparseInput(mb.sparse_features);
    p.crow = x.crow_indices().pin_memory();
    p.col = x.col_indices().pin_memory();
    p.values = x.values().pin_memory();
    return p;
  }
  p.x = torch::from_blob(mb.features.data(), {rows, mb.feature_dim}, torch::kFloat32).pin_memory();
  if (mb.split_rows) {
    p.host_rows = View(mb.host_rows).pin_memory();
    p.cached_rows = View(mb.cached_rows).pin_memory();
    p.cached_slots = View(mb.cached_slots).pin_memory();
  }
  return p;
}

class NodeLearner : public Learner {
 public:
  NodeLearner(const TrainOptions& o, const PartitionConfig& config)
      : o_(o),
        config_(config),
        env_(o.standalone ? MakeStandaloneEnv(o, config) : MakeDistEnv(o, config)),
        task_((torch::manual_seed(o.seed), MakeTask(o, config))),
        model_(MakeNodeModel(o, config.feature_dim, task_->OutputDim())),
        device_(TrainDevice(o)) {
    task_->Attach(*model_);
    model_->to(device_);
    if (!device_.is_cpu()) {
      // Batches reach pinned memory on the sampling threads, and their
      // host copies go then (a prefetched batch holds only pinned memory).
      env_->SetStager([](MiniBatch& mb) {
        mb.staged = std::make_shared<PinnedBatch>(Pin(mb));
        NoInitVector<float>().swap(mb.features);
        mb.sparse_features = SparseRows();
      });
      cache_ = env_->DeviceCache();
    }
  }

  int rank() const override { return env_->rank(); }
  int world() const override { return env_->world(); }
  std::string Label() const override { return env_->Label(); }
  torch::nn::Module& module() override { return *model_; }
  std::string Signature() const override { return ModelSignature(o_, config_, *task_); }
  int64_t NumBatches() const override { return env_->NumBatches(); }

  void StartEpoch(int epoch, int64_t first) override { env_->StartEpoch(epoch, first); }
  bool NextBatch(int, int64_t) override {
    out_ = torch::Tensor();
    blocks_.clear();  // views of the batch about to go
    x_ = torch::Tensor();
    mb_.reset();  // its buffers go back before the next batch is made
    mb_ = env_->Next();
    if (mb_) {
      Stage(*mb_);
      wire_bytes_ += mb_->wire_bytes;
      cache_lookups_ += mb_->cache_lookups;
      cache_hits_ += mb_->cache_hits;
      ++steps_;
    }
    return mb_.has_value();
  }
  torch::Tensor Loss() override {
    MiniBatch& mb = *mb_;
    if (mb.seeds.empty()) return torch::Tensor();
    out_ = mb.input_means ? model_->ForwardFromMeans(blocks_, x_) : model_->Forward(blocks_, x_);
    return task_->Loss(out_, mb);
  }
  int64_t AllreduceGrads() override { return env_->AllreduceGrads(*model_); }
  int64_t BatchExamples() const override { return task_->Examples(*mb_); }
  int64_t BatchInputs() const override {
    return mb_->blocks.empty() ? 0 : mb_->blocks.front().num_src();
  }
  double TrainAccuracy() override { return task_->TrainAccuracy(out_, *mb_); }
  EvalMetric Metric() const override { return task_->Metric(); }
  // Distributed: what making each batch sent and received (its sampler's
  // or the sampling thread's sockets).
  bool CountsWire() const override { return !o_.standalone; }
  uint64_t WireBytes() const override { return wire_bytes_; }

  // The batch's blocks and input rows where the model is. On a GPU they
  // are copied from pinned host memory on a side stream as soon as the
  // batch arrives, while the previous step's kernels may still run, and
  // the compute stream waits for the copies (an event), not the host.
  //
  // With a GPU feature cache (split_rows) block 0's input is assembled on
  // the GPU: the rows the batch brought, and the cached ones.
  void Stage(MiniBatch& mb) {
    blocks_.clear();
    x_ = torch::Tensor();
    if (mb.seeds.empty()) return;
    if (device_.is_cpu()) {
      const int64_t rows =
          mb.input_means ? 2 * mb.blocks.front().num_dst : mb.blocks.front().num_src();
      for (const Block& b : mb.blocks) blocks_.push_back(ToTensors(b));
      x_ = mb.sparse
               ? SparseInput(mb.sparse_features)
               : torch::from_blob(mb.features.data(), {rows, mb.feature_dim}, torch::kFloat32);
      return;
    }
#if GNN_CUDA_KERNELS
    std::shared_ptr<void> keep = mb.staged;
    if (!keep) keep = std::make_shared<PinnedBatch>(Pin(mb));  // not made by a stager
    PinnedBatch& pinned = *static_cast<PinnedBatch*>(keep.get());
    const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device_.index());
    if (!copy_stream_) copy_stream_ = c10::cuda::getStreamFromPool(false, device_.index());
    torch::Tensor host_x, host_rows, cached_rows, cached_slots;
    {
      c10::cuda::CUDAStreamGuard on_side(*copy_stream_);
      auto up = [&](const torch::Tensor& t) {
        if (!t.defined()) return t;
        torch::Tensor d = t.to(device_, /*non_blocking=*/true);
        d.record_stream(compute);  // used there: not reused before it is done
        return d;
      };
      for (BlockTensors t : pinned.blocks) {
        for (torch::Tensor* p :
             {&t.indptr, &t.indices, &t.t_indptr, &t.t_indices, &t.t_eids, &t.edge_data}) {
          *p = up(*p);
        }
        blocks_.push_back(t);
      }
      host_x = up(pinned.x);
      if (mb.sparse) {
        sparse_x_ = SparseInput(up(pinned.crow), up(pinned.col), up(pinned.values), mb.feature_dim);
      }
      host_rows = up(pinned.host_rows);
      cached_rows = up(pinned.cached_rows);
      cached_slots = up(pinned.cached_slots);
      copied_.record(*copy_stream_);
    }
    copied_.block(compute);
    if (mb.sparse) {
      x_ = sparse_x_;
      sparse_x_ = torch::Tensor();
      return;
    }
    if (!mb.split_rows) {
      x_ = host_x;
      return;
    }
    x_ = torch::empty({mb.blocks.front().num_src(), mb.feature_dim},
                      host_x.options().device(device_));
    if (host_rows.numel() > 0) x_.index_copy_(0, host_rows, host_x);
    if (cached_rows.numel() > 0)
      x_.index_copy_(0, cached_rows, cache_.index_select(0, cached_slots));
#else
    throw Error("--num_gpus: this gnn-train has no CUDA");
#endif
  }

  std::pair<double, double> Evaluate(int epoch, const RecordFn& record) override {
    OnHost host(*model_, device_);
    return task_->Evaluate(*env_, *model_, epoch, env_->Label(), record);
  }

  void SyncParams() override { env_->SyncParams(*model_); }
  void BroadcastBytes(std::string* bytes) override { env_->BroadcastBytes(bytes); }
  double SumOverRanks(double v) override { return env_->SumOverRanks(v); }

  void SaveOutputs(bool lead, int epochs_done, int saved_epoch) override {
    if (lead && !o_.save_model.empty()) {
      json meta = {
          {"model", model_->Name()},
          {"task", o_.task},
          {"graph_name", config_.graph_name},
          {"in_feats", config_.feature_dim},
          {"num_hidden", o_.num_hidden},
          {"out_feats", task_->OutputDim()},
          {"n_classes", o_.task == "node" || o_.task == "multilabel" ? config_.num_classes : 0},
          {"num_layers", o_.num_layers},
          {"fan_out", o_.Fanouts()},
          {"epochs", epochs_done},
          {"saved_epoch", saved_epoch}};
      if (o_.EdgeTask()) {
        // The decoder's output: the edge classes, or 0 for a value.
        meta["edge_classes"] =
            config_.edge_label_kind == LabelKind::kClass ? config_.num_edge_classes : 0;
        meta["decoder_edge_feat_dim"] = o_.decoder_edge_dim;
      }
      if (o_.use_edge_weight) meta["edge_weight"] = true;
      if (o_.edge_feat_dim > 0) {
        meta["edge_feat_mp_op"] = o_.edge_feat_mp_op;
        meta["edge_feat_dim"] = o_.edge_feat_dim;
      }
      meta.update(model_->Describe());
      SaveModelFile(o_.save_model, *model_, meta);
    }
    if (!o_.save_embeddings.empty()) {
      AllCoresWhileIdle all_cores(o_);
      OnHost host(*model_, device_);
      torch::Tensor emb = env_->Embeddings(*model_).contiguous();
      if (lead) WriteNpy(o_.save_embeddings, emb.data_ptr<float>(), {emb.size(0), emb.size(1)});
    }
  }

  void Summarize(json* summary) override {
    task_->Summarize(summary);
    if (o_.standalone) {
      if (!cache_.defined()) return;
      // Of the input rows the batches read, the share the GPU held.
      const double rate = cache_lookups_ ? static_cast<double>(cache_hits_) / cache_lookups_ : 0.0;
      (*summary)["gpu_cache_hit_rate"] = rate;
      (*summary)["gpu_cache_rows"] = cache_.size(0);
      GNN_LOG(kInfo) << Label() << ": GPU feature cache held " << cache_hits_ << " of "
                     << cache_lookups_ << " input rows the batches read (hit rate " << rate << ")";
      return;
    }
    // What the machine's hot-row cache saved: of the other partitions'
    // rows the batches needed, the share it held.
    const double rate = cache_lookups_ ? static_cast<double>(cache_hits_) / cache_lookups_ : 0.0;
    (*summary)["cache_hit_rate"] = rate;
    (*summary)["remote_rows_per_step"] =
        steps_ ? static_cast<double>(cache_lookups_) / static_cast<double>(steps_) : 0.0;
    GNN_LOG(kInfo) << Label() << ": hot-row cache held " << cache_hits_ << " of " << cache_lookups_
                   << " rows of other partitions the batches read (hit rate " << rate << ")";
  }

 private:
  const TrainOptions& o_;
  const PartitionConfig& config_;
  std::unique_ptr<TrainEnv> env_;
  std::unique_ptr<Task> task_;
  std::shared_ptr<NodeModel> model_;
  torch::Device device_;              // where the model and each batch live (--num_gpus)
  std::vector<BlockTensors> blocks_;  // the current batch's, on device_ (Stage)
  torch::Tensor x_;                   // its input rows, on device_
  torch::Tensor sparse_x_;            // sparse rows put together on the GPU (Stage)
  torch::Tensor cache_;               // --gpu_cache_mb: hot rows on device_ (else undefined)
#if GNN_CUDA_KERNELS
  std::optional<c10::cuda::CUDAStream> copy_stream_;  // host-to-device copies
  at::cuda::CUDAEvent copied_;                        // the current batch's are done
#endif
  std::optional<MiniBatch> mb_;  // the current batch
  torch::Tensor out_;            // its output rows (for the train accuracy)
  uint64_t wire_bytes_ = 0;      // of every batch received
  uint64_t cache_lookups_ = 0;   // their rows of other partitions
  uint64_t cache_hits_ = 0;      // of which the hot-row cache held
  int64_t steps_ = 0;            // batches received
};

}  // namespace

std::unique_ptr<Learner> MakeNodeLearner(const TrainOptions& o, const PartitionConfig& config) {
  return std::make_unique<NodeLearner>(o, config);
}

}  // namespace gnn
