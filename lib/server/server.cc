#include "server/server.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "common/memory.h"
#include "common/parallel.h"
#include "common/sha256.h"
#include "net/channel.h"
#include "net/ip_config.h"
#include "net/messages.h"
#include "net/peer_window.h"
#include "net/ports.h"
#include "net/protocol.h"
#include "partition/config.h"
#include "sampling/owner_aggregate.h"
#include "sampling/sampler.h"
#include "server/hetero_server.h"
#include "store/row_cache.h"
#include "store/shm_partition.h"
#include "store/shm_segment.h"

namespace gnn {

using net::Message;
using net::MsgType;

void ServerOptions::Validate() const {
  if (ip_config.empty()) throw ConfigError("--ip_config is required");
  if (part_config.empty()) throw ConfigError("--part_config is required");
  if (machine_id < 0) throw ConfigError("--machine_id must be >= 0");
  if (num_servers < 1) throw ConfigError("--num_servers must be >= 1");
  if (server_id < 0 || server_id >= num_servers) {
    throw ConfigError("--server_id must be in [0, --num_servers)");
  }
  if (num_threads < 0) throw ConfigError("--num_threads must be >= 0");
  if (attach_timeout < std::chrono::milliseconds(0)) {
    throw ConfigError("--attach_timeout_ms must be >= 0");
  }
  if (bind_retry < std::chrono::duration<double>(0)) throw ConfigError("bind retry must be >= 0");
  if (peer_window_bytes < (int64_t{1} << 20)) throw ConfigError("--peer_window_mb must be >= 1");
}

namespace {

using net::kMaxPullReplyBytes;
using net::kMaxRequestBytes;
using net::kMaxSampledPerRequest;

struct ServerState {
  const ServerOptions* options;
  PartitionConfig config;
  std::string config_sha;
  const PartitionView* view;
  // Heterogeneous partitions: served by `hetero`; `view` then holds only
  // the node range, counts and CSC (Hello, Metadata).
  std::unique_ptr<HeteroServing> hetero;
  std::string name;  // "machine 1 server 0"
  std::atomic<bool> shutdown{false};
};

// The handlers: each decodes its request (a malformed one throws
// ProtocolError), answers, or returns the Error reply that says why not.

Message OnHello(ServerState& s, const Message& req) {
  const net::Hello h = net::Hello::Decode(req);
  if (h.graph_name != s.config.graph_name || h.config_sha256 != s.config_sha) {
    return net::MakeError(
        req.header.request_id, net::kErrMismatch,
        s.name + " serves graph " + s.config.graph_name + " (partition config sha256 " +
            s.config_sha.substr(0, 12) + "), client has graph " + h.graph_name + " (sha256 " +
            h.config_sha256.substr(0, 12) + "): deploy the same partition config");
  }
  const PartitionView& v = *s.view;
  return net::HelloReply{s.options->machine_id,      s.options->server_id, v.node_start,
                         v.node_start + v.num_nodes, v.feature_dim,        v.num_classes}
      .Encode(req.header.request_id);
}

Message OnPing(ServerState& s, const Message& req) {
  net::Ping::Decode(req);
  return net::Pong{s.options->machine_id, s.options->server_id}.Encode(req.header.request_id);
}

// Bound on the neighbours a Sample reply would hold, computed before it is
// built: a small request must not make the server build gigabytes (a hub
// repeated, or a huge fanout). Throws DataError for a node not owned.
int64_t SampleBound(const ServerState& s, const std::vector<int64_t>& seeds, int64_t fanout,
                    bool replace) {
  const PartitionView& v = *s.view;
  int64_t bound = 0;
  for (int64_t seed : seeds) {
    const int64_t row = seed - v.node_start;
    if (row < 0 || row >= v.num_nodes) {
      throw DataError("node " + std::to_string(seed) + " is not owned by " + s.name);
    }
    const int64_t deg = v.indptr[row + 1] - v.indptr[row];
    bound += fanout < 0 ? deg : (replace ? (deg > 0 ? fanout : 0) : std::min(deg, fanout));
  }
  return bound;
}

// The Error reply for a sampling request the server will not build (a
// fanout out of range, more sampled neighbours than one reply may hold);
// nullopt when it may go ahead. Throws DataError for a seed not owned.
std::optional<Message> RefuseSampling(const ServerState& s, uint64_t id, const char* what,
                                      const std::vector<int64_t>& seeds, int64_t fanout,
                                      bool replace, int64_t edge_width = 0) {
  if (fanout < -1 || fanout > (1 << 20)) {
    return net::MakeError(id, net::kErrBadRequest,
                          "fanout " + std::to_string(fanout) + " out of range");
  }
  const int64_t bound = SampleBound(s, seeds, fanout, replace);
  // An edge row of w floats weighs w / 2 ids.
  if (bound > kMaxSampledPerRequest / (1 + (edge_width + 1) / 2)) {
    return net::MakeError(id, net::kErrBadRequest,
                          std::string(what) + " would sample " + std::to_string(bound) +
                              " neighbours, more than the limit of " +
                              std::to_string(kMaxSampledPerRequest) + " per request");
  }
  return std::nullopt;
}

Message OnSample(ServerState& s, const Message& req) {
  const uint64_t id = req.header.request_id;
  const net::SampleRequest r = net::SampleRequest::Decode(req);
  const int64_t edge_dim = s.view->edge_dim;
  if (r.edge_data && edge_dim == 0) {
    return net::MakeError(id, net::kErrBadRequest,
                          "edge data asked for, but " + s.config.graph_name + " has none");
  }
  // Edge rows make every sampled neighbour wider: bounded as neighbours'
  // worth of 8-byte ids.
  const int64_t width = r.edge_data ? edge_dim : 0;
  if (auto refused = RefuseSampling(s, id, "Sample", r.seeds, r.fanout, r.replace, width)) {
    return std::move(*refused);
  }
  net::SampleReply rep;
  rep.coding = r.coding;
  std::vector<int64_t> edges;
  const CscView csc = s.view->csc();
  SampleNeighbors(csc, r.seeds.data(), static_cast<int64_t>(r.seeds.size()),
                  static_cast<int>(r.fanout), r.replace, r.rng_seed, 1, &rep.indptr, &rep.indices,
                  r.edge_data ? &edges : nullptr);
  if (r.edge_data) {
    rep.edge_dim = edge_dim;
    GatherEdgeRows(csc, edges, &rep.edge_data);
  }
  return rep.Encode(id);
}

// Sample and aggregate at the owner: the destinations' own rows and the
// sums of their sampled neighbours' rows held here, the others' ids.
Message OnSampleAggregate(ServerState& s, const Message& req) {
  const uint64_t id = req.header.request_id;
  const net::SampleAggregateRequest r = net::SampleAggregateRequest::Decode(req);
  // Both bounds before anything is built: the sampled ids (the remote ones
  // travel back) and the rows (two per destination).
  if (auto refused = RefuseSampling(s, id, "SampleAggregate", r.dsts, r.fanout, r.replace)) {
    return std::move(*refused);
  }
  const PartitionView& v = *s.view;
  const size_t n = r.dsts.size();
  const size_t row = static_cast<size_t>(v.feature_dim) * sizeof(float);
  if (n > static_cast<size_t>(kMaxPullReplyBytes) / std::max<size_t>(2 * row, 1)) {
    return net::MakeError(id, net::kErrBadRequest,
                          "SampleAggregate of " + std::to_string(n) + " destinations (" +
                              std::to_string(2 * n * row >> 20) +
                              " MiB) passes the reply limit of " +
                              std::to_string(kMaxPullReplyBytes >> 20) + " MiB: split the request");
  }
  if (v.sparse()) {
    return net::MakeError(id, net::kErrBadRequest,
                          s.name +
                              " holds sparse feature rows: a first layer over them is "
                              "not aggregated at the owner (ask PullSparseRows)");
  }
  // Own rows only for the destinations the asker lacks (the first own_rows).
  net::SampleAggregateReply rep(v.feature_dim, n, r.format, r.coding, r.own_rows);
  const size_t own = r.own_rows < 0 ? n : static_cast<size_t>(r.own_rows);
  // Summed in float32 either way; a narrow reply is converted once.
  std::vector<float> wide;
  if (r.format != net::RowFormat::kFloat32) wide.resize((own + n) * v.feature_dim);
  SampleAggregate(v.csc(), v.features, v.feature_dim, r.dsts.data(), static_cast<int64_t>(n),
                  static_cast<int>(r.fanout), r.replace, r.rng_seed, 1,
                  wide.empty() ? rep.data() : wide.data(), &rep.counts, &rep.remote_indptr,
                  &rep.remote_ids, r.own_rows);
  if (!wide.empty()) rep.SetRows(wide.data());
  return rep.Encode(id);
}

// Throws DataError unless every id is a node this server owns.
void CheckOwned(const ServerState& s, const std::vector<int64_t>& ids) {
  const PartitionView& v = *s.view;
  for (int64_t id : ids) {
    if (id < v.node_start || id >= v.node_start + v.num_nodes) {
      throw DataError("node " + std::to_string(id) + " is not owned by " + s.name + " (owns [" +
                      std::to_string(v.node_start) + ", " +
                      std::to_string(v.node_start + v.num_nodes) + "))");
    }
  }
}

Message OnPullFeatures(ServerState& s, const Message& req) {
  const uint64_t id = req.header.request_id;
  const net::PullFeatures asked = net::PullFeatures::Decode(req);
  const std::vector<int64_t>& ids = asked.ids;
  CheckOwned(s, ids);
  const PartitionView& v = *s.view;
  const size_t n = ids.size();
  const size_t row = static_cast<size_t>(v.feature_dim) * sizeof(float);
  // The reply is row/8 times the request: bound it before allocating.
  if (n > static_cast<size_t>(kMaxPullReplyBytes) / std::max<size_t>(row, 1)) {
    return net::MakeError(id, net::kErrBadRequest,
                          "PullFeatures of " + std::to_string(n) + " rows (" +
                              std::to_string(n * row >> 20) + " MiB) passes the reply limit of " +
                              std::to_string(kMaxPullReplyBytes >> 20) + " MiB: split the request");
  }
  net::PullFeaturesReply rep(v.feature_dim, n, asked.format);
  if (v.sparse()) {
    // Sparse rows asked for as dense ones (serving, inference): made dense here.
    std::vector<float> dense(static_cast<size_t>(v.feature_dim));
    for (size_t i = 0; i < n; ++i) {
      std::fill(dense.begin(), dense.end(), 0.0f);
      AddSparseRow(v.sparse_features, ids[i] - v.node_start, dense.data());
      rep.SetRow(i, dense.data());
    }
    return rep.Encode(id);
  }
  if (asked.format != net::RowFormat::kFloat32) {
    for (size_t i = 0; i < n; ++i) {
      rep.SetRow(i, v.features + (ids[i] - v.node_start) * v.feature_dim);
    }
    return rep.Encode(id);
  }
  char* dst = reinterpret_cast<char*>(rep.data());
  for (size_t i = 0; i < n; ++i) {
    // Rows are scattered in memory: fetch a few ahead of the copy.
    if (i + 8 < n) PrefetchBytes(v.features + (ids[i + 8] - v.node_start) * v.feature_dim, row);
    std::memcpy(dst + i * row, v.features + (ids[i] - v.node_start) * v.feature_dim, row);
  }
  return rep.Encode(id);
}

// A sparse-feature partition's rows as stored: counts, column ids and
// values (unless every value is 1), bounded like a dense reply.
Message OnPullSparseRows(ServerState& s, const Message& req) {
  const uint64_t id = req.header.request_id;
  const net::PullSparseRows asked = net::PullSparseRows::Decode(req);
  CheckOwned(s, asked.ids);
  const PartitionView& v = *s.view;
  if (!v.sparse()) {
    return net::MakeError(id, net::kErrBadRequest,
                          s.name + " holds dense feature rows: ask PullFeatures");
  }
  const SparseView& sv = v.sparse_features;
  net::SparseRowsReply rep;
  rep.cols = sv.cols;
  rep.format = asked.format;
  rep.coding = asked.coding;
  rep.counts.resize(asked.ids.size());
  int64_t nnz = 0;
  for (size_t i = 0; i < asked.ids.size(); ++i) {
    const int64_t r = asked.ids[i] - v.node_start;
    rep.counts[i] = sv.indptr[r + 1] - sv.indptr[r];
    nnz += rep.counts[i];
  }
  const int64_t per_entry = sizeof(int32_t) + (sv.values ? sizeof(float) : 0);
  if (nnz > kMaxPullReplyBytes / per_entry) {
    return net::MakeError(id, net::kErrBadRequest,
                          "PullSparseRows of " + std::to_string(asked.ids.size()) + " rows (" +
                              std::to_string(nnz) + " entries) passes the reply limit of " +
                              std::to_string(kMaxPullReplyBytes >> 20) + " MiB: split the request");
  }
  rep.columns.reserve(static_cast<size_t>(nnz));
  if (sv.values) rep.values.reserve(static_cast<size_t>(nnz));
  for (int64_t gid : asked.ids) {
    const int64_t r = gid - v.node_start;
    rep.columns.insert(rep.columns.end(), sv.indices + sv.indptr[r], sv.indices + sv.indptr[r + 1]);
    if (sv.values)
      rep.values.insert(rep.values.end(), sv.values + sv.indptr[r], sv.values + sv.indptr[r + 1]);
  }
  return rep.Encode(id);
}

// The sums of groups of owned rows (the neighbours a destination's owner
// did not hold, summed here instead of shipped as rows).
Message OnPullSums(ServerState& s, const Message& req) {
  const uint64_t id = req.header.request_id;
  const net::PullSums asked = net::PullSums::Decode(req);
  CheckOwned(s, asked.ids);
  const PartitionView& v = *s.view;
  const size_t groups = asked.num_groups();
  const size_t row = static_cast<size_t>(v.feature_dim) * sizeof(float);
  if (groups > static_cast<size_t>(kMaxPullReplyBytes) / std::max<size_t>(row, 1)) {
    return net::MakeError(id, net::kErrBadRequest,
                          "PullSums of " + std::to_string(groups) + " groups (" +
                              std::to_string(groups * row >> 20) +
                              " MiB) passes the reply limit of " +
                              std::to_string(kMaxPullReplyBytes >> 20) + " MiB: split the request");
  }
  net::PullFeaturesReply rep(v.feature_dim, groups, asked.format);
  // Summed in float32 either way; a narrow reply is converted once.
  std::vector<float> wide;
  if (asked.format != net::RowFormat::kFloat32) wide.resize(groups * v.feature_dim);
  float* sums = wide.empty() ? rep.data() : wide.data();
  if (v.sparse()) {
    std::fill(sums, sums + groups * v.feature_dim, 0.0f);
    for (size_t g = 0; g < groups; ++g) {
      for (int64_t k = asked.group_ptr[g]; k < asked.group_ptr[g + 1]; ++k)
        AddSparseRow(v.sparse_features, asked.ids[k] - v.node_start, sums + g * v.feature_dim);
    }
  } else {
    SumRowGroups(v.features, v.feature_dim, v.node_start, asked.ids.data(), asked.group_ptr.data(),
                 static_cast<int64_t>(groups), sums);
  }
  for (size_t g = 0; !wide.empty() && g < groups; ++g) rep.SetRow(g, sums + g * v.feature_dim);
  return rep.Encode(id);
}

// A multi-label or regression graph's label rows, float32 of its width.
Message OnPullTargets(ServerState& s, const Message& req, const net::PullLabels& r) {
  const uint64_t id = req.header.request_id;
  const PartitionView& v = *s.view;
  if (v.targets == nullptr) {
    return net::MakeError(id, net::kErrBadRequest,
                          s.name +
                              " holds class ids, not label rows: PullTargets is for "
                              "multi-label and regression graphs");
  }
  const size_t n = r.ids.size(), w = static_cast<size_t>(v.label_width);
  if (n > static_cast<size_t>(kMaxPullReplyBytes) / (w * sizeof(float))) {
    return net::MakeError(id, net::kErrBadRequest,
                          "PullTargets of " + std::to_string(n) +
                              " rows passes the reply limit of " +
                              std::to_string(kMaxPullReplyBytes >> 20) + " MiB: split the request");
  }
  net::PullFeaturesReply rep(v.label_width, n, net::RowFormat::kFloat32);
  float* out = rep.data();
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(out + i * w, v.targets + (r.ids[i] - v.node_start) * v.label_width,
                w * sizeof(float));
  }
  return rep.Encode(id);
}

Message OnPullLabels(ServerState& s, const Message& req) {
  net::PullLabels r = net::PullLabels::Decode(req);
  CheckOwned(s, r.ids);
  if (r.targets) return OnPullTargets(s, req, r);
  const PartitionView& v = *s.view;
  if (!r.orig_ids && v.labels == nullptr) {
    return net::MakeError(req.header.request_id, net::kErrBadRequest,
                          s.name + " holds multi-label or regression label rows: ask PullTargets");
  }
  net::PullLabelsReply rep;
  rep.coding = r.coding;
  rep.labels.reserve(r.ids.size());
  const int64_t* values = r.orig_ids ? v.orig_nids : v.labels;
  for (int64_t id : r.ids) rep.labels.push_back(values[id - v.node_start]);
  return rep.Encode(req.header.request_id);
}

Message OnMetadata(ServerState& s, const Message& req) {
  net::Metadata::Decode(req);
  const PartitionView& v = *s.view;
  nlohmann::json j = {{"graph_name", s.config.graph_name},
                      {"config_sha256", s.config_sha},
                      {"machine_id", s.options->machine_id},
                      {"server_id", s.options->server_id},
                      {"num_servers", s.options->num_servers},
                      {"part_id", v.part_id},
                      {"node_start", v.node_start},
                      {"node_end", v.node_start + v.num_nodes},
                      {"num_edges", v.num_edges},
                      {"feature_dim", v.feature_dim},
                      {"num_classes", v.num_classes},
                      {"label_width", v.label_width},
                      {"num_parts", s.config.num_parts}};
  return net::MetadataReply{j.dump()}.Encode(req.header.request_id);
}

Message OnSplitNodes(ServerState& s, const Message& req) {
  const uint64_t id = req.header.request_id;
  const net::SplitNodes r = net::SplitNodes::Decode(req);
  if (r.mask < 0 || r.mask > 2 || r.offset < 0 || r.count < 0) {
    return net::MakeError(id, net::kErrBadRequest, "bad SplitNodes arguments");
  }
  const PartitionView& v = *s.view;
  const uint8_t* mask = r.mask == 0 ? v.train_mask : r.mask == 1 ? v.valid_mask : v.test_mask;
  net::SplitNodesReply rep;
  int64_t seen = 0;
  for (int64_t i = 0; i < v.num_nodes && static_cast<int64_t>(rep.ids.size()) < r.count; ++i) {
    if (mask[i] && seen++ >= r.offset) rep.ids.push_back(v.node_start + i);
  }
  if (static_cast<int64_t>(rep.ids.size()) != r.count) {
    return net::MakeError(id, net::kErrBadRequest,
                          "SplitNodes asks past the end of " + s.name + "'s mask");
  }
  return rep.Encode(id);
}

Message OnShutdown(ServerState& s, const Message& req) {
  const net::Shutdown r = net::Shutdown::Decode(req);
  if (s.options->job_id.empty() || r.job_id != s.options->job_id) {
    return net::MakeError(req.header.request_id, net::kErrNotAllowed,
                          s.name + " only obeys Shutdown from the job that started it");
  }
  s.shutdown = true;
  return net::ShutdownReply{}.Encode(req.header.request_id);
}

Message HandleRequest(ServerState& s, const Message& req) {
  if (s.hetero) {
    if (std::optional<Message> r = s.hetero->Handle(req)) return std::move(*r);
  }
  switch (req.header.msg_type()) {
    case MsgType::kHello:
      return OnHello(s, req);
    case MsgType::kPing:
      return OnPing(s, req);
    case MsgType::kSample:
      return OnSample(s, req);
    case MsgType::kPullFeatures:
      return OnPullFeatures(s, req);
    case MsgType::kPullSparseRows:
      return OnPullSparseRows(s, req);
    case MsgType::kSampleAggregate:
      return OnSampleAggregate(s, req);
    case MsgType::kPullSums:
      return OnPullSums(s, req);
    case MsgType::kPullLabels:
    case MsgType::kPullOrigIds:
    case MsgType::kPullTargets:
      return OnPullLabels(s, req);
    case MsgType::kMetadata:
      return OnMetadata(s, req);
    case MsgType::kSplitNodes:
      return OnSplitNodes(s, req);
    case MsgType::kShutdown:
      return OnShutdown(s, req);
    default:
      return net::MakeError(
          req.header.request_id, net::kErrUnknownType,
          std::string(net::MsgTypeName(req.header.msg_type())) + " is not a server request");
  }
}

// One worker: takes [identity, header, arrays...] from the inproc backend,
// answers, and never lets a bad request take the server down.
void Worker(ServerState& s, zmq::context_t& ctx, const std::string& backend,
            const std::atomic<bool>& stop) {
  zmq::socket_t sock(ctx, zmq::socket_type::dealer);
  sock.set(zmq::sockopt::linger, 0);
  sock.connect(backend);
  std::vector<zmq::message_t> parts;
  while (!stop && !s.shutdown) {
    if (!net::RecvParts(sock, &parts, net::Millis(100))) continue;
    if (parts.size() < 2) continue;  // no identity or no header: nothing to answer
    std::vector<zmq::message_t> route;
    route.push_back(std::move(parts[0]));
    parts.erase(parts.begin());
    uint64_t rid = 0;
    Message reply;
    try {
      Message req = net::Decode(std::move(parts), &rid);
      reply = HandleRequest(s, req);
    } catch (const net::VersionMismatchError& e) {
      reply = net::MakeError(rid, net::kErrVersion, e.what());
    } catch (const net::UnknownTypeError& e) {
      reply = net::MakeError(rid, net::kErrUnknownType, e.what());
    } catch (const ProtocolError& e) {
      reply = net::MakeError(rid, net::kErrMalformed, e.what());
    } catch (const DataError& e) {
      reply = net::MakeError(rid, net::kErrBadRequest, e.what());
    } catch (const std::exception& e) {
      reply = net::MakeError(rid, net::kErrInternal, e.what());
    }
    try {
      net::Send(sock, reply, &route, net::Millis(1000));
    } catch (const std::exception& e) {
      GNN_LOG(kWarn) << "could not send a reply: " << e.what();
    }
  }
}

// Where this server stands: its partition, its machine's line of the
// ip_config and the endpoint it binds.
struct Placement {
  int part = 0;
  MachineAddress me;
  std::string endpoint;
};

// Reads the partition config and the ip_config into `s` and checks them
// against each other and the flags.
Placement ReadConfigs(const ServerOptions& o, ServerState* s) {
  s->options = &o;
  s->name = "machine " + std::to_string(o.machine_id) + " server " + std::to_string(o.server_id);
  s->config = LoadPartitionConfig(o.part_config);
  s->config_sha = Sha256File(o.part_config);
  std::vector<MachineAddress> machines = ReadIpConfig(o.ip_config);
  CheckServerPorts(machines, o.num_servers, o.ip_config);
  if (o.machine_id >= static_cast<int>(machines.size())) {
    throw ConfigError("--machine_id " + std::to_string(o.machine_id) + " but " + o.ip_config +
                      " lists " + std::to_string(machines.size()) + " machines");
  }
  CheckMachinesForParts(s->config.num_parts, static_cast<int>(machines.size()), o.ip_config);
  Placement at;
  at.part = MachinePartition(o.machine_id, s->config.num_parts);
  at.me = machines[o.machine_id];
  at.endpoint = o.bind_endpoint.empty() ? Endpoint(at.me, o.server_id) : o.bind_endpoint;
  return at;
}

// The clients' ROUTER, a CURVE server with the job's keys, bound to the
// endpoint; a busy port is a ConfigError naming its holder.
zmq::socket_t BindFrontend(zmq::context_t& ctx, const ServerOptions& o, const std::string& name,
                           const Placement& at) {
  zmq::socket_t frontend(ctx, zmq::socket_type::router);
  frontend.set(zmq::sockopt::linger, 0);
  frontend.set(zmq::sockopt::router_mandatory, false);
  frontend.set(zmq::sockopt::maxmsgsize, kMaxRequestBytes);
  frontend.set(zmq::sockopt::rcvhwm, net::kMaxQueuedMessages);
  frontend.set(zmq::sockopt::sndhwm, net::kMaxQueuedMessages);
  o.keys.MakeServer(frontend);
  try {
    BindRetrying(frontend, at.endpoint, o.bind_retry.count());
  } catch (const zmq::error_t& e) {
    std::string holder;
    if (o.bind_endpoint.empty() && e.num() == EADDRINUSE) {
      holder = DescribePortHolder(at.me.port + o.server_id);
    }
    throw ConfigError(name + " cannot bind " + at.endpoint + ": " + e.what() +
                      (holder.empty() ? "" : " (held by " + holder + ")"));
  }
  return frontend;
}

// Server 0's sweep: jobs whose every process was SIGKILLed could not free
// their memory.
void SweepStale(const std::string& name) {
  StaleSweep swept = SweepStaleSegments();
  if (!swept.names.empty()) {
    GNN_LOG(kWarn) << name << ": removed " << swept.names.size()
                   << " stale shared memory segment(s) (" << (swept.bytes >> 20)
                   << " MiB) left by killed jobs, e.g. /dev/shm/" << swept.names[0];
  }
}

// The partition `s` answers from: the job's shared memory, created by
// server 0 and attached by the others (returned: it lives as long as the
// server). A heterogeneous partition's requests go to `s->hetero`.
std::unique_ptr<ShmPartition> OpenPartition(const ServerOptions& o, int part, ServerState* s) {
  const std::string shm_name =
      JobShmName(s->config.graph_name, s->config_sha, o.job_id, o.machine_id);
  std::unique_ptr<ShmPartition> shm =
      o.server_id == 0 ? ShmPartition::Create(shm_name, s->config, part, o.verify_checksums)
                       : ShmPartition::Attach(shm_name, s->config, part, o.attach_timeout);
  if (const HeteroPartitionView* typed = shm->hetero_view()) {
    // Embedding rows live at server 0 of the first machine serving the
    // partition (machine == partition).
    s->hetero = std::make_unique<HeteroServing>(s->config, *typed,
                                                o.server_id == 0 && o.machine_id == part, s->name);
  }
  s->view = &shm->view();
  // Server 0 removes the segment when it stops, after the job's other
  // holders have let go: trainers and samplers are often killed (a sampler
  // blocked on a stopped server is, 10 s after its launcher went away) and
  // then clean up nothing. Bounded by kServerRemoveWait, which gnn-server's
  // own stop allowance exceeds.
  if (o.server_id == 0) shm->SetRemoveWait(kServerRemoveWait);
  return shm;
}

// Moves one message waiting on `from`, all its frames, to `to`.
// Receives one whole message without waiting ([] when none is there).
std::vector<zmq::message_t> TakeMessage(zmq::socket_t& from) {
  std::vector<zmq::message_t> parts;
  while (true) {
    zmq::message_t part;
    if (!from.recv(part, zmq::recv_flags::dontwait)) return parts;
    const bool more = part.more();
    parts.push_back(std::move(part));
    if (!more) return parts;  // a multipart message arrives whole
  }
}

void SendParts(zmq::socket_t& to, std::vector<zmq::message_t>& parts) {
  for (size_t i = 0; i < parts.size(); ++i) {
    to.send(parts[i], i + 1 == parts.size() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  }
}

// A request [routing id, header, arrays...] goes to the workers; what its
// sender has taken so far is noted first. A header that does not decode
// is the worker's to answer.
void ForwardRequest(zmq::socket_t& frontend, zmq::socket_t& back, net::PeerWindows& windows) {
  std::vector<zmq::message_t> parts = TakeMessage(frontend);
  if (parts.size() >= 2) {
    try {
      windows.OnRequest(parts[0].to_string(), net::DecodeHeader(parts[1]).taken_bytes);
    } catch (const std::exception&) {
    }
  }
  if (!parts.empty()) SendParts(back, parts);
}

// A reply [routing id, header, arrays...] goes to its client if it fits the
// client's window; otherwise a small kErrBusy Error for the same request
// goes instead, and the reply's memory is freed here.
void ForwardReply(zmq::socket_t& back, zmq::socket_t& frontend, net::PeerWindows& windows,
                  const std::string& name) {
  std::vector<zmq::message_t> parts = TakeMessage(back);
  if (parts.size() < 2) return;
  const std::string peer = parts[0].to_string();
  uint64_t bytes = 0, untaken = 0;
  for (size_t i = 1; i < parts.size(); ++i) bytes += parts[i].size();
  if (windows.Admit(peer, bytes, &untaken)) {
    SendParts(frontend, parts);
    return;
  }
  uint64_t rid = 0;
  try {
    rid = net::DecodeHeader(parts[1]).request_id;
  } catch (const std::exception&) {
  }
  const uint64_t mib = uint64_t{1} << 20;
  Message busy = net::MakeError(
      rid, net::kErrBusy,
      name + ": this client has not taken " + std::to_string(untaken / mib) +
          " MiB of replies (its window is " + std::to_string(windows.window() / mib) +
          " MiB, --peer_window_mb): a reply of " + std::to_string(bytes / mib) +
          " MiB was dropped; read replies before asking for more");
  std::vector<zmq::message_t> out;
  out.push_back(std::move(parts[0]));
  out.push_back(net::EncodeHeader(busy.header));
  windows.Count(peer, out.back().size());
  parts.clear();  // the reply goes now, not when the peer reads
  SendParts(frontend, out);
}

// The proxy: requests to workers, replies back to their clients (within
// each client's reply window), until `stop` or a Shutdown request.
void Proxy(zmq::socket_t& frontend, zmq::socket_t& back, const std::atomic<bool>& stop,
           const ServerState& s, net::PeerWindows& windows) {
  zmq::pollitem_t items[] = {{frontend.handle(), 0, ZMQ_POLLIN, 0},
                             {back.handle(), 0, ZMQ_POLLIN, 0}};
  while (!stop && !s.shutdown) {
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(100));
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      continue;
    }
    if (items[0].revents & ZMQ_POLLIN) ForwardRequest(frontend, back, windows);
    if (items[1].revents & ZMQ_POLLIN) ForwardReply(back, frontend, windows, s.name);
  }
}

// The replies the stopped workers left in the backend go out.
void FlushReplies(zmq::socket_t& back, zmq::socket_t& frontend, net::PeerWindows& windows,
                  const std::string& name) {
  while (true) {
    zmq::pollitem_t b{back.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&b, 1, std::chrono::milliseconds(50)) <= 0) break;
    ForwardReply(back, frontend, windows, name);
  }
}

}  // namespace

void RunServer(const ServerOptions& o, const std::atomic<bool>& stop,
               const std::function<void(const std::string&)>& on_ready) {
  o.Validate();
  ServerState s;
  const Placement at = ReadConfigs(o, &s);

  zmq::context_t ctx;
  // Only the job's processes complete a handshake (CURVE + ZAP).
  net::Authenticator auth(ctx, o.keys, s.name);
  zmq::socket_t frontend = BindFrontend(ctx, o, s.name, at);
  const std::string bound = frontend.get(zmq::sockopt::last_endpoint);

  // Only after the port is ours: a second server on a busy port must not
  // touch the shared memory of the one that holds it.
  if (o.server_id == 0) SweepStale(s.name);
  const std::unique_ptr<ShmPartition> shm = OpenPartition(o, at.part, &s);

  const std::string backend = "inproc://workers";
  zmq::socket_t back(ctx, zmq::socket_type::dealer);
  back.set(zmq::sockopt::linger, 0);
  back.bind(backend);
  const int threads = ResolveThreads(o.num_threads);
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] { Worker(s, ctx, backend, stop); });
  }
  GNN_LOG(kInfo) << s.name << " serving partition " << at.part << " (" << s.view->num_nodes
                 << " nodes) at " << bound << " with " << threads << " worker threads, "
                 << (o.keys.secure() ? "CURVE (job key required)" : "PLAINTEXT (--insecure)");
  if (on_ready) on_ready(bound);

  net::PeerWindows windows(static_cast<uint64_t>(o.peer_window_bytes));
  Proxy(frontend, back, stop, s, windows);
  // Let workers finish the reply they are sending (e.g. ShutdownReply).
  for (auto& w : workers) w.join();
  FlushReplies(back, frontend, windows, s.name);
  if (o.server_id == 0 && shm) {
    // The machine's hot-row cache (store/row_cache.h) has only trainers and
    // samplers as holders, and they are often killed: server 0 removes it
    // once they are gone, within the partition's own remove wait.
    const auto t0 = std::chrono::steady_clock::now();
    shm::RemoveWhenFree(RowCacheName(s.config.graph_name, s.config_sha, o.job_id, o.machine_id),
                        kServerRemoveWait);
    const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0);
    shm->SetRemoveWait(std::max(std::chrono::milliseconds(0), kServerRemoveWait - spent));
  }
  GNN_LOG(kInfo) << s.name << " stopped";
}

}  // namespace gnn
