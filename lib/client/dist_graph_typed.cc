// DistGraph's heterogeneous requests: typed sampling, typed feature pulls,
// and the embedding rows the servers keep.
#include <algorithm>
#include <cstring>
#include <functional>

#include "client/dist_graph.h"
#include "common/error.h"
#include "common/random.h"
#include "net/messages.h"
#include "sampling/sampler.h"
#include "store/row_cache.h"

namespace gnn {

using net::Message;

std::vector<Block> DistGraph::SampleTypedBlocks(const std::vector<int64_t>& seeds,
                                                const std::vector<std::vector<int>>& fanouts,
                                                bool replace, uint64_t rng_seed) {
  std::vector<Block> blocks(fanouts.size());
  std::vector<int64_t> frontier = seeds;
  const auto deadline_of = [&] { return std::chrono::steady_clock::now() + options_.timeout; };
  for (int l = static_cast<int>(fanouts.size()) - 1; l >= 0; --l) {
    const auto pos = ByOwner(frontier);
    const int parts = config_.num_parts;
    std::vector<net::TypedSampleRequest> asked(parts);
    std::vector<net::TypedSampleReply> got(parts);
    std::vector<std::pair<net::Connection*, uint64_t>> calls(parts, {nullptr, 0});
    const auto deadline = deadline_of();
    for (int p = 0; p < parts; ++p) {
      if (pos[p].empty()) continue;
      asked[p].fanouts.assign(fanouts[l].begin(), fanouts[l].end());
      asked[p].replace = replace;
      asked[p].rng_seed = MixSeed(rng_seed, static_cast<uint64_t>(l));
      asked[p].coding = options_.id_coding;
      for (size_t i : pos[p]) asked[p].seeds.push_back(frontier[i]);
      if (p == hetero_part_) continue;
      Message req = asked[p].Encode(0);
      Sending(req);
      net::Connection& c = Pick(p);
      calls[p] = {&c, c.Start(std::move(req))};
    }
    // This machine's partition is sampled here while the requests travel.
    if (hetero_part_ >= 0 && !asked[hetero_part_].seeds.empty()) {
      const std::vector<int> f(fanouts[l].begin(), fanouts[l].end());
      net::TypedSampleReply& mine = got[hetero_part_];
      SampleTypedNeighbors(hetero_csc_, asked[hetero_part_].seeds.data(),
                           static_cast<int64_t>(asked[hetero_part_].seeds.size()), f, replace,
                           asked[hetero_part_].rng_seed, 1, &mine.indptr, &mine.indices,
                           &mine.etypes);
    }
    for (int p = 0; p < parts; ++p) {
      if (!calls[p].first) continue;
      Message r = calls[p].first->Finish(calls[p].second, deadline, "TypedSample");
      got[p] =
          net::TypedSampleReply::Decode(r, asked[p], config_.num_nodes, calls[p].first->peer());
      for (const auto& f : r.frames) wire_bytes_ += f.size();
    }
    // Merge back into the frontier's order.
    std::vector<int64_t> indptr(frontier.size() + 1, 0), indices, etypes;
    for (int p = 0; p < parts; ++p) {
      for (size_t j = 0; j < pos[p].size(); ++j)
        indptr[pos[p][j] + 1] = got[p].indptr[j + 1] - got[p].indptr[j];
    }
    for (size_t i = 0; i < frontier.size(); ++i) indptr[i + 1] += indptr[i];
    indices.resize(static_cast<size_t>(indptr.back()));
    etypes.resize(indices.size());
    for (int p = 0; p < parts; ++p) {
      for (size_t j = 0; j < pos[p].size(); ++j) {
        const int64_t b = got[p].indptr[j], e = got[p].indptr[j + 1];
        std::copy(got[p].indices.begin() + b, got[p].indices.begin() + e,
                  indices.begin() + indptr[pos[p][j]]);
        std::copy(got[p].etypes.begin() + b, got[p].etypes.begin() + e,
                  etypes.begin() + indptr[pos[p][j]]);
      }
    }
    blocks[l] = ToBlock(frontier, std::move(indptr), indices);
    blocks[l].etypes = std::move(etypes);
    frontier = blocks[l].src_nodes;
  }
  return blocks;
}

HeteroBatch DistGraph::MakeTypedBatch(const std::vector<int64_t>& seeds,
                                      const std::vector<std::vector<int>>& fanouts, bool replace,
                                      uint64_t rng_seed) {
  const uint64_t wire_before = wire_bytes_;
  const uint64_t lookups_before = cache_lookups_, hits_before = cache_hits_;
  HeteroBatch b;
  b.seeds = seeds;
  b.blocks = SampleTypedBlocks(seeds, fanouts, replace, rng_seed);
  const size_t T = config_.ntypes.size();
  b.GroupInputsByType(T, [&](int64_t v) { return config_.NtypeOf(v); });
  for (size_t t = 0; t < T; ++t) {
    if (t < config_.ntype_feature_dims.size() && config_.ntype_feature_dims[t] > 0 &&
        !b.ids[t].empty())
      PullTyped(static_cast<int>(t), b.ids[t], &b.features[t]);
  }
  if (!seeds.empty()) PullLabels(seeds, &b.labels);
  b.wire_bytes = wire_bytes_ - wire_before;
  b.cache_lookups = cache_lookups_ - lookups_before;
  b.cache_hits = cache_hits_ - hits_before;
  return b;
}

size_t DistGraph::EmbChunk(int64_t dim) {
  return std::max<size_t>(1, (size_t{4} << 20) / (static_cast<size_t>(dim) * sizeof(float)));
}

namespace {

// Rows of a reply placed, as floats, at positions `where` of `out` (width
// dim).
void Place(const net::PullFeaturesReply& rep, const std::vector<size_t>& where, size_t first,
           size_t count, int64_t dim, std::vector<float>* out) {
  if (rep.format != net::RowFormat::kFloat32) {
    for (size_t j = 0; j < count; ++j)
      rep.RowTo(j, out->data() + where[first + j] * static_cast<size_t>(dim));
    return;
  }
  const float* rows = rep.data();
  for (size_t j = 0; j < count; ++j) {
    std::memcpy(out->data() + where[first + j] * static_cast<size_t>(dim),
                rows + j * static_cast<size_t>(dim), static_cast<size_t>(dim) * sizeof(float));
  }
}

}  // namespace

namespace {

// Rows of width `dim` for ids[pos[p]...] of every partition p but `skip`,
// in requests of at most `chunk` ids, all in flight at once: `request(p,
// ids)` makes partition p's request (asking for rows in `format`) and
// `conn(p)` names its server; the replies are checked against what was
// asked and placed at the ids' positions of `out`. `while_in_flight` runs
// once every request is sent.
template <typename Request, typename Conn>
void PullRows(const std::vector<int64_t>& ids, const std::vector<std::vector<size_t>>& pos,
              int64_t dim, net::RowFormat format, size_t chunk, int skip, const char* what,
              int timeout_ms, Request request, Conn conn, uint64_t* wire_bytes,
              std::vector<float>* out, const std::function<void()>& while_in_flight) {
  struct Pending {
    net::Connection* conn;
    uint64_t rid;
    int part;
    size_t first;
    net::PullFeatures asked;  // for the reply's check
  };
  std::vector<Pending> pending;
  const auto deadline = std::chrono::steady_clock::now() + net::Millis(timeout_ms);
  for (int p = 0; p < static_cast<int>(pos.size()); ++p) {
    if (p == skip) continue;
    for (size_t first = 0; first < pos[p].size(); first += chunk) {
      const size_t count = std::min(chunk, pos[p].size() - first);
      std::vector<int64_t> asked(count);
      for (size_t j = 0; j < count; ++j) asked[j] = ids[pos[p][first + j]];
      Message req = request(asked).Encode(0);
      for (const zmq::message_t& f : req.frames) *wire_bytes += f.size();
      net::Connection& c = conn(p);
      const uint64_t rid = c.Start(
          std::move(req), count * static_cast<size_t>(dim) * net::RowFormatBytes(format), deadline);
      pending.push_back({&c, rid, p, first, net::PullFeatures{std::move(asked), format}});
    }
  }
  while_in_flight();
  for (const Pending& q : pending) {
    Message r = q.conn->Finish(q.rid, deadline, what);
    const auto rep = net::PullFeaturesReply::Decode(r, q.asked, dim, q.conn->peer());
    *wire_bytes += r.frames[0].size();
    Place(rep, pos[q.part], q.first, q.asked.ids.size(), dim, out);
  }
}

}  // namespace

void DistGraph::PullTyped(int ntype, const std::vector<int64_t>& ids, std::vector<float>* out) {
  const int64_t dim = config_.ntype_feature_dims.at(static_cast<size_t>(ntype));
  out->resize(ids.size() * static_cast<size_t>(dim));
  auto pos = ByOwner(ids);
  // Other partitions' rows the machine's hot-row cache of the type holds
  // stay here.
  TakeCached(typed_row_cache(ntype), ids, hetero_part_, dim, &pos, out->data());
  // This machine's partition is copied in place after the requests left.
  auto local = [&] {
    if (hetero_part_ < 0 || pos[hetero_part_].empty()) return;
    const HeteroPartitionView& hp = *hetero_shm_->hetero_view();
    const auto [first, end] = hp.ntype_ranges[static_cast<size_t>(ntype)];
    const float* feat = hp.features[static_cast<size_t>(ntype)];
    for (size_t i : pos[hetero_part_]) {
      if (ids[i] < first || ids[i] >= end) {
        throw DataError("node " + std::to_string(ids[i]) + " is not of node type " +
                        std::to_string(ntype));
      }
      std::memcpy(out->data() + i * static_cast<size_t>(dim), feat + (ids[i] - first) * dim,
                  static_cast<size_t>(dim) * sizeof(float));
    }
  };
  // Feature rows travel in --wire_dtype (they need no gradient), as plain
  // graphs' rows do.
  const net::RowFormat format = options_.wire_format;
  PullRows(
      ids, pos, dim, format, EmbChunk(std::max<int64_t>(dim, 1)), hetero_part_, "PullTyped",
      static_cast<int>(options_.timeout.count()),
      [&](std::vector<int64_t> asked) {
        return net::PullTyped{ntype, std::move(asked), format, options_.id_coding};
      },
      [&](int p) -> net::Connection& { return Pick(p); }, &wire_bytes_, out, local);
}

void DistGraph::EmbPull(const net::EmbSpec& spec, const std::vector<int64_t>& ids,
                        std::vector<float>* out) {
  out->resize(ids.size() * static_cast<size_t>(spec.dim));
  PullRows(
      ids, ByOwner(ids), spec.dim, net::RowFormat::kFloat32, EmbChunk(spec.dim), -1, "EmbPull",
      static_cast<int>(options_.timeout.count()),
      [&](std::vector<int64_t> asked) {
        return net::EmbPull{spec, std::move(asked), options_.id_coding};
      },
      [&](int p) -> net::Connection& { return EmbConn(p); }, &wire_bytes_, out, [] {});
}

void DistGraph::EmbPush(const net::EmbSpec& spec, const std::vector<int64_t>& ids,
                        const std::vector<float>& grads) {
  if (grads.size() != ids.size() * static_cast<size_t>(spec.dim)) {
    throw DataError("EmbPush: " + std::to_string(grads.size()) + " gradient values for " +
                    std::to_string(ids.size()) + " rows");
  }
  const auto pos = ByOwner(ids);
  const size_t chunk = EmbChunk(spec.dim), dim = static_cast<size_t>(spec.dim);
  std::vector<std::tuple<net::Connection*, uint64_t, int64_t>> pending;
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (int p = 0; p < config_.num_parts; ++p) {
    for (size_t first = 0; first < pos[p].size(); first += chunk) {
      const size_t count = std::min(chunk, pos[p].size() - first);
      net::EmbPush req{spec, std::vector<int64_t>(count), std::vector<float>(count * dim),
                       options_.id_coding};
      for (size_t j = 0; j < count; ++j) {
        const size_t i = pos[p][first + j];
        req.ids[j] = ids[i];
        std::memcpy(req.grads.data() + j * dim, grads.data() + i * dim, dim * sizeof(float));
      }
      Message encoded = req.Encode(0);
      Sending(encoded);
      net::Connection& c = EmbConn(p);
      pending.emplace_back(&c, c.Start(std::move(encoded)), static_cast<int64_t>(count));
    }
  }
  for (const auto& [conn, rid, count] : pending) {
    net::EmbAck::Decode(conn->Finish(rid, deadline, "EmbPush"), count, conn->peer());
  }
}

std::string DistGraph::EmbSave(const net::EmbSpec& spec, int part) {
  const auto [first, end] =
      config_.parts.at(static_cast<size_t>(part)).ntype_ranges.at(static_cast<size_t>(spec.ntype));
  const int64_t rows = end - first, chunk = static_cast<int64_t>(EmbChunk(spec.dim));
  std::string out;
  net::Connection& c = EmbConn(part);
  for (int64_t b = 0; b < rows || (rows == 0 && b == 0); b += chunk) {
    const int64_t e = std::min(rows, b + chunk);
    const Message r = c.Call(net::EmbSave{spec, b, e}.Encode(0), options_.timeout);
    const std::string blob = net::EmbBlob::Decode(r, c.peer()).bytes;
    const uint64_t head[2] = {static_cast<uint64_t>(b), blob.size()};
    out.append(reinterpret_cast<const char*>(head), sizeof head);
    out += blob;
    if (rows == 0) break;
  }
  return out;
}

void DistGraph::EmbRestore(const net::EmbSpec& spec, int part, const std::string& bytes) {
  net::Connection& c = EmbConn(part);
  size_t pos = 0;
  while (pos < bytes.size()) {
    uint64_t head[2];
    const std::string what = "the embedding table of node type " + std::to_string(spec.ntype) +
                             " for partition " + std::to_string(part) + " is cut short";
    if (bytes.size() - pos < sizeof head) throw DataError(what);
    std::memcpy(head, bytes.data() + pos, sizeof head);
    pos += sizeof head;
    if (bytes.size() - pos < head[1]) throw DataError(what);
    net::EmbRestore req{spec, static_cast<int64_t>(head[0]), bytes.substr(pos, head[1])};
    pos += head[1];
    net::EmbAck::Decode(c.Call(req.Encode(0), options_.timeout), 0, c.peer());
  }
}

}  // namespace gnn
