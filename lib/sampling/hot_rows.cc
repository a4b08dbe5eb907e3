#include "sampling/hot_rows.h"

#include <algorithm>
#include <utility>

namespace gnn {

namespace {

// What a destination of in-degree d passes to each neighbour it may draw.
float DrawShare(int fanout, int64_t d) {
  return fanout < 0 || d <= fanout ? 1.0f : static_cast<float>(fanout) / static_cast<float>(d);
}

// fn(u, pass) for each in-neighbour u of each local node v that is a
// destination dst[v] times in a layer of fan-out `fanout`: pass is what v's
// draws give u.
template <typename Fn>
void ForEachDraw(const CscView& csc, const std::vector<float>& dst, int fanout, const Fn& fn) {
  for (int64_t v = 0; v < csc.num_nodes; ++v) {
    const int64_t b = csc.indptr[v], e = csc.indptr[v + 1];
    if (dst[v] == 0 || e == b) continue;
    const float pass = dst[v] * DrawShare(fanout, e - b);
    for (int64_t k = b; k < e; ++k) fn(csc.indices[k], pass);
  }
}

// Expected times each local node is a destination, top layer down to the
// first (a destination stays one in the layers below).
std::vector<float> FirstLayerDestinations(const CscView& csc, const uint8_t* is_seed,
                                          const std::vector<int>& fanouts) {
  const int64_t n = csc.num_nodes, lo = csc.node_start, hi = csc.node_start + n;
  std::vector<float> dst(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) dst[v] = is_seed == nullptr || is_seed[v] ? 1.0f : 0.0f;
  for (size_t l = fanouts.size() - 1; l >= 1; --l) {
    std::vector<float> below = dst;
    ForEachDraw(csc, dst, fanouts[l], [&](int64_t u, float pass) {
      if (u >= lo && u < hi) below[u - lo] += pass;
    });
    dst = std::move(below);
  }
  return dst;
}

// The ids of the `max_rows` highest (score, id) pairs (ties by smaller id),
// sorted ascending.
std::vector<int64_t> Hottest(std::vector<std::pair<float, int64_t>> scored, int64_t max_rows) {
  const auto hotter = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  if (static_cast<int64_t>(scored.size()) > max_rows) {
    std::nth_element(scored.begin(), scored.begin() + max_rows, scored.end(), hotter);
    scored.resize(static_cast<size_t>(max_rows));
  }
  std::vector<int64_t> ids;
  ids.reserve(scored.size());
  for (const auto& s : scored) ids.push_back(s.second);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

std::vector<int64_t> HotRemoteRows(const CscView& csc, const uint8_t* is_seed,
                                   const std::vector<int>& fanouts, int64_t max_rows) {
  if (max_rows <= 0 || fanouts.empty()) return {};
  const int64_t n = csc.num_nodes, lo = csc.node_start, hi = csc.node_start + n;
  std::vector<float> dst = FirstLayerDestinations(csc, is_seed, fanouts);
  // (id, weight) per remote entry, summed per id after a sort: no hash
  // table, and 8 bytes per remote entry for a moment.
  std::vector<std::pair<int64_t, float>> entries;
  ForEachDraw(csc, dst, fanouts[0], [&](int64_t u, float pass) {
    if (u < lo || u >= hi) entries.emplace_back(u, pass);
  });
  dst = {};
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<float, int64_t>> scored;  // (score, id)
  for (size_t i = 0; i < entries.size();) {
    size_t j = i;
    double s = 0;
    for (; j < entries.size() && entries[j].first == entries[i].first; ++j) s += entries[j].second;
    scored.emplace_back(static_cast<float>(s), entries[i].first);
    i = j;
  }
  entries = {};
  return Hottest(std::move(scored), max_rows);
}

std::vector<int64_t> HotLocalRows(const CscView& csc, const uint8_t* is_seed,
                                  const std::vector<int>& fanouts, int64_t max_rows) {
  if (max_rows <= 0 || fanouts.empty()) return {};
  const int64_t n = csc.num_nodes, lo = csc.node_start, hi = csc.node_start + n;
  const std::vector<float> dst = FirstLayerDestinations(csc, is_seed, fanouts);
  // A first-layer destination reads its own row, and passes its draws to
  // its neighbours' rows.
  std::vector<float> reads = dst;
  ForEachDraw(csc, dst, fanouts[0], [&](int64_t u, float pass) {
    if (u >= lo && u < hi) reads[u - lo] += pass;
  });
  std::vector<std::pair<float, int64_t>> scored;  // (score, id)
  for (int64_t v = 0; v < n; ++v) {
    if (reads[v] > 0) scored.emplace_back(reads[v], lo + v);
  }
  return Hottest(std::move(scored), max_rows);
}

}  // namespace gnn
