// DistGraph's first layer at the owners: SampleAggregate (sample and sum
// where each destination lives) and FinishRemoteSums (the neighbours its
// owner lacks, summed at their own owners).
#include <algorithm>
#include <array>
#include <cstring>
#include <functional>

#include "client/dist_graph.h"
#include "common/error.h"
#include "net/messages.h"
#include "sampling/id_sort.h"
#include "sampling/owner_aggregate.h"
#include "store/row_cache.h"
#include "store/shm_partition.h"

namespace gnn {

using net::Message;

void DistGraph::SampleAggregate(const std::vector<int64_t>& dsts, int fanout, bool replace,
                                uint64_t rng_seed, NoInitVector<float>* out) {
  if (sparse_rows()) {
    throw ConfigError(config_.graph_name +
                      "'s feature rows are sparse: they are not aggregated at the owners");
  }
  const int64_t dim = config_.feature_dim;
  const int64_t n = static_cast<int64_t>(dsts.size());
  SizeRowBuffer(out, static_cast<size_t>(2 * n * dim));  // every row and sum is written
  float* rows = out->data();
  float* sums = rows + n * dim;
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  auto pos = ByOwner(dsts);
  // Every destination's count, and where its remote neighbours sit in
  // `remote` (appended reply by reply), in dsts' order.
  std::vector<int64_t> counts(n), remote_begin(n), remote_end(n), remote;
  // row_to(r, out) writes row r of a part's [own + m, dim] answer as
  // floats: the first `own` destinations' own rows, then m sums; the
  // others' own rows are in the hot-row cache. Without row_to the rows are
  // in place already (the local partition's).
  using RowTo = std::function<void(size_t, float*)>;
  auto place = [&](const std::vector<size_t>& slice, size_t own, const RowTo& row_to,
                   const std::vector<int64_t>& part_counts, const std::vector<int64_t>& rptr,
                   const std::vector<int64_t>& rids) {
    const size_t m = slice.size();
    for (size_t j = 0; j < m; ++j) {
      const size_t i = slice[j];
      if (row_to) {
        if (j < own) {
          row_to(j, rows + i * dim);
        } else {
          std::memcpy(rows + i * dim, cache_->Find(dsts[i]), row_bytes);
        }
        row_to(own + j, sums + i * dim);
      }
      counts[i] = part_counts[j];
      remote_begin[i] = static_cast<int64_t>(remote.size()) + rptr[j];
      remote_end[i] = static_cast<int64_t>(remote.size()) + rptr[j + 1];
    }
    remote.insert(remote.end(), rids.begin(), rids.end());
  };
  const size_t chunk = std::max<size_t>(1, (size_t{4} << 20) / std::max<size_t>(2 * row_bytes, 1));
  struct Pending {
    net::Peer* conn;
    uint64_t rid;
    int part;
    std::vector<size_t> slice;  // positions in dsts
    net::SampleAggregateRequest asked;
  };
  std::vector<Pending> pending;
  auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (int p = 0; p < config_.num_parts; ++p) {
    if (pos[p].empty() || p == local_part_) continue;
    // Destinations whose own row the hot-row cache holds go last, and
    // their owner sends only the others' (own_rows).
    // Their own rows count as lookups with or without a cache (the hit
    // rate means the same on every path).
    size_t uncached = pos[p].size();
    cache_lookups_ += pos[p].size();
    if (cache_) {
      const auto it = std::stable_partition(pos[p].begin(), pos[p].end(),
                                            [&](size_t i) { return !cache_->Find(dsts[i]); });
      uncached = static_cast<size_t>(it - pos[p].begin());
      cache_hits_ += pos[p].size() - uncached;
    }
    for (size_t first = 0; first < pos[p].size(); first += chunk) {
      const size_t count = std::min(chunk, pos[p].size() - first);
      Pending q{nullptr, 0, p, {pos[p].begin() + first, pos[p].begin() + first + count}, {}};
      q.asked = {std::vector<int64_t>(count), fanout, replace, rng_seed, options_.wire_format,
                 options_.id_coding};
      if (uncached < first + count) {
        q.asked.own_rows = static_cast<int64_t>(std::max(uncached, first) - first);
      }
      for (size_t j = 0; j < count; ++j) q.asked.dsts[j] = dsts[q.slice[j]];
      Message req = q.asked.Encode(0);
      Sending(req);
      q.conn = &Pick(p);
      q.rid = q.conn->Start(std::move(req), count * 2 * row_bytes, deadline);
      pending.push_back(std::move(q));
    }
  }
  // Remote requests are in flight while the local partition is aggregated.
  if (local_part_ >= 0 && !pos[local_part_].empty()) {
    const PartitionView& v = local_->view();
    const std::vector<size_t>& mine = pos[local_part_];
    std::vector<int64_t> ids(mine.size());
    for (size_t j = 0; j < mine.size(); ++j) ids[j] = dsts[mine[j]];
    // Rows and sums straight into their places.
    const auto m = static_cast<int64_t>(ids.size());
    const OwnerDraw draw{v.csc(), v.features, dim, ids.data(), m, fanout, replace, rng_seed, 1};
    OwnerSums held;
    gnn::SampleAggregateInto(draw, rows, sums, mine.data(), m, &held);
    place(mine, mine.size(), nullptr, held.counts, held.remote_indptr, held.remote_ids);
  }
  for (const Pending& q : pending) {
    Message r = q.conn->Finish(q.rid, deadline, "SampleAggregate");
    const PartInfo& owner = config_.parts[q.part];
    const net::SampleAggregateReply rep = net::SampleAggregateReply::Decode(
        r, q.asked, dim, config_.num_nodes, owner.node_start, owner.node_end, q.conn->peer());
    for (const zmq::message_t& f : r.frames) wire_bytes_ += f.size();
    // Converted (bfloat16) or copied straight into place.
    place(
        q.slice, rep.num_own_rows(), [&](size_t r, float* out) { rep.RowTo(r, out); }, rep.counts,
        rep.remote_indptr, rep.remote_ids);
  }
  // The neighbours no owner held beside its destination: each distinct one
  // pulled once, added in.
  std::vector<int64_t> rptr(n + 1, 0), rids;
  rids.reserve(remote.size());
  for (int64_t i = 0; i < n; ++i) {
    rids.insert(rids.end(), remote.begin() + remote_begin[i], remote.begin() + remote_end[i]);
    rptr[i + 1] = static_cast<int64_t>(rids.size());
  }
  std::vector<int64_t> unique, row_of;
  DistinctIds(rids, 0, config_.num_nodes, &unique, &row_of);
  if (options_.remote_sums) {
    FinishRemoteSums(n, counts, rptr, unique, row_of, sums);
    return;
  }
  NoInitVector<float>& remote_rows = mean_rows_;
  remote_rows.clear();
  if (!unique.empty()) PullFeatures(unique, &remote_rows);
  FinishMeans(n, dim, counts, rptr, remote_rows.data(), row_of, sums);
}

void DistGraph::FinishRemoteSums(int64_t n, const std::vector<int64_t>& counts,
                                 const std::vector<int64_t>& rptr,
                                 const std::vector<int64_t>& unique,
                                 const std::vector<int64_t>& row_of, float* sums) {
  const int64_t dim = config_.feature_dim;
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  // Rows pulled whole (one PullFeatures): the distinct neighbours this
  // machine holds (`near`: its partition, the hot-row cache), and those
  // that are a destination's only one at their owner (a sum of one is the
  // row, and a row pulled once serves every destination that has it).
  // pulled_row[u]: the row of unique[u] among `pulled`, or -1.
  std::vector<int64_t> pulled, pulled_row(unique.size(), -1), owner(unique.size());
  std::vector<uint8_t> near(unique.size(), 0);
  for (size_t u = 0; u < unique.size(); ++u) {
    owner[u] = config_.PartOf(unique[u]);
    if (owner[u] == local_part_ || (cache_ && cache_->Find(unique[u]))) {
      near[u] = 1;
      pulled_row[u] = static_cast<int64_t>(pulled.size());
      pulled.push_back(unique[u]);
    }
  }
  // The others by destination and owner: one group each (at most max_ids
  // ids; more make several), summed at the owner.
  const int parts = config_.num_parts;
  const size_t max_ids = (size_t{4} << 20) / sizeof(int64_t);
  std::vector<net::PullSums> groups(parts);  // [owner]: all its groups
  // What each destination adds: (destination, pulled row) and
  // (destination, owner, group).
  std::vector<std::pair<int64_t, int64_t>> add_rows;
  std::vector<std::array<int64_t, 3>> add_sums;
  std::vector<std::vector<int64_t>> at(parts);  // one destination's, by owner
  std::vector<int> touched;
  std::vector<uint8_t> summed(unique.size(), 0);  // in some owner's group
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = rptr[i]; k < rptr[i + 1]; ++k) {
      const int64_t u = row_of[k];
      if (near[u]) {
        add_rows.push_back({i, pulled_row[u]});
        continue;
      }
      if (at[owner[u]].empty()) touched.push_back(static_cast<int>(owner[u]));
      at[owner[u]].push_back(u);
    }
    for (int p : touched) {
      std::vector<int64_t>& mine = at[p];
      // A set to be summed: in increasing order (unique is sorted) it
      // varint-codes small.
      std::sort(mine.begin(), mine.end());
      if (mine.size() == 1) {
        const int64_t u = mine[0];
        if (pulled_row[u] < 0) {
          pulled_row[u] = static_cast<int64_t>(pulled.size());
          pulled.push_back(unique[u]);
        }
        add_rows.push_back({i, pulled_row[u]});
      } else {
        net::PullSums& g = groups[p];
        for (size_t j = 0; j < mine.size(); ++j) {
          if (j % max_ids == 0) {
            add_sums.push_back({i, p, static_cast<int64_t>(g.num_groups())});
            g.group_ptr.push_back(g.group_ptr.back());
          }
          g.ids.push_back(unique[mine[j]]);
          ++g.group_ptr.back();
          summed[mine[j]] = 1;
        }
      }
      mine.clear();
    }
    touched.clear();
  }
  // Looked up in the cache like the pulled ones (PullFeatures counts
  // those), so the hit rate means what it means on the rows path.
  for (size_t u = 0; u < unique.size(); ++u) cache_lookups_ += summed[u] && pulled_row[u] < 0;
  // Each owner's groups in pieces of at most about 4 MB of reply and of
  // ids.
  const size_t max_groups = std::max<size_t>(1, (size_t{4} << 20) / std::max<size_t>(row_bytes, 1));
  struct Pending {
    net::Peer* conn;
    uint64_t rid;
    int64_t first_row;  // of the piece's sums in `rows`, after the pulled rows
    net::PullSums asked;
  };
  std::vector<Pending> pending;
  std::vector<int64_t> first_row(parts, 0);  // of each owner's groups
  int64_t total = 0;
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (int p = 0; p < parts; ++p) {
    const net::PullSums& all = groups[p];
    first_row[p] = total;
    for (const auto& [first, end] : net::GroupPieces(all.group_ptr, max_ids, max_groups)) {
      Pending q{nullptr, 0, total, {{}, {0}, options_.wire_format, options_.id_coding}};
      net::TakeGroups(all, first, end, &q.asked);
      const size_t count = q.asked.num_groups();
      Message req = q.asked.Encode(0);
      Sending(req);
      q.conn = &Pick(p);
      q.rid = q.conn->Start(std::move(req), count * row_bytes, deadline);
      total += static_cast<int64_t>(count);
      pending.push_back(std::move(q));
    }
  }
  // The sums are in flight while the rows are pulled.
  const int64_t num_pulled = static_cast<int64_t>(pulled.size());
  // Room for the groups' sums too, so that growing past the pulled rows
  // does not copy them; every group's row is written below.
  NoInitVector<float>& rows = mean_rows_;  // kept for the next call
  rows.clear();
  rows.reserve(static_cast<size_t>((num_pulled + total) * dim));
  if (!pulled.empty()) PullFeatures(pulled, &rows);
  rows.resize(static_cast<size_t>((num_pulled + total) * dim));
  for (const Pending& q : pending) {
    Message r = q.conn->Finish(q.rid, deadline, "PullSums");
    const net::PullFeaturesReply rep =
        net::PullFeaturesReply::Decode(r, q.asked, dim, q.conn->peer());
    wire_bytes_ += r.frames[0].size();
    for (size_t g = 0; g < q.asked.num_groups(); ++g) {
      rep.RowTo(g, rows.data() + (num_pulled + q.first_row + static_cast<int64_t>(g)) * dim);
    }
  }
  // Per destination: its pulled rows and its groups' sums, added in.
  std::vector<int64_t> eptr(n + 1, 0);
  for (const auto& a : add_rows) ++eptr[a.first + 1];
  for (const auto& a : add_sums) ++eptr[a[0] + 1];
  for (int64_t i = 0; i < n; ++i) eptr[i + 1] += eptr[i];
  std::vector<int64_t> erow(eptr[n]), next(eptr.begin(), eptr.end() - 1);
  for (const auto& a : add_rows) erow[next[a.first]++] = a.second;
  for (const auto& a : add_sums) erow[next[a[0]]++] = num_pulled + first_row[a[1]] + a[2];
  FinishMeans(n, dim, counts, eptr, rows.data(), erow, sums);
}

}  // namespace gnn
