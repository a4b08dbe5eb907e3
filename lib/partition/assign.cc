#include "partition/assign.h"

#include <metis.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>

#include "common/error.h"
#include "common/log.h"
#include "common/memory_info.h"

namespace gnn {

Csr32 SparsifySymmetric(const Csr32& sym, int64_t cap, uint64_t seed) {
  const int64_t n = sym.num_rows();
  Csr32 out;
  out.indptr.assign(static_cast<size_t>(n) + 1, 0);
  for (int64_t a = 0; a < n; ++a) {
    const int64_t da = sym.indptr[a + 1] - sym.indptr[a];
    for (int64_t k = sym.indptr[a]; k < sym.indptr[a + 1]; ++k) {
      const int64_t b = sym.indices[k];
      if (KeepSparsifiedEdge(a, b, da, sym.indptr[b + 1] - sym.indptr[b], cap, seed)) {
        out.indices.push_back(static_cast<int32_t>(b));
      }
    }
    out.indptr[a + 1] = static_cast<int64_t>(out.indices.size());
  }
  out.indices.shrink_to_fit();
  return out;
}

int64_t MetisBytes(int64_t nodes, int64_t entries, int64_t ncon) {
  return 40 * entries + (64 + 8 * ncon) * nodes;
}

std::vector<int64_t> ExpectedSparsifiedEntries(const Csr32& sym, const std::vector<int64_t>& caps) {
  std::vector<double> kept(caps.size(), 0.0);
  const int64_t n = sym.num_rows();
  for (int64_t a = 0; a < n; ++a) {
    const int64_t da = sym.indptr[a + 1] - sym.indptr[a];
    for (int64_t k = sym.indptr[a]; k < sym.indptr[a + 1]; ++k) {
      const int64_t b = sym.indices[k];
      const int64_t most = std::max(da, sym.indptr[b + 1] - sym.indptr[b]);
      for (size_t i = 0; i < caps.size(); ++i) {
        kept[i] += most <= caps[i] ? 1.0 : static_cast<double>(caps[i]) / static_cast<double>(most);
      }
    }
  }
  std::vector<int64_t> out;
  for (double v : kept) out.push_back(std::llround(v));
  return out;
}

namespace {

// The --sparsify METIS runs with under `memory` (see MetisAssign).
int64_t SparsifyWithin(const Csr32& sym, int64_t ncon, int64_t sparsify,
                       const MetisMemory& memory) {
  const int64_t n = sym.num_rows();
  if (memory.budget < 0) return sparsify;
  // A sparsified view is a CSR of its own besides what METIS takes.
  auto need_of = [&](int64_t kept) { return MetisBytes(n, kept, ncon) + 4 * kept + 8 * n; };
  const int64_t whole = sparsify == 0 ? MetisBytes(n, sym.num_entries(), ncon)
                                      : need_of(ExpectedSparsifiedEntries(sym, {sparsify})[0]);
  if (whole <= memory.budget) return sparsify;
  const std::string want =
      "METIS would need about " + MemoryText(whole) + " for " +
      std::to_string(sym.num_entries() / 2) + " undirected edges" +
      (sparsify > 0 ? " (--sparsify " + std::to_string(sparsify) + ")" : "") + ", but " +
      (memory.budget > 0 ? MemoryText(memory.budget) : std::string("nothing")) + " is left (" +
      memory.budget_from + ")";
  if (!memory.auto_sparsify) {
    GNN_LOG(kWarn) << want << ": it may run out of memory (leave --sparsify unset to let "
                   << "gnn-partition choose one that fits)";
    return sparsify;
  }
  const std::vector<int64_t> caps = {64, 32, 16, 8, 4, 2, 1};
  const std::vector<int64_t> kept = ExpectedSparsifiedEntries(sym, caps);
  for (size_t i = 0; i < caps.size(); ++i) {
    const int64_t k = caps[i], bytes = need_of(kept[i]);
    if (bytes <= memory.budget) {
      GNN_LOG(kWarn) << want << ": METIS partitions a sparsified view of the graph instead "
                     << "(--sparsify " << k << ", about " << MemoryText(bytes)
                     << "; the cut is counted on the whole graph). --sparsify 0 insists on "
                        "every edge";
      return k;
    }
  }
  throw ConfigError(want + ", and even --sparsify 1 would need about " +
                    MemoryText(need_of(kept.back())) +
                    ": use --part_method stream (one pass, little memory) or random, or partition "
                    "on several machines with --distributed");
}

}  // namespace

std::vector<int32_t> MetisAssign(const Csr32& whole,
                                 const std::vector<std::vector<int32_t>>& vertex_weights,
                                 int num_parts, uint64_t seed, int64_t sparsify,
                                 const MetisMemory& memory, int64_t* used_sparsify) {
  const int64_t n = whole.num_rows();
  if (used_sparsify) *used_sparsify = 0;
  if (num_parts == 1) return std::vector<int32_t>(n, 0);
  sparsify = SparsifyWithin(whole, static_cast<int64_t>(vertex_weights.size()), sparsify, memory);
  if (used_sparsify) *used_sparsify = sparsify;
  Csr32 sparse;
  if (sparsify > 0) {
    sparse = SparsifySymmetric(whole, sparsify, seed);
    GNN_LOG(kInfo) << "METIS partitions " << sparse.num_entries() / 2 << " of "
                   << whole.num_entries() / 2 << " undirected edges (--sparsify " << sparsify
                   << ")";
  }
  const Csr32& sym = sparsify > 0 ? sparse : whole;
  constexpr int64_t kMax = std::numeric_limits<idx_t>::max();
  if (n >= kMax || sym.num_entries() > kMax) {
    throw ConfigError("graph too large for METIS's 32-bit index: " + std::to_string(n) +
                      " nodes, " + std::to_string(sym.num_entries()) +
                      " symmetrized adjacency entries (limit " + std::to_string(kMax) +
                      "); use --part_method random");
  }
  if (sym.num_entries() == 0) {
    GNN_LOG(kWarn) << "graph has no edges; METIS has nothing to cut, using random assignment";
    return RandomAssign(n, num_parts, seed);
  }
  idx_t nvtxs = static_cast<idx_t>(n);
  idx_t ncon = static_cast<idx_t>(vertex_weights.size());
  idx_t nparts = num_parts;
  std::vector<idx_t> xadj(sym.indptr.begin(), sym.indptr.end());
  static_assert(sizeof(idx_t) == sizeof(int32_t), "METIS built with 64-bit idx_t");
  idx_t* adjncy = const_cast<idx_t*>(reinterpret_cast<const idx_t*>(sym.indices.data()));
  std::vector<idx_t> vwgt(static_cast<size_t>(n) * ncon);
  for (int64_t v = 0; v < n; ++v) {
    for (idx_t c = 0; c < ncon; ++c) vwgt[v * ncon + c] = vertex_weights[c][v];
  }
  // METIS rejects a constraint whose total weight is zero (e.g. no train
  // nodes): such a constraint carries no information, so give it weight 1.
  for (idx_t c = 0; c < ncon; ++c) {
    bool any = std::any_of(vertex_weights[c].begin(), vertex_weights[c].end(),
                           [](int32_t w) { return w != 0; });
    if (!any) {
      for (int64_t v = 0; v < n; ++v) vwgt[v * ncon + c] = 1;
    }
  }
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7fffffff);
  options[METIS_OPTION_NUMBERING] = 0;
  idx_t objval = 0;
  std::vector<idx_t> part(n);
  int rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy, vwgt.data(), nullptr, nullptr,
                               &nparts, nullptr, nullptr, options, &objval, part.data());
  if (rc != METIS_OK) {
    throw Error(std::string("METIS_PartGraphKway failed: ") +
                (rc == METIS_ERROR_MEMORY ? "out of memory" : "error code " + std::to_string(rc)));
  }
  return std::vector<int32_t>(part.begin(), part.end());
}

std::vector<int32_t> RandomAssign(int64_t num_nodes, int num_parts, uint64_t seed) {
  std::vector<int64_t> order(num_nodes);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  // Fisher-Yates with our own index draw: std::shuffle's use of the engine is
  // implementation-defined, and partitions must reproduce across toolchains.
  for (int64_t i = num_nodes - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  std::vector<int32_t> part(num_nodes);
  for (int64_t i = 0; i < num_nodes; ++i) part[order[i]] = static_cast<int32_t>(i % num_parts);
  return part;
}

template <typename Index>
int64_t EdgeCut(const CsrT<Index>& sym, const std::vector<int32_t>& part) {
  int64_t cut = 0;
  for (int64_t v = 0; v < sym.num_rows(); ++v) {
    for (int64_t k = sym.indptr[v]; k < sym.indptr[v + 1]; ++k) {
      int64_t u = sym.indices[k];
      if (u > v && part[u] != part[v]) ++cut;
    }
  }
  return cut;
}

template int64_t EdgeCut(const Csr&, const std::vector<int32_t>&);
template int64_t EdgeCut(const Csr32&, const std::vector<int32_t>&);

int64_t MetisMaxAdjacency() {
  int64_t limit = std::numeric_limits<idx_t>::max();
  if (const char* env = std::getenv("GNN_METIS_MAX_ADJACENCY")) {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) limit = std::min<int64_t>(limit, v);
  }
  return limit;
}

template <typename Index>
std::vector<int32_t> StreamAssign(const CsrT<Index>& sym,
                                  const std::vector<std::vector<int32_t>>& weights, int num_parts,
                                  double slack) {
  const int64_t n = sym.num_rows();
  std::vector<int32_t> part(static_cast<size_t>(n), -1);
  if (num_parts <= 1) {
    std::fill(part.begin(), part.end(), 0);
    return part;
  }
  const size_t P = static_cast<size_t>(num_parts), C = weights.size();
  // Capacity per constraint: the even share plus slack, never below the
  // heaviest single node (so every node fits somewhere). The slack is one
  // budget for all parts together (what parts hold above their share),
  // not per part: parts filled one after another (a chain) would otherwise
  // each take 1 + slack shares and leave the last ones empty.
  std::vector<double> cap(C), share(C), budget(C), excess(C, 0.0), load(P * C, 0.0);
  for (size_t c = 0; c < C; ++c) {
    double total = 0, heaviest = 0;
    for (int32_t w : weights[c]) {
      total += w;
      heaviest = std::max<double>(heaviest, w);
    }
    share[c] = total / static_cast<double>(P);
    cap[c] = std::max(heaviest, (1.0 + slack) * share[c]);
    if (cap[c] <= 0) cap[c] = 1;
    budget[c] = slack * share[c] + heaviest;
  }
  auto above = [&](size_t c, double l) { return std::max(0.0, l - share[c]); };
  std::vector<int64_t> count(P, 0), queue;
  std::vector<size_t> touched;
  queue.reserve(static_cast<size_t>(n));
  std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
  auto place = [&](int64_t v) {
    for (int64_t k = sym.indptr[static_cast<size_t>(v)]; k < sym.indptr[static_cast<size_t>(v) + 1];
         ++k) {
      const int32_t p = part[static_cast<size_t>(sym.indices[static_cast<size_t>(k)])];
      if (p < 0) continue;
      if (count[static_cast<size_t>(p)]++ == 0) touched.push_back(static_cast<size_t>(p));
    }
    // Best eligible part: most placed neighbours x room left (LDG); ties to
    // the emptier part, then the lower index. No eligible part (every one
    // full in some constraint): the one that overflows least.
    int best = -1;
    double best_score = -1, best_fill = 0, least_over = 0;
    int least = 0;
    for (size_t p = 0; p < P; ++p) {
      bool fits = true;
      double over = 0;
      for (size_t c = 0; c < C; ++c) {
        const double before = load[p * C + c];
        const double after = before + weights[c][static_cast<size_t>(v)];
        if (after > cap[c] || excess[c] + above(c, after) - above(c, before) > budget[c])
          fits = false;
        over = std::max(over, after / cap[c]);
      }
      if (p == 0 || over < least_over) {
        least_over = over;
        least = static_cast<int>(p);
      }
      if (!fits) continue;
      const double fill = load[p * C] / cap[0];
      const double score = static_cast<double>(count[p]) * (1.0 - fill);
      if (best < 0 || score > best_score || (score == best_score && fill < best_fill)) {
        best = static_cast<int>(p);
        best_score = score;
        best_fill = fill;
      }
    }
    if (best < 0) best = least;
    part[static_cast<size_t>(v)] = best;
    for (size_t c = 0; c < C; ++c) {
      double& l = load[static_cast<size_t>(best) * C + c];
      const double before = l;
      l += weights[c][static_cast<size_t>(v)];
      excess[c] += above(c, l) - above(c, before);
    }
    for (size_t p : touched) count[p] = 0;
    touched.clear();
  };
  for (int64_t root = 0; root < n; ++root) {
    if (seen[static_cast<size_t>(root)]) continue;
    seen[static_cast<size_t>(root)] = 1;
    queue.clear();
    queue.push_back(root);
    for (size_t head = 0; head < queue.size(); ++head) {
      const int64_t v = queue[head];
      place(v);
      for (int64_t k = sym.indptr[static_cast<size_t>(v)];
           k < sym.indptr[static_cast<size_t>(v) + 1]; ++k) {
        const int64_t u = static_cast<int64_t>(sym.indices[static_cast<size_t>(k)]);
        if (!seen[static_cast<size_t>(u)]) {
          seen[static_cast<size_t>(u)] = 1;
          queue.push_back(u);
        }
      }
    }
  }
  return part;
}

template std::vector<int32_t> StreamAssign(const Csr&, const std::vector<std::vector<int32_t>>&,
                                           int, double);
template std::vector<int32_t> StreamAssign(const Csr32&, const std::vector<std::vector<int32_t>>&,
                                           int, double);

}  // namespace gnn
