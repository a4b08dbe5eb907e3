#include "client/dist_graph.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <tuple>
#include <utility>

#include "common/error.h"
#include "common/log.h"
#include "common/memory.h"
#include "common/sha256.h"
#include "net/messages.h"
#include "sampling/edge_batch.h"
#include "sampling/id_sort.h"
#include "sampling/owner_aggregate.h"
#include "sampling/sampler.h"
#include "store/row_cache.h"
#include "store/shm_partition.h"

namespace gnn {

using net::Message;

namespace {

// The mask's nodes [asked.offset, asked.offset + asked.count) of a local
// partition, as the server would answer SplitNodes.
std::vector<int64_t> LocalMaskSlice(const PartitionView& v, const net::SplitNodes& asked) {
  const uint8_t* m = asked.mask == 0 ? v.train_mask : asked.mask == 1 ? v.valid_mask : v.test_mask;
  std::vector<int64_t> ids;
  int64_t seen = 0;
  for (int64_t i = 0; i < v.num_nodes && seen < asked.offset + asked.count; ++i) {
    if (m[i] && seen++ >= asked.offset) ids.push_back(v.node_start + i);
  }
  return ids;
}

}  // namespace

void DistGraphOptions::Validate() const {
  if (part_config.empty()) throw ConfigError("a DistGraph needs a partition config");
  if (endpoints.empty() && ip_config.empty()) {
    throw ConfigError("a DistGraph needs an ip_config (or explicit server endpoints)");
  }
  if (num_servers < 1) throw ConfigError("--num_servers must be >= 1");
  if (timeout < std::chrono::milliseconds(1))
    throw ConfigError("a request timeout must be >= 1 ms");
  if (attach_timeout < std::chrono::milliseconds(0)) {
    throw ConfigError("the shared-memory attach timeout must be >= 0");
  }
  if (cache_bytes < -1) throw ConfigError("--cache_mb must be >= 0, or -1 (automatic)");
  for (int f : cache_fanouts) {
    if (f < -1) throw ConfigError("the cache's fan-outs must be >= -1");
  }
}

DistGraph::DistGraph(const DistGraphOptions& o) : options_(o) {
  o.Validate();
  config_ = LoadPartitionConfig(o.part_config);
  options_.edge_data = false;
  SetEdgeData(o.edge_data);

  config_sha_ = Sha256File(o.part_config);
  const int parts = config_.num_parts;
  // Per partition: every server of every machine that serves it (backups
  // and replicas are taken in turn), named for errors.
  std::vector<std::vector<std::pair<std::string, std::string>>> servers(parts);
  if (o.endpoints.empty()) {
    std::vector<MachineAddress> machines = ReadIpConfig(o.ip_config);
    const int num_machines = static_cast<int>(machines.size());
    CheckMachinesForParts(parts, num_machines, o.ip_config);
    local_part_ = o.local_machine_id >= 0 ? MachinePartition(o.local_machine_id, parts) : -1;
    for (int p = 0; p < parts; ++p) {
      for (int m : PartitionMachines(p, parts, num_machines)) {
        for (int srv = 0; srv < o.num_servers; ++srv) {
          const std::string ep = Endpoint(machines[m], srv);
          servers[p].push_back({ep, "machine " + std::to_string(m) + " server " +
                                        std::to_string(srv) + " at " +
                                        ep.substr(ep.find("://") + 3)});
        }
      }
    }
  } else {
    if (static_cast<int>(o.endpoints.size()) != parts) {
      throw ConfigError("need server endpoints for " + std::to_string(parts) + " partitions");
    }
    local_part_ = o.local_machine_id;
    for (int p = 0; p < parts; ++p) {
      for (size_t srv = 0; srv < o.endpoints[p].size(); ++srv) {
        const std::string& ep = o.endpoints[p][srv];
        servers[p].push_back({ep, "machine " + std::to_string(p) + " server " +
                                      std::to_string(srv) + " at " +
                                      ep.substr(ep.find("://") + 3)});
      }
    }
  }
  // Heterogeneous: this machine's partition is read in place for sampling
  // and features, but its servers are connected too (embedding rows).
  if (config_.hetero()) {
    if (local_part_ >= 0) hetero_part_ = local_part_;
    local_part_ = -1;
  }
  conns_.resize(parts);
  next_server_.assign(parts, 0);
  std::vector<std::pair<net::Peer*, Message>> hellos;
  const net::Hello hello{config_.graph_name, config_sha_, o.job_id};
  for (int p = 0; p < parts; ++p) {
    if (p == local_part_) continue;  // read from shared memory
    for (const auto& [endpoint, peer] : servers[p]) {
      conns_[p].push_back(Connect(o, endpoint, peer));
      hellos.emplace_back(conns_[p].back().get(), hello.Encode(0));
    }
  }
  std::vector<Message> replies = net::CallAll(std::move(hellos), o.timeout);
  size_t k = 0;
  for (int p = 0; p < parts; ++p) {
    for (auto& c : conns_[p]) {
      const net::HelloReply r = net::HelloReply::Decode(replies[k++]);
      if (r.node_start != config_.parts[p].node_start || r.node_end != config_.parts[p].node_end) {
        throw PeerError(c->peer() + " serves nodes [" + std::to_string(r.node_start) + ", " +
                        std::to_string(r.node_end) + "), expected partition " + std::to_string(p));
      }
    }
  }
  if (hetero_part_ >= 0) {
    AttachTyped(o);
    if (o.cache_bytes != 0 && config_.num_parts > 1) OpenTypedRowCaches();
  }
  if (sparse_rows()) {
    // Sparse rows are few bytes each: shipped as they are, not summed.
    options_.aggregate_at_owner = false;
    int64_t nnz = 0, rows = 0;
    for (const PartInfo& info : config_.parts) {
      const auto it = info.files.find(kFeatIndicesFile);
      if (it != info.files.end()) nnz += static_cast<int64_t>(it->second.bytes / sizeof(int32_t));
      rows += info.num_nodes();
    }
    avg_row_nnz_ = rows > 0 ? static_cast<double>(nnz) / static_cast<double>(rows) : 0;
  }
  if (local_part_ >= 0) {
    local_ = ShmPartition::Attach(
        JobShmName(config_.graph_name, config_sha_, o.job_id, o.local_machine_id), config_,
        local_part_, o.attach_timeout);
    if (o.cache_bytes != 0 && config_.num_parts > 1 && config_.feature_dim > 0) OpenRowCache();
  }
}

void DistGraph::AttachTyped(const DistGraphOptions& o) {
  hetero_shm_ = ShmPartition::Attach(
      JobShmName(config_.graph_name, config_sha_, o.job_id, o.local_machine_id), config_,
      hetero_part_, o.attach_timeout);
  const HeteroPartitionView& hp = *hetero_shm_->hetero_view();
  hetero_csc_.csc = CscView{hp.indptr, hp.indices, hp.node_start, hp.num_nodes, hp.rng_keys};
  hetero_csc_.etypes = hp.etypes;
  hetero_csc_.num_rels = static_cast<int64_t>(config_.etypes.size());
  hetero_csc_.csc.edge_data = hp.edge_data;
  hetero_csc_.csc.edge_dim = hp.edge_data ? hp.edge_dim : 0;
}

DistGraph::~DistGraph() = default;

std::unique_ptr<net::Peer> DistGraph::Connect(const DistGraphOptions& o,
                                              const std::string& endpoint,
                                              const std::string& name) {
  if (o.connect) return o.connect(endpoint, name);
  return std::make_unique<net::Connection>(ctx_, endpoint, name, o.keys);
}

net::Peer& DistGraph::Pick(int part) {
  auto& cs = conns_[part];
  return *cs[next_server_[part]++ % cs.size()];
}

std::vector<std::vector<size_t>> DistGraph::ByOwner(const std::vector<int64_t>& ids) const {
  std::vector<std::vector<size_t>> pos(config_.num_parts);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int p = config_.PartOf(ids[i]);
    if (p < 0) throw DataError("node " + std::to_string(ids[i]) + " belongs to no partition");
    pos[p].push_back(i);
  }
  if (options_.id_coding == net::IdCoding::kVarint) {
    for (int p = 0; p < config_.num_parts; ++p) {
      if (p == local_part_) continue;
      SortByIdInRange(&pos[p], ids, config_.parts[p].node_start, config_.parts[p].node_end);
    }
  }
  return pos;
}

void DistGraph::SetEdgeData(bool on) {
  if (on && config_.edge_feature_dim == 0) {
    throw ConfigError(options_.part_config + " has no edge data to sample (edge_feature_dim 0)");
  }
  options_.edge_data = on;
}

uint64_t DistGraph::Sending(const Message& request) {
  uint64_t bytes = 0;
  for (const zmq::message_t& f : request.frames) bytes += f.size();
  wire_bytes_ += bytes;
  return bytes;
}

void DistGraph::SampleNeighbors(const std::vector<int64_t>& seeds, int fanout, bool replace,
                                uint64_t rng_seed, std::vector<int64_t>* indptr,
                                std::vector<int64_t>* indices, std::vector<float>* edge_rows) {
  auto pos = ByOwner(seeds);
  const int parts = config_.num_parts;
  const int64_t edge_dim = edge_rows ? this->edge_dim() : 0;
  const size_t ew = static_cast<size_t>(edge_dim);
  // One request per owner; the local partition's is answered in place.
  std::vector<net::SampleRequest> asked(parts);
  std::vector<std::vector<int64_t>> part_ptr(parts), part_idx(parts);
  std::vector<std::vector<float>> part_edges(parts);
  struct Call {
    net::Peer* conn;
    uint64_t rid;
    int part;
  };
  std::vector<Call> calls;
  auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (int p = 0; p < parts; ++p) {
    if (pos[p].empty()) continue;
    asked[p] = {{}, fanout, replace, rng_seed, options_.id_coding};
    asked[p].edge_data = edge_dim > 0;
    for (size_t i : pos[p]) asked[p].seeds.push_back(seeds[i]);
    if (p == local_part_) continue;
    Message req = asked[p].Encode(0);
    Sending(req);
    net::Peer& c = Pick(p);
    const uint64_t expected =
        fanout > 0 ? asked[p].seeds.size() * (fanout + 1) * (sizeof(int64_t) + ew * sizeof(float))
                   : 0;
    calls.push_back({&c, c.Start(std::move(req), expected, deadline), p});
  }
  // Remote requests are in flight while the local partition is sampled.
  if (local_part_ >= 0 && !asked[local_part_].seeds.empty()) {
    int p = local_part_;
    const CscView csc = local_->view().csc();
    std::vector<int64_t> edges;
    gnn::SampleNeighbors(csc, asked[p].seeds.data(), static_cast<int64_t>(asked[p].seeds.size()),
                         fanout, replace, rng_seed, 1, &part_ptr[p], &part_idx[p],
                         edge_dim > 0 ? &edges : nullptr);
    if (edge_dim > 0) GatherEdgeRows(csc, edges, &part_edges[p]);
  }
  for (const Call& c : calls) {
    Message r = c.conn->Finish(c.rid, deadline, "Sample");
    net::SampleReply rep =
        net::SampleReply::Decode(r, asked[c.part], config_.num_nodes, c.conn->peer(), edge_dim);
    for (const zmq::message_t& f : r.frames) wire_bytes_ += f.size();
    part_ptr[c.part] = std::move(rep.indptr);
    part_idx[c.part] = std::move(rep.indices);
    part_edges[c.part] = std::move(rep.edge_data);
  }
  // Merge back into the seeds' order.
  indptr->assign(seeds.size() + 1, 0);
  for (int p = 0; p < parts; ++p) {
    for (size_t j = 0; j < pos[p].size(); ++j) {
      (*indptr)[pos[p][j] + 1] = part_ptr[p][j + 1] - part_ptr[p][j];
    }
  }
  for (size_t i = 0; i < seeds.size(); ++i) (*indptr)[i + 1] += (*indptr)[i];
  indices->resize(indptr->back());
  for (int p = 0; p < parts; ++p) {
    for (size_t j = 0; j < pos[p].size(); ++j) {
      std::copy(part_idx[p].begin() + part_ptr[p][j], part_idx[p].begin() + part_ptr[p][j + 1],
                indices->begin() + (*indptr)[pos[p][j]]);
    }
  }
  if (edge_rows == nullptr) return;
  edge_rows->resize(indices->size() * ew);
  if (ew == 0) return;
  for (int p = 0; p < parts; ++p) {
    if (local_part_ == p && edge_dim > 0 && part_edges[p].empty() && !part_idx[p].empty()) {
      throw DataError("the local partition has no edge data in shared memory");
    }
    for (size_t j = 0; j < pos[p].size(); ++j) {
      std::copy(part_edges[p].begin() + part_ptr[p][j] * edge_dim,
                part_edges[p].begin() + part_ptr[p][j + 1] * edge_dim,
                edge_rows->begin() + (*indptr)[pos[p][j]] * edge_dim);
    }
  }
}

std::vector<Block> DistGraph::SampleBlocks(const std::vector<int64_t>& seeds,
                                           const std::vector<int>& fanouts, bool replace,
                                           uint64_t rng_seed, const EdgeExclusion* exclude,
                                           int lowest) {
  std::vector<Block> blocks(fanouts.size());
  std::vector<int64_t> frontier = seeds;
  const int64_t edge_dim = this->edge_dim();
  for (int l = static_cast<int>(fanouts.size()) - 1; l >= lowest; --l) {
    std::vector<int64_t> ptr, idx, kept;
    std::vector<float> edge_rows;
    SampleNeighbors(frontier, fanouts[l], replace, MixSeed(rng_seed, static_cast<uint64_t>(l)),
                    &ptr, &idx, edge_dim > 0 ? &edge_rows : nullptr);
    if (exclude) {
      exclude->Filter(frontier.data(), static_cast<int64_t>(frontier.size()), &ptr, &idx,
                      edge_dim > 0 ? &kept : nullptr);
      if (edge_dim > 0) KeepEdgeRows(kept, edge_dim, &edge_rows);
    }
    blocks[l] = ToBlock(frontier, std::move(ptr), idx);
    if (edge_dim > 0) {
      blocks[l].edge_dim = edge_dim;
      blocks[l].edge_data = std::move(edge_rows);
    }
    frontier = blocks[l].src_nodes;
  }
  return blocks;
}

void DistGraph::PullLabels(const std::vector<int64_t>& ids, std::vector<int64_t>* out) {
  PullNodeInts(ids, false, out);
}

void DistGraph::Ping() {
  std::vector<std::pair<net::Peer*, Message>> calls;
  for (auto& part : conns_) {
    for (auto& c : part) calls.emplace_back(c.get(), net::Ping{}.Encode(0));
  }
  for (const Message& reply : net::CallAll(std::move(calls), options_.timeout)) {
    net::Pong::Decode(reply);
  }
}

void DistGraph::PullOrigIds(const std::vector<int64_t>& ids, std::vector<int64_t>* out) {
  PullNodeInts(ids, true, out);
}

void DistGraph::PullNodeInts(const std::vector<int64_t>& ids, bool orig_ids,
                             std::vector<int64_t>* out) {
  if (!orig_ids && config_.label_width > 0) {
    throw ConfigError(config_.graph_name + " has label rows (" + LabelKindName(config_.label_kind) +
                      "), not class ids: PullTargets");
  }
  out->resize(ids.size());
  auto pos = ByOwner(ids);
  std::vector<std::pair<net::Peer*, Message>> calls;
  std::vector<int> call_part;
  std::vector<net::PullLabels> asked;
  for (int p = 0; p < config_.num_parts; ++p) {
    if (pos[p].empty()) continue;
    if (p == local_part_) {
      const PartitionView& v = local_->view();
      const int64_t* values = orig_ids ? v.orig_nids : v.labels;
      for (size_t i : pos[p]) (*out)[i] = values[ids[i] - v.node_start];
      continue;
    }
    net::PullLabels req;
    req.coding = options_.id_coding;
    req.orig_ids = orig_ids;
    for (size_t i : pos[p]) req.ids.push_back(ids[i]);
    if (static_cast<int64_t>(req.ids.size() * sizeof(int64_t)) > net::kMaxPullReplyBytes) {
      throw ConfigError(
          "PullLabels of " + std::to_string(req.ids.size()) +
          " nodes from one partition: " + "more than one request may carry; pull in batches");
    }
    Message encoded = req.Encode(0);
    Sending(encoded);
    calls.emplace_back(&Pick(p), std::move(encoded));
    call_part.push_back(p);
    asked.push_back(std::move(req));
  }
  std::vector<std::string> peers;
  for (const auto& c : calls) peers.push_back(c.first->peer());
  std::vector<Message> replies = net::CallAll(std::move(calls), options_.timeout);
  for (size_t c = 0; c < replies.size(); ++c) {
    const int p = call_part[c];
    const std::vector<int64_t> labels =
        net::PullLabelsReply::Decode(replies[c], asked[c], peers[c]).labels;
    wire_bytes_ += replies[c].frames[0].size();
    for (size_t j = 0; j < pos[p].size(); ++j) (*out)[pos[p][j]] = labels[j];
  }
}

void DistGraph::PullTargets(const std::vector<int64_t>& ids, std::vector<float>* out) {
  const int64_t w = config_.label_width;
  if (w <= 0) throw ConfigError(config_.graph_name + " has class ids, not label rows");
  const size_t row = static_cast<size_t>(w);
  out->resize(ids.size() * row);
  auto pos = ByOwner(ids);
  std::vector<std::pair<net::Peer*, Message>> calls;
  // Each call's owner positions and the slice [begin, end) of them it asks.
  std::vector<std::tuple<const std::vector<size_t>*, size_t, size_t>> call_pos;
  for (int p = 0; p < config_.num_parts; ++p) {
    if (pos[p].empty()) continue;
    if (p == local_part_) {
      const PartitionView& v = local_->view();
      for (size_t i : pos[p]) {
        std::memcpy(out->data() + i * row, v.targets + (ids[i] - v.node_start) * w,
                    row * sizeof(float));
      }
      continue;
    }
    // Pieces of about 4 MB of rows, all owners' asked concurrently.
    const size_t piece = std::max<size_t>(1, (size_t{4} << 20) / (row * sizeof(float)));
    for (size_t begin = 0; begin < pos[p].size(); begin += piece) {
      const size_t end = std::min(pos[p].size(), begin + piece);
      net::PullLabels req;
      req.coding = options_.id_coding;
      req.targets = true;
      for (size_t k = begin; k < end; ++k) req.ids.push_back(ids[pos[p][k]]);
      Message encoded = req.Encode(0);
      Sending(encoded);
      calls.emplace_back(&Pick(p), std::move(encoded));
      call_pos.emplace_back(&pos[p], begin, end);
    }
  }
  std::vector<std::string> peers;
  for (const auto& c : calls) peers.push_back(c.first->peer());
  std::vector<Message> replies = net::CallAll(std::move(calls), options_.timeout);
  for (size_t c = 0; c < replies.size(); ++c) {
    const auto& [where, begin, end] = call_pos[c];
    const net::PullFeaturesReply rows = net::PullFeaturesReply::DecodeRows(
        replies[c], net::RowFormat::kFloat32, end - begin, w, "PullTargets", peers[c]);
    wire_bytes_ += replies[c].frames[0].size();
    for (size_t j = begin; j < end; ++j) {
      std::memcpy(out->data() + (*where)[j] * row, rows.data() + (j - begin) * row,
                  row * sizeof(float));
    }
  }
}

int64_t DistGraph::CountNodes(int mask) const {
  int64_t total = 0;
  for (const PartInfo& p : config_.parts) {
    total += mask == 0 ? p.num_train : mask == 1 ? p.num_valid : p.num_test;
  }
  return total;
}

std::vector<int64_t> DistGraph::SplitNodes(int mask, int64_t begin, int64_t end) {
  // One slice per partition holding part of [begin, end), in partition
  // order: the local one read in place, the others asked concurrently.
  struct Slice {
    int part;
    net::SplitNodes asked;
    net::Peer* conn;  // null: local
    std::vector<int64_t> ids;
  };
  std::vector<Slice> slices;
  std::vector<std::pair<net::Peer*, Message>> calls;
  std::vector<size_t> remote;  // the slice of each call
  int64_t prefix = 0;
  for (int p = 0; p < config_.num_parts; ++p) {
    const PartInfo& info = config_.parts[p];
    const int64_t n = mask == 0 ? info.num_train : mask == 1 ? info.num_valid : info.num_test;
    const int64_t lo = std::max(begin, prefix), hi = std::min(end, prefix + n);
    prefix += n;
    if (lo >= hi) continue;
    const net::SplitNodes asked{mask, lo - (prefix - n), hi - lo};
    if (p == local_part_) {
      slices.push_back({p, asked, nullptr, LocalMaskSlice(local_->view(), asked)});
      continue;
    }
    slices.push_back({p, asked, &Pick(p), {}});
    calls.emplace_back(slices.back().conn, asked.Encode(0));
    remote.push_back(slices.size() - 1);
  }
  std::vector<Message> replies = net::CallAll(std::move(calls), options_.timeout);
  for (size_t r = 0; r < replies.size(); ++r) {
    Slice& s = slices[remote[r]];
    const PartInfo& info = config_.parts[s.part];
    s.ids = net::SplitNodesReply::Decode(replies[r], s.asked, info.node_start, info.node_end,
                                         s.conn->peer())
                .ids;
  }
  std::vector<int64_t> out;
  for (const Slice& s : slices) out.insert(out.end(), s.ids.begin(), s.ids.end());
  if (static_cast<int64_t>(out.size()) != std::max<int64_t>(0, end - begin)) {
    throw ProtocolError("SplitNodes returned " + std::to_string(out.size()) + " ids, expected " +
                        std::to_string(end - begin));
  }
  return out;
}

void DistGraph::Recycle(MiniBatch&& mb) {
  if (mb.features.capacity() > spare_rows_.capacity()) spare_rows_.swap(mb.features);
}

const PartitionView* DistGraph::LocalView() const { return local_ ? &local_->view() : nullptr; }

bool DistGraph::LocalCsc(CscView* out) const {
  if (!local_) return false;
  *out = local_->view().csc();
  return true;
}

MiniBatch DistGraph::MakeBatch(const std::vector<int64_t>& seeds, const std::vector<int>& fanouts,
                               bool replace, uint64_t rng_seed, const EdgeExclusion* exclude) {
  const uint64_t wire_before = wire_bytes_;
  const uint64_t lookups_before = cache_lookups_, hits_before = cache_hits_;
  MiniBatch mb;
  mb.features.swap(spare_rows_);
  mb.features.clear();
  mb.seeds = seeds;
  mb.feature_dim = config_.feature_dim;
  if (sparse_rows() && edge_dim() == 0) {
    // The first layer reads the input rows as they are stored.
    mb.blocks = SampleBlocks(seeds, fanouts, replace, rng_seed, exclude);
    PullSparseFeatures(mb.blocks.empty() ? seeds : mb.blocks.front().src_nodes,
                       &mb.sparse_features);
    mb.sparse = true;
  } else if (options_.aggregate_at_owner && !fanouts.empty() && config_.feature_dim > 0 &&
             edge_dim() == 0) {
    // Layers above the first as usual; the first at the owners (an edge
    // batch's excluded pairs told to them).
    mb.blocks = SampleBlocks(seeds, fanouts, replace, rng_seed, exclude, 1);
    // Block 0 keeps only its destinations (their rows and means are the
    // input): block 1's sources (distinct: ToBlock made them), or the
    // seeds (checked by ToBlock here).
    std::vector<int64_t> dsts = fanouts.size() > 1 ? mb.blocks[1].src_nodes : seeds;
    SampleAggregate(dsts, fanouts[0], replace, MixSeed(rng_seed, 0), &mb.features, exclude);
    if (fanouts.size() > 1) {
      Block& first = mb.blocks[0];
      first.num_dst = static_cast<int64_t>(dsts.size());
      first.indptr.assign(dsts.size() + 1, 0);
      first.src_nodes = std::move(dsts);
    } else {
      mb.blocks[0] = ToBlock(dsts, std::vector<int64_t>(dsts.size() + 1, 0), {});
    }
    mb.input_means = true;
  } else {
    mb.blocks = SampleBlocks(seeds, fanouts, replace, rng_seed, exclude);
    PullFeatures(mb.blocks.empty() ? seeds : mb.blocks.front().src_nodes, &mb.features);
  }
  if (config_.label_width > 0) {
    mb.label_width = config_.label_width;
    PullTargets(seeds, &mb.targets);
  } else {
    PullLabels(seeds, &mb.labels);
  }
  mb.wire_bytes = wire_bytes_ - wire_before;
  mb.cache_lookups = cache_lookups_ - lookups_before;
  mb.cache_hits = cache_hits_ - hits_before;
  return mb;
}

}  // namespace gnn
