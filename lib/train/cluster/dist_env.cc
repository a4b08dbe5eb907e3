// Distributed training environment: this trainer's share of the training
// nodes (node_split with force_even), mini-batches from in-process sampling
// or from its own gnn-sampler processes, gradient all-reduce and
// distributed layer-wise evaluation.
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "client/dist_graph.h"
#include "client/prefetcher.h"
#include "client/sampler_service.h"
#include "common/error.h"
#include "common/log.h"
#include "common/process.h"
#include "common/sha256.h"
#include "common/timer.h"
#include "net/batch_codec.h"
#include "net/ip_config.h"
#include "net/ports.h"
#include "sampling/edge_batch.h"
#include "sampling/loader.h"
#include "sampling/sampler.h"
#include "train/cluster/collective.h"
#include "train/cluster/held_rows.h"
#include "train/cluster/range_eval.h"
#include "train/loop/inference.h"
#include "train/loop/train_env.h"
#include "train/models/sparse_input.h"

namespace gnn {

namespace {

using Clock = std::chrono::steady_clock;

class DistEnv : public TrainEnv {
 public:
  DistEnv(const TrainOptions& o, const PartitionConfig& config)
      : o_(o), config_(config), fanouts_(o.Fanouts()) {
    std::vector<MachineAddress> machines = ReadIpConfig(o.ip_config);
    const int num_machines = static_cast<int>(machines.size());
    CheckMachinesForParts(config.num_parts, num_machines, o.ip_config);
    TrainerGroup group = JoinTrainers(o, machines, config.num_parts);
    part_ = MachinePartition(o.machine_id, config.num_parts);
    rank_ = group.rank;
    world_ = group.world;
    collective_ = std::move(group.collective);
    // GPU trainers sum their gradients with NCCL (set up through the
    // rendezvous; NCCL's traffic is plaintext: README).
    if (o.num_gpus > 0) collective_->EnableNccl();

    graph_ = std::make_unique<DistGraph>(group.graph);
    num_machines_ = num_machines;
    if (o.inference) return;  // no batches, no samplers: layer-wise inference only

    // node_split with force_even (TrainerGroup::slot).
    const int64_t total = graph_->CountNodes(0);
    // (The edge tasks' seeds are edges: SplitLabeledEdges.)
    if (total == 0 && !o.EdgeTask()) {
      throw DataError(o.part_config + ": the graph has no training nodes");
    }
    const int slot = group.slot;
    train_ = graph_->SplitNodes(0, total * slot / world_, total * (slot + 1) / world_);
    const int64_t max_share = (total + world_ - 1) / world_;
    num_batches_ = (max_share + o.batch_size - 1) / o.batch_size;
    for (int mask = 1; mask <= 2; ++mask) {
      int64_t n = graph_->CountNodes(mask);
      eval_nodes_[mask - 1] = graph_->SplitNodes(mask, n * slot / world_, n * (slot + 1) / world_);
    }
    if (o.EdgeTask()) {
      SplitLabeledEdges(config, num_machines);
    } else if (o.Kind() == TaskKind::kLink) {
      // Edges are split by the partition that owns them (the in-edges of
      // its nodes, read from shared memory): the trainers of the machines
      // serving it take even slices, and every rank runs as many steps as
      // the largest slice of any partition needs.
      if (!graph_->LocalCsc(&local_csc_)) throw Error("no local partition for --task link");
      int64_t max_share = 0;
      for (int p = 0; p < config.num_parts; ++p) {
        const int64_t sharers =
            static_cast<int64_t>(PartitionMachines(p, config.num_parts, num_machines).size()) *
            o.num_trainers;
        max_share = std::max(max_share, (config.parts[p].num_edges() + sharers - 1) / sharers);
      }
      if (max_share == 0) throw DataError(o.part_config + ": the graph has no edges");
      const int64_t mine = config.parts[part_].num_edges();
      const int64_t sharers =
          static_cast<int64_t>(PartitionMachines(part_, config.num_parts, num_machines).size()) *
          o.num_trainers;
      const int64_t me = (o.machine_id / config.num_parts) * o.num_trainers + o.trainer_id;
      for (int64_t e = mine * me / sharers; e < mine * (me + 1) / sharers; ++e) edges_.push_back(e);
      num_batches_ = (max_share + o.batch_size - 1) / o.batch_size;
      GNN_LOG(kInfo) << Label() << ": " << edges_.size() << " of " << config.num_edges
                     << " training edges, " << num_batches_ << " batches per epoch";
    } else {
      GNN_LOG(kInfo) << Label() << ": " << train_.size() << " of " << total << " train nodes, "
                     << num_batches_ << " batches per epoch";
    }

    if (o.num_samplers > 0) {
      samplers_ = StartSamplers(o, config, group);
    } else {
      prefetcher_ = std::make_unique<Prefetcher>(
          group.graph, o.prefetch,
          EdgeBatches() ? [this](net::SeedBatch* sb) { PlanLinkBatch(sb); }
                        : std::function<void(net::SeedBatch*)>());
    }
    if (samplers_ && EdgeBatches())
      samplers_->pool().SetPrepare([this](net::SeedBatch* sb) { PlanLinkBatch(sb); });
  }

  // --task link: a batch is sent as a slice of edge positions and planned
  // only when it is about to be sampled (all plans of an epoch at once
  // would take gigabytes on a products-size graph). The plan's negatives
  // and seed nodes go to the sampler; the pair positions stay here until
  // Next() attaches them. Runs on the sampling thread or the trainer's.
  void PlanLinkBatch(net::SeedBatch* sb) {
    std::vector<int64_t> heads, tails;
    EdgeEndpoints(local_csc_, sb->seeds, &heads, &tails);
    const bool edge_task = o_.EdgeTask();
    EdgeBatchPlan plan = PlanEdgeBatch(heads, tails, edge_task ? 0 : o_.num_negs, 0,
                                       config_.num_nodes, MixSeed(sb->rng_seed, 1));
    if (edge_task) {
      // Positions were checked by EdgeEndpoints.
      for (int64_t e : sb->seeds) {
        AppendEdgeRow(edge_labels_, e, &plan.labels, &plan.targets, &plan.edge_inputs);
      }
    }
    sb->seeds = std::move(plan.seeds);
    if (edge_task ? o_.exclude_target_edges : o_.remove_edge) sb->exclude = std::move(plan.exclude);
    plan.seeds.clear();
    plan.exclude.clear();
    std::lock_guard<std::mutex> lock(plans_mu_);
    plans_[sb->index] = std::move(plan);
  }

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string Label() const override {
    return "Part " + std::to_string(rank_);  // DGL's: the trainer's rank
  }
  void ReadEdgeData() override { graph_->SetEdgeData(true); }
  int64_t NumBatches() const override { return num_batches_; }

  void StartEpoch(int epoch, int64_t first_batch) override {
    std::vector<int64_t> seeds = EdgeBatches() ? edges_ : train_;
    // Each rank shuffles its own share; batches are near-equal slices so
    // every rank runs exactly num_batches_ steps (no all-reduce deadlock).
    uint64_t state = MixSeed(MixSeed(o_.seed, static_cast<uint64_t>(epoch)), rank_);
    for (int64_t i = static_cast<int64_t>(seeds.size()) - 1; i > 0; --i) {
      state = MixSeed(state, static_cast<uint64_t>(i));
      std::swap(seeds[i], seeds[state % static_cast<uint64_t>(i + 1)]);
    }
    std::vector<net::SeedBatch> batches;
    const int64_t n = static_cast<int64_t>(seeds.size());
    {
      std::lock_guard<std::mutex> lock(plans_mu_);
      plans_.clear();
    }
    for (int64_t b = first_batch; b < num_batches_; ++b) {
      net::SeedBatch sb;
      sb.epoch = epoch;
      sb.index = b;
      sb.rng_seed = MixSeed(MixSeed(MixSeed(o_.seed, epoch), rank_), b);
      sb.replace = o_.sample_replace;
      sb.fanouts = fanouts_;
      // With --task link the slice holds edge positions (see PlanLinkBatch).
      sb.seeds.assign(seeds.begin() + n * b / num_batches_,
                      seeds.begin() + n * (b + 1) / num_batches_);
      batches.push_back(std::move(sb));
    }
    if (samplers_) {
      samplers_->pool().Start(std::move(batches));
    } else {
      prefetcher_->Start(std::move(batches));
    }
  }

  std::optional<MiniBatch> Next() override {
    std::optional<MiniBatch> mb;
    if (!samplers_) {
      mb = prefetcher_->Next();
    } else {
      mb = samplers_->Next();
    }
    if (mb && EdgeBatches()) {
      std::unique_lock<std::mutex> lock(plans_mu_);
      auto it = plans_.find(mb->index);
      if (it == plans_.end()) {
        throw ProtocolError("mini-batch " + std::to_string(mb->index) + " was never planned");
      }
      EdgeBatchPlan plan = std::move(it->second);
      plans_.erase(it);
      lock.unlock();
      mb->pos_head = std::move(plan.pos_head);
      mb->pos_tail = std::move(plan.pos_tail);
      mb->neg_head = std::move(plan.neg_head);
      mb->neg_tail = std::move(plan.neg_tail);
      if (o_.EdgeTask()) {
        // The edges' labels in place of the seeds' (MiniBatch, edge tasks).
        mb->labels = std::move(plan.labels);
        mb->targets = std::move(plan.targets);
        mb->label_width = mb->targets.empty() ? 0 : 1;
        mb->edge_inputs = std::move(plan.edge_inputs);
        mb->edge_input_dim = edge_labels_.feature_dim;
      }
    }
    return mb;
  }

  int64_t AllreduceGrads(NodeModel& model) override {
    return collective_->AllreduceMeanGrads(model.parameters());
  }

  void SyncParams(NodeModel& model) override {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> ps;
    for (auto& p : model.parameters()) ps.push_back(p.detach());
    collective_->Broadcast(ps);
  }

  void BroadcastBytes(std::string* bytes) override { collective_->BroadcastBytes(bytes); }

  double SumOverRanks(double v) override { return collective_->AllreduceSum({v})[0]; }

  // Distributed layer-wise full-neighbour inference: rank r computes layer l
  // for nodes [r*N/W, (r+1)*N/W); each rank then gets, of the layer's
  // output, the rows its next layer reads (its range's in-neighbours in
  // other ranges: few with METIS parts, where the whole layer used to be
  // all-gathered). The last layer is gathered whole when `gather_last`;
  // otherwise each rank returns its own slice.
  torch::Tensor Infer(NodeModel& model, bool gather_last, int capture_layer = -1,
                      torch::Tensor* captured = nullptr) {
    const auto [lo, hi] = RangeOf(rank_);
    InferenceSource source;
    source.edge_dim = graph_->edge_dim();
    source.neighbors = [&](const std::vector<int64_t>& dst, std::vector<int64_t>* ptr,
                           std::vector<int64_t>* idx, std::vector<float>* rows) {
      graph_->SampleNeighbors(dst, -1, false, 0, ptr, idx, rows);
    };
    NoInitVector<float> input_rows;
    source.features = [&](const std::vector<int64_t>& ids) {
      if (graph_->sparse_rows() && graph_->edge_dim() == 0) {
        SparseRows rows;
        graph_->PullSparseFeatures(ids, &rows);
        return SparseInput(rows);
      }
      // Into one buffer for every batch (a batch's rows are read before
      // the next batch's are pulled): fresh tens of MB per batch cost more
      // in page faults than the copy itself.
      graph_->PullFeatures(ids, &input_rows);
      return torch::from_blob(input_rows.data(),
                              {static_cast<int64_t>(ids.size()), config_.feature_dim},
                              torch::kFloat32);
    };
    // Per rank: the ids of its range that this range reads.
    const std::vector<std::vector<int64_t>> wanted = RowsReadFromOthers(lo, hi);
    // Layer 0's input rows of other partitions, pulled once for the range.
    HeldInputRows held(*graph_, wanted);
    if (o_.AggregatesAtOwner() && !graph_->sparse_rows() && !held.covers()) {
      // Layer 0 at the owners when the rows it reads are not all here: two
      // rows per destination instead of the neighbour lists and every
      // neighbour's row. (With every row here, gathering a batch's rows for
      // one sparse product is the faster sum: 0.30 s against 0.35-0.54 s
      // for 150,000 nodes of a 300,000-node graph on one core.)
      source.input_means = [&](const std::vector<int64_t>& dst) {
        NoInitVector<float> rows;
        graph_->SampleAggregate(dst, -1, false, 0, &rows);
        return torch::from_blob(rows.data(),
                                {2 * static_cast<int64_t>(dst.size()), config_.feature_dim},
                                torch::kFloat32)
            .clone();
      };
    }
    // A layer's exchanged rows: this range's, then the ones read of others
    // (in `wanted` order); `extra` maps those ids to their rows, sorted.
    std::vector<std::pair<int64_t, int64_t>> extra;
    int64_t next_row = hi - lo;
    for (const std::vector<int64_t>& ids : wanted)
      for (int64_t id : ids) extra.emplace_back(id, next_row++);
    std::sort(extra.begin(), extra.end());
    int layers_left = model.num_layers();
    source.exchange = [&, lo = lo](const torch::Tensor& rows) {
      held.Release();                                // layer 0 is done with them
      if (--layers_left == 0) return AllRows(rows);  // gather_last
      return ExchangeWantedRows(rows, lo, wanted, static_cast<int64_t>(extra.size()));
    };
    source.locate = [&, lo = lo, hi = hi](const std::vector<int64_t>& ids) {
      std::vector<int64_t> rows(ids.size());
      for (size_t i = 0; i < ids.size(); ++i) {
        const int64_t id = ids[i];
        if (id >= lo && id < hi) {
          rows[i] = id - lo;
          continue;
        }
        auto it = std::lower_bound(extra.begin(), extra.end(), std::make_pair(id, int64_t{-1}));
        if (it == extra.end() || it->first != id) {
          throw PeerError("inference: node " + std::to_string(id) + " was never exchanged");
        }
        rows[i] = it->second;
      }
      return rows;
    };
    return LayerwiseInference(model, source, lo, hi, o_.batch_size_eval, gather_last, capture_layer,
                              captured);
  }

  // Rank r's inference range: its machine's partition, split evenly among
  // the trainers of the machines that serve it (those machines in order,
  // each one's trainers in order). With one machine per partition the
  // ranges follow the ranks; with more, a partition's slices are spread.
  std::pair<int64_t, int64_t> RangeOf(int r) const {
    const int trainers = o_.num_trainers, parts = config_.num_parts;
    const int m = r / trainers, p = MachinePartition(m, parts);
    const std::vector<int> machines = PartitionMachines(p, parts, num_machines_);
    const int64_t k = std::find(machines.begin(), machines.end(), m) - machines.begin();
    const int64_t sharers = static_cast<int64_t>(machines.size()) * trainers;
    const int64_t j = k * trainers + r % trainers;
    const int64_t start = config_.parts[p].node_start, n = config_.parts[p].num_nodes();
    return {start + n * j / sharers, start + n * (j + 1) / sharers};
  }

  // Every rank's rows of a layer (each rank's its range's) -> every node's
  // rows in id order.
  torch::Tensor AllRows(const torch::Tensor& rows) {
    torch::Tensor gathered = collective_->AllgatherRows(rows);
    torch::Tensor all = torch::empty({config_.num_nodes, gathered.size(1)}, gathered.options());
    int64_t at = 0;
    for (int r = 0; r < world_; ++r) {
      const auto [lo, hi] = RangeOf(r);
      all.slice(0, lo, hi).copy_(gathered.slice(0, at, at + (hi - lo)));
      at += hi - lo;
    }
    if (at != gathered.size(0))
      throw PeerError("inference: the ranks' rows do not cover the graph");
    return all;
  }

  // The rank whose inference range holds node v.
  int RangeRank(int64_t v) const {
    if (range_owner_.empty()) {
      for (int r = 0; r < world_; ++r) range_owner_.emplace_back(RangeOf(r).first, r);
      std::sort(range_owner_.begin(), range_owner_.end());
    }
    // The last range starting at or before v (empty ranges start where the
    // next does and sort before it, so they are never the last).
    auto it = std::upper_bound(range_owner_.begin(), range_owner_.end(),
                               std::make_pair(v, std::numeric_limits<int>::max()));
    return std::prev(it)->second;
  }

  // In-neighbours of [lo, hi) outside it, by the rank whose range holds
  // them (ascending): the rows of another rank's layer output that this
  // rank's next layer reads.
  std::vector<std::vector<int64_t>> RowsReadFromOthers(int64_t lo, int64_t hi) {
    std::vector<int64_t> outside;
    CscView local;
    const bool in_place = graph_->LocalCsc(&local) && lo >= local.node_start &&
                          hi <= local.node_start + local.num_nodes;
    if (in_place) {
      // The range's in-edges, read in place.
      const int64_t first = local.indptr[lo - local.node_start];
      const int64_t last = local.indptr[hi - local.node_start];
      for (int64_t k = first; k < last; ++k) {
        const int64_t u = local.indices[k];
        if (u < lo || u >= hi) outside.push_back(u);
      }
    }
    const int64_t batch = std::max<int64_t>(1, o_.batch_size_eval);
    std::vector<int64_t> dst, ptr, idx;
    for (int64_t start = in_place ? hi : lo; start < hi; start += batch) {
      dst.clear();
      for (int64_t v = start; v < std::min(hi, start + batch); ++v) dst.push_back(v);
      graph_->SampleNeighbors(dst, -1, false, 0, &ptr, &idx);
      for (int64_t u : idx) {
        if (u < lo || u >= hi) outside.push_back(u);
      }
    }
    std::sort(outside.begin(), outside.end());
    outside.erase(std::unique(outside.begin(), outside.end()), outside.end());
    std::vector<std::vector<int64_t>> by_rank(world_);
    for (int64_t u : outside) by_rank[RangeRank(u)].push_back(u);
    return by_rank;
  }

  // This range's rows of a layer -> [rows + `extra`, cols]: them, then the
  // rows of other ranges this rank reads (`wanted`, per rank, in that
  // order): every rank says what it reads of whom, then sends each asker
  // just its rows. A machine holds its own nodes' rows and their
  // in-neighbours', not the whole graph's.
  torch::Tensor ExchangeWantedRows(const torch::Tensor& rows, int64_t lo,
                                   const std::vector<std::vector<int64_t>>& wanted, int64_t extra) {
    std::vector<std::vector<std::vector<int64_t>>> asked;  // [asking rank][asked rank]
    for (const std::string& a : collective_->AllgatherBytes(EncodeRowRequest(wanted))) {
      asked.push_back(DecodeRowRequest(a, world_));
    }
    const torch::Tensor mine = rows.contiguous();
    const int64_t cols = mine.size(1);
    const size_t row_bytes = static_cast<size_t>(cols) * sizeof(float);
    const char* my_rows = static_cast<const char*>(mine.data_ptr());
    // Each asking rank gets only its rows (an all-to-all).
    std::vector<std::string> answer(static_cast<size_t>(world_));
    for (int q = 0; q < world_; ++q) {
      if (q == rank_) continue;
      for (int64_t id : asked[q][rank_]) {
        if (id < lo || id - lo >= mine.size(0)) {
          throw PeerError("inference: a row request outside this rank's range");
        }
        answer[q].append(my_rows + (id - lo) * row_bytes, row_bytes);
      }
    }
    const std::vector<std::string> answers = collective_->Alltoall(answer);
    torch::Tensor all = torch::empty({mine.size(0) + extra, cols}, torch::kFloat32);
    all.slice(0, 0, mine.size(0)).copy_(mine);
    char* next = static_cast<char*>(all.data_ptr()) + mine.size(0) * row_bytes;
    for (int r = 0; r < world_; ++r) {
      if (r == rank_ || wanted[r].empty()) continue;
      if (answers[r].size() != wanted[r].size() * row_bytes) {
        throw PeerError("inference: rank " + std::to_string(r) + " answered " +
                        std::to_string(answers[r].size() / row_bytes) + " rows, not " +
                        std::to_string(wanted[r].size()));
      }
      std::memcpy(next, answers[r].data(), answers[r].size());
      next += answers[r].size();
    }
    return all;
  }

  torch::Tensor AllNodeOutputs(NodeModel& model) override { return Infer(model, true); }

  // The writer of partition p: the rank whose range starts it (the first
  // trainer of the first machine serving p, which holds p in shared memory).
  int WriterRank(int p) const { return RangeRank(config_.parts[p].node_start); }
  int WriterMachine(int p) const override { return WriterRank(p) / o_.num_trainers; }

  InferenceShard Shard() override {
    InferenceShard s;
    if (WriterRank(part_) != rank_) return s;
    CscView local;
    if (!graph_->LocalCsc(&local)) throw Error("inference: no local partition to write");
    s.part = part_;
    s.node_start = local.node_start;
    s.orig_ids.assign(local.rng_keys, local.rng_keys + local.num_nodes);
    std::vector<int64_t> ids(static_cast<size_t>(local.num_nodes));
    for (int64_t i = 0; i < local.num_nodes; ++i) ids[i] = local.node_start + i;
    config_.label_width > 0 ? graph_->PullTargets(ids, &s.targets)
                            : graph_->PullLabels(ids, &s.labels);
    for (int mask = 0; mask < 3; ++mask) {
      s.masks[mask].assign(ids.size(), 0);
      for (int64_t v : graph_->SplitNodes(mask, 0, graph_->CountNodes(mask))) {
        if (v >= local.node_start && v < local.node_start + local.num_nodes)
          s.masks[mask][v - local.node_start] = 1;
      }
    }
    return s;
  }

  // --inference --fan_out: this rank's range, each node from its sampled
  // neighbourhood (the data plane's batches, as training draws them).
  torch::Tensor InferSampled(NodeModel& model, int capture_layer, torch::Tensor* emb) {
    const std::vector<int> fanouts = ParseFanouts(o_.infer_fan_out);
    const auto [lo, hi] = RangeOf(rank_);
    return PredictSampled(model, lo, hi - lo, o_.batch_size_eval, o_.seed, capture_layer, emb,
                          [&](const std::vector<int64_t>& seeds, uint64_t rng_seed) {
                            return graph_->MakeBatch(seeds, fanouts, false, rng_seed);
                          });
  }

  // Each rank's rows of its range go to its partition's writer (one
  // all-to-all), which puts them in id order; nothing is gathered whole.
  void InferShard(NodeModel& model, int capture_layer, InferenceShard* shard) override {
    torch::Tensor emb;
    const torch::Tensor logits =
        (o_.infer_fan_out.empty()
             ? Infer(model, false, capture_layer, capture_layer >= 0 ? &emb : nullptr)
             : InferSampled(model, capture_layer, capture_layer >= 0 ? &emb : nullptr))
            .contiguous();
    if (emb.defined()) emb = emb.contiguous();
    std::vector<std::string> to(static_cast<size_t>(world_));
    std::string& mine = to[static_cast<size_t>(WriterRank(part_))];
    mine.assign(static_cast<const char*>(logits.data_ptr()), logits.nbytes());
    if (emb.defined()) mine.append(static_cast<const char*>(emb.data_ptr()), emb.nbytes());
    const std::vector<std::string> got = collective_->Alltoall(to);
    if (shard->part < 0) return;
    const int64_t n = shard->size(), classes = logits.size(1);
    const int64_t width = emb.defined() ? emb.size(1) : 0;
    shard->logits = torch::empty({n, classes}, torch::kFloat32);
    if (emb.defined()) shard->emb = torch::empty({n, width}, torch::kFloat32);
    int64_t covered = 0;
    for (int r = 0; r < world_; ++r) {
      const auto [lo, hi] = RangeOf(r);
      if (MachinePartition(r / o_.num_trainers, config_.num_parts) != part_) continue;
      const int64_t rows = hi - lo;
      const size_t want = static_cast<size_t>(rows * (classes + width)) * sizeof(float);
      if (got[r].size() != want) {
        throw PeerError("inference: rank " + std::to_string(r) + " sent " +
                        std::to_string(got[r].size()) + " bytes of rows, not " +
                        std::to_string(want));
      }
      covered += rows;
      if (rows == 0) continue;
      const char* at = got[r].data();
      std::memcpy(shard->logits[lo - shard->node_start].data_ptr(), at,
                  static_cast<size_t>(rows * classes) * sizeof(float));
      if (width > 0) {
        std::memcpy(shard->emb[lo - shard->node_start].data_ptr(),
                    at + static_cast<size_t>(rows * classes) * sizeof(float),
                    static_cast<size_t>(rows * width) * sizeof(float));
      }
    }
    if (covered != n) throw PeerError("inference: the ranks' rows do not cover the partition");
  }

  const LabeledSplits& Labeled() override {
    if (!labeled_ready_) {
      for (int mask = 0; mask < 3; ++mask) {
        labeled_.nodes[mask] = graph_->SplitNodes(mask, 0, graph_->CountNodes(mask));
        if (config_.label_width == 0)
          graph_->PullLabels(labeled_.nodes[mask], &labeled_.labels[mask]);
      }
      labeled_ready_ = true;
    }
    return labeled_;
  }

  LabeledEdges EvalEdges(int k) override {
    LabeledEdges le;
    const std::vector<int64_t>& edges = eval_edges_[k];
    EdgeEndpoints(local_csc_, edges, &le.heads, &le.tails);
    for (int64_t e : edges) AppendEdgeRow(edge_labels_, e, &le.labels, &le.targets, &le.features);
    return le;
  }

  // The first trainer of each partition's first machine scores the
  // partition's held-out edges.
  HeldOutEdges HeldOut() override {
    if (!FirstOfPartition()) return HeldOutEdges{config_.val_negatives, {}, {}, {}};
    return LoadHeldOutEdges(config_, part_, o_.verify_checksums);
  }

  torch::Tensor GatherRows(const torch::Tensor& rows) override {
    return collective_->AllgatherRows(rows);
  }

  std::pair<double, double> Evaluate(NodeModel& model) override {
    torch::Tensor h = Infer(model, false);
    // Predictions of every node (each rank's argmax slice, gathered), then
    // each rank scores its share of valid/test nodes and the counts are summed.
    torch::Tensor pred =
        AllRows(h.argmax(1).to(torch::kInt32).unsqueeze(1)).squeeze(1).to(torch::kInt64);
    auto p = pred.accessor<int64_t, 1>();
    std::vector<double> counts;
    for (const std::vector<int64_t>& nodes : eval_nodes_) {
      std::vector<int64_t> labels;
      graph_->PullLabels(nodes, &labels);
      double correct = 0;
      for (size_t i = 0; i < nodes.size(); ++i) correct += p[nodes[i]] == labels[i];
      counts.push_back(correct);
      counts.push_back(static_cast<double>(nodes.size()));
    }
    std::vector<double> sums = collective_->AllreduceSum(counts);
    auto acc = [](double c, double t) { return t > 0 ? c / t : 0.0; };
    return {acc(sums[0], sums[1]), acc(sums[2], sums[3])};
  }

  // Label rows: each rank scores its own inference range (range_eval.h).
  EvalRows EvaluateRows(NodeModel& model) override {
    const torch::Tensor mine = Infer(model, false).contiguous();
    const auto [lo, hi] = RangeOf(rank_);
    return GatherRangeRows(*collective_, graph_->LocalView(), lo, hi, mine, config_.label_width);
  }

  // Every node's output in input-dataset order: the first trainer of each
  // partition's first machine contributes the partition's orig_nids
  // (machines 0..P-1 serve partitions 0..P-1 in order, and partitions own
  // consecutive id ranges, so the gathered ids line up with the rows of
  // AllNodeOutputs).
  torch::Tensor Embeddings(NodeModel& model) override {
    torch::Tensor emb = Infer(model, true);
    CscView local;
    torch::Tensor ids = torch::empty({0, 1}, torch::kFloat64);
    if (FirstOfPartition() && graph_->LocalCsc(&local)) {
      ids = torch::from_blob(const_cast<int64_t*>(local.rng_keys), {local.num_nodes, 1},
                             torch::kInt64)
                .to(torch::kFloat64);  // exact: ids < 2^53
    }
    torch::Tensor order = collective_->AllgatherRows(ids).squeeze(1).to(torch::kInt64);
    if (order.size(0) != emb.size(0)) {
      throw DataError("orig_nids of the partitions cover " + std::to_string(order.size(0)) +
                      " nodes, not " + std::to_string(emb.size(0)));
    }
    torch::Tensor out = torch::empty_like(emb);
    out.index_copy_(0, order, emb);
    return out;
  }

 private:
  // This rank's place when work is split by partition: the trainers of
  // partition 0's machines first, then partition 1's, ... (= rank with one
  // machine per partition).
  bool FirstOfPartition() const { return o_.trainer_id == 0 && o_.machine_id < config_.num_parts; }

  const TrainOptions& o_;
  const PartitionConfig& config_;
  const std::vector<int> fanouts_;  // --fan_out, parsed once
  int rank_ = 0, world_ = 1;
  int part_ = 0;  // the partition this machine serves
  int num_machines_ = 1;
  mutable std::vector<std::pair<int64_t, int>> range_owner_;  // (range start, rank), sorted
  std::unique_ptr<Collective> collective_;
  std::unique_ptr<DistGraph> graph_;
  std::vector<int64_t> train_;
  std::vector<int64_t> eval_nodes_[2];  // this rank's valid and test nodes
  // --task link and the edge tasks: batches of edges, planned here.
  bool EdgeBatches() const { return o_.Kind() == TaskKind::kLink || o_.EdgeTask(); }

  // The edge tasks: the labelled edges of this machine's partition, read
  // from its files; the trainers of the machines serving it take even
  // slices of each split, and every rank runs as many steps as the largest
  // train slice of any partition needs.
  void SplitLabeledEdges(const PartitionConfig& config, int num_machines) {
    if (!graph_->LocalCsc(&local_csc_)) throw Error("no local partition for --task " + o_.task);
    edge_labels_ = ReadEdgeLabels(config, part_, o_.verify_checksums, o_.decoder_edge_dim > 0);
    EdgeShares shares = ShareLabeledEdges(config, part_, edge_labels_.split, num_machines,
                                          o_.num_trainers, o_.machine_id, o_.trainer_id);
    const int64_t max_share = shares.max_train_share;
    if (max_share == 0) throw DataError(o_.part_config + ": the graph has no train edges");
    edges_ = std::move(shares.split[0]);
    eval_edges_[0] = std::move(shares.split[1]);
    eval_edges_[1] = std::move(shares.split[2]);
    num_batches_ = (max_share + o_.batch_size - 1) / o_.batch_size;
    GNN_LOG(kInfo) << Label() << ": " << edges_.size() << " of "
                   << config.parts[part_].num_split_edges[0] << " train edges of partition "
                   << part_ << ", " << num_batches_ << " batches per epoch";
  }

  CscView local_csc_;                   // --task link: this machine's partition
  std::vector<int64_t> edges_;          // --task link: this rank's edge positions in it
  EdgeLabelFiles edge_labels_;          // the edge tasks: the partition's edge labels
  std::vector<int64_t> eval_edges_[2];  // and this rank's valid and test edge positions
  std::mutex plans_mu_;
  std::map<int64_t, EdgeBatchPlan> plans_;  // --task link: planned, not yet consumed
  LabeledSplits labeled_;
  bool labeled_ready_ = false;
  int64_t num_batches_ = 0;
  std::unique_ptr<SamplerProcesses> samplers_;
  std::unique_ptr<Prefetcher> prefetcher_;
};

}  // namespace

std::unique_ptr<TrainEnv> MakeDistEnv(const TrainOptions& o, const PartitionConfig& config) {
  return std::make_unique<DistEnv>(o, config);
}

}  // namespace gnn
