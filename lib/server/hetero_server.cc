#include "server/hetero_server.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "common/random.h"
#include "net/messages.h"
#include "sampling/owner_aggregate.h"

namespace gnn {

namespace {
// Values one embedding table may hold (16 GiB of floats, 48 with Adam's state).
constexpr int64_t kMaxEmbeddingFloats = int64_t{1} << 32;
}  // namespace

using net::Message;
using net::MsgType;

HeteroServing::HeteroServing(const PartitionConfig& config, const HeteroPartitionView& part,
                             bool holds_embeddings, std::string name)
    : config_(config), part_(part), holds_embeddings_(holds_embeddings), name_(std::move(name)) {
  g_.csc = CscView{part_.indptr, part_.indices, part_.node_start, part_.num_nodes, part_.rng_keys};
  g_.etypes = part_.etypes;
  g_.num_rels = static_cast<int64_t>(config.etypes.size());
  g_.csc.edge_data = part_.edge_data;  // the stored in-edges' features, when the graph has some
  g_.csc.edge_dim = part_.edge_data ? part_.edge_dim : 0;
  tables_.resize(config.ntypes.size());
  specs_.resize(config.ntypes.size());
}

std::optional<Message> HeteroServing::Handle(const Message& req) {
  switch (req.header.msg_type()) {
    case MsgType::kTypedSample:
      return OnTypedSample(req);
    case MsgType::kPullTyped:
      return OnPullTyped(req);
    case MsgType::kPullLabels:
      return OnPullLabels(req);
    case MsgType::kPullOrigIds:
      return OnPullOrigIds(req);
    case MsgType::kSplitNodes:
      return OnSplitNodes(req);
    case MsgType::kPullTypedSums:
      return OnPullTypedSums(req);
    case MsgType::kEmbPull:
    case MsgType::kEmbPush:
    case MsgType::kEmbSave:
    case MsgType::kEmbRestore:
      return OnEmbedding(req);
    case MsgType::kSample:
    case MsgType::kPullFeatures:
    case MsgType::kSampleAggregate:
    case MsgType::kPullSums:
    case MsgType::kPullTargets:
      throw DataError(
          name_ + " serves a heterogeneous partition: " + net::MsgTypeName(req.header.msg_type()) +
          " has no node type (use TypedSample / PullTyped)");
    default:
      return std::nullopt;
  }
}

Message HeteroServing::OnTypedSample(const Message& req) {
  const net::TypedSampleRequest r = net::TypedSampleRequest::Decode(req);
  if (static_cast<int64_t>(r.fanouts.size()) != g_.num_rels) {
    throw DataError("TypedSample with " + std::to_string(r.fanouts.size()) +
                    " fan-outs for a graph of " + std::to_string(g_.num_rels) + " relations");
  }
  for (int64_t f : r.fanouts) {
    if (f < -1 || f > (1 << 20)) throw DataError("fan-out " + std::to_string(f) + " out of range");
  }
  // Bound the reply before building it (as Sample does): at most a seed's
  // degree without replacement, the sum of the fan-outs with it.
  int64_t bound = 0;
  for (int64_t s : r.seeds) {
    const int64_t row = s - part_.node_start;
    if (row < 0 || row >= part_.num_nodes) {
      throw DataError("node " + std::to_string(s) + " is not owned by " + name_);
    }
    const int64_t deg =
        part_.indptr[static_cast<size_t>(row + 1)] - part_.indptr[static_cast<size_t>(row)];
    if (!r.replace) {
      bound += deg;
    } else {
      for (int64_t f : r.fanouts) bound += f < 0 ? deg : f;
    }
  }
  // An edge row of w floats weighs w / 2 ids (as Sample's limit).
  const int64_t w = r.edge_data ? g_.csc.edge_dim : 0;
  if (bound > net::kMaxSampledPerRequest / (1 + (w + 1) / 2)) {
    throw DataError("TypedSample would return up to " + std::to_string(bound) +
                    " neighbours, more than the limit of " +
                    std::to_string(net::kMaxSampledPerRequest) + " per request");
  }
  if (r.edge_data && g_.csc.edge_dim == 0) {
    throw DataError("TypedSample asks for edge data; " + config_.graph_name + " has none");
  }
  std::vector<int> fanouts(r.fanouts.begin(), r.fanouts.end());
  net::TypedSampleReply rep;
  rep.coding = r.coding;
  std::vector<int64_t> edges;
  SampleTypedNeighbors(g_, r.seeds.data(), static_cast<int64_t>(r.seeds.size()), fanouts, r.replace,
                       r.rng_seed, 1, &rep.indptr, &rep.indices, &rep.etypes,
                       r.edge_data ? &edges : nullptr);
  if (r.edge_data) {
    GatherEdgeRows(g_.csc, edges, &rep.edge_data);
    rep.edge_dim = g_.csc.edge_dim;
  }
  return rep.Encode(req.header.request_id);
}

std::vector<int64_t> HeteroServing::Rows(int t, const std::vector<int64_t>& ids) const {
  const auto [first, end] = part_.ntype_ranges[static_cast<size_t>(t)];
  std::vector<int64_t> rows(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < first || ids[i] >= end) {
      throw DataError("node " + std::to_string(ids[i]) + " is not a " +
                      config_.ntypes[static_cast<size_t>(t)] + " node of " + name_);
    }
    rows[i] = ids[i] - first;
  }
  return rows;
}

Message HeteroServing::OnPullTyped(const Message& req) {
  const net::PullTyped r = net::PullTyped::Decode(req);
  if (r.ntype >= static_cast<int64_t>(config_.ntypes.size())) {
    throw DataError("node type " + std::to_string(r.ntype) + " does not exist");
  }
  const int t = static_cast<int>(r.ntype);
  const int64_t dim = part_.feature_dims[static_cast<size_t>(t)];
  if (dim == 0) throw DataError(config_.ntypes[static_cast<size_t>(t)] + " nodes have no features");
  if (static_cast<int64_t>(r.ids.size()) * dim * 4 > net::kMaxPullReplyBytes) {
    throw DataError("PullTyped reply would exceed " + std::to_string(net::kMaxPullReplyBytes) +
                    " bytes");
  }
  const std::vector<int64_t> rows = Rows(t, r.ids);
  net::PullFeaturesReply rep(dim, rows.size(), r.format);
  const float* feat = part_.features[static_cast<size_t>(t)];
  if (r.format != net::RowFormat::kFloat32) {
    for (size_t i = 0; i < rows.size(); ++i) rep.SetRow(i, feat + rows[i] * dim);
    return rep.Encode(req.header.request_id);
  }
  float* out = rep.data();
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(out + i * static_cast<size_t>(dim), feat + rows[i] * dim,
                static_cast<size_t>(dim) * sizeof(float));
  }
  return rep.Encode(req.header.request_id);
}

Message HeteroServing::OnPullLabels(const Message& req) {
  const net::PullLabels asked = net::PullLabels::Decode(req);
  const std::vector<int64_t> rows = Rows(part_.target, asked.ids);
  net::PullLabelsReply rep;
  rep.coding = asked.coding;
  for (int64_t r : rows) rep.labels.push_back(part_.labels[static_cast<size_t>(r)]);
  return rep.Encode(req.header.request_id);
}

// Each owned node's id in the input dataset: type-local, as its
// partition's orig_nids (typed inference and saved embedding tables key
// their rows by it).
Message HeteroServing::OnPullOrigIds(const Message& req) {
  const net::PullLabels asked = net::PullLabels::Decode(req);
  net::PullLabelsReply rep;
  rep.coding = asked.coding;
  rep.labels.reserve(asked.ids.size());
  for (int64_t v : asked.ids) {
    if (v < part_.node_start || v >= part_.node_start + part_.num_nodes) {
      throw DataError("node " + std::to_string(v) + " is not owned by " + name_);
    }
    rep.labels.push_back(part_.orig_nids[static_cast<size_t>(v - part_.node_start)]);
  }
  return rep.Encode(req.header.request_id);
}

Message HeteroServing::OnSplitNodes(const Message& req) {
  const net::SplitNodes r = net::SplitNodes::Decode(req);
  if (r.mask < 0 || r.mask > 2 || r.offset < 0 || r.count < 0) {
    throw DataError("bad SplitNodes arguments");
  }
  const std::vector<int64_t> all = part_.Nodes(static_cast<int>(r.mask));
  const int64_t size = static_cast<int64_t>(all.size());
  if (r.count > size || r.offset > size - r.count) {
    throw DataError("SplitNodes asks past the end of " + name_ + "'s mask");
  }
  net::SplitNodesReply rep;
  rep.ids.assign(all.begin() + r.offset, all.begin() + r.offset + r.count);
  return rep.Encode(req.header.request_id);
}

// Groups of feature rows or embedding rows summed here (the typed first
// layer's per-relation means at the owners).
Message HeteroServing::OnPullTypedSums(const Message& req) {
  const net::PullTypedSums r = net::PullTypedSums::Decode(req);
  if (r.row_type() >= static_cast<int64_t>(config_.ntypes.size())) {
    throw DataError("node type " + std::to_string(r.row_type()) + " does not exist");
  }
  const int t = static_cast<int>(r.row_type());
  const int64_t dim = r.embedding ? r.spec.dim : part_.feature_dims[static_cast<size_t>(t)];
  if (dim == 0) throw DataError(config_.ntypes[static_cast<size_t>(t)] + " nodes have no features");
  const size_t groups = r.num_groups();
  if (static_cast<int64_t>(groups) > net::kMaxPullReplyBytes / 4 / dim) {
    throw DataError("PullTypedSums of " + std::to_string(groups) +
                    " groups passes the reply limit of " +
                    std::to_string(net::kMaxPullReplyBytes >> 20) + " MiB: split the request");
  }
  if (r.embedding && static_cast<int64_t>(r.ids.size()) > net::kMaxPullReplyBytes / 4 / dim) {
    throw DataError("PullTypedSums of " + std::to_string(r.ids.size()) +
                    " embedding rows passes the "
                    "limit of " +
                    std::to_string(net::kMaxPullReplyBytes >> 20) +
                    " MiB of rows: split the request");
  }
  const std::vector<int64_t> rows = Rows(t, r.ids);
  // The rows' values: the type's features in place, or the table's rows
  // copied out (as EmbPull copies them).
  std::vector<float> pulled;
  const float* values = part_.features[static_cast<size_t>(t)];
  std::vector<int64_t> at = rows;
  if (r.embedding) {
    Table(r.spec).Pull(rows, &pulled, 1);
    values = pulled.data();
    for (size_t i = 0; i < at.size(); ++i) at[i] = static_cast<int64_t>(i);
  }
  std::vector<float> sums(groups * static_cast<size_t>(dim));
  SumRowGroups(values, dim, 0, at.data(), r.group_ptr.data(), static_cast<int64_t>(groups),
               sums.data());
  net::PullFeaturesReply rep(dim, groups, r.format);
  for (size_t g = 0; g < groups; ++g) rep.SetRow(g, sums.data() + g * static_cast<size_t>(dim));
  return rep.Encode(req.header.request_id);
}

EmbeddingTable& HeteroServing::Table(const net::EmbSpec& spec) {
  if (!holds_embeddings_) {
    throw DataError(name_ + " holds no embedding rows (they live at server 0 of machine " +
                    std::to_string(part_.part_id) + ")");
  }
  if (spec.ntype >= static_cast<int64_t>(config_.ntypes.size()) ||
      part_.feature_dims[static_cast<size_t>(spec.ntype)] > 0) {
    throw DataError("node type " + std::to_string(spec.ntype) +
                    " has features or does not exist: it has no embedding table");
  }
  const size_t t = static_cast<size_t>(spec.ntype);
  std::lock_guard<std::mutex> lock(mu_);
  if (!tables_[t]) {
    // Values and (Adam) two state arrays: refuse a width that would not fit
    // rather than let the first request allocate without bound.
    const int64_t rows = part_.ntype_ranges[t].second - part_.ntype_ranges[t].first;
    if (rows > 0 && spec.dim > kMaxEmbeddingFloats / rows) {
      throw DataError(name_ + ": an embedding table of " + std::to_string(rows) + " rows x " +
                      std::to_string(spec.dim) + " is more than " +
                      std::to_string(kMaxEmbeddingFloats) + " values");
    }
    EmbeddingOptions eo;
    eo.dim = spec.dim;
    eo.optimizer = spec.optimizer == 0 ? SparseOptimizerKind::kAdagrad : SparseOptimizerKind::kAdam;
    eo.lr = spec.lr;
    eo.seed = spec.seed;
    std::vector<uint64_t> keys;
    for (int64_t v = part_.ntype_ranges[t].first; v < part_.ntype_ranges[t].second; ++v)
      keys.push_back(
          static_cast<uint64_t>(part_.rng_keys[static_cast<size_t>(v - part_.node_start)]));
    tables_[t] = std::make_unique<EmbeddingTable>(eo, keys, 0);
    specs_[t] = spec;
  } else if (!(specs_[t] == spec)) {
    throw DataError(name_ + ": the " + config_.ntypes[t] + " embedding table is " +
                    specs_[t].DebugString() + ", the request asks for " + spec.DebugString() +
                    " (trainers of one job must agree)");
  }
  return *tables_[t];
}

Message HeteroServing::OnEmbedding(const Message& req) {
  const uint64_t id = req.header.request_id;
  switch (req.header.msg_type()) {
    case MsgType::kEmbPull: {
      const net::EmbPull r = net::EmbPull::Decode(req);
      if (static_cast<int64_t>(r.ids.size()) > net::kMaxPullReplyBytes / 4 / r.spec.dim) {
        throw DataError("EmbPull reply would exceed " + std::to_string(net::kMaxPullReplyBytes) +
                        " bytes");
      }
      EmbeddingTable& table = Table(r.spec);
      std::vector<float> rows;
      table.Pull(Rows(static_cast<int>(r.spec.ntype), r.ids), &rows, 1);
      net::PullFeaturesReply rep(r.spec.dim, r.ids.size(), r.format);
      if (r.format != net::RowFormat::kFloat32) {
        for (size_t i = 0; i < r.ids.size(); ++i) rep.SetRow(i, rows.data() + i * r.spec.dim);
      } else if (!rows.empty()) {
        std::memcpy(rep.rows.data(), rows.data(), rows.size() * sizeof(float));
      }
      return rep.Encode(id);
    }
    case MsgType::kEmbPush: {
      const net::EmbPush r = net::EmbPush::Decode(req);
      Table(r.spec).Apply(Rows(static_cast<int>(r.spec.ntype), r.ids), r.grads, 1);
      return net::EmbAck{static_cast<int64_t>(r.ids.size())}.Encode(id);
    }
    case MsgType::kEmbSave: {
      const net::EmbSave r = net::EmbSave::Decode(req);
      EmbeddingTable& table = Table(r.spec);
      // Values plus at most two state arrays per row, within one reply.
      if (r.end - r.begin > net::kMaxPullReplyBytes / (3 * 4 * r.spec.dim)) {
        throw DataError("EmbSave of " + std::to_string(r.end - r.begin) + " rows is too large");
      }
      return net::EmbBlob{table.Save(r.begin, r.end)}.Encode(id);
    }
    default: {
      const net::EmbRestore r = net::EmbRestore::Decode(req);
      EmbeddingTable& table = Table(r.spec);
      table.Restore(r.bytes, r.begin, name_ + " EmbRestore");
      return net::EmbAck{0}.Encode(id);
    }
  }
}

}  // namespace gnn
