// DistGraph's first layer at the owners: SampleAggregate (sample and sum
// where each destination lives) and FinishRemoteSums (the neighbours its
// owner lacks, summed at their own owners).
#include <algorithm>
#include <array>
#include <cstring>
#include <functional>

#include "client/dist_graph.h"
#include "client/sum_plans.h"
#include "common/error.h"
#include "net/messages.h"
#include "sampling/edge_batch.h"
#include "sampling/id_sort.h"
#include "sampling/owner_aggregate.h"
#include "store/row_cache.h"
#include "store/shm_partition.h"

namespace gnn {

using net::Message;

namespace {

// What SampleAggregate gathers from the owners, in dsts' order: every
// destination's count of sampled neighbours, and the ones its owner did
// not hold (appended owner by owner).
struct Gathered {
  explicit Gathered(size_t n) : counts(n), begin(n), end(n) {}
  std::vector<int64_t> counts, begin, end, remote;

  // One owner's answer for destinations dsts[slice[j]] (OwnerSums'
  // counts, remote_indptr, remote_ids).
  void Add(const std::vector<size_t>& slice, const std::vector<int64_t>& part_counts,
           const std::vector<int64_t>& rptr, const std::vector<int64_t>& rids) {
    for (size_t j = 0; j < slice.size(); ++j) {
      const size_t i = slice[j];
      counts[i] = part_counts[j];
      begin[i] = static_cast<int64_t>(remote.size()) + rptr[j];
      end[i] = static_cast<int64_t>(remote.size()) + rptr[j + 1];
    }
    remote.insert(remote.end(), rids.begin(), rids.end());
  }
  // The remote neighbours as a CSR over the destinations.
  void Csr(std::vector<int64_t>* rptr, std::vector<int64_t>* rids) const {
    rptr->assign(counts.size() + 1, 0);
    rids->clear();
    rids->reserve(remote.size());
    for (size_t i = 0; i < counts.size(); ++i) {
      rids->insert(rids->end(), remote.begin() + begin[i], remote.begin() + end[i]);
      (*rptr)[i + 1] = static_cast<int64_t>(rids->size());
    }
  }
};

}  // namespace

void DistGraph::SampleAggregate(const std::vector<int64_t>& dsts, int fanout, bool replace,
                                uint64_t rng_seed, NoInitVector<float>* out,
                                const EdgeExclusion* exclude) {
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
  Gathered got(static_cast<size_t>(n));
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  const std::vector<AggregateCall> pending =
      StartAggregates(dsts, &pos, fanout, replace, rng_seed, exclude, deadline);
  // Remote requests are in flight while the local partition is aggregated.
  if (local_part_ >= 0 && !pos[local_part_].empty()) {
    const PartitionView& v = local_->view();
    const std::vector<size_t>& mine = pos[local_part_];
    std::vector<int64_t> ids(mine.size());
    for (size_t j = 0; j < mine.size(); ++j) ids[j] = dsts[mine[j]];
    // Rows and sums straight into their places.
    const auto m = static_cast<int64_t>(ids.size());
    const OwnerDraw draw{v.csc(), v.features, dim,      ids.data(), m,
                         fanout,  replace,    rng_seed, 1,          exclude};
    OwnerSums held;
    gnn::SampleAggregateInto(draw, rows, sums, mine.data(), m, &held);
    got.Add(mine, held.counts, held.remote_indptr, held.remote_ids);
  }
  for (const AggregateCall& q : pending) {
    Message r = q.peer->Finish(q.rid, deadline, "SampleAggregate");
    const PartInfo& owner = config_.parts[q.part];
    const net::SampleAggregateReply rep = net::SampleAggregateReply::Decode(
        r, q.asked, dim, config_.num_nodes, owner.node_start, owner.node_end, q.peer->peer());
    for (const zmq::message_t& f : r.frames) wire_bytes_ += f.size();
    // Own rows and sums converted (bfloat16) or copied straight into place;
    // the destinations whose own row was not asked for, from the cache.
    const size_t own = rep.num_own_rows();
    for (size_t j = 0; j < q.slice.size(); ++j) {
      const size_t i = q.slice[j];
      if (j < own) {
        rep.RowTo(j, rows + i * dim);
      } else {
        std::memcpy(rows + i * dim, cache_->Find(dsts[i]), row_bytes);
      }
      rep.RowTo(own + j, sums + i * dim);
    }
    got.Add(q.slice, rep.counts, rep.remote_indptr, rep.remote_ids);
  }
  // The neighbours no owner held beside its destination: each distinct one
  // pulled once, added in.
  std::vector<int64_t> rptr, rids;
  got.Csr(&rptr, &rids);
  const std::vector<int64_t>& counts = got.counts;
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

std::vector<DistGraph::AggregateCall> DistGraph::StartAggregates(
    const std::vector<int64_t>& dsts, std::vector<std::vector<size_t>>* pos, int fanout,
    bool replace, uint64_t rng_seed, const EdgeExclusion* exclude,
    std::chrono::steady_clock::time_point deadline) {
  const size_t row_bytes = static_cast<size_t>(config_.feature_dim) * sizeof(float);
  const size_t chunk = std::max<size_t>(1, (size_t{4} << 20) / std::max<size_t>(2 * row_bytes, 1));
  std::vector<AggregateCall> pending;
  for (int p = 0; p < config_.num_parts; ++p) {
    std::vector<size_t>& at = (*pos)[p];
    if (at.empty() || p == local_part_) continue;
    // Destinations whose own row the hot-row cache holds go last, and
    // their owner sends only the others' (own_rows).
    // Their own rows count as lookups with or without a cache (the hit
    // rate means the same on every path).
    size_t uncached = at.size();
    cache_lookups_ += at.size();
    if (cache_) {
      const auto it = std::stable_partition(at.begin(), at.end(),
                                            [&](size_t i) { return !cache_->Find(dsts[i]); });
      uncached = static_cast<size_t>(it - at.begin());
      cache_hits_ += at.size() - uncached;
    }
    for (size_t first = 0; first < at.size(); first += chunk) {
      const size_t count = std::min(chunk, at.size() - first);
      AggregateCall q{nullptr, 0, p, {at.begin() + first, at.begin() + first + count}, {}};
      q.asked = {std::vector<int64_t>(count), fanout, replace, rng_seed, options_.wire_format,
                 options_.id_coding};
      if (uncached < first + count) {
        q.asked.own_rows = static_cast<int64_t>(std::max(uncached, first) - first);
      }
      for (size_t j = 0; j < count; ++j) q.asked.dsts[j] = dsts[q.slice[j]];
      if (exclude) exclude->PairsOf(q.asked.dsts.data(), count, &q.asked.exclude);
      Message req = q.asked.Encode(0);
      Sending(req);
      q.peer = &Pick(p);
      q.rid = q.peer->Start(std::move(req), count * 2 * row_bytes, deadline);
      pending.push_back(std::move(q));
    }
  }
  return pending;
}

void DistGraph::FinishRemoteSums(int64_t n, const std::vector<int64_t>& counts,
                                 const std::vector<int64_t>& rptr,
                                 const std::vector<int64_t>& unique,
                                 const std::vector<int64_t>& row_of, float* sums) {
  const int64_t dim = config_.feature_dim;
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  const int parts = config_.num_parts;
  // Rows this machine holds (its partition, the hot-row cache) are read
  // here; of the others, a destination's only one at an owner is pulled,
  // more are summed there (sum_plans.h).
  std::vector<int64_t> owner(unique.size());
  std::vector<uint8_t> near(unique.size(), 0);
  for (size_t u = 0; u < unique.size(); ++u) {
    owner[u] = config_.PartOf(unique[u]);
    near[u] = owner[u] == local_part_ || (cache_ && cache_->Find(unique[u]));
  }
  const size_t max_ids = (size_t{4} << 20) / sizeof(int64_t);
  const RemoteSumsPlan plan = PlanRemoteSums(n, rptr, unique, row_of, owner, near, parts, max_ids);
  const std::vector<net::PullSums>& groups = plan.groups;
  // Looked up in the cache like the pulled ones (PullFeatures counts
  // those), so the hit rate means what it means on the rows path.
  cache_lookups_ += static_cast<uint64_t>(plan.summed_only);
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
  // The groups' sums follow the pulled rows, owner by owner, in the
  // plan's order (its `add` names them so).
  int64_t total = 0;
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (int p = 0; p < parts; ++p) {
    const net::PullSums& all = groups[p];
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
  // The sums are in flight while the rows are pulled. Of the rows the
  // plan pulls, those this machine holds (its partition, the hot-row
  // cache) are summed where they lie: only the others are copied in.
  const std::vector<int64_t>& pulled = plan.pulled;
  const int64_t num_pulled = static_cast<int64_t>(pulled.size());
  std::vector<const float*> row_at(static_cast<size_t>(num_pulled + total));
  std::vector<int64_t> fetch, fetch_slot;
  const PartInfo* here = local_part_ >= 0 ? &config_.parts[local_part_] : nullptr;
  const PartitionView* held = local_part_ >= 0 ? &local_->view() : nullptr;
  for (int64_t u = 0; u < num_pulled; ++u) {
    const int64_t id = pulled[u];
    if (here && id >= here->node_start && id < here->node_end) {
      row_at[u] = held->features + (id - held->node_start) * dim;
      continue;
    }
    if (const float* hit = cache_ ? cache_->Find(id) : nullptr) {
      // Counted as PullFeatures counts them (a miss is counted there).
      ++cache_lookups_;
      ++cache_hits_;
      row_at[u] = hit;
      continue;
    }
    fetch.push_back(id);
    fetch_slot.push_back(u);
  }
  const int64_t num_fetched = static_cast<int64_t>(fetch.size());
  // Room for the groups' sums too, so that growing past the fetched rows
  // does not copy them; every group's row is written below.
  NoInitVector<float>& rows = mean_rows_;  // kept for the next call
  rows.clear();
  rows.reserve(static_cast<size_t>((num_fetched + total) * dim));
  if (!fetch.empty()) PullFeatures(fetch, &rows);
  rows.resize(static_cast<size_t>((num_fetched + total) * dim));
  for (const Pending& q : pending) {
    Message r = q.conn->Finish(q.rid, deadline, "PullSums");
    const net::PullFeaturesReply rep =
        net::PullFeaturesReply::Decode(r, q.asked, dim, q.conn->peer());
    wire_bytes_ += r.frames[0].size();
    for (size_t g = 0; g < q.asked.num_groups(); ++g) {
      rep.RowTo(g, rows.data() + (num_fetched + q.first_row + static_cast<int64_t>(g)) * dim);
    }
  }
  for (int64_t k = 0; k < num_fetched; ++k) row_at[fetch_slot[k]] = rows.data() + k * dim;
  for (int64_t g = 0; g < total; ++g)
    row_at[num_pulled + g] = rows.data() + (num_fetched + g) * dim;
  // Per destination: its pulled rows and its groups' sums, added in.
  FinishMeansByPointer(n, dim, counts, plan.add_ptr, row_at.data(), plan.add, sums);
}

}  // namespace gnn
