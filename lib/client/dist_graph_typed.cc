// DistGraph's heterogeneous requests: typed sampling, typed feature pulls,
// and the embedding rows the servers keep.
#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "client/dist_graph.h"
#include "client/sum_plans.h"
#include "common/error.h"
#include "common/random.h"
#include "net/messages.h"
#include "sampling/edge_batch.h"
#include "sampling/relation_block.h"
#include "sampling/sampler.h"
#include "store/row_cache.h"

namespace gnn {

using net::Message;

std::vector<Block> DistGraph::SampleTypedBlocks(const std::vector<int64_t>& seeds,
                                                const std::vector<std::vector<int>>& fanouts,
                                                bool replace, uint64_t rng_seed,
                                                const EdgeExclusion* exclude) {
  std::vector<Block> blocks(fanouts.size());
  std::vector<int64_t> frontier = seeds;
  const int64_t edge_dim = this->edge_dim();  // 0 unless the model reads edge features
  const size_t ew = static_cast<size_t>(edge_dim);
  const auto deadline_of = [&] { return std::chrono::steady_clock::now() + options_.timeout; };
  for (int l = static_cast<int>(fanouts.size()) - 1; l >= 0; --l) {
    const auto pos = ByOwner(frontier);
    const int parts = config_.num_parts;
    std::vector<net::TypedSampleRequest> asked(parts);
    std::vector<net::TypedSampleReply> got(parts);
    std::vector<std::pair<net::Peer*, uint64_t>> calls(parts, {nullptr, 0});
    const auto deadline = deadline_of();
    for (int p = 0; p < parts; ++p) {
      if (pos[p].empty()) continue;
      asked[p].fanouts.assign(fanouts[l].begin(), fanouts[l].end());
      asked[p].replace = replace;
      asked[p].rng_seed = MixSeed(rng_seed, static_cast<uint64_t>(l));
      asked[p].coding = options_.id_coding;
      asked[p].edge_data = edge_dim > 0;
      for (size_t i : pos[p]) asked[p].seeds.push_back(frontier[i]);
      if (p == hetero_part_) continue;
      Message req = asked[p].Encode(0);
      Sending(req);
      net::Peer& c = Pick(p);
      calls[p] = {&c, c.Start(std::move(req))};
    }
    // This machine's partition is sampled here while the requests travel.
    if (hetero_part_ >= 0 && !asked[hetero_part_].seeds.empty()) {
      const std::vector<int> f(fanouts[l].begin(), fanouts[l].end());
      net::TypedSampleReply& mine = got[hetero_part_];
      std::vector<int64_t> edges;
      SampleTypedNeighbors(hetero_csc_, asked[hetero_part_].seeds.data(),
                           static_cast<int64_t>(asked[hetero_part_].seeds.size()), f, replace,
                           asked[hetero_part_].rng_seed, 1, &mine.indptr, &mine.indices,
                           &mine.etypes, edge_dim > 0 ? &edges : nullptr);
      if (edge_dim > 0) {
        if (hetero_csc_.csc.edge_dim != edge_dim) {
          throw DataError("the shared-memory partition " + std::to_string(hetero_part_) +
                          " holds no edge features");
        }
        GatherEdgeRows(hetero_csc_.csc, edges, &mine.edge_data);
        mine.edge_dim = edge_dim;
      }
    }
    for (int p = 0; p < parts; ++p) {
      if (!calls[p].first) continue;
      Message r = calls[p].first->Finish(calls[p].second, deadline, "TypedSample");
      got[p] = net::TypedSampleReply::Decode(r, asked[p], config_.num_nodes, calls[p].first->peer(),
                                             edge_dim);
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
    std::vector<float> edge_rows(indices.size() * ew);
    for (int p = 0; p < parts; ++p) {
      for (size_t j = 0; j < pos[p].size(); ++j) {
        const int64_t b = got[p].indptr[j], e = got[p].indptr[j + 1];
        std::copy(got[p].indices.begin() + b, got[p].indices.begin() + e,
                  indices.begin() + indptr[pos[p][j]]);
        std::copy(got[p].etypes.begin() + b, got[p].etypes.begin() + e,
                  etypes.begin() + indptr[pos[p][j]]);
        if (ew > 0) {
          std::copy(got[p].edge_data.begin() + b * edge_dim,
                    got[p].edge_data.begin() + e * edge_dim,
                    edge_rows.begin() + indptr[pos[p][j]] * edge_dim);
        }
      }
    }
    if (exclude && !exclude->empty()) {
      std::vector<int64_t> kept;
      exclude->Filter(frontier.data(), static_cast<int64_t>(frontier.size()), &indptr, &indices,
                      &kept);
      KeepTypedEdges(kept, &etypes, nullptr);
      for (size_t i = 0; ew > 0 && i < kept.size(); ++i) {
        std::copy_n(edge_rows.begin() + kept[i] * edge_dim, edge_dim,
                    edge_rows.begin() + static_cast<int64_t>(i) * edge_dim);
      }
      edge_rows.resize(kept.size() * ew);
    }
    blocks[l] = ToBlock(frontier, std::move(indptr), indices);
    blocks[l].etypes = std::move(etypes);
    if (ew > 0) {
      blocks[l].edge_dim = edge_dim;
      blocks[l].edge_data = std::move(edge_rows);
    }
    frontier = blocks[l].src_nodes;
  }
  return blocks;
}

HeteroBatch DistGraph::MakeTypedBatch(const std::vector<int64_t>& seeds,
                                      const std::vector<std::vector<int>>& fanouts, bool replace,
                                      uint64_t rng_seed, const EdgeExclusion* exclude) {
  const uint64_t wire_before = wire_bytes_;
  const uint64_t lookups_before = cache_lookups_, hits_before = cache_hits_;
  HeteroBatch b;
  b.seeds = seeds;
  b.blocks = SampleTypedBlocks(seeds, fanouts, replace, rng_seed, exclude);
  const size_t T = config_.ntypes.size();
  const auto type_of = [&](int64_t v) { return config_.NtypeOf(v); };
  if (options_.aggregate_at_owner && edge_dim() == 0) {
    // The first layer reads its destinations' own rows and, per relation,
    // the means of their sources' rows: a featured type's summed where the
    // rows live.
    b.input_means = true;
    const Block& b0 = b.blocks.front();
    b.GroupInputsByType(T, type_of, b0.num_dst);
    const RelationBlock rb = ToRelationBlock(b0, static_cast<int64_t>(config_.etypes.size()));
    const std::vector<int> src_type = config_.RelationSrcTypes();
    b.means.assign(src_type.size(), {});
    for (size_t t = 0; t < T; ++t) {
      if (t >= config_.ntype_feature_dims.size() || config_.ntype_feature_dims[t] == 0) continue;
      std::vector<int64_t> rels;
      for (size_t r = 0; r < src_type.size(); ++r)
        if (src_type[r] == static_cast<int>(t)) rels.push_back(static_cast<int64_t>(r));
      const RelationGroups g = GroupSources(rb, b0.src_nodes, rels);
      if (g.size() == 0) continue;
      std::vector<float> sums;
      TypedGroupSums(static_cast<int>(t), nullptr, g.ids, g.ptr, &sums);
      const size_t dim = static_cast<size_t>(config_.ntype_feature_dims[t]);
      for (size_t k = 0; k < g.size(); ++k) {
        std::vector<float>& m = b.means[static_cast<size_t>(g.rows[k] / b0.num_dst)];
        const float inv = 1.0f / static_cast<float>(g.ptr[k + 1] - g.ptr[k]);
        for (size_t j = 0; j < dim; ++j) m.push_back(sums[k * dim + j] * inv);
      }
    }
  } else {
    b.GroupInputsByType(T, type_of);
  }
  for (size_t t = 0; t < T; ++t) {
    if (t < config_.ntype_feature_dims.size() && config_.ntype_feature_dims[t] > 0 &&
        !b.ids[t].empty())
      PullTyped(static_cast<int>(t), b.ids[t], &b.features[t]);
  }
  // The target type's labels; -1 for seeds of other types (inference of
  // every type's embeddings).
  const auto target = static_cast<int>(
      std::find(config_.ntypes.begin(), config_.ntypes.end(), config_.target_ntype) -
      config_.ntypes.begin());
  const auto of_target = [&](int64_t v) { return config_.NtypeOf(v) == target; };
  if (std::all_of(seeds.begin(), seeds.end(), of_target)) {
    if (!seeds.empty()) PullLabels(seeds, &b.labels);
  } else {
    std::vector<int64_t> labelled;
    std::vector<size_t> at;
    for (size_t i = 0; i < seeds.size(); ++i) {
      if (of_target(seeds[i])) {
        labelled.push_back(seeds[i]);
        at.push_back(i);
      }
    }
    b.labels.assign(seeds.size(), -1);
    std::vector<int64_t> got;
    if (!labelled.empty()) PullLabels(labelled, &got);
    for (size_t k = 0; k < at.size(); ++k) b.labels[at[k]] = got[k];
  }
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
    net::Peer* conn;
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
      net::Peer& c = conn(p);
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
      [&](int p) -> net::Peer& { return Pick(p); }, &wire_bytes_, out, local);
}

std::vector<std::vector<TypedShare>> DistGraph::TypedShares(int ntype, const net::EmbSpec* spec,
                                                            const std::vector<int64_t>& ids,
                                                            const std::vector<int64_t>& group_ptr,
                                                            const float* local, int64_t local_first,
                                                            const ShmRowCache* cache,
                                                            std::vector<float>* out) {
  const size_t d = static_cast<size_t>(
      spec ? spec->dim : config_.ntype_feature_dims.at(static_cast<size_t>(ntype)));
  const size_t groups = group_ptr.empty() ? 0 : group_ptr.size() - 1;
  const int parts = config_.num_parts;
  std::vector<std::vector<TypedShare>> shares(parts);
  std::vector<std::vector<int64_t>> at(parts);
  std::vector<int> touched;
  std::unordered_set<int64_t> looked_up;  // cached rows counted once
  for (size_t k = 0; k < groups; ++k) {
    for (int64_t e = group_ptr[k]; e < group_ptr[k + 1]; ++e) {
      const int64_t v = ids[static_cast<size_t>(e)];
      const int p = config_.PartOf(v);
      if (p < 0) throw DataError("node " + std::to_string(v) + " is in no partition");
      const float* near = nullptr;
      if (local && p == hetero_part_) {
        if (config_.NtypeOf(v) != ntype) {
          throw DataError("node " + std::to_string(v) + " is not of node type " +
                          std::to_string(ntype));
        }
        near = local + (v - local_first) * static_cast<int64_t>(d);
      } else if (cache && (near = cache->Find(v)) != nullptr && looked_up.insert(v).second) {
        ++cache_lookups_;
        ++cache_hits_;
      }
      if (near) {
        float* sum = out->data() + k * d;
        for (size_t j = 0; j < d; ++j) sum[j] += near[j];
        continue;
      }
      if (at[p].empty()) touched.push_back(p);
      at[p].push_back(v);
    }
    for (int p : touched) {
      shares[p].push_back({k, std::move(at[p])});
      at[p].clear();
    }
    touched.clear();
  }
  return shares;
}

void DistGraph::TypedGroupSums(int ntype, const net::EmbSpec* spec, const std::vector<int64_t>& ids,
                               const std::vector<int64_t>& group_ptr, std::vector<float>* out) {
  const size_t t = static_cast<size_t>(ntype);
  const int64_t dim = spec ? spec->dim : config_.ntype_feature_dims.at(t);
  const size_t d = static_cast<size_t>(dim);
  const size_t groups = group_ptr.empty() ? 0 : group_ptr.size() - 1;
  out->assign(groups * d, 0.0f);
  // Embedding rows always come from their servers (they change every
  // step); feature rows of this machine's partition and hot-row cache are
  // read here.
  const ShmRowCache* cache = spec ? nullptr : typed_row_cache(ntype);
  const float* local = nullptr;
  int64_t local_first = 0;
  if (!spec && hetero_part_ >= 0) {
    const HeteroPartitionView& hp = *hetero_shm_->hetero_view();
    local = hp.features[t];
    local_first = hp.ntype_ranges[t].first;
  }
  const int parts = config_.num_parts;
  TypedSumsPlan plan =
      PlanTypedSums(TypedShares(ntype, spec, ids, group_ptr, local, local_first, cache, out),
                    options_.remote_sums);
  // Rows read as rows count as lookups (the cached ones in TypedShares);
  // the ones summed at their owner do not.
  if (!spec) cache_lookups_ += plan.pulled.size();
  const std::vector<int64_t>& pulled = plan.pulled;
  // The sums in pieces of at most about 4 MB of ids and of reply, all in
  // flight while the rows are pulled.
  const net::RowFormat format = options_.wire_format;
  // (An embedding piece's rows are copied out at the server: at most a
  // reply's worth of them.)
  const size_t max_ids = std::min(
      (size_t{4} << 20) / sizeof(int64_t),
      spec ? static_cast<size_t>(net::kMaxPullReplyBytes) / (d * sizeof(float)) : SIZE_MAX);
  const size_t max_groups = std::max<size_t>(1, (size_t{4} << 20) / (d * sizeof(float)));
  struct Pending {
    net::Peer* conn;
    uint64_t rid;
    int part;
    size_t first;  // of the piece's groups among the owner's summed ones
    net::PullTypedSums asked;
  };
  std::vector<Pending> pending;
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (int p = 0; p < parts; ++p) {
    const net::PullTypedSums& all = plan.asked[p];
    for (const auto& [first, end] : net::GroupPieces(all.group_ptr, max_ids, max_groups)) {
      Pending q{nullptr, 0, p, first, {}};
      q.asked.ntype = ntype;
      q.asked.embedding = spec != nullptr;
      if (spec) q.asked.spec = *spec;
      q.asked.format = format;
      q.asked.coding = options_.id_coding;
      net::TakeGroups(all, first, end, &q.asked);
      Message req = q.asked.Encode(0);
      Sending(req);
      q.conn = spec ? &EmbConn(p) : &Pick(p);
      q.rid = q.conn->Start(std::move(req), q.asked.num_groups() * d * net::RowFormatBytes(format),
                            deadline);
      pending.push_back(std::move(q));
    }
  }
  std::vector<float> rows;
  if (!pulled.empty()) {
    rows.resize(pulled.size() * d);
    const int timeout_ms = static_cast<int>(options_.timeout.count());
    if (spec) {
      PullRows(
          pulled, ByOwner(pulled), dim, format, EmbChunk(dim), -1, "EmbPull", timeout_ms,
          [&](std::vector<int64_t> some) {
            return net::EmbPull{*spec, std::move(some), options_.id_coding, format};
          },
          [&](int p) -> net::Peer& { return EmbConn(p); }, &wire_bytes_, &rows, [] {});
    } else {
      PullRows(
          pulled, ByOwner(pulled), dim, format, EmbChunk(dim), -1, "PullTyped", timeout_ms,
          [&](std::vector<int64_t> some) {
            return net::PullTyped{ntype, std::move(some), format, options_.id_coding};
          },
          [&](int p) -> net::Peer& { return Pick(p); }, &wire_bytes_, &rows, [] {});
    }
  }
  for (const auto& [k, r] : plan.add_rows) {
    float* sum = out->data() + k * d;
    const float* row = rows.data() + static_cast<size_t>(r) * d;
    for (size_t j = 0; j < d; ++j) sum[j] += row[j];
  }
  std::vector<float> one(d);
  for (const Pending& q : pending) {
    Message r = q.conn->Finish(q.rid, deadline, "PullTypedSums");
    const net::PullFeaturesReply rep = net::PullFeaturesReply::DecodeRows(
        r, q.asked.format, q.asked.num_groups(), dim, "PullTypedSums", q.conn->peer());
    wire_bytes_ += r.frames[0].size();
    for (size_t g = 0; g < q.asked.num_groups(); ++g) {
      rep.RowTo(g, one.data());
      float* sum = out->data() + plan.summed_groups[q.part][q.first + g] * d;
      for (size_t j = 0; j < d; ++j) sum[j] += one[j];
    }
  }
}

void DistGraph::EmbPull(const net::EmbSpec& spec, const std::vector<int64_t>& ids,
                        std::vector<float>* out, bool exact) {
  out->resize(ids.size() * static_cast<size_t>(spec.dim));
  // Embedding rows travel in --wire_dtype as feature rows do.
  const net::RowFormat format = exact ? net::RowFormat::kFloat32 : options_.wire_format;
  PullRows(
      ids, ByOwner(ids), spec.dim, format, EmbChunk(spec.dim), -1, "EmbPull",
      static_cast<int>(options_.timeout.count()),
      [&](std::vector<int64_t> asked) {
        return net::EmbPull{spec, std::move(asked), options_.id_coding, format};
      },
      [&](int p) -> net::Peer& { return EmbConn(p); }, &wire_bytes_, out, [] {});
}

void DistGraph::EmbPush(const net::EmbSpec& spec, const std::vector<int64_t>& ids,
                        const std::vector<float>& grads) {
  if (grads.size() != ids.size() * static_cast<size_t>(spec.dim)) {
    throw DataError("EmbPush: " + std::to_string(grads.size()) + " gradient values for " +
                    std::to_string(ids.size()) + " rows");
  }
  const auto pos = ByOwner(ids);
  const size_t chunk = EmbChunk(spec.dim), dim = static_cast<size_t>(spec.dim);
  std::vector<std::tuple<net::Peer*, uint64_t, int64_t>> pending;
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (int p = 0; p < config_.num_parts; ++p) {
    for (size_t first = 0; first < pos[p].size(); first += chunk) {
      const size_t count = std::min(chunk, pos[p].size() - first);
      net::EmbPush req{spec, std::vector<int64_t>(count), std::vector<float>(count * dim),
                       options_.id_coding, options_.wire_format};
      for (size_t j = 0; j < count; ++j) {
        const size_t i = pos[p][first + j];
        req.ids[j] = ids[i];
        std::memcpy(req.grads.data() + j * dim, grads.data() + i * dim, dim * sizeof(float));
      }
      Message encoded = req.Encode(0);
      Sending(encoded);
      net::Peer& c = EmbConn(p);
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
  net::Peer& c = EmbConn(part);
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
  net::Peer& c = EmbConn(part);
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
