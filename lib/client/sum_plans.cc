#include "client/sum_plans.h"

#include <algorithm>
#include <unordered_map>

namespace gnn {

RemoteSumsPlan PlanRemoteSums(int64_t n, const std::vector<int64_t>& rptr,
                              const std::vector<int64_t>& unique,
                              const std::vector<int64_t>& row_of, const std::vector<int64_t>& owner,
                              const std::vector<uint8_t>& near, int parts, size_t max_ids) {
  RemoteSumsPlan plan;
  plan.groups.resize(static_cast<size_t>(parts));
  // pulled_row[u]: the row of unique[u] among `pulled`, or -1.
  std::vector<int64_t> pulled_row(unique.size(), -1);
  for (size_t u = 0; u < unique.size(); ++u) {
    if (!near[u]) continue;
    pulled_row[u] = static_cast<int64_t>(plan.pulled.size());
    plan.pulled.push_back(unique[u]);
  }
  std::vector<std::vector<int64_t>> at(static_cast<size_t>(parts));  // one destination's, by owner
  std::vector<int> touched;
  std::vector<uint8_t> summed(unique.size(), 0);  // in some owner's group
  // One destination's sums until its rows are in, as -1 - (g * parts + p)
  // for owner p's group g: their rows are known once every group is.
  std::vector<int64_t> sums;
  plan.add_ptr.resize(static_cast<size_t>(n) + 1);
  plan.add_ptr[0] = 0;
  plan.add.reserve(static_cast<size_t>(rptr[n]));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = rptr[i]; k < rptr[i + 1]; ++k) {
      const int64_t u = row_of[k];
      if (near[u]) {
        plan.add.push_back(pulled_row[u]);
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
          pulled_row[u] = static_cast<int64_t>(plan.pulled.size());
          plan.pulled.push_back(unique[u]);
        }
        plan.add.push_back(pulled_row[u]);
      } else {
        net::PullSums& g = plan.groups[p];
        for (size_t j = 0; j < mine.size(); ++j) {
          if (j % max_ids == 0) {
            sums.push_back(-1 - (static_cast<int64_t>(g.num_groups()) * parts + p));
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
    plan.add.insert(plan.add.end(), sums.begin(), sums.end());
    sums.clear();
    plan.add_ptr[i + 1] = static_cast<int64_t>(plan.add.size());
  }
  // The sums' rows, now that every owner's groups are counted.
  std::vector<int64_t> first(static_cast<size_t>(parts));
  int64_t next = static_cast<int64_t>(plan.pulled.size());
  for (int p = 0; p < parts; ++p) {
    first[p] = next;
    next += static_cast<int64_t>(plan.groups[p].num_groups());
  }
  for (int64_t& a : plan.add) {
    if (a >= 0) continue;
    const int64_t code = -1 - a;
    a = first[code % parts] + code / parts;
  }
  for (size_t u = 0; u < unique.size(); ++u) plan.summed_only += summed[u] && pulled_row[u] < 0;
  return plan;
}

TypedSumsPlan PlanTypedSums(std::vector<std::vector<TypedShare>> shares, bool remote_sums) {
  TypedSumsPlan plan;
  std::unordered_map<int64_t, int64_t> row_of;  // id -> its row in `pulled`
  auto pull_row = [&](size_t group, int64_t v) {
    const auto [it, fresh] = row_of.emplace(v, static_cast<int64_t>(plan.pulled.size()));
    if (fresh) plan.pulled.push_back(v);
    plan.add_rows.push_back({group, it->second});
  };
  plan.asked.resize(shares.size());
  plan.summed_groups.resize(shares.size());
  for (size_t p = 0; p < shares.size(); ++p) {
    std::vector<int64_t> distinct;
    size_t multi = 0;
    for (const TypedShare& sh : shares[p]) {
      if (sh.ids.size() < 2) continue;
      ++multi;
      distinct.insert(distinct.end(), sh.ids.begin(), sh.ids.end());
    }
    std::sort(distinct.begin(), distinct.end());
    const size_t rows =
        static_cast<size_t>(std::unique(distinct.begin(), distinct.end()) - distinct.begin());
    const bool as_rows = !remote_sums || rows <= multi;
    net::PullTypedSums& q = plan.asked[p];
    for (TypedShare& sh : shares[p]) {
      if (sh.ids.size() < 2 || as_rows) {
        for (int64_t v : sh.ids) pull_row(sh.group, v);
        continue;
      }
      std::sort(sh.ids.begin(), sh.ids.end());  // a set: increasing ids varint-code small
      q.ids.insert(q.ids.end(), sh.ids.begin(), sh.ids.end());
      q.group_ptr.push_back(static_cast<int64_t>(q.ids.size()));
      plan.summed_groups[p].push_back(sh.group);
    }
  }
  return plan;
}

}  // namespace gnn
