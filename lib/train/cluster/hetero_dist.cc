// The distributed heterogeneous source: typed sampling and pulls from the
// servers (DistGraph, in the trainer or in its gnn-sampler processes),
// embedding rows at the servers of their partitions, and the trainers'
// collective for gradients.
//
// A sparse step: every rank sends each rank the (id, gradient row) pairs of
// its batch that rank applies, the rows of partitions p with p mod W ==
// rank (one all-to-all, as DGL's sparse optimizers do); each rank combines
// what it got as DGL does (mean over the ranks that used a row) and pushes
// them, each row by exactly one rank. Every push is acknowledged before
// its rank enters the dense all-reduce that follows, so no rank pulls the
// next batch's rows before every update of this step is in.
#include <cstring>

#include "client/dist_graph.h"
#include "common/bfloat16.h"
#include "common/error.h"
#include "common/log.h"
#include "common/timer.h"
#include "net/batch_codec.h"
#include "net/ip_config.h"
#include "net/ports.h"
#include "net/security.h"
#include "store/embedding_table.h"
#include "train/cluster/collective.h"
#include "train/loop/hetero_source.h"
#include "train/loop/typed_edges.h"

namespace gnn {

namespace {

constexpr size_t kDigestChars = 64;  // a SHA-256 in hex

// Rows `which` of (ids, grads) as one rank's share of a sparse step: a
// little-endian row count, the ids, then the gradient rows (bfloat16 when
// `narrow`, rounded as the servers' wire rounds them; float32 otherwise).
std::string PackGradRows(const std::vector<int64_t>& ids, const std::vector<float>& grads,
                         size_t dim, const std::vector<size_t>& which, bool narrow) {
  const uint64_t n = which.size();
  const size_t value_bytes = narrow ? sizeof(uint16_t) : sizeof(float);
  std::string out(sizeof n + n * sizeof(int64_t) + n * dim * value_bytes, '\0');
  char* at = out.data();
  std::memcpy(at, &n, sizeof n);
  at += sizeof n;
  for (size_t i : which) {
    std::memcpy(at, &ids[i], sizeof(int64_t));
    at += sizeof(int64_t);
  }
  for (size_t i : which) {
    const float* row = grads.data() + i * dim;
    if (!narrow) {
      std::memcpy(at, row, dim * sizeof(float));
      at += dim * sizeof(float);
      continue;
    }
    for (size_t j = 0; j < dim; ++j, at += sizeof(uint16_t)) {
      const uint16_t h = FloatToBfloat16(row[j]);
      std::memcpy(at, &h, sizeof h);
    }
  }
  return out;
}

// PackGradRows's bytes from rank `from` back to ids and float32 rows;
// PeerError when they are not such bytes.
void UnpackGradRows(const std::string& bytes, size_t dim, bool narrow, int from,
                    std::vector<int64_t>* ids, std::vector<float>* grads) {
  uint64_t n = 0;
  const size_t value_bytes = narrow ? sizeof(uint16_t) : sizeof(float);
  const size_t row_bytes = sizeof(int64_t) + dim * value_bytes;
  if (bytes.size() < sizeof n) {
    throw PeerError("rank " + std::to_string(from) + " sent " + std::to_string(bytes.size()) +
                    " bytes of embedding gradients: no row count");
  }
  std::memcpy(&n, bytes.data(), sizeof n);
  if (n > (bytes.size() - sizeof n) / row_bytes || bytes.size() != sizeof n + n * row_bytes) {
    throw PeerError("rank " + std::to_string(from) + " sent " + std::to_string(bytes.size()) +
                    " bytes of embedding gradients for " + std::to_string(n) + " rows of " +
                    std::to_string(dim));
  }
  const char* at = bytes.data() + sizeof n;
  ids->resize(n);
  std::memcpy(ids->data(), at, n * sizeof(int64_t));
  at += n * sizeof(int64_t);
  grads->resize(n * dim);
  if (!narrow) {
    std::memcpy(grads->data(), at, grads->size() * sizeof(float));
    return;
  }
  for (float& g : *grads) {
    uint16_t h;
    std::memcpy(&h, at, sizeof h);
    at += sizeof h;
    g = Bfloat16ToFloat(h);
  }
}

class DistHeteroSource : public HeteroSource {
 public:
  DistHeteroSource(const TrainOptions& o, const PartitionConfig& config) : o_(o), config_(config) {
    const std::vector<MachineAddress> machines = ReadIpConfig(o.ip_config);
    const int num_machines = static_cast<int>(machines.size());
    num_machines_ = num_machines;
    CheckMachinesForParts(config.num_parts, num_machines, o.ip_config);
    TrainerGroup group = JoinTrainers(o, machines, config.num_parts);
    narrow_ = o.wire.row_format == net::RowFormat::kBfloat16;
    rank_ = group.rank;
    world_ = group.world;
    slot_ = group.slot;
    collective_ = std::move(group.collective);
    // GPU trainers sum their dense gradients with NCCL, as DistEnv's do
    // (the embedding rows' sparse gradients stay on the host collective).
    if (o.num_gpus > 0) collective_->EnableNccl();
    graph_ = std::make_unique<DistGraph>(group.graph);
    ResetEmbeddings();
    const size_t T = config.ntypes.size();
    if (o.num_samplers > 0) {
      samplers_ = StartSamplers(o, config, group);
      schema_.num_rels = static_cast<int64_t>(config.etypes.size());
      schema_.feature_dims = config.ntype_feature_dims;
      schema_.feature_dims.resize(T, 0);
      schema_.type_of = [this](int64_t v) { return config_.NtypeOf(v); };
      schema_.rel_src_type = config.RelationSrcTypes();
      schema_.edge_dim = o.ReadsEdgeData() ? config.edge_feature_dim : 0;
    }
    group_ = std::move(group);  // its collective moved out above
  }

  // Each type's table settings, sent with every embedding request (the
  // servers make a table on its first request).
  void ResetEmbeddings() override {
    const size_t T = config_.ntypes.size();
    specs_.assign(T, net::EmbSpec{});
    for (size_t t = 0; t < T; ++t) {
      specs_[t].ntype = static_cast<int64_t>(t);
      specs_[t].dim = o_.num_hidden;
      specs_[t].optimizer =
          ParseSparseOptimizer(o_.sparse_optimizer) == SparseOptimizerKind::kAdagrad ? 0 : 1;
      specs_[t].lr = o_.sparse_lr;
      specs_[t].seed = MixSeed(o_.seed, 0x656d62);  // as the standalone tables
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

  void ReadEdgeData() override {
    graph_->SetEdgeData(true);
    schema_.edge_dim = config_.edge_feature_dim;
    if (samplers_) {
      // Started before the model file said its messages read edge rows:
      // again, asking for them (and for rows, not first-layer sums).
      samplers_.reset();
      samplers_ = StartSamplers(o_, config_, group_);
    }
  }
  TypedEdgeSplits EdgeSplits() override {
    return ReadTypedEdgeSplits(o_, config_, MachinePartition(o_.machine_id, config_.num_parts),
                               num_machines_, o_.num_trainers, o_.machine_id, o_.trainer_id);
  }
  HeteroBatch Sample(const std::vector<int64_t>& seeds,
                     const std::vector<std::vector<int>>& fanouts, uint64_t rng_seed,
                     const EdgeExclusion* exclude) override {
    return graph_->MakeTypedBatch(seeds, fanouts, o_.sample_replace, rng_seed, exclude);
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
      sb.exclude = std::move(p.exclude);
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
    const size_t dim = static_cast<size_t>(spec.dim);
    if (grads.size() != ids.size() * dim) {
      throw DataError("embedding gradients: " + std::to_string(grads.size()) + " values for " +
                      std::to_string(ids.size()) + " rows of " + std::to_string(dim));
    }
    // Each row to the rank that applies it: rows of partitions p with
    // p mod W == rank.
    std::vector<std::vector<size_t>> of_rank(static_cast<size_t>(world_));
    for (size_t i = 0; i < ids.size(); ++i) {
      const int p = config_.PartOf(ids[i]);
      if (p < 0) throw DataError("embedding row " + std::to_string(ids[i]) + " is in no partition");
      of_rank[static_cast<size_t>(p % world_)].push_back(i);
    }
    std::vector<std::string> to(static_cast<size_t>(world_));
    for (size_t r = 0; r < to.size(); ++r)
      to[r] = PackGradRows(ids, grads, dim, of_rank[r], narrow_);
    const std::vector<std::string> from = collective_->Alltoall(to);
    std::vector<std::vector<int64_t>> got_ids(from.size());
    std::vector<std::vector<float>> got_grads(from.size());
    std::vector<const std::vector<int64_t>*> id_ptrs;
    std::vector<const std::vector<float>*> grad_ptrs;
    for (size_t r = 0; r < from.size(); ++r) {
      UnpackGradRows(from[r], dim, narrow_, static_cast<int>(r), &got_ids[r], &got_grads[r]);
      id_ptrs.push_back(&got_ids[r]);
      grad_ptrs.push_back(&got_grads[r]);
    }
    // Rank order, as the concatenation of every rank's rows would be: the
    // combination is the same bits whichever rank applies a row.
    std::vector<int64_t> rows;
    std::vector<float> combined;
    CombineSparseGrads(id_ptrs, grad_ptrs, spec.dim, &rows, &combined);
    for (int64_t v : rows) {
      if (config_.PartOf(v) % world_ != rank_) {
        throw PeerError("a trainer sent embedding row " + std::to_string(v) + " to rank " +
                        std::to_string(rank_) + ", which does not apply it");
      }
    }
    if (!rows.empty()) graph_->EmbPush(spec, rows, combined);
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

  // Each rank hashes the partitions whose rows it applies and the digests
  // are gathered, so every rank ends this call together: a rank that left
  // early would take its machine's servers down under the others.
  std::string EmbeddingChecksum() override {
    // Exact rows (float32 whatever --wire_dtype), as the tables hold them.
    const std::vector<std::string> mine = EmbeddingDigests(
        config_,
        [&](int t, const std::vector<int64_t>& ids, std::vector<float>* out) {
          graph_->EmbPull(specs_[static_cast<size_t>(t)], ids, out, true);
        },
        [&](int p) { return p % world_ == rank_; });
    std::string packed;
    for (const std::string& d : mine) packed += d.empty() ? std::string(kDigestChars, '-') : d;
    const std::vector<std::string> all = collective_->AllgatherBytes(packed);
    for (size_t r = 0; r < all.size(); ++r) {
      if (all[r].size() != packed.size()) {
        throw PeerError("rank " + std::to_string(r) + " sent " + std::to_string(all[r].size()) +
                        " bytes of embedding digests, expected " + std::to_string(packed.size()));
      }
    }
    // Digest i is of partition i mod P (types then partitions), hashed by
    // the rank that applies that partition's rows.
    std::vector<std::string> digests(mine.size());
    const size_t parts = static_cast<size_t>(config_.num_parts);
    for (size_t i = 0; i < digests.size(); ++i) {
      digests[i] = all[(i % parts) % all.size()].substr(i * kDigestChars, kDigestChars);
    }
    return CombineEmbeddingDigests(digests);
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

  void OrigIds(const std::vector<int64_t>& ids, std::vector<int64_t>* out) override {
    graph_->PullOrigIds(ids, out);
  }
  void ReadEmbeddings(int t, const std::vector<int64_t>& ids, std::vector<float>* out) override {
    graph_->EmbPull(specs_[static_cast<size_t>(t)], ids, out, true);
  }
  // The rows go to the partition's server as EmbSave's blobs would: a
  // table of fresh state holding them, saved in pieces of about 8 MB.
  void SetEmbeddings(int t, int p, const std::vector<float>& rows) override {
    const net::EmbSpec& spec = specs_.at(static_cast<size_t>(t));
    const auto [first, end] =
        config_.parts.at(static_cast<size_t>(p)).ntype_ranges.at(static_cast<size_t>(t));
    const int64_t n = end - first;
    if (static_cast<int64_t>(rows.size()) != n * spec.dim) {
      throw DataError("embedding rows for partition " + std::to_string(p) + " of type " +
                      config_.ntypes[static_cast<size_t>(t)] + ": " + std::to_string(rows.size()) +
                      " values for " + std::to_string(n) + " rows of " + std::to_string(spec.dim));
    }
    EmbeddingOptions eo;
    eo.dim = spec.dim;
    eo.optimizer = ParseSparseOptimizer(o_.sparse_optimizer);
    eo.lr = o_.sparse_lr;
    EmbeddingTable table(eo, std::vector<uint64_t>(static_cast<size_t>(n), 0), 1);
    table.SetValues(0, rows.data(), n);
    const int64_t chunk = std::max<int64_t>(1, (int64_t{8} << 20) / (12 * spec.dim));
    std::string bytes;
    for (int64_t b = 0; b < n; b += chunk) {
      const std::string blob = table.Save(b, std::min(n, b + chunk));
      const uint64_t head[2] = {static_cast<uint64_t>(b), blob.size()};
      bytes.append(reinterpret_cast<const char*>(head), sizeof head);
      bytes += blob;
    }
    graph_->EmbRestore(spec, p, bytes);
  }
  std::vector<int64_t> AllSplitNodes(int m) override {
    return graph_->SplitNodes(m, 0, graph_->CountNodes(m));
  }
  std::vector<std::string> Alltoall(std::vector<std::string> to) override {
    return collective_->Alltoall(to);
  }
  void Barrier() override { collective_->Barrier(); }

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
  int num_machines_ = 1;
  bool narrow_ = false;  // --wire_dtype bfloat16: embedding gradients too
  std::unique_ptr<Collective> collective_;
  std::unique_ptr<DistGraph> graph_;
  std::vector<net::EmbSpec> specs_;
  std::unique_ptr<SamplerProcesses> samplers_;  // --num_samplers > 0
  net::TypedBatchSchema schema_;                // what their batches are checked against
  TrainerGroup group_;                          // (without its collective) to start them again
  uint64_t sampler_wire_bytes_ = 0;
};

}  // namespace

std::unique_ptr<HeteroSource> MakeDistHeteroSource(const TrainOptions& o,
                                                   const PartitionConfig& config) {
  return std::make_unique<DistHeteroSource>(o, config);
}

}  // namespace gnn
