#include "sampling/typed_sampler.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <sstream>

#include "common/error.h"
#include "common/parallel.h"
#include "sampling/edge_batch.h"
#include "sampling/row_sampling.h"
#include "sampling/sampler.h"

namespace gnn {

using sampling_detail::FloydScratch;
using sampling_detail::Rng;
using sampling_detail::SampleCount;
using sampling_detail::SampleWithoutReplacement;

namespace {

// [begin, end) of relation r's run within row [b, e) (etypes sorted there).
std::pair<int64_t, int64_t> RelationRun(const int64_t* etypes, int64_t b, int64_t e, int64_t r) {
  const int64_t* lo = std::lower_bound(etypes + b, etypes + e, r);
  const int64_t* hi = std::upper_bound(lo, etypes + e, r);
  return {lo - etypes, hi - etypes};
}

}  // namespace

void SampleTypedNeighbors(const TypedCscView& g, const int64_t* seeds, int64_t num_seeds,
                          const std::vector<int>& fanouts, bool replace, uint64_t rng_seed,
                          int threads, std::vector<int64_t>* out_indptr,
                          std::vector<int64_t>* out_indices, std::vector<int64_t>* out_etypes,
                          std::vector<int64_t>* out_edges) {
  const CscView& csc = g.csc;
  const int64_t R = g.num_rels;
  if (static_cast<int64_t>(fanouts.size()) != R) {
    throw ConfigError(std::to_string(fanouts.size()) + " fan-outs for " + std::to_string(R) +
                      " relations");
  }
  for (int f : fanouts) {
    if (f < -1) throw ConfigError("fan-out " + std::to_string(f) + " is below -1");
  }
  if (num_seeds > 0 && csc.num_nodes > 0 && (!csc.indptr || !csc.indices || !g.etypes)) {
    throw DataError("typed neighbour sampling over a CSC without arrays");
  }
  out_indptr->resize(static_cast<size_t>(num_seeds + 1));
  int64_t* optr = out_indptr->data();
  optr[0] = 0;
  ParallelFor(num_seeds, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t row = seeds[i] - csc.node_start;
      if (row < 0 || row >= csc.num_nodes) {
        throw DataError("seed node " + std::to_string(seeds[i]) +
                        " is outside the graph's node range [" + std::to_string(csc.node_start) +
                        ", " + std::to_string(csc.node_start + csc.num_nodes) + ")");
      }
      int64_t count = 0;
      for (int64_t r = 0; r < R; ++r) {
        const auto [lo, hi] = RelationRun(g.etypes, csc.indptr[row], csc.indptr[row + 1], r);
        count += SampleCount(hi - lo, fanouts[static_cast<size_t>(r)], replace);
      }
      optr[i + 1] = count;
    }
  });
  for (int64_t i = 0; i < num_seeds; ++i) optr[i + 1] += optr[i];
  out_indices->resize(static_cast<size_t>(optr[num_seeds]));
  out_etypes->resize(static_cast<size_t>(optr[num_seeds]));
  int64_t* out = out_indices->data();
  int64_t* out_r = out_etypes->data();
  if (out_edges) out_edges->resize(out_indices->size());
  int64_t* out_pos = out_edges ? out_edges->data() : nullptr;
  ParallelFor(num_seeds, threads, [&](int64_t b, int64_t e) {
    // One scratch per relation, sized by its own fan-out: a large fan-out
    // of one relation must not make every other relation's draw clear it.
    std::vector<FloydScratch> scratch;
    for (int f : fanouts) scratch.emplace_back(replace ? 0 : f);
    for (int64_t i = b; i < e; ++i) {
      const int64_t row = seeds[i] - csc.node_start;
      const int64_t key = csc.rng_keys ? csc.rng_keys[row] : seeds[i];
      int64_t pos = optr[i];
      for (int64_t r = 0; r < R; ++r) {
        const int fanout = fanouts[static_cast<size_t>(r)];
        const auto [lo, hi] = RelationRun(g.etypes, csc.indptr[row], csc.indptr[row + 1], r);
        const int64_t deg = hi - lo, k = SampleCount(deg, fanout, replace);
        if (k == 0) continue;
        const int64_t* src = csc.indices + lo;
        int64_t* dst = out + pos;
        int64_t* at = out_pos ? out_pos + pos : nullptr;  // positions within the run, then CSC's
        if (fanout < 0 || (!replace && k == deg)) {
          std::memcpy(dst, src, static_cast<size_t>(deg) * sizeof(int64_t));
          if (at) std::iota(at, at + deg, int64_t{0});
        } else {
          Rng rng(MixSeed(MixSeed(rng_seed, static_cast<uint64_t>(key)), static_cast<uint64_t>(r)));
          if (replace) {
            for (int64_t q = 0; q < k; ++q) {
              const int64_t t = rng.Below(deg);
              dst[q] = src[t];
              if (at) at[q] = t;
            }
          } else {
            SampleWithoutReplacement(src, deg, k, &rng, &scratch[static_cast<size_t>(r)], dst, at);
          }
        }
        if (at) {
          for (int64_t q = 0; q < k; ++q) at[q] += lo;
        }
        std::fill(out_r + pos, out_r + pos + k, r);
        pos += k;
      }
    }
  });
}

void KeepTypedEdges(const std::vector<int64_t>& kept, std::vector<int64_t>* etypes,
                    std::vector<int64_t>* edges) {
  for (std::vector<int64_t>* v : {etypes, edges}) {
    if (v == nullptr) continue;
    for (size_t i = 0; i < kept.size(); ++i) (*v)[i] = (*v)[static_cast<size_t>(kept[i])];
    v->resize(kept.size());
  }
}

std::vector<Block> SampleTypedBlocks(const TypedCscView& g, const std::vector<int64_t>& seeds,
                                     const std::vector<std::vector<int>>& fanouts, bool replace,
                                     uint64_t rng_seed, int threads, const EdgeExclusion* exclude) {
  const int num_layers = static_cast<int>(fanouts.size());
  std::vector<Block> blocks(static_cast<size_t>(num_layers));
  const std::vector<int64_t>* frontier = &seeds;
  std::vector<int64_t> indptr, indices, etypes, edges, kept;
  const bool edge_data = g.csc.edge_dim > 0 && g.csc.edge_data != nullptr;
  for (int l = num_layers - 1; l >= 0; --l) {
    SampleTypedNeighbors(g, frontier->data(), static_cast<int64_t>(frontier->size()),
                         fanouts[static_cast<size_t>(l)], replace,
                         MixSeed(rng_seed, static_cast<uint64_t>(l)), threads, &indptr, &indices,
                         &etypes, edge_data ? &edges : nullptr);
    if (exclude && !exclude->empty()) {
      exclude->Filter(frontier->data(), static_cast<int64_t>(frontier->size()), &indptr, &indices,
                      &kept);
      KeepTypedEdges(kept, &etypes, edge_data ? &edges : nullptr);
    }
    Block& block = blocks[static_cast<size_t>(l)];
    block = ToBlock(*frontier, std::move(indptr), indices);
    block.etypes = std::move(etypes);
    if (edge_data) {
      GatherEdgeRows(g.csc, edges, &block.edge_data);
      block.edge_dim = g.csc.edge_dim;
    }
    indptr.clear();
    etypes.clear();
    frontier = &block.src_nodes;
  }
  return blocks;
}

std::vector<std::vector<int>> ParseTypedFanouts(const std::string& spec,
                                                const std::vector<std::string>& etypes) {
  std::vector<std::vector<int>> layers;
  std::stringstream ss(spec);
  std::string layer;
  while (std::getline(ss, layer, ',')) {
    if (layer.find(':') == std::string::npos) {
      layers.emplace_back(etypes.size(), ParseFanoutCount(layer, spec));
      continue;
    }
    std::vector<int> f(etypes.size(), -2);
    int rest = -2;
    std::stringstream es(layer);
    std::string entry;
    while (std::getline(es, entry, '/')) {
      const size_t colon = entry.rfind(':');
      if (colon == std::string::npos) {
        throw ConfigError("--fan_out '" + spec + "': '" + entry + "' is not REL:n");
      }
      const std::string rel = entry.substr(0, colon);
      const int n = ParseFanoutCount(entry.substr(colon + 1), spec);
      if (rel == "*") {
        rest = n;
        continue;
      }
      bool found = false;
      for (size_t r = 0; r < etypes.size(); ++r) {
        const std::string& key = etypes[r];
        const size_t a = key.find(':'), b = key.rfind(':');
        const std::string name = a == std::string::npos ? key : key.substr(a + 1, b - a - 1);
        if (rel == key || rel == name) {
          f[r] = n;
          found = true;
        }
      }
      if (!found) {
        throw ConfigError("--fan_out '" + spec + "': the graph has no relation '" + rel + "'");
      }
    }
    for (size_t r = 0; r < etypes.size(); ++r) {
      if (f[r] != -2) continue;
      if (rest == -2) {
        throw ConfigError("--fan_out '" + spec + "': layer '" + layer +
                          "' gives no fan-out for relation " + etypes[r] + " (add it or '*:n')");
      }
      f[r] = rest;
    }
    layers.push_back(f);
  }
  if (layers.empty()) throw ConfigError("--fan_out is empty");
  return layers;
}

}  // namespace gnn
