#include "partition/hetero_partition.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/npy.h"
#include "common/parallel.h"
#include "common/timer.h"
#include "graph/csr.h"
#include "graph/hetero.h"
#include "partition/assign.h"
#include "partition/config.h"
#include "partition/partition_util.h"

namespace gnn {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The homogeneous view: node v of type t is offset[t] + v.
struct HomogeneousView {
  std::vector<int64_t> offset;  // [num types + 1]
  int64_t num_nodes = 0;
  int TypeOf(int64_t id) const {
    return static_cast<int>(std::upper_bound(offset.begin(), offset.end(), id) - offset.begin()) -
           1;
  }
};

// The in-edges of every node (old homogeneous ids) with their relation:
// rows by destination, entries (relation, source) sorted, so each row's
// edges of one relation are one run (typed sampling draws from it) and a
// partition's rows keep the same order whatever the partitioning.
struct TypedCsc {
  std::vector<int64_t> indptr;
  std::vector<int64_t> src;
  std::vector<int64_t> etype;
};

TypedCsc BuildTypedCsc(const HeteroDataset& d, const HomogeneousView& h, int threads) {
  const int64_t num_etypes = static_cast<int64_t>(d.relations.size());
  std::vector<int64_t> rows, cols;
  rows.reserve(static_cast<size_t>(d.num_edges()));
  cols.reserve(static_cast<size_t>(d.num_edges()));
  for (int64_t e = 0; e < num_etypes; ++e) {
    const Relation& r = d.relations[static_cast<size_t>(e)];
    const int64_t so = h.offset[static_cast<size_t>(d.TypeIndex(r.src_type))];
    const int64_t dof = h.offset[static_cast<size_t>(d.TypeIndex(r.dst_type))];
    for (int64_t i = 0; i < r.num_edges(); ++i) {
      rows.push_back(dof + r.dst[i]);
      cols.push_back(e * h.num_nodes + so + r.src[i]);  // (relation, source) in one key
    }
  }
  Csr keyed = BuildCsr<int64_t>(h.num_nodes, rows, cols, false, false, threads);
  FreeVector(rows);
  FreeVector(cols);
  TypedCsc csc;
  csc.indptr = std::move(keyed.indptr);
  csc.src.resize(keyed.indices.size());
  csc.etype.resize(keyed.indices.size());
  for (size_t k = 0; k < keyed.indices.size(); ++k) {
    csc.src[k] = keyed.indices[k] % h.num_nodes;
    csc.etype[k] = keyed.indices[k] / h.num_nodes;
  }
  return csc;
}

// Writes part<p>/ and fills `info`.
void WriteHeteroPart(const HeteroDataset& d, const HomogeneousView& h, const TypedCsc& csc,
                     const Relabeling& r, int p, const std::vector<uint8_t> masks[3],
                     const std::string& dir, PartInfo* info) {
  const int64_t start = r.part_start[p], end = r.part_start[p + 1], owned = end - start;
  MakeDirs(dir);
  info->node_start = start;
  info->node_end = end;
  auto record = [&](const std::string& name, WrittenFile f) {
    info->files[name] = PartFile{f.bytes, f.sha256};
  };
  // New ids within a partition follow old ids, which are type-major: each
  // type's nodes are one range.
  const size_t num_types = d.node_types.size();
  info->ntype_ranges.assign(num_types, {0, 0});
  {
    int64_t pos = start;
    for (size_t t = 0; t < num_types; ++t) {
      int64_t count = 0;
      while (pos + count < end && h.TypeOf(r.orig[pos + count]) == static_cast<int>(t)) ++count;
      info->ntype_ranges[t] = {pos, pos + count};
      pos += count;
    }
    if (pos != end) throw Error("partition " + std::to_string(p) + ": node types out of order");
  }
  std::vector<int64_t> indptr(owned + 1, 0), indices, etypes;
  info->etype_edges.assign(d.relations.size(), 0);
  for (int64_t i = 0; i < owned; ++i) {
    const int64_t v = r.orig[start + i];
    for (int64_t k = csc.indptr[v]; k < csc.indptr[v + 1]; ++k) {
      indices.push_back(r.new_id[csc.src[k]]);
      etypes.push_back(csc.etype[k]);
      ++info->etype_edges[static_cast<size_t>(csc.etype[k])];
    }
    indptr[i + 1] = static_cast<int64_t>(indices.size());
  }
  record("indptr.npy", WriteNpy(dir + "/indptr.npy", indptr));
  record("indices.npy", WriteNpy(dir + "/indices.npy", indices));
  record(kEtypeFile, WriteNpy(dir + "/" + kEtypeFile, etypes));
  std::vector<int64_t> orig(owned);
  for (int64_t i = 0; i < owned; ++i) {
    const int64_t v = r.orig[start + i];
    orig[i] = v - h.offset[static_cast<size_t>(h.TypeOf(v))];
  }
  record("orig_nids.npy", WriteNpy(dir + "/orig_nids.npy", orig));
  for (size_t t = 0; t < num_types; ++t) {
    const NodeType& nt = d.node_types[t];
    if (nt.feature_dim == 0) continue;
    const auto [b, e] = info->ntype_ranges[t];
    std::vector<float> rows(static_cast<size_t>((e - b) * nt.feature_dim));
    for (int64_t i = b; i < e; ++i) {
      const float* src = nt.features.data() + orig[i - start] * nt.feature_dim;
      std::copy(src, src + nt.feature_dim, rows.begin() + (i - b) * nt.feature_dim);
    }
    const std::string name = nt.name + "-feat.npy";
    record(name, WriteNpy(dir + "/" + name, rows.data(), {e - b, nt.feature_dim}));
  }
  const size_t target = static_cast<size_t>(d.TypeIndex(d.target));
  const auto [tb, te] = info->ntype_ranges[target];
  std::vector<int64_t> labels;
  for (int64_t i = tb; i < te; ++i) labels.push_back(d.labels[orig[i - start]]);  // type-local
  record(d.target + "-label.npy", WriteNpy(dir + "/" + d.target + "-label.npy", labels));
  const char* mask_names[3] = {"-train_mask.npy", "-valid_mask.npy", "-test_mask.npy"};
  int64_t* counts[3] = {&info->num_train, &info->num_valid, &info->num_test};
  for (int m = 0; m < 3; ++m) {
    std::vector<uint8_t> mask;
    for (int64_t i = tb; i < te; ++i) mask.push_back(masks[m][r.orig[i]]);  // homogeneous ids
    *counts[m] = std::count(mask.begin(), mask.end(), uint8_t{1});
    const std::string name = d.target + mask_names[m];
    record(name, WriteNpy(dir + "/" + name, mask));
  }
}

// The dataset as the options ask for it, checked: relations reversed with
// --undirected.
HeteroDataset LoadForPartitioning(const PartitionOptions& options) {
  HeteroDataset d = LoadHeteroDataset(options.data);
  // A typed graph's relations are directed by their nature (writes is not
  // written_by); --undirected adds DGL's reverse relations.
  GNN_LOG(kInfo) << "treating " << d.name << "'s " << d.relations.size() << " relations as "
                 << (options.undirected ? "undirected (--undirected): adding a reverse relation "
                                          "for each"
                                        : "directed (typed relations keep their direction; "
                                          "--undirected adds a reverse relation for each)");
  if (options.undirected) AddReverseRelations(&d);
  d.Validate();
  return d;
}

HomogeneousView ViewOf(const HeteroDataset& d) {
  HomogeneousView h;
  h.offset.push_back(0);
  for (const auto& t : d.node_types) h.offset.push_back(h.offset.back() + t.num_nodes);
  h.num_nodes = h.offset.back();
  return h;
}

// The train, valid and test masks over homogeneous ids (target nodes only).
void SplitMasks(const HeteroDataset& d, const HomogeneousView& h, std::vector<uint8_t> masks[3]) {
  const int64_t to = h.offset[static_cast<size_t>(d.TypeIndex(d.target))];
  const std::vector<int64_t>* idx[3] = {&d.train_idx, &d.valid_idx, &d.test_idx};
  for (int m = 0; m < 3; ++m) {
    masks[m].assign(static_cast<size_t>(h.num_nodes), 0);
    for (int64_t v : *idx[m]) masks[m][to + v] = 1;
  }
}

// The assignment and what the report says of it.
struct Assignment {
  std::vector<int32_t> part;
  std::string method;
  int64_t cut = 0, undirected_edges = 0;
};

// Assigns every node a part over the symmetric adjacency of all relations
// together; METIS and the streaming assignment balance one constraint per
// node type (DGL's balance_ntypes), then the target's train nodes and
// in-degree when asked.
Assignment AssignParts(const PartitionOptions& options, const HeteroDataset& d,
                       const HomogeneousView& h, const TypedCsc& csc,
                       const std::vector<uint8_t>& train, StageTimer& timer) {
  const int64_t n = h.num_nodes;
  std::vector<int64_t> src, dst;
  src.reserve(csc.src.size());
  dst.reserve(csc.src.size());
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t k = csc.indptr[v]; k < csc.indptr[v + 1]; ++k) {
      src.push_back(csc.src[k]);
      dst.push_back(v);
    }
  }
  Csr32 sym = Symmetrize<int32_t>(n, src, dst, options.num_threads);
  FreeVector(src);
  FreeVector(dst);
  Assignment a;
  a.method = AssignMethod(options.part_method, sym.num_entries(), true);
  timer.Begin(a.method == "metis" ? "metis" : a.method + " assignment");
  if (a.method != "random") {
    std::vector<std::vector<int32_t>> weights;
    for (size_t t = 0; t < d.node_types.size(); ++t) {
      std::vector<int32_t> w(static_cast<size_t>(n), 0);
      std::fill(w.begin() + h.offset[t], w.begin() + h.offset[t + 1], 1);
      weights.push_back(std::move(w));
    }
    if (options.balance_train) weights.emplace_back(train.begin(), train.end());
    if (options.balance_edges) {
      std::vector<int32_t> deg(static_cast<size_t>(n));
      for (int64_t v = 0; v < n; ++v)
        deg[v] = static_cast<int32_t>(csc.indptr[v + 1] - csc.indptr[v]);
      weights.push_back(std::move(deg));
    }
    a.part = a.method == "stream" ? StreamAssign(sym, weights, options.num_parts)
                                  : MetisAssign(sym, weights, options.num_parts, options.data.seed);
  } else {
    a.part = RandomAssign(n, options.num_parts, options.data.seed);
  }
  a.cut = EdgeCut(sym, a.part);
  a.undirected_edges = sym.num_entries() / 2;
  return a;
}

// The config's description of the partitioning and of the graph's types
// (its parts come later).
PartitionConfig DescribePartitioning(const PartitionOptions& options, const HeteroDataset& d,
                                     const std::string& graph_name, int64_t num_nodes,
                                     int64_t stored_edges, const std::string& method) {
  PartitionConfig config;
  config.graph_name = graph_name;
  config.dataset = options.data.dataset;
  config.num_nodes = num_nodes;
  config.num_edges = stored_edges;
  config.part_method = method;
  config.num_parts = options.num_parts;
  config.halo_hops = 1;
  config.feature_dim = d.node_types[static_cast<size_t>(d.TypeIndex(d.target))].feature_dim;
  config.num_classes = d.num_classes;
  config.balance_train = options.balance_train;
  config.balance_edges = options.balance_edges;
  config.undirected = options.undirected;
  config.seed = options.data.seed;
  config.ntypes.clear();
  config.etypes.clear();
  for (const auto& t : d.node_types) {
    config.ntypes.push_back(t.name);
    config.ntype_feature_dims.push_back(t.feature_dim);
  }
  for (const auto& r : d.relations) config.etypes.push_back(r.Key());
  config.target_ntype = d.target;
  return config;
}

// Writes every part<p>/ (independent files: in parallel) and appends the
// parts to the config, each with its range of the stored edges.
void WriteHeteroParts(const PartitionOptions& options, const HeteroDataset& d,
                      const HomogeneousView& h, const TypedCsc& csc, const Relabeling& relabel,
                      const std::vector<uint8_t> masks[3], const std::string& tmp_dir,
                      PartitionConfig* config) {
  std::vector<PartInfo> infos(options.num_parts);
  ParallelFor(options.num_parts, options.num_threads, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      infos[p].dir = "part" + std::to_string(p);
      WriteHeteroPart(d, h, csc, relabel, static_cast<int>(p), masks, tmp_dir + "/" + infos[p].dir,
                      &infos[p]);
    }
  });
  int64_t edge_start = 0;
  for (PartInfo& info : infos) {
    info.edge_start = edge_start;
    for (int64_t c : info.etype_edges) edge_start += c;
    info.edge_end = edge_start;
    config->parts.push_back(std::move(info));
  }
}

// The report: as the homogeneous one, plus each type's nodes per part.
json HeteroReport(const PartitionConfig& config, const HeteroDataset& d, const Assignment& a,
                  const StageTimer& timer) {
  json report = PartitionReport(config, d.num_edges(), a.undirected_edges, a.cut, timer);
  for (size_t t = 0; t < d.node_types.size(); ++t) {
    std::vector<int64_t> per_part;
    for (size_t p = 0; p < config.parts.size(); ++p) {
      const auto [start, end] = config.parts[p].ntype_ranges[t];
      report["parts"][p]["node_types"][d.node_types[t].name] = end - start;
      per_part.push_back(end - start);
    }
    report["imbalance"]["nodes_" + d.node_types[t].name] = Imbalance(per_part);
  }
  report["ntypes"] = config.ntypes;
  report["etypes"] = config.etypes;
  return report;
}

}  // namespace

PartitionResult RunHeteroPartition(const PartitionOptions& options) {
  if (options.val_edges > 0)
    throw ConfigError("--val_edges applies to homogeneous graphs (link prediction) only");
  StageTimer timer;
  timer.Begin("load " + options.data.dataset);
  const HeteroDataset d = LoadForPartitioning(options);
  const HomogeneousView h = ViewOf(d);
  const int64_t n = h.num_nodes;
  if (options.num_parts > n) {
    throw ConfigError("--num_parts " + std::to_string(options.num_parts) + " exceeds the " +
                      std::to_string(n) + " nodes of " + d.name);
  }
  const std::string graph_name = options.graph_name.empty() ? d.name : options.graph_name;
  TempOutput tmp(AbsoluteOutput(options.output) + ".tmp.");

  timer.Begin("symmetrize");
  const TypedCsc csc = BuildTypedCsc(d, h, options.num_threads);
  std::vector<uint8_t> masks[3];
  SplitMasks(d, h, masks);
  if (n >= std::numeric_limits<int32_t>::max()) {
    throw ConfigError(d.name + " has " + std::to_string(n) +
                      " nodes: heterogeneous graphs are partitioned with 32-bit ids (METIS's) "
                      "so far, at most 2^31 - 1 nodes");
  }
  const Assignment a = AssignParts(options, d, h, csc, masks[0], timer);

  timer.Begin("relabel");
  const Relabeling relabel = Relabel(a.part, options.num_parts);

  timer.Begin("write");
  PartitionConfig config = DescribePartitioning(options, d, graph_name, n,
                                                static_cast<int64_t>(csc.src.size()), a.method);
  WriteHeteroParts(options, d, h, csc, relabel, masks, tmp.path(), &config);
  timer.End();

  config.report = HeteroReport(config, d, a, timer);
  const std::string json_name = graph_name + ".json";
  WriteFileAtomic(tmp.path() + "/" + json_name, PartitionConfigText(config));
  Publish(tmp, options.output);
  GNN_LOG(kInfo) << "wrote " << options.num_parts << " partitions of " << graph_name << " ("
                 << config.ntypes.size() << " node types, " << config.etypes.size()
                 << " relations) to " << options.output;
  return PartitionResult{(fs::path(options.output) / json_name).string(), config.report};
}

}  // namespace gnn
