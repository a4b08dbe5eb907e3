// DistGraph's feature rows: PullFeatures (dense rows from shared memory,
// the machine's hot-row cache or their owners), PullSparseFeatures (a
// sparse-feature graph's rows as stored), and the hot-row caches it opens.
#include <algorithm>
#include <cstring>

#include "client/dist_graph.h"
#include "common/error.h"
#include "common/log.h"
#include "common/memory.h"
#include "net/messages.h"
#include "sampling/hot_rows.h"
#include "sampling/id_sort.h"
#include "sampling/sampler.h"
#include "store/row_cache.h"
#include "store/shm_partition.h"

namespace gnn {

using net::Message;

void DistGraph::OpenRowCache() {
  const int64_t dim = config_.feature_dim;
  // A row's bytes in the cache (its id included): dense, or a sparse
  // graph's average stored entries (column id, and value unless binary).
  const double entry = sizeof(int32_t) + (config_.feature_binary ? 0 : sizeof(float));
  const int64_t row_bytes = sparse_rows()
                                ? static_cast<int64_t>(avg_row_nnz_ * entry) + 2 * sizeof(int64_t)
                                : dim * static_cast<int64_t>(sizeof(float)) + sizeof(int64_t);
  const int64_t budget = options_.cache_bytes >= 0
                             ? options_.cache_bytes
                             : static_cast<int64_t>(kAutoCacheShare * config_.num_nodes *
                                                    static_cast<double>(row_bytes));
  const int64_t max_rows = budget / row_bytes;
  if (max_rows == 0) return;
  RowCacheKey key{
      RowCacheName(config_.graph_name, config_sha_, options_.job_id, options_.local_machine_id),
      config_.graph_name, PartitionConfigDigest(config_), dim};
  key.sparse = sparse_rows();
  const auto choose = [&] {
    const PartitionView& v = local_->view();
    return HotRemoteRows(v.csc(), v.train_mask, options_.cache_fanouts, max_rows);
  };
  // Fetched in slices of about 64 MB, so building never holds two copies
  // of a large cache.
  const auto fill = [&](const std::vector<int64_t>& ids, float* rows) {
    const size_t slice = std::max<size_t>(1, (size_t{64} << 20) / static_cast<size_t>(row_bytes));
    NoInitVector<float> got;
    for (size_t first = 0; first < ids.size(); first += slice) {
      const size_t count = std::min(slice, ids.size() - first);
      PullFeatures({ids.begin() + first, ids.begin() + first + count}, &got);
      std::memcpy(rows + first * dim, got.data(), got.size() * sizeof(float));
    }
  };
  // Sparse rows as stored, pulled in slices of about 64 MB.
  const auto fill_sparse = [&](const std::vector<int64_t>& ids) {
    const size_t slice = std::max<size_t>(1, (size_t{64} << 20) / static_cast<size_t>(row_bytes));
    SparseRows all, got;
    all.cols = dim;
    for (size_t first = 0; first < ids.size(); first += slice) {
      const size_t count = std::min(slice, ids.size() - first);
      PullSparseFeatures({ids.begin() + first, ids.begin() + first + count}, &got);
      AppendSparseRows(got, &all);
    }
    return all;
  };
  const uint64_t wire_before = wire_bytes_;
  cache_ = key.sparse ? ShmRowCache::OpenSparse(key, choose, fill_sparse, options_.cache_wait)
                      : ShmRowCache::Open(key, choose, fill, options_.cache_wait);
  // Building is a one-off cost, not the batches' traffic.
  wire_bytes_ = wire_before;
  GNN_LOG(kInfo) << "hot-row cache: " << cache_->num_rows() << " rows of other partitions ("
                 << cache_->mapped_bytes() / (1 << 20) << " MiB of " << budget / (1 << 20)
                 << " MiB allowed)" << (cache_->is_builder() ? ", built by this process" : "");
}

void DistGraph::OpenTypedRowCaches() {
  const size_t T = config_.ntypes.size();
  typed_caches_.resize(T);
  const HeteroPartitionView& hp = *hetero_shm_->hetero_view();
  for (size_t t = 0; t < T; ++t) {
    const int64_t dim = t < config_.ntype_feature_dims.size() ? config_.ntype_feature_dims[t] : 0;
    if (dim <= 0) continue;
    const int64_t row_bytes = dim * static_cast<int64_t>(sizeof(float)) + sizeof(int64_t);
    int64_t type_nodes = 0;
    for (const PartInfo& part : config_.parts) {
      type_nodes += part.ntype_ranges[t].second - part.ntype_ranges[t].first;
    }
    const int64_t budget =
        options_.cache_bytes >= 0
            ? options_.cache_bytes
            : static_cast<int64_t>(kAutoCacheShare * static_cast<double>(type_nodes * dim) *
                                   static_cast<double>(sizeof(float)));
    const int64_t max_rows = budget / row_bytes;
    if (max_rows == 0) continue;
    const RowCacheKey key{
        TypedRowCacheName(RowCacheName(config_.graph_name, config_sha_, options_.job_id,
                                       options_.local_machine_id),
                          static_cast<int>(t)),
        config_.graph_name, PartitionConfigDigest(config_), dim};
    // In-degree from this partition: how many of its in-edges name the row.
    const auto choose = [&] {
      const CscView& csc = hetero_csc_.csc;
      const int64_t lo = hp.node_start, hi = hp.node_start + hp.num_nodes;
      std::vector<int64_t> named;
      for (int64_t k = 0; k < csc.indptr[csc.num_nodes]; ++k) {
        const int64_t v = csc.indices[k];
        if ((v < lo || v >= hi) && config_.NtypeOf(v) == static_cast<int>(t)) named.push_back(v);
      }
      std::vector<int64_t> unique, row_of;
      DistinctIds(named, 0, config_.num_nodes, &unique, &row_of);
      std::vector<int64_t> count(unique.size(), 0);
      for (int64_t r : row_of) ++count[static_cast<size_t>(r)];
      std::vector<size_t> order(unique.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      const size_t keep = std::min(order.size(), static_cast<size_t>(max_rows));
      std::partial_sort(
          order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
          [&](size_t a, size_t b) { return count[a] != count[b] ? count[a] > count[b] : a < b; });
      std::vector<int64_t> ids(keep);
      for (size_t i = 0; i < keep; ++i) ids[i] = unique[order[i]];
      std::sort(ids.begin(), ids.end());
      return ids;
    };
    const auto fill = [&](const std::vector<int64_t>& ids, float* rows) {
      const size_t slice = std::max<size_t>(1, (size_t{64} << 20) / static_cast<size_t>(row_bytes));
      std::vector<float> got;
      for (size_t first = 0; first < ids.size(); first += slice) {
        const size_t count = std::min(slice, ids.size() - first);
        PullTyped(static_cast<int>(t), {ids.begin() + first, ids.begin() + first + count}, &got);
        std::memcpy(rows + first * dim, got.data(), got.size() * sizeof(float));
      }
    };
    const uint64_t wire_before = wire_bytes_;
    typed_caches_[t] = ShmRowCache::Open(key, choose, fill, options_.cache_wait);
    wire_bytes_ = wire_before;
    GNN_LOG(kInfo) << "hot-row cache of node type " << config_.ntypes[t] << ": "
                   << typed_caches_[t]->num_rows() << " rows of other partitions ("
                   << typed_caches_[t]->mapped_bytes() / (1 << 20) << " MiB of "
                   << budget / (1 << 20) << " MiB allowed)"
                   << (typed_caches_[t]->is_builder() ? ", built by this process" : "");
  }
}

void DistGraph::TakeCached(const ShmRowCache* cache, const std::vector<int64_t>& ids, int skip,
                           int64_t dim, std::vector<std::vector<size_t>>* pos, float* out) {
  const size_t row = static_cast<size_t>(dim) * sizeof(float);
  for (int p = 0; p < static_cast<int>(pos->size()); ++p) {
    std::vector<size_t>& mine = (*pos)[p];
    if (p == skip || mine.empty()) continue;
    cache_lookups_ += mine.size();
    if (!cache) continue;
    size_t kept = 0;
    for (size_t i : mine) {
      if (const float* hit = cache->Find(ids[i])) {
        std::memcpy(out + i * static_cast<size_t>(dim), hit, row);
      } else {
        mine[kept++] = i;
      }
    }
    cache_hits_ += mine.size() - kept;
    mine.resize(kept);
  }
}

void DistGraph::HoldRows(const std::vector<int64_t>& ids) {
  if (sparse_rows()) throw ConfigError(config_.graph_name + "'s feature rows are sparse: not held");
  ReleaseRows();
  std::vector<int64_t> sorted(ids);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  PullFeatures(sorted, &held_rows_);
  held_ids_ = std::move(sorted);
}

void DistGraph::ReleaseRows() {
  held_ids_.clear();
  held_ids_.shrink_to_fit();
  NoInitVector<float>().swap(held_rows_);
}

const float* DistGraph::FindHeld(int64_t v) const {
  const auto it = std::lower_bound(held_ids_.begin(), held_ids_.end(), v);
  if (it == held_ids_.end() || *it != v) return nullptr;
  return held_rows_.data() + (it - held_ids_.begin()) * config_.feature_dim;
}

void DistGraph::TakeHeld(const std::vector<int64_t>& ids, int skip,
                         std::vector<std::vector<size_t>>* pos, float* out) const {
  if (held_ids_.empty()) return;
  const size_t dim = static_cast<size_t>(config_.feature_dim);
  for (int p = 0; p < static_cast<int>(pos->size()); ++p) {
    std::vector<size_t>& mine = (*pos)[p];
    if (p == skip) continue;
    size_t kept = 0;
    for (size_t i : mine) {
      if (const float* hit = FindHeld(ids[i])) {
        std::memcpy(out + i * dim, hit, dim * sizeof(float));
      } else {
        mine[kept++] = i;
      }
    }
    mine.resize(kept);
  }
}

namespace {

// Where PullSparseFeatures found row i: the local partition, the hot-row
// cache, or reply source[i] (>= 0), its entries from first_entry[i].
constexpr int32_t kLocalRow = -1, kCachedRow = -2;

// The rows as one CSR [count.size(), cols] in `out`, copied from where
// they were found; values only when some row has them (else all ones).
void AssembleSparseRows(int64_t cols, const std::vector<int64_t>& count,
                        const std::vector<int32_t>& source, const std::vector<int64_t>& first_entry,
                        bool any_values, const std::vector<net::SparseRowsReply>& replies,
                        const SparseView* cached, const SparseView* local, SparseRows* out) {
  const size_t n = count.size();
  out->cols = cols;
  out->indptr.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) out->indptr[i + 1] = out->indptr[i] + count[i];
  const size_t nnz = static_cast<size_t>(out->indptr[n]);
  out->indices.resize(nnz);
  out->values.assign(any_values ? nnz : 0, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    const size_t at = static_cast<size_t>(out->indptr[i]), c = static_cast<size_t>(count[i]);
    if (c == 0) continue;
    const int32_t* columns;
    const float* vals;  // null: ones
    if (source[i] >= 0) {
      const net::SparseRowsReply& rep = replies[static_cast<size_t>(source[i])];
      columns = rep.columns.data();
      vals = rep.values.empty() ? nullptr : rep.values.data();
    } else {
      const SparseView& v = source[i] == kCachedRow ? *cached : *local;
      columns = v.indices;
      vals = v.values;
    }
    const int64_t k = first_entry[i];
    std::memcpy(out->indices.data() + at, columns + k, c * sizeof(int32_t));
    if (any_values && vals) std::memcpy(out->values.data() + at, vals + k, c * sizeof(float));
  }
}

}  // namespace

void DistGraph::PullSparseFeatures(const std::vector<int64_t>& ids, SparseRows* out) {
  if (!sparse_rows()) {
    throw ConfigError(config_.graph_name + " has dense feature rows: PullFeatures");
  }
  const size_t n = ids.size();
  auto pos = ByOwner(ids);
  // Stored entries of each asked row.
  std::vector<int64_t> count(n, 0);
  // Each row's source (kLocalRow, kCachedRow, or the index of the reply
  // that holds it) and the offset of its first entry there.
  std::vector<int32_t> source(n, kLocalRow);
  std::vector<int64_t> first_entry(n, 0);
  bool any_values = false;
  // Requests of about 4 MB of reply each, all in flight at once; never
  // more rows than the server's reply limit holds were they all full
  // (at least 256: a reply over the limit is refused, naming it).
  const double entry = sizeof(int32_t) + (config_.feature_binary ? 0 : sizeof(float));
  const double full_rows = static_cast<double>(net::kMaxPullReplyBytes) /
                           (entry * static_cast<double>(config_.feature_dim) + 8);
  const size_t chunk = static_cast<size_t>(std::clamp(
      std::min((4 << 20) / (entry * std::max(1.0, avg_row_nnz_) + 8), std::max(256.0, full_rows)),
      1.0, 65536.0));
  struct Pending {
    net::Peer* conn;
    uint64_t rid;
    int part;
    size_t first;
    net::PullSparseRows asked;
  };
  std::vector<Pending> pending;
  auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  // Other partitions' rows the machine's hot-row cache holds stay here.
  const SparseView* cached = cache_ ? &cache_->sparse_rows() : nullptr;
  for (int p = 0; p < config_.num_parts; ++p) {
    if (pos[p].empty() || p == local_part_) continue;
    cache_lookups_ += pos[p].size();
    if (cached) {
      size_t kept = 0;
      for (size_t i : pos[p]) {
        const int64_t slot = cache_->Slot(ids[i]);
        if (slot < 0) {
          pos[p][kept++] = i;
          continue;
        }
        count[i] = cached->indptr[slot + 1] - cached->indptr[slot];
        source[i] = kCachedRow;
        first_entry[i] = cached->indptr[slot];
        any_values = any_values || cached->values != nullptr;
      }
      cache_hits_ += pos[p].size() - kept;
      pos[p].resize(kept);
    }
    for (size_t first = 0; first < pos[p].size(); first += chunk) {
      const size_t m = std::min(chunk, pos[p].size() - first);
      net::PullSparseRows asked{std::vector<int64_t>(m), options_.wire_format, options_.id_coding};
      for (size_t j = 0; j < m; ++j) asked.ids[j] = ids[pos[p][first + j]];
      Message req = asked.Encode(0);
      Sending(req);
      net::Peer& c = Pick(p);
      const uint64_t rid =
          c.Start(std::move(req), static_cast<size_t>(m * (entry * avg_row_nnz_ + 8)), deadline);
      pending.push_back({&c, rid, p, first, std::move(asked)});
    }
  }
  if (local_part_ >= 0) {
    const SparseView& sv = local_->view().sparse_features;
    any_values = any_values || (sv.values != nullptr && !pos[local_part_].empty());
    for (size_t i : pos[local_part_]) {
      const int64_t r = ids[i] - local_->view().node_start;
      count[i] = sv.indptr[r + 1] - sv.indptr[r];
      source[i] = kLocalRow;
      first_entry[i] = sv.indptr[r];
    }
  }
  std::vector<net::SparseRowsReply> replies(pending.size());  // read until the copy below
  for (size_t q = 0; q < pending.size(); ++q) {
    const Pending& p = pending[q];
    Message r = p.conn->Finish(p.rid, deadline, "PullSparseRows");
    for (const zmq::message_t& f : r.frames) wire_bytes_ += f.size();
    replies[q] = net::SparseRowsReply::Decode(r, p.asked, config_.feature_dim, p.conn->peer());
    const net::SparseRowsReply& rep = replies[q];
    any_values = any_values || !rep.values.empty();
    size_t at = 0;
    for (size_t j = 0; j < rep.counts.size(); ++j) {
      const size_t i = pos[p.part][p.first + j];
      count[i] = rep.counts[j];
      source[i] = static_cast<int32_t>(q);
      first_entry[i] = static_cast<int64_t>(at);
      at += static_cast<size_t>(rep.counts[j]);
    }
  }
  const SparseView* local = local_part_ >= 0 ? &local_->view().sparse_features : nullptr;
  AssembleSparseRows(config_.feature_dim, count, source, first_entry, any_values, replies, cached,
                     local, out);
}

void DistGraph::PullFeatures(const std::vector<int64_t>& ids, NoInitVector<float>* out) {
  if (sparse_rows()) {
    SparseRows rows;
    PullSparseFeatures(ids, &rows);
    SizeRowBuffer(out, ids.size() * static_cast<size_t>(config_.feature_dim));
    Densify(rows.view(), out->data());
    return;
  }
  const int64_t dim = config_.feature_dim;
  SizeRowBuffer(out, ids.size() * static_cast<size_t>(dim));  // every row is written below
  const size_t row = static_cast<size_t>(dim) * sizeof(float);
  auto pos = ByOwner(ids);
  // Other partitions' rows the machine's hot-row cache holds stay here.
  TakeCached(cache_.get(), ids, local_part_, dim, &pos, out->data());
  TakeHeld(ids, local_part_, &pos, out->data());
  // Requests of about 4 MB of reply: all are in flight at once (spread over
  // a machine's backup servers), so servers gather while earlier replies
  // travel, and no reply is large enough to need fresh page-faulted memory.
  const size_t chunk = std::max<size_t>(1, (size_t{4} << 20) / std::max<size_t>(row, 1));
  struct Pending {
    net::Peer* conn;
    uint64_t rid;
    int part;
    size_t first;  // of the slice of pos[part] asked
    net::PullFeatures asked;
  };
  std::vector<Pending> pending;
  auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (int p = 0; p < config_.num_parts; ++p) {
    if (pos[p].empty() || p == local_part_) continue;
    for (size_t first = 0; first < pos[p].size(); first += chunk) {
      size_t count = std::min(chunk, pos[p].size() - first);
      net::PullFeatures asked{std::vector<int64_t>(count), options_.wire_format,
                              options_.id_coding};
      for (size_t j = 0; j < count; ++j) asked.ids[j] = ids[pos[p][first + j]];
      Message req = asked.Encode(0);
      Sending(req);
      net::Peer& c = Pick(p);
      const uint64_t rid = c.Start(std::move(req), count * row, deadline);
      pending.push_back({&c, rid, p, first, std::move(asked)});
    }
  }
  if (local_part_ >= 0) {
    const PartitionView& v = local_->view();
    const std::vector<size_t>& mine = pos[local_part_];
    for (size_t j = 0; j < mine.size(); ++j) {
      // Rows are scattered in memory: fetch a few ahead of the copy.
      if (j + 8 < mine.size())
        PrefetchBytes(v.features + (ids[mine[j + 8]] - v.node_start) * dim, row);
      std::memcpy(out->data() + mine[j] * dim, v.features + (ids[mine[j]] - v.node_start) * dim,
                  row);
    }
  }
  for (const Pending& q : pending) {
    Message r = q.conn->Finish(q.rid, deadline, "PullFeatures");
    const net::PullFeaturesReply rep =
        net::PullFeaturesReply::Decode(r, q.asked, dim, q.conn->peer());
    wire_bytes_ += r.frames[0].size();
    if (rep.format != net::RowFormat::kFloat32) {
      for (size_t j = 0; j < q.asked.ids.size(); ++j) {
        rep.RowTo(j, out->data() + pos[q.part][q.first + j] * dim);
      }
      continue;
    }
    const float* rows = rep.data();
    for (size_t j = 0; j < q.asked.ids.size(); ++j) {
      std::memcpy(out->data() + pos[q.part][q.first + j] * dim, rows + j * dim, row);
    }
  }
}

}  // namespace gnn
