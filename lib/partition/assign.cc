#include "partition/assign.h"

#include <metis.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "common/error.h"
#include "common/log.h"

namespace gnn {

std::vector<int32_t> MetisAssign(const Csr32& sym,
                                 const std::vector<std::vector<int32_t>>& vertex_weights,
                                 int num_parts, uint64_t seed) {
  const int64_t n = sym.num_rows();
  if (num_parts == 1) return std::vector<int32_t>(n, 0);
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

}  // namespace gnn
