#include "server/handlers.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "common/error.h"
#include "net/messages.h"
#include "sampling/edge_batch.h"
#include "sampling/owner_aggregate.h"
#include "sampling/sampler.h"

namespace gnn {

using net::Message;
using net::MsgType;

namespace {

using net::kMaxPullReplyBytes;
using net::kMaxRequestBytes;
using net::kMaxSampledPerRequest;

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
  OwnerDraw draw{v.csc(),
                 v.features,
                 v.feature_dim,
                 r.dsts.data(),
                 static_cast<int64_t>(n),
                 static_cast<int>(r.fanout),
                 r.replace,
                 r.rng_seed,
                 1};
  // An edge task's batch edges, dropped from what is drawn here.
  const EdgeExclusion exclude(r.exclude);
  if (!exclude.empty()) draw.exclude = &exclude;
  OwnerSums sums;
  SampleAggregate(draw, wide.empty() ? rep.data() : wide.data(), &sums, r.own_rows);
  rep.counts = std::move(sums.counts);
  rep.remote_indptr = std::move(sums.remote_indptr);
  rep.remote_ids = std::move(sums.remote_ids);
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
      // Scattered rows, as below: fetched a few ahead of their conversion.
      if (i + 8 < n) PrefetchBytes(v.features + (ids[i + 8] - v.node_start) * v.feature_dim, row);
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

}  // namespace

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

Message Answer(ServerState& s, std::vector<zmq::message_t>&& parts) {
  uint64_t rid = 0;
  try {
    const Message req = net::Decode(std::move(parts), &rid);
    return HandleRequest(s, req);
  } catch (const net::VersionMismatchError& e) {
    return net::MakeError(rid, net::kErrVersion, e.what());
  } catch (const net::UnknownTypeError& e) {
    return net::MakeError(rid, net::kErrUnknownType, e.what());
  } catch (const ProtocolError& e) {
    return net::MakeError(rid, net::kErrMalformed, e.what());
  } catch (const DataError& e) {
    return net::MakeError(rid, net::kErrBadRequest, e.what());
  } catch (const std::exception& e) {
    return net::MakeError(rid, net::kErrInternal, e.what());
  }
}

}  // namespace gnn
