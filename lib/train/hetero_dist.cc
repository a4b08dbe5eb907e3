// The distributed heterogeneous source: typed sampling and pulls from the
// servers (DistGraph, in the trainer or in its gnn-sampler processes),
// embedding rows at the servers of their partitions, and the trainers'
// collective for gradients.
//
// A sparse step: every rank all-gathers (ids, gradient rows) of its batch,
// combines them as DGL does (mean over the ranks that used a row) and
// pushes the rows of partitions p with p mod W == rank, each row by exactly
// one rank. Every push is acknowledged before its rank enters the dense
// all-reduce that follows, so no rank pulls the next batch's rows before
// every update of this step is in.
#include <cstring>

#include "client/dist_graph.h"
#include "common/error.h"
#include "common/log.h"
#include "common/timer.h"
#include "net/batch_codec.h"
#include "net/ip_config.h"
#include "net/ports.h"
#include "net/security.h"
#include "store/embedding_table.h"
#include "train/collective.h"
#include "train/hetero_source.h"

namespace gnn {

namespace {

class DistHeteroSource : public HeteroSource {
 public:
  DistHeteroSource(const TrainOptions& o, const PartitionConfig& config) : o_(o), config_(config) {
    const std::vector<MachineAddress> machines = ReadIpConfig(o.ip_config);
    const int num_machines = static_cast<int>(machines.size());
    CheckMachinesForParts(config.num_parts, num_machines, o.ip_config);
    TrainerGroup group = JoinTrainers(o, machines, config.num_parts);
    narrow_ = net::ParseRowFormat(o.wire_dtype, "--wire_dtype") == net::RowFormat::kBfloat16;
    rank_ = group.rank;
    world_ = group.world;
    slot_ = group.slot;
    collective_ = std::move(group.collective);
    // GPU trainers sum their dense gradients with NCCL, as DistEnv's do
    // (the embedding rows' sparse gradients stay on the host collective).
    if (o.num_gpus > 0) collective_->EnableNccl();
    graph_ = std::make_unique<DistGraph>(group.graph);
    const size_t T = config.ntypes.size();
    specs_.resize(T);
    for (size_t t = 0; t < T; ++t) {
      specs_[t].ntype = static_cast<int64_t>(t);
      specs_[t].dim = o.num_hidden;
      specs_[t].optimizer =
          ParseSparseOptimizer(o.sparse_optimizer) == SparseOptimizerKind::kAdagrad ? 0 : 1;
      specs_[t].lr = o.sparse_lr;
      specs_[t].seed = MixSeed(o.seed, 0x656d62);  // as the standalone tables
    }
    if (o.num_samplers > 0) {
      samplers_ = StartSamplers(o, config, group);
      schema_.num_rels = static_cast<int64_t>(config.etypes.size());
      schema_.feature_dims = config.ntype_feature_dims;
      schema_.feature_dims.resize(T, 0);
      schema_.type_of = [this](int64_t v) { return config_.NtypeOf(v); };
      schema_.rel_src_type = config.RelationSrcTypes();
    }
  }

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string Label() const override {
    return "Part " + std::to_string(rank_);  // DGL's: the trainer's rank
  }

  std::vector<int64_t> SplitNodes(int m) override {
    const int64_t total = graph_->CountNodes(m);
    return graph_->SplitNodes(m, total * slot_ / world_, total * (slot_ + 1) / world_);
  }

  HeteroBatch Sample(const std::vector<int64_t>& seeds,
                     const std::vector<std::vector<int>>& fanouts, uint64_t rng_seed) override {
    return graph_->MakeTypedBatch(seeds, fanouts, o_.sample_replace, rng_seed);
  }

  // With --num_samplers, the plans go to this trainer's gnn-sampler
  // processes at once, which make each batch as Sample does (the same
  // DistGraph::MakeTypedBatch) and send it back; the embedding rows are
  // pulled here when the batch is used.
  void Start(std::vector<TypedBatchPlan> plans,
             const std::vector<std::vector<int>>& fanouts) override {
    if (!samplers_) return HeteroSource::Start(std::move(plans), fanouts);
    std::vector<net::TypedSeedBatch> batches;
    for (TypedBatchPlan& p : plans) {
      net::TypedSeedBatch sb;
      sb.index = p.index;
      sb.rng_seed = p.rng_seed;
      sb.replace = o_.sample_replace;
      sb.fanouts = fanouts;
      sb.seeds = std::move(p.seeds);
      batches.push_back(std::move(sb));
    }
    samplers_->pool().Start(std::move(batches));
  }
  HeteroBatch Next() override {
    if (!samplers_) return HeteroSource::Next();
    std::optional<net::Message> m = samplers_->NextMessage();
    if (!m) throw DataError("no typed batch planned");
    HeteroBatch b = net::DecodeTypedMiniBatch(*m, schema_);
    sampler_wire_bytes_ += b.wire_bytes;
    return b;
  }

  void PullEmbeddings(int t, const std::vector<int64_t>& ids, std::vector<float>* out) override {
    graph_->EmbPull(specs_[static_cast<size_t>(t)], ids, out);
  }

  void SumEmbeddings(int t, const std::vector<int64_t>& ids, const std::vector<int64_t>& group_ptr,
                     std::vector<float>* out) override {
    graph_->TypedGroupSums(t, &specs_[static_cast<size_t>(t)], ids, group_ptr, out);
  }

  void PushEmbeddingGrads(int t, const std::vector<int64_t>& ids,
                          const std::vector<float>& grads) override {
    const net::EmbSpec& spec = specs_[static_cast<size_t>(t)];
    const int64_t n = static_cast<int64_t>(ids.size());
    torch::Tensor all_ids = collective_->AllgatherRows(
        torch::from_blob(const_cast<int64_t*>(ids.data()), {n, 1}, torch::kInt64));
    // The gradient rows cross the mesh in --wire_dtype, as they then cross
    // to the servers.
    torch::Tensor own =
        torch::from_blob(const_cast<float*>(grads.data()), {n, spec.dim}, torch::kFloat32);
    if (narrow_) own = own.to(torch::kBFloat16);
    torch::Tensor all_grads = collective_->AllgatherRows(own).to(torch::kFloat32);
    all_ids = all_ids.contiguous();
    all_grads = all_grads.contiguous();
    const std::vector<int64_t> gathered(all_ids.data_ptr<int64_t>(),
                                        all_ids.data_ptr<int64_t>() + all_ids.numel());
    const std::vector<float> gathered_grads(all_grads.data_ptr<float>(),
                                            all_grads.data_ptr<float>() + all_grads.numel());
    std::vector<int64_t> rows;
    std::vector<float> combined;
    CombineSparseGrads({&gathered}, {&gathered_grads}, spec.dim, &rows, &combined);
    // This rank's share: rows of partitions p with p mod W == rank.
    std::vector<int64_t> mine;
    std::vector<float> mine_grads;
    const size_t dim = static_cast<size_t>(spec.dim);
    for (size_t i = 0; i < rows.size(); ++i) {
      if (config_.PartOf(rows[i]) % world_ != rank_) continue;
      mine.push_back(rows[i]);
      mine_grads.insert(mine_grads.end(), combined.begin() + i * dim,
                        combined.begin() + (i + 1) * dim);
    }
    if (!mine.empty()) graph_->EmbPush(spec, mine, mine_grads);
  }

  // Rank 0 fetches every partition's table of every featureless type; the
  // barrier keeps the other ranks from updating rows while it reads.
  std::string SaveEmbeddings() override {
    std::string out;
    if (rank_ == 0) {
      for (size_t t = 0; t < specs_.size(); ++t) {
        if (t < config_.ntype_feature_dims.size() && config_.ntype_feature_dims[t] > 0) continue;
        for (int p = 0; p < config_.num_parts; ++p) {
          const std::string blob = graph_->EmbSave(specs_[t], p);
          const uint64_t n = blob.size();
          out.append(reinterpret_cast<const char*>(&n), sizeof n);
          out += blob;
        }
      }
    }
    collective_->Barrier();
    return out;
  }

  std::string EmbeddingChecksum() override {
    if (rank_ != 0) return "";
    // Exact rows (float32 whatever --wire_dtype), as the tables hold them.
    return ChecksumEmbeddings(config_,
                              [&](int t, const std::vector<int64_t>& ids, std::vector<float>* out) {
                                graph_->EmbPull(specs_[static_cast<size_t>(t)], ids, out, true);
                              });
  }

  void RestoreEmbeddings(const std::string& bytes, const std::string& source) override {
    if (rank_ == 0) {
      size_t pos = 0;
      for (size_t t = 0; t < specs_.size(); ++t) {
        if (t < config_.ntype_feature_dims.size() && config_.ntype_feature_dims[t] > 0) continue;
        for (int p = 0; p < config_.num_parts; ++p) {
          uint64_t n = 0;
          if (bytes.size() - pos < sizeof n) {
            throw DataError(source + ": embedding tables cut short (another partitioning?)");
          }
          std::memcpy(&n, bytes.data() + pos, sizeof n);
          pos += sizeof n;
          if (bytes.size() - pos < n) throw DataError(source + ": embedding tables cut short");
          graph_->EmbRestore(specs_[t], p, bytes.substr(pos, n));
          pos += n;
        }
      }
      if (pos != bytes.size()) {
        throw DataError(source + ": embedding tables of another layout (" +
                        std::to_string(bytes.size() - pos) + " bytes left over)");
      }
    }
    collective_->Barrier();
  }

  int64_t AllreduceGrads(torch::nn::Module& model) override {
    return collective_->AllreduceMeanGrads(model.parameters());
  }
  void SyncParams(torch::nn::Module& model) override {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> ps;
    for (auto& p : model.parameters()) ps.push_back(p.detach());
    collective_->Broadcast(ps);
  }
  void BroadcastBytes(std::string* bytes) override { collective_->BroadcastBytes(bytes); }
  std::vector<double> SumOverRanks(std::vector<double> v) override {
    return collective_->AllreduceSum(v);
  }
  // This trainer's requests (embedding rows, evaluation without samplers)
  // and its samplers' for its batches.
  uint64_t WireBytes() const override { return graph_->wire_bytes() + sampler_wire_bytes_; }

 private:
  const TrainOptions& o_;
  const PartitionConfig& config_;
  int rank_ = 0, world_ = 1, slot_ = 0;
  bool narrow_ = false;  // --wire_dtype bfloat16: embedding gradients too
  std::unique_ptr<Collective> collective_;
  std::unique_ptr<DistGraph> graph_;
  std::vector<net::EmbSpec> specs_;
  std::unique_ptr<SamplerProcesses> samplers_;  // --num_samplers > 0
  net::TypedBatchSchema schema_;                // what their batches are checked against
  uint64_t sampler_wire_bytes_ = 0;
};

}  // namespace

std::unique_ptr<HeteroSource> MakeDistHeteroSource(const TrainOptions& o,
                                                   const PartitionConfig& config) {
  return std::make_unique<DistHeteroSource>(o, config);
}

}  // namespace gnn
