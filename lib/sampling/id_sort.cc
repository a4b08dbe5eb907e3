#include "sampling/id_sort.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace gnn {

void SortByIdInRange(std::vector<size_t>* pos, const std::vector<int64_t>& ids, int64_t lo,
                     int64_t hi) {
  const size_t n = pos->size();
  if (n < 256) {
    std::stable_sort(pos->begin(), pos->end(), [&](size_t a, size_t b) { return ids[a] < ids[b]; });
    return;
  }
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  const uint64_t range = static_cast<uint64_t>(hi - lo);
  std::vector<std::pair<uint64_t, size_t>> a(n), b(n);
  for (size_t j = 0; j < n; ++j) a[j] = {static_cast<uint64_t>(ids[(*pos)[j]] - lo), (*pos)[j]};
  std::vector<size_t> start(kBuckets);
  for (int shift = 0; shift < 64 && (range - 1) >> shift != 0; shift += kBits) {
    std::fill(start.begin(), start.end(), 0);
    for (const auto& e : a) ++start[(e.first >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (size_t& c : start) sum += std::exchange(c, sum);
    for (const auto& e : a) b[start[(e.first >> shift) & (kBuckets - 1)]++] = e;
    a.swap(b);
  }
  for (size_t j = 0; j < n; ++j) (*pos)[j] = a[j].second;
}

void DistinctIds(const std::vector<int64_t>& ids, int64_t lo, int64_t hi,
                 std::vector<int64_t>* unique, std::vector<int64_t>* row_of) {
  std::vector<size_t> order(ids.size());
  std::iota(order.begin(), order.end(), size_t{0});
  SortByIdInRange(&order, ids, lo, hi);
  unique->clear();
  row_of->resize(ids.size());
  for (size_t k : order) {
    if (unique->empty() || unique->back() != ids[k]) unique->push_back(ids[k]);
    (*row_of)[k] = static_cast<int64_t>(unique->size()) - 1;
  }
}

}  // namespace gnn
