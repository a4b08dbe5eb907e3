#include "partition/hetero_partition.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <limits>
#include <optional>

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

// The in-edges of every node (old homogeneous ids) with their relation, one
// key per edge: relation * num_nodes + source. Rows by destination, keys
// sorted, so each row's edges of one relation are one run sorted by source
// (typed sampling draws from it) and a partition's rows keep the same order
// whatever the partitioning.
struct TypedCsc {
  std::vector<int64_t> indptr;
  std::vector<int64_t> keys;
  // With edge features: each entry's edge as relation offset + its line in
  // the relation's input (EdgeFeatureTable::offset); a row's repeated keys
  // in input order.
  std::vector<int64_t> eids;
};

// The relations' edge features for writing: relation e's rows at rows[e]
// (null: none; maybe in a scratch file), dims[e] wide, its edges numbered
// from offset[e] in TypedCsc::eids; `width` the widest (0: no relation has
// any).
struct EdgeFeatureTable {
  std::vector<const float*> rows;
  std::vector<int64_t> dims, offset;
  int64_t width = 0;
  // Whether the CSC keeps its edge ids (edge features or edge labels).
  bool ids = false;
};

// The keyed CSC with each entry's edge id beside it (TypedCsc::eids): a
// counting sort by destination in edge id order, then each row sorted by
// (key, edge id).
TypedCsc BuildTypedCscWithIds(const HeteroDataset& d, const HomogeneousView& h,
                              const std::vector<int64_t>& offset, int threads) {
  const int64_t n = h.num_nodes;
  TypedCsc csc;
  csc.indptr.assign(static_cast<size_t>(n + 1), 0);
  std::vector<int64_t> dof(d.relations.size()), base(d.relations.size());
  for (size_t e = 0; e < d.relations.size(); ++e) {
    const Relation& r = d.relations[e];
    dof[e] = h.offset[static_cast<size_t>(d.TypeIndex(r.dst_type))];
    base[e] = static_cast<int64_t>(e) * n + h.offset[static_cast<size_t>(d.TypeIndex(r.src_type))];
    for (int64_t v : r.dst) ++csc.indptr[static_cast<size_t>(dof[e] + v + 1)];
  }
  for (int64_t v = 0; v < n; ++v) csc.indptr[v + 1] += csc.indptr[v];
  csc.keys.resize(static_cast<size_t>(csc.indptr[n]));
  csc.eids.resize(csc.keys.size());
  std::vector<int64_t> fill(csc.indptr.begin(), csc.indptr.end() - 1);
  for (size_t e = 0; e < d.relations.size(); ++e) {
    const Relation& r = d.relations[e];
    for (int64_t i = 0; i < r.num_edges(); ++i) {
      const int64_t slot = fill[static_cast<size_t>(dof[e] + r.dst[i])]++;
      csc.keys[slot] = base[e] + r.src[i];
      csc.eids[slot] = offset[e] + i;
    }
  }
  ParallelFor(n, threads, [&](int64_t b, int64_t end) {
    std::vector<std::pair<int64_t, int64_t>> row;
    for (int64_t v = b; v < end; ++v) {
      const int64_t lo = csc.indptr[v], hi = csc.indptr[v + 1];
      row.clear();
      for (int64_t k = lo; k < hi; ++k) row.emplace_back(csc.keys[k], csc.eids[k]);
      std::sort(row.begin(), row.end());
      for (int64_t k = lo; k < hi; ++k) {
        csc.keys[k] = row[static_cast<size_t>(k - lo)].first;
        csc.eids[k] = row[static_cast<size_t>(k - lo)].second;
      }
    }
  });
  return csc;
}

// Built straight from the relations' edge lists, which it then frees: from
// here on the keys are the only copy of the edges. With edge features or
// labels (`edges`.ids) each entry's edge id comes along.
TypedCsc BuildTypedCsc(HeteroDataset* d, const HomogeneousView& h, const EdgeFeatureTable& edges,
                       int threads) {
  const int64_t n = h.num_nodes;
  if (edges.ids) {
    TypedCsc csc = BuildTypedCscWithIds(*d, h, edges.offset, threads);
    for (Relation& r : d->relations) {
      FreeVector(r.src);
      FreeVector(r.dst);
    }
    return csc;
  }
  auto each = [&](auto emit) {
    for (size_t e = 0; e < d->relations.size(); ++e) {
      const Relation& r = d->relations[e];
      const int64_t so = h.offset[static_cast<size_t>(d->TypeIndex(r.src_type))];
      const int64_t dof = h.offset[static_cast<size_t>(d->TypeIndex(r.dst_type))];
      const int64_t base = static_cast<int64_t>(e) * n + so;  // (relation, source) in one key
      for (int64_t i = 0; i < r.num_edges(); ++i) emit(dof + r.dst[i], base + r.src[i]);
    }
  };
  Csr keyed = GroupPairs<int64_t>(n, each, /*dedup=*/false, /*drop_self_loops=*/false, threads);
  for (Relation& r : d->relations) {
    FreeVector(r.src);
    FreeVector(r.dst);
  }
  return TypedCsc{std::move(keyed.indptr), std::move(keyed.indices), {}};
}

// The symmetric adjacency of every relation together, types ignored
// (Symmetrize's): METIS's input and the edge cut.
Csr32 SymmetricAdjacency(const TypedCsc& csc, int64_t n, int threads) {
  auto each = [&](auto emit) {
    for (int64_t v = 0; v < n; ++v) {
      for (int64_t k = csc.indptr[v]; k < csc.indptr[v + 1]; ++k) {
        const int64_t u = csc.keys[k] % n;
        emit(u, v);
        emit(v, u);
      }
    }
  };
  return GroupPairs<int32_t>(n, each, /*dedup=*/true, /*drop_self_loops=*/true, threads);
}

// What writing a partition reads: the dataset's types, labels and splits
// (its edge lists are gone by then), the keyed CSC (its keys maybe in a
// scratch file), each type's features (nullptr for none; maybe in a scratch
// file), the new ids and the split masks over homogeneous ids.
struct PartSources {
  const HeteroDataset& d;
  const HomogeneousView& h;
  const std::vector<int64_t>& indptr;
  const int64_t* keys;
  const std::vector<const float*>& features;
  const Relabeling& relabel;
  const std::vector<uint8_t>* masks;  // [3]: train, valid, test
  const EdgeFeatureTable& edges;
  const int64_t* eids;  // TypedCsc::eids (edges.ids only)
};

void Record(PartInfo* info, const std::string& name, const WrittenFile& f) {
  info->files[name] = PartFile{f.bytes, f.sha256};
}

// Each node type's new ids in part p: new ids within a partition follow
// old ids, which are type-major, so each type's nodes are one range.
std::vector<std::pair<int64_t, int64_t>> TypeRanges(const HomogeneousView& h, const Relabeling& r,
                                                    int p, size_t num_types) {
  const int64_t end = r.part_start[p + 1];
  std::vector<std::pair<int64_t, int64_t>> ranges(num_types, {0, 0});
  int64_t pos = r.part_start[p];
  for (size_t t = 0; t < num_types; ++t) {
    int64_t count = 0;
    while (pos + count < end && h.TypeOf(r.orig[pos + count]) == static_cast<int>(t)) ++count;
    ranges[t] = {pos, pos + count};
    pos += count;
  }
  if (pos != end) throw Error("partition " + std::to_string(p) + ": node types out of order");
  return ranges;
}

// indptr.npy, indices.npy and etype.npy: each row's keys become new source
// ids and relations.
void WritePartEdges(const PartSources& in, int p, const std::string& dir, PartInfo* info) {
  const Relabeling& r = in.relabel;
  const int64_t start = r.part_start[p], owned = r.part_start[p + 1] - start;
  const int64_t n = in.h.num_nodes;
  std::vector<int64_t> indptr(owned + 1, 0);
  for (int64_t i = 0; i < owned; ++i) {
    const int64_t v = r.orig[start + i];
    indptr[i + 1] = indptr[i] + in.indptr[v + 1] - in.indptr[v];
  }
  WriteTypedEdges(
      dir, indptr, in.d.relations.size(),
      [&](int64_t i, std::vector<int64_t>* src, std::vector<int64_t>* etype) {
        const int64_t v = r.orig[start + i];
        for (int64_t k = in.indptr[v]; k < in.indptr[v + 1]; ++k) {
          src->push_back(r.new_id[in.keys[k] % n]);
          etype->push_back(in.keys[k] / n);
        }
      },
      info);
}

// kOrigEidsFile (each stored edge's line in its relation's input),
// kEdgeFeatFile with edge features (its relation's, zero-padded to the
// widest) and kEdgeLabelFile and kEdgeSplitFile with an edge task (the
// labelled relation's class or value and split, 4 for none; -1 or 0 and
// split 0 on every other relation's edges), aligned with indices.npy,
// streamed.
void WritePartEdgeData(const PartSources& in, int p, const std::string& dir, PartInfo* info) {
  const Relabeling& r = in.relabel;
  const EdgeFeatureTable& ef = in.edges;
  const HeteroDataset::EdgeLabels& task = in.d.edge_task;
  const bool labeled = in.d.edge_labeled(), classes = task.kind == LabelKind::kClass;
  const int64_t start = r.part_start[p], owned = r.part_start[p + 1] - start;
  const int64_t n = in.h.num_nodes;
  int64_t stored = 0;
  for (int64_t c : info->etype_edges) stored += c;
  NpyWriter ids(dir + "/" + kOrigEidsFile, DType::kInt64, {stored});
  std::optional<NpyWriter> feats, label_file, split_file;
  if (ef.width > 0)
    feats.emplace(dir + "/" + kEdgeFeatFile, DType::kFloat32,
                  std::vector<int64_t>{stored, ef.width});
  if (labeled) {
    label_file.emplace(dir + "/" + kEdgeLabelFile, classes ? DType::kInt64 : DType::kFloat32,
                       std::vector<int64_t>{stored});
    split_file.emplace(dir + "/" + kEdgeSplitFile, DType::kUInt8, std::vector<int64_t>{stored});
  }
  std::vector<int64_t> id_block, label_block;
  std::vector<float> feat_block, value_block;
  std::vector<uint8_t> split_block;
  auto flush = [&] {
    ids.Append(id_block.data(), static_cast<int64_t>(id_block.size()));
    if (feats) feats->Append(feat_block.data(), static_cast<int64_t>(feat_block.size()));
    if (labeled) {
      if (classes) {
        label_file->Append(label_block.data(), static_cast<int64_t>(label_block.size()));
      } else {
        label_file->Append(value_block.data(), static_cast<int64_t>(value_block.size()));
      }
      split_file->Append(split_block.data(), static_cast<int64_t>(split_block.size()));
    }
    id_block.clear();
    feat_block.clear();
    label_block.clear();
    value_block.clear();
    split_block.clear();
  };
  for (int64_t i = 0; i < owned; ++i) {
    const int64_t v = r.orig[start + i];
    for (int64_t k = in.indptr[v]; k < in.indptr[v + 1]; ++k) {
      const size_t rel = static_cast<size_t>(in.keys[k] / n);
      const int64_t line = in.eids[k] - ef.offset[rel], w = ef.dims[rel];
      id_block.push_back(line);
      if (feats) {
        const size_t at = feat_block.size();
        feat_block.resize(at + static_cast<size_t>(ef.width), 0.0f);
        if (w > 0) std::copy_n(ef.rows[rel] + line * w, w, feat_block.begin() + at);
      }
      if (!labeled) continue;
      const bool mine = static_cast<int>(rel) == task.relation;
      const uint8_t split = mine ? task.split[static_cast<size_t>(line)] : 0;
      split_block.push_back(!mine ? 0 : split == 0 ? 4 : split);
      if (mine && split != 0) ++info->num_split_edges[split - 1];
      if (classes) {
        label_block.push_back(mine ? task.labels[static_cast<size_t>(line)] : -1);
      } else {
        value_block.push_back(mine ? task.targets[static_cast<size_t>(line)] : 0.0f);
      }
    }
    // About 8 MiB of rows at a time, whatever the width.
    if (id_block.size() >= (size_t{1} << 18) || feat_block.size() >= (size_t{1} << 21)) flush();
  }
  flush();
  Record(info, kOrigEidsFile, ids.Commit());
  if (feats) Record(info, kEdgeFeatFile, feats->Commit());
  if (labeled) {
    Record(info, kEdgeLabelFile, label_file->Commit());
    Record(info, kEdgeSplitFile, split_file->Commit());
  }
}

// <type>-feat.npy of every type with features. `local` holds the part's
// type-local input ids, from new id `start` on.
void WritePartFeatures(const PartSources& in, const std::vector<int64_t>& local, int64_t start,
                       const std::string& dir, PartInfo* info) {
  for (size_t t = 0; t < in.d.node_types.size(); ++t) {
    const NodeType& nt = in.d.node_types[t];
    if (nt.feature_dim == 0) continue;
    const auto [b, e] = info->ntype_ranges[t];
    const std::string name = TypedFeatureFile(nt.name);
    Record(info, name,
           WriteGatheredRows(dir + "/" + name, in.features[t], nt.feature_dim,
                             local.data() + (b - start), e - b));
  }
}

// The target type's <target>-label.npy and its three split masks.
void WritePartTargets(const PartSources& in, const std::vector<int64_t>& local, int64_t start,
                      const std::string& dir, PartInfo* info) {
  const HeteroDataset& d = in.d;
  const size_t target = static_cast<size_t>(d.TypeIndex(d.target));
  const auto [tb, te] = info->ntype_ranges[target];
  std::vector<int64_t> labels;
  for (int64_t i = tb; i < te; ++i) labels.push_back(d.labels[local[i - start]]);  // type-local
  std::vector<uint8_t> masks[3];
  for (int m = 0; m < 3; ++m) {
    for (int64_t i = tb; i < te; ++i) masks[m].push_back(in.masks[m][in.relabel.orig[i]]);
  }
  WriteTypedTargets(dir, d.target, labels, masks, info);
}

// Writes part<p>/ and fills `info`.
void WriteHeteroPart(const PartSources& in, int p, const std::string& dir, PartInfo* info) {
  const Relabeling& r = in.relabel;
  const int64_t start = r.part_start[p], end = r.part_start[p + 1];
  MakeDirs(dir);
  info->node_start = start;
  info->node_end = end;
  info->ntype_ranges = TypeRanges(in.h, r, p, in.d.node_types.size());
  WritePartEdges(in, p, dir, info);
  if (in.edges.ids) WritePartEdgeData(in, p, dir, info);
  std::vector<int64_t> local(end - start);  // type-local input ids
  for (int64_t i = start; i < end; ++i) {
    const int64_t v = r.orig[i];
    local[i - start] = v - in.h.offset[static_cast<size_t>(in.h.TypeOf(v))];
  }
  Record(info, "orig_nids.npy", WriteNpy(dir + "/orig_nids.npy", local));
  WritePartFeatures(in, local, start, dir, info);
  WritePartTargets(in, local, start, dir, info);
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
  if (d.edge_labeled()) {
    const HeteroDataset::EdgeLabels& e = d.edge_task;
    int64_t count[4] = {0, 0, 0, 0};
    for (uint8_t s : e.split) ++count[s];
    DescribeEdgeLabels(options, d.name + " " + d.relations[static_cast<size_t>(e.relation)].Key(),
                       e.kind, e.num_classes, count);
  }
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
  int64_t sparsify = 0;  // the --sparsify METIS partitioned with
};

// Assigns every node a part over the symmetric adjacency of all relations
// together; METIS and the streaming assignment balance one constraint per
// node type (DGL's balance_ntypes), then the target's train nodes and
// in-degree (from the typed CSC's `indptr`) when asked.
Assignment AssignParts(const PartitionOptions& options, const HeteroDataset& d,
                       const HomogeneousView& h, const std::vector<int64_t>& indptr,
                       const Csr32& sym, const std::vector<uint8_t>& train, StageTimer& timer) {
  const int64_t n = h.num_nodes;
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
      for (int64_t v = 0; v < n; ++v) deg[v] = static_cast<int32_t>(indptr[v + 1] - indptr[v]);
      weights.push_back(std::move(deg));
    }
    a.part = a.method == "stream"
                 ? StreamAssign(sym, weights, options.num_parts)
                 : MetisAssign(sym, weights, options.num_parts, options.data.seed, options.sparsify,
                               MetisMemoryOf(options), &a.sparsify);
  } else {
    a.part = RandomAssign(n, options.num_parts, options.data.seed);
  }
  a.cut = EdgeCut(sym, a.part);
  a.undirected_edges = sym.num_entries() / 2;
  return a;
}

}  // namespace

PartitionConfig DescribeHeteroPartitioning(const PartitionOptions& options, const HeteroDataset& d,
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
  for (const auto& r : d.relations) {
    config.etypes.push_back(r.Key());
    config.etype_edge_feature_dims.push_back(r.edge_feature_dim);
    config.edge_feature_dim = std::max(config.edge_feature_dim, r.edge_feature_dim);
  }
  if (config.edge_feature_dim == 0) config.etype_edge_feature_dims.clear();
  config.target_ntype = d.target;
  if (d.edge_labeled()) {
    const HeteroDataset::EdgeLabels& e = d.edge_task;
    config.edge_labels = true;
    config.edge_label_kind = e.kind;
    config.num_edge_classes = e.num_classes;
    config.target_etype = d.relations[static_cast<size_t>(e.relation)].Key();
  }
  return config;
}

namespace {

// Writes every part<p>/ (independent files: in parallel, each streamed)
// and appends the parts to the config, each with its range of the stored
// edges.
void WriteHeteroParts(const PartitionOptions& options, const PartSources& in,
                      const std::string& tmp_dir, PartitionConfig* config) {
  std::vector<PartInfo> infos(options.num_parts);
  ParallelFor(options.num_parts, options.num_threads, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      infos[p].dir = "part" + std::to_string(p);
      WriteHeteroPart(in, static_cast<int>(p), tmp_dir + "/" + infos[p].dir, &infos[p]);
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

}  // namespace

json HeteroReport(const PartitionConfig& config, const HeteroDataset& d, int64_t input_edges,
                  int64_t undirected_edges, int64_t cut, const StageTimer& timer) {
  json report = PartitionReport(config, input_edges, undirected_edges, cut, timer);
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

namespace {

void CheckSizes(const PartitionOptions& options, const HeteroDataset& d, int64_t n) {
  if (options.num_parts > n) {
    throw ConfigError("--num_parts " + std::to_string(options.num_parts) + " exceeds the " +
                      std::to_string(n) + " nodes of " + d.name);
  }
  if (n >= std::numeric_limits<int32_t>::max()) {
    throw ConfigError(d.name + " has " + std::to_string(n) +
                      " nodes: heterogeneous graphs are partitioned with 32-bit ids (METIS's) "
                      "so far, at most 2^31 - 1 nodes");
  }
}

// Each type's features (nullptr for none), large ones moved to scratch
// files in `dir` (Spilled, held in `held`): nothing reads them until the
// parts are written.
std::vector<const float*> SpillFeatures(HeteroDataset* d, const std::string& dir,
                                        std::deque<Spilled<float>>* held) {
  std::vector<const float*> rows;
  for (size_t t = 0; t < d->node_types.size(); ++t) {
    NodeType& nt = d->node_types[t];
    held->emplace_back(dir + "/.features-" + std::to_string(t) + ".spill", &nt.features);
    rows.push_back(nt.feature_dim > 0 ? held->back().data() : nullptr);
  }
  return rows;
}

// Each relation's edge features (its rows moved to scratch files in
// `dir` when large, held in `held`) and their numbering in TypedCsc::eids.
EdgeFeatureTable SpillEdgeFeatures(HeteroDataset* d, const std::string& dir,
                                   std::deque<Spilled<float>>* held) {
  EdgeFeatureTable t;
  int64_t next = 0;
  for (size_t e = 0; e < d->relations.size(); ++e) {
    Relation& r = d->relations[e];
    held->emplace_back(dir + "/.edge-features-" + std::to_string(e) + ".spill", &r.edge_features);
    t.rows.push_back(r.edge_feature_dim > 0 ? held->back().data() : nullptr);
    t.dims.push_back(r.edge_feature_dim);
    t.offset.push_back(next);
    next += r.num_edges();
    t.width = std::max(t.width, r.edge_feature_dim);
  }
  t.ids = t.width > 0 || d->edge_labeled();
  return t;
}

// Everything after loading, in `tmp_dir`: the typed CSC (the dataset's
// edge lists freed), the symmetric adjacency, the assignment, relabeling
// and every part<p>/. Features and the CSC's keys wait in scratch files
// (removed on return) while the assignment runs, so that METIS's own
// memory and its input are most of the peak.
Assignment PartitionAndWrite(const PartitionOptions& options, HeteroDataset& d,
                             const HomogeneousView& h, const std::string& graph_name,
                             const std::string& tmp_dir, StageTimer& timer,
                             PartitionConfig* config) {
  std::deque<Spilled<float>> held;
  const std::vector<const float*> features = SpillFeatures(&d, tmp_dir, &held);
  const EdgeFeatureTable edges = SpillEdgeFeatures(&d, tmp_dir, &held);
  timer.Begin("symmetrize");
  TypedCsc csc = BuildTypedCsc(&d, h, edges, options.num_threads);
  std::vector<uint8_t> masks[3];
  SplitMasks(d, h, masks);
  Csr32 sym = SymmetricAdjacency(csc, h.num_nodes, options.num_threads);
  const int64_t stored_edges = static_cast<int64_t>(csc.keys.size());
  const Spilled<int64_t> keys(tmp_dir + "/.keys.spill", &csc.keys);
  const Spilled<int64_t> eids(tmp_dir + "/.eids.spill", &csc.eids);
  const Assignment a = AssignParts(options, d, h, csc.indptr, sym, masks[0], timer);
  FreeVector(sym.indices);
  FreeVector(sym.indptr);

  timer.Begin("relabel");
  const Relabeling relabel = Relabel(a.part, options.num_parts);

  timer.Begin("write");
  *config = DescribeHeteroPartitioning(options, d, graph_name, h.num_nodes, stored_edges, a.method);
  const PartSources in{d, h, csc.indptr, keys.data(), features, relabel, masks, edges, eids.data()};
  WriteHeteroParts(options, in, tmp_dir, config);
  timer.End();
  return a;
}

}  // namespace

void CheckTypedPartitionOptions(const PartitionOptions& options) {
  if (!options.edge_weight.empty()) {
    throw ConfigError("--edge_weight " + options.edge_weight +
                      ": typed graphs take edge features (--edge_feat_mp_op), not weights, so far");
  }
  if (options.node_feat_from_edges != "auto") {
    throw ConfigError("--node_feat_from_edges " + options.node_feat_from_edges +
                      ": a typed graph's featureless node types learn embeddings instead");
  }
  if (options.task != "auto" && options.task != "node") {
    throw ConfigError("--task " + options.task +
                      ": typed graphs train class ids (--task node) so far, and a relation's "
                      "edge labels when the input has them");
  }
}

PartitionResult RunHeteroPartition(const PartitionOptions& options) {
  if (options.val_edges > 0)
    throw ConfigError("--val_edges applies to homogeneous graphs (link prediction) only");
  StageTimer timer;
  timer.Begin("load " + options.data.dataset);
  HeteroDataset d = LoadForPartitioning(options);
  const HomogeneousView h = ViewOf(d);
  CheckSizes(options, d, h.num_nodes);
  const std::string graph_name = options.graph_name.empty() ? d.name : options.graph_name;
  const int64_t input_edges = d.num_edges();
  TempOutput tmp(AbsoluteOutput(options.output) + ".tmp.");
  PartitionConfig config;
  const Assignment a = PartitionAndWrite(options, d, h, graph_name, tmp.path(), timer, &config);

  config.report = HeteroReport(config, d, input_edges, a.undirected_edges, a.cut, timer);
  if (a.method == "metis" && a.sparsify > 0) {
    config.report["sparsify"] = a.sparsify;
    if (a.sparsify != options.sparsify) config.report["sparsify_auto"] = true;
  }
  const std::string json_name = graph_name + ".json";
  WriteFileAtomic(tmp.path() + "/" + json_name, PartitionConfigText(config));
  Publish(tmp, options.output);
  GNN_LOG(kInfo) << "wrote " << options.num_parts << " partitions of " << graph_name << " ("
                 << config.ntypes.size() << " node types, " << config.etypes.size()
                 << " relations) to " << options.output;
  return PartitionResult{(fs::path(options.output) / json_name).string(), config.report};
}

void WriteTypedEdges(
    const std::string& dir, const std::vector<int64_t>& indptr, size_t num_relations,
    const std::function<void(int64_t, std::vector<int64_t>*, std::vector<int64_t>*)>& row,
    PartInfo* info) {
  const int64_t owned = static_cast<int64_t>(indptr.size()) - 1;
  Record(info, "indptr.npy", WriteNpy(dir + "/indptr.npy", indptr));
  NpyWriter indices(dir + "/indices.npy", DType::kInt64, {indptr[owned]});
  NpyWriter etypes(dir + "/" + kEtypeFile, DType::kInt64, {indptr[owned]});
  info->etype_edges.assign(num_relations, 0);
  std::vector<int64_t> src_block, etype_block;
  auto flush = [&] {
    for (int64_t e : etype_block) ++info->etype_edges[static_cast<size_t>(e)];
    indices.Append(src_block.data(), static_cast<int64_t>(src_block.size()));
    etypes.Append(etype_block.data(), static_cast<int64_t>(etype_block.size()));
    src_block.clear();
    etype_block.clear();
  };
  for (int64_t i = 0; i < owned; ++i) {
    row(i, &src_block, &etype_block);
    if (src_block.size() >= (size_t{1} << 20)) flush();
  }
  flush();
  Record(info, "indices.npy", indices.Commit());
  Record(info, kEtypeFile, etypes.Commit());
}

std::string TypedFeatureFile(const std::string& type) { return type + "-feat.npy"; }

void WriteTypedTargets(const std::string& dir, const std::string& target,
                       const std::vector<int64_t>& labels, const std::vector<uint8_t> masks[3],
                       PartInfo* info) {
  Record(info, target + "-label.npy", WriteNpy(dir + "/" + target + "-label.npy", labels));
  const char* mask_names[3] = {"-train_mask.npy", "-valid_mask.npy", "-test_mask.npy"};
  int64_t* counts[3] = {&info->num_train, &info->num_valid, &info->num_test};
  for (int m = 0; m < 3; ++m) {
    *counts[m] = std::count(masks[m].begin(), masks[m].end(), uint8_t{1});
    const std::string name = target + mask_names[m];
    Record(info, name, WriteNpy(dir + "/" + name, masks[m]));
  }
}

}  // namespace gnn
