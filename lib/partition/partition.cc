#include "partition/partition.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <sstream>
#include <type_traits>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/memory_info.h"
#include "common/npy.h"
#include "common/parallel.h"
#include "common/random.h"
#include "common/sparse_rows.h"
#include "common/timer.h"
#include "graph/csr.h"
#include "graph/hetero.h"
#include "partition/assign.h"
#include "partition/config.h"
#include "partition/hetero_partition.h"
#include "partition/partition_util.h"

namespace gnn {

namespace fs = std::filesystem;
using nlohmann::json;

void PartitionOptions::Validate() const {
  data.Validate();
  if (num_parts < 1)
    throw ConfigError("--num_parts must be >= 1, got " + std::to_string(num_parts));
  if (part_method != "metis" && part_method != "random" && part_method != "stream") {
    throw ConfigError("--part_method must be metis, stream or random, got '" + part_method + "'");
  }
  if (output.empty()) throw ConfigError("--output is empty");
  if (undirected && directed) {
    throw ConfigError("--undirected and --directed contradict each other: pass one of them");
  }
  if (num_trainers_per_machine < 1) throw ConfigError("--num_trainers_per_machine must be >= 1");
  if (!(val_edges >= 0 && val_edges < 1)) {
    throw ConfigError("--val_edges must be a fraction in [0, 1), got " + std::to_string(val_edges));
  }
  if (graph_name.find('/') != std::string::npos) {
    throw ConfigError("--graph_name must not contain '/': " + graph_name);
  }
  if (sparsify < 0) throw ConfigError("--sparsify must be >= 0 (0: every edge)");
  if (!(max_memory_gb >= 0 && max_memory_gb <= 1e6)) {
    std::ostringstream got;
    got << max_memory_gb;
    throw ConfigError("--max_memory_gb must be between 0 (the memory available) and 1e6, got " +
                      got.str());
  }
  if (node_feat_from_edges != "auto" && node_feat_from_edges != "mean" &&
      node_feat_from_edges != "none") {
    throw ConfigError("--node_feat_from_edges must be auto, mean or none, got '" +
                      node_feat_from_edges + "'");
  }
  if (task != "auto" && task != "node" && task != "multilabel" && task != "node_regression") {
    throw ConfigError("--task must be auto, node, multilabel or node_regression, got '" + task +
                      "'");
  }
  if (sparsify > 0 && part_method != "metis") {
    throw ConfigError("--sparsify thins the graph METIS sees: it needs --part_method metis, not " +
                      part_method);
  }
}

MetisMemory MetisMemoryOf(const PartitionOptions& options) {
  MetisMemory m;
  m.auto_sparsify = !options.sparsify_given;
  if (options.max_memory_gb > 0) {
    const auto cap = static_cast<int64_t>(options.max_memory_gb * static_cast<double>(1 << 30));
    // A tenth for what the estimate misses.
    const int64_t held = CurrentRssBytes();
    m.budget = std::max<int64_t>(0, cap / 10 * 9 - held);
    std::ostringstream given;
    given << options.max_memory_gb;
    m.budget_from =
        "90 % of --max_memory_gb " + given.str() + ", less the " + MemoryText(held) + " held";
    return m;
  }
  // Unbounded by the user: only what would not fit at all (the estimate is
  // the upper end of what METIS took here) changes what METIS sees.
  const int64_t available = AvailableMemoryBytes();
  if (available < 0) return m;
  m.budget = available;
  m.budget_from = "the memory available now; --max_memory_gb sets a bound";
  return m;
}

namespace {

// Held-out edges for link evaluation: an undirected pair {a, b} (input ids)
// is held out when its hash falls below fraction * 2^64. The choice depends
// only on the pair and the seed, never on the partitioning, so every
// partitioning of a graph holds out the same edges.
class HeldOutChooser {
 public:
  HeldOutChooser(double fraction, uint64_t seed)
      : threshold_(fraction <= 0 ? 0 : static_cast<uint64_t>(fraction * 18446744073709551616.0)),
        seed_(SplitMix64(seed ^ 0x76616c6564676573ULL)) {}
  bool active() const { return threshold_ > 0; }
  bool operator()(int64_t a, int64_t b) const {
    if (a == b || threshold_ == 0) return false;
    const uint64_t lo = static_cast<uint64_t>(std::min(a, b)),
                   hi = static_cast<uint64_t>(std::max(a, b));
    return SplitMix64(SplitMix64(seed_ ^ lo) + hi) < threshold_;
  }
  // Corrupted tail j of held-out edge {a, b}: uniform over [0, n).
  int64_t Negative(int64_t a, int64_t b, int j, int64_t n) const {
    const uint64_t h = SplitMix64(
        SplitMix64(SplitMix64(seed_ + static_cast<uint64_t>(a)) ^ static_cast<uint64_t>(b)) +
        static_cast<uint64_t>(j));
    return static_cast<int64_t>((static_cast<unsigned __int128>(h) * static_cast<uint64_t>(n)) >>
                                64);
  }

 private:
  uint64_t threshold_, seed_;
};

// Drops the held-out pairs from an adjacency in place (rows and entries are
// input ids; both directions go, since the chooser is symmetric), and the
// entries' input edge ids alike when `eids` is given.
template <typename Index>
void RemoveHeldOut(CsrT<Index>* g, const HeldOutChooser& held,
                   std::vector<int64_t>* eids = nullptr) {
  int64_t out = 0, begin = 0;
  for (int64_t r = 0; r < g->num_rows(); ++r) {
    const int64_t end = g->indptr[r + 1];
    for (int64_t k = begin; k < end; ++k) {
      if (held(r, g->indices[k])) continue;
      if (eids) (*eids)[out] = (*eids)[k];
      g->indices[out++] = g->indices[k];
    }
    begin = end;
    g->indptr[r + 1] = out;
  }
  g->indices.resize(out);
  g->indices.shrink_to_fit();
  if (eids) {
    eids->resize(out);
    eids->shrink_to_fit();
  }
}

// The CSC of in-edges of a graph with edge data: every listed edge
// (src[i], dst[i]) is the in-edge of dst[i] with input edge id i, and with
// `undirected` also that of src[i] (a self-loop once); repeated edges stay.
// Each row's entries are sorted by source, then input edge id, so the
// order is the same for every partitioning. *eids: the id of each entry;
// *reverse: 1 on the entries that run against the input's listing (the
// added reverse of an undirected edge). *repeats: entries whose (source,
// destination) pair an earlier entry of the row has too.
template <typename Index>
CsrT<Index> BuildEdgeIdCsc(int64_t n, const std::vector<int64_t>& src,
                           const std::vector<int64_t>& dst, bool undirected, int threads,
                           std::vector<int64_t>* eids, std::vector<uint8_t>* reverse,
                           int64_t* repeats) {
  std::atomic<int64_t> repeated{0};
  CsrT<Index> csc;
  csc.indptr.assign(static_cast<size_t>(n + 1), 0);
  const int64_t m = static_cast<int64_t>(src.size());
  for (int64_t i = 0; i < m; ++i) {
    ++csc.indptr[dst[i] + 1];
    if (undirected && src[i] != dst[i]) ++csc.indptr[src[i] + 1];
  }
  for (int64_t v = 0; v < n; ++v) csc.indptr[v + 1] += csc.indptr[v];
  csc.indices.resize(static_cast<size_t>(csc.indptr[n]));
  eids->resize(static_cast<size_t>(csc.indptr[n]));
  {
    // Each entry's id is 2 * edge id + (1 if it is the reverse) until the
    // rows are sorted: the order by edge id stays, the direction travels.
    std::vector<int64_t> fill(csc.indptr.begin(), csc.indptr.end() - 1);
    auto put = [&](int64_t row, int64_t col, int64_t id) {
      const int64_t k = fill[row]++;
      csc.indices[k] = static_cast<Index>(col);
      (*eids)[k] = id;
    };
    for (int64_t i = 0; i < m; ++i) {
      put(dst[i], src[i], 2 * i);
      if (undirected && src[i] != dst[i]) put(src[i], dst[i], 2 * i + 1);
    }
  }
  // (source, edge id) pairs are distinct, so a plain sort orders each row.
  ParallelFor(n, threads, [&](int64_t b, int64_t e) {
    std::vector<std::pair<Index, int64_t>> row;
    for (int64_t v = b; v < e; ++v) {
      const int64_t lo = csc.indptr[v], hi = csc.indptr[v + 1];
      row.clear();
      for (int64_t k = lo; k < hi; ++k) row.emplace_back(csc.indices[k], (*eids)[k]);
      std::sort(row.begin(), row.end());
      int64_t same = 0;
      for (int64_t k = lo; k < hi; ++k) {
        csc.indices[k] = row[static_cast<size_t>(k - lo)].first;
        (*eids)[k] = row[static_cast<size_t>(k - lo)].second;
        same += k > lo && csc.indices[k] == csc.indices[k - 1];
      }
      repeated += same;
    }
  });
  *repeats = repeated.load();
  reverse->resize(eids->size());
  for (size_t k = 0; k < eids->size(); ++k) {
    (*reverse)[k] = static_cast<uint8_t>((*eids)[k] & 1);
    (*eids)[k] >>= 1;
  }
  return csc;
}

PartFile ToPartFile(const WrittenFile& f) { return PartFile{f.bytes, f.sha256}; }

// The edge label files of one partition (config.h: kEdgeLabelFile,
// kEdgeSplitFile): `part_eids` are its stored in-edges' input ids in
// order, owned nodes from `start` on in new-id order.
template <typename Index>
void WriteEdgeLabels(const Dataset& d, const CsrT<Index>& in_csc,
                     const std::vector<uint8_t>& reverse, const std::vector<int64_t>& part_eids,
                     const Relabeling& r, int64_t start, const std::string& dir, PartInfo* info) {
  const int64_t stored = static_cast<int64_t>(part_eids.size());
  std::vector<uint8_t> split(static_cast<size_t>(stored));
  int64_t k = 0;
  for (int64_t i = start; k < stored; ++i) {
    const int64_t v = r.orig[i];
    for (int64_t e = in_csc.indptr[v]; e < in_csc.indptr[v + 1]; ++e, ++k) {
      const uint8_t s = d.edge_split[static_cast<size_t>(part_eids[k])];
      split[k] = reverse[e] ? 0 : s == 0 ? 4 : s;
      if (split[k] >= 1 && split[k] <= 3) ++info->num_split_edges[split[k] - 1];
    }
  }
  if (d.edge_label_kind == LabelKind::kClass) {
    std::vector<int64_t> labels(static_cast<size_t>(stored));
    for (int64_t j = 0; j < stored; ++j) labels[j] = d.edge_labels[part_eids[j]];
    info->files[kEdgeLabelFile] = ToPartFile(WriteNpy(dir + "/" + kEdgeLabelFile, labels));
  } else {
    std::vector<float> values(static_cast<size_t>(stored));
    for (int64_t j = 0; j < stored; ++j) values[j] = d.edge_targets[part_eids[j]];
    info->files[kEdgeLabelFile] = ToPartFile(WriteNpy(dir + "/" + kEdgeLabelFile, values));
  }
  info->files[kEdgeSplitFile] = ToPartFile(WriteNpy(dir + "/" + kEdgeSplitFile, split));
}

// Writes part<p>/ and fills `info`. `in_csc` rows are old destination ids,
// entries old source ids; `eids`, when not null, the input edge id of each
// entry, whose features are rows of `edge_features`.
template <typename Index>
void WritePart(const Dataset& d, const float* features, const CsrT<Index>& in_csc,
               const std::vector<int64_t>* eids, const std::vector<uint8_t>* reverse,
               const float* edge_features, const Relabeling& r, int p,
               const std::vector<uint8_t> masks[3], const std::string& dir, PartInfo* info) {
  const int64_t start = r.part_start[p], end = r.part_start[p + 1], owned = end - start;
  MakeDirs(dir);
  info->node_start = start;
  info->node_end = end;
  auto record = [&](const std::string& name, WrittenFile f) {
    info->files[name] = PartFile{f.bytes, f.sha256};
  };

  std::vector<int64_t> indptr(owned + 1, 0);
  for (int64_t i = 0; i < owned; ++i) indptr[i + 1] = indptr[i] + in_csc.Degree(r.orig[start + i]);
  record("indptr.npy", WriteNpy("" + dir + "/indptr.npy", indptr));

  {
    NpyWriter w(dir + "/indices.npy", DType::kInt64, {indptr[owned]});
    std::vector<int64_t> buf;
    for (int64_t i = 0; i < owned; ++i) {
      int64_t v = r.orig[start + i];
      // Rows keep the input graph's neighbour order (sorted by input id), the
      // same for every partitioning, so samplers keyed by orig_nids agree.
      for (int64_t k = in_csc.indptr[v]; k < in_csc.indptr[v + 1]; ++k) {
        buf.push_back(r.new_id[in_csc.indices[k]]);
      }
      if (buf.size() >= (1 << 20)) {
        w.Append(buf.data(), static_cast<int64_t>(buf.size()));
        buf.clear();
      }
    }
    w.Append(buf.data(), static_cast<int64_t>(buf.size()));
    record("indices.npy", w.Commit());
  }
  if (eids) {
    std::vector<int64_t> part_eids;
    part_eids.reserve(static_cast<size_t>(indptr[owned]));
    for (int64_t i = 0; i < owned; ++i) {
      const int64_t v = r.orig[start + i];
      part_eids.insert(part_eids.end(), eids->begin() + in_csc.indptr[v],
                       eids->begin() + in_csc.indptr[v + 1]);
    }
    if (d.edge_feature_dim > 0) {
      record(kEdgeFeatFile, WriteGatheredRows(dir + "/" + kEdgeFeatFile, edge_features,
                                              d.edge_feature_dim, part_eids.data(), indptr[owned]));
    }
    record(kOrigEidsFile, WriteNpy(dir + "/" + kOrigEidsFile, part_eids));
    if (d.edge_labeled()) WriteEdgeLabels(d, in_csc, *reverse, part_eids, r, start, dir, info);
  }
  if (d.sparse()) {
    // The owned nodes' rows in new-id order, as CSR files.
    SparseRows rows;
    GatherSparseRows(d.sparse_features.view(), r.orig.data() + start, owned, 0, &rows, 1);
    record(kFeatIndptrFile, WriteNpy(dir + "/" + kFeatIndptrFile, rows.indptr));
    record(kFeatIndicesFile, WriteNpy(dir + "/" + kFeatIndicesFile, rows.indices));
    if (!d.sparse_features.binary())
      record(kFeatValuesFile, WriteNpy(dir + "/" + kFeatValuesFile, rows.values));
  } else {
    record("feat.npy", WriteGatheredRows(dir + "/feat.npy", features, d.feature_dim,
                                         r.orig.data() + start, owned));
  }
  if (d.label_kind == LabelKind::kClass) {
    std::vector<int64_t> labels(owned);
    for (int64_t i = 0; i < owned; ++i) labels[i] = d.labels[r.orig[start + i]];
    record("label.npy", WriteNpy(dir + "/label.npy", labels));
  } else {
    // Multi-label or regression targets: float32 [owned, label_width].
    record("label.npy", WriteGatheredRows(dir + "/label.npy", d.targets.data(), d.label_width,
                                          r.orig.data() + start, owned));
  }

  const char* mask_names[3] = {"train_mask.npy", "valid_mask.npy", "test_mask.npy"};
  int64_t* counts[3] = {&info->num_train, &info->num_valid, &info->num_test};
  for (int m = 0; m < 3; ++m) {
    std::vector<uint8_t> mask(owned);
    for (int64_t i = 0; i < owned; ++i) mask[i] = masks[m][r.orig[start + i]];
    *counts[m] = std::count(mask.begin(), mask.end(), uint8_t{1});
    record(mask_names[m], WriteNpy(dir + "/" + mask_names[m], mask));
  }
  std::vector<int64_t> orig(r.orig.begin() + start, r.orig.begin() + end);
  record("orig_nids.npy", WriteNpy(dir + "/orig_nids.npy", orig));
  if (!d.node_ids.empty()) {
    std::vector<int64_t> user(static_cast<size_t>(owned));
    for (int64_t i = 0; i < owned; ++i) user[i] = d.node_ids[orig[i]];
    record(kUserIdsFile, WriteNpy(dir + "/" + kUserIdsFile, user));
  }
}

// The adjacencies of one index width: the symmetric one (METIS's input and
// the edge cut) and the CSC of in-edges that the partitions store: for a
// directed graph its own, for a graph with edge features one whose entries
// are input edges (eids: each entry's input edge id).
template <typename Index>
struct Adjacency {
  CsrT<Index> sym, directed_csc;
  std::vector<int64_t> eids;
  std::vector<uint8_t> reverse;  // with eids: 1 on an undirected edge's added reverse
  bool undirected = false, edge_ids = false;
  const CsrT<Index>& in_csc() const {
    return edge_ids ? directed_csc : undirected ? sym : directed_csc;
  }
};

// Builds them from the dataset's edge lists, which it frees.
template <typename Index>
Adjacency<Index> BuildAdjacency(Dataset* d, bool undirected, int threads) {
  const int64_t n = d->num_nodes;
  Adjacency<Index> a;
  a.undirected = undirected;
  a.edge_ids = d->edge_feature_dim > 0 || d->edge_labeled();
  // The symmetric adjacency drives METIS and the edge cut; for an undirected
  // graph without edge data it is also the CSC of in-edges, so it is built
  // only once.
  a.sym = Symmetrize<Index>(n, d->src, d->dst, threads);
  if (a.edge_ids) {
    int64_t repeats = 0;
    a.directed_csc = BuildEdgeIdCsc<Index>(n, d->src, d->dst, undirected, threads, &a.eids,
                                           &a.reverse, &repeats);
    SayRepeatedEdges(repeats, undirected);
  } else if (!undirected) {
    a.directed_csc = BuildCsr<Index>(n, d->dst, d->src, false, false, threads);
  }
  FreeVector(d->src);
  FreeVector(d->dst);
  return a;
}

// Held-out edges leave the graph before anything else sees it: METIS,
// the edge cut and the stored CSC all use the training graph. Returns them
// as flat (head, tail) pairs, input ids, head < tail.
template <typename Index>
std::vector<int64_t> HoldOutEdges(const HeldOutChooser& held, double fraction,
                                  Adjacency<Index>* a) {
  std::vector<int64_t> pairs;
  if (!held.active()) return pairs;
  const CsrT<Index>& sym = a->sym;
  for (int64_t u = 0; u < sym.num_rows(); ++u) {
    for (int64_t k = sym.indptr[u]; k < sym.indptr[u + 1]; ++k) {
      const int64_t v = sym.indices[k];
      if (u < v && held(u, v)) {
        pairs.push_back(u);
        pairs.push_back(v);
      }
    }
  }
  RemoveHeldOut(&a->sym, held);
  if (a->edge_ids) {
    RemoveHeldOut(&a->directed_csc, held, &a->eids);
  } else if (!a->undirected) {
    RemoveHeldOut(&a->directed_csc, held);
  }
  GNN_LOG(kInfo) << "held out " << pairs.size() / 2 << " undirected edges (" << fraction
                 << ") for link evaluation";
  return pairs;
}

// The part of every node by `method`: METIS and the streaming assignment
// balance the node count, then train nodes and in-degrees when asked.
template <typename Index>
std::vector<int32_t> AssignParts(const PartitionOptions& options, const std::string& method,
                                 const Adjacency<Index>& a, const std::vector<uint8_t>& train,
                                 int64_t* used_sparsify) {
  const int64_t n = a.sym.num_rows();
  if (method == "random") return RandomAssign(n, options.num_parts, options.data.seed);
  std::vector<std::vector<int32_t>> weights;
  weights.emplace_back(n, 1);
  if (options.balance_train) weights.emplace_back(train.begin(), train.end());
  if (options.balance_edges) {
    std::vector<int32_t> deg(n);
    for (int64_t v = 0; v < n; ++v) deg[v] = static_cast<int32_t>(a.in_csc().Degree(v));
    weights.push_back(std::move(deg));
  }
  std::vector<int32_t> part;
  if (method == "stream") {
    part = StreamAssign(a.sym, weights, options.num_parts);
  } else if constexpr (std::is_same_v<Index, int32_t>) {
    part = MetisAssign(a.sym, weights, options.num_parts, options.data.seed, options.sparsify,
                       MetisMemoryOf(options), used_sparsify);
  }
  return part;
}

// The config's description of the partitioning (its parts come later).
void DescribePartitioning(const PartitionOptions& options, const Dataset& d,
                          const std::string& graph_name, const std::string& method,
                          int64_t stored_edges, bool undirected, PartitionConfig* config) {
  config->graph_name = graph_name;
  config->dataset =
      options.data.files.given() ? "--edges " + options.data.files.edges : options.data.dataset;
  config->num_nodes = d.num_nodes;
  config->num_edges = stored_edges;
  config->part_method = method;
  config->num_parts = options.num_parts;
  config->halo_hops = 1;
  config->feature_dim = d.feature_dim;
  config->edge_feature_dim = d.edge_feature_dim;
  config->edge_labels = d.edge_labeled();
  config->edge_label_kind = d.edge_label_kind;
  config->num_edge_classes = d.num_edge_classes;
  config->sparse_features = d.sparse();
  config->feature_binary = d.sparse() && d.sparse_features.binary();
  config->num_classes = d.num_classes;
  config->label_kind = d.label_kind;
  config->label_width = d.label_width;
  config->balance_train = options.balance_train;
  config->balance_edges = options.balance_edges;
  config->undirected = undirected;
  config->seed = options.data.seed;
}

// Each partition's held-out edges: (head, tail) pairs and kValNegatives
// corrupted tails each, in new ids.
struct ValEdges {
  std::vector<std::vector<int64_t>> pairs, negs;  // [part]
};

// Held-out edges go to the partition owning the tail, with corrupted tails
// drawn from input ids, so the same for every partitioning.
ValEdges SplitValEdges(const HeldOutChooser& held, const std::vector<int64_t>& held_pairs,
                       const std::vector<int32_t>& part, const Relabeling& relabel, int64_t n,
                       int num_parts) {
  ValEdges val{std::vector<std::vector<int64_t>>(num_parts),
               std::vector<std::vector<int64_t>>(num_parts)};
  for (size_t i = 0; i < held_pairs.size(); i += 2) {
    const int64_t a = held_pairs[i], b = held_pairs[i + 1];
    const int p = part[b];
    val.pairs[p].push_back(relabel.new_id[a]);
    val.pairs[p].push_back(relabel.new_id[b]);
    for (int j = 0; j < kValNegatives; ++j) {
      val.negs[p].push_back(relabel.new_id[held.Negative(a, b, j, n)]);
    }
  }
  return val;
}

// val_edges.npy and val_neg.npy of partition p into `dir`, recorded in `info`.
void WriteValEdges(const ValEdges& val, int p, const std::string& dir, PartInfo* info) {
  const int64_t k = static_cast<int64_t>(val.pairs[p].size() / 2);
  WrittenFile f = WriteNpy(dir + kValEdgeFiles[0], val.pairs[p].data(), {k, 2});
  info->files[kValEdgeFiles[0]] = PartFile{f.bytes, f.sha256};
  f = WriteNpy(dir + kValEdgeFiles[1], val.negs[p].data(), {k, int64_t{kValNegatives}});
  info->files[kValEdgeFiles[1]] = PartFile{f.bytes, f.sha256};
  info->num_val_edges = k;
}

// Appends the written parts to the config, each with its range of the
// stored edges (parts in order, each part's in-edges in new-id order).
template <typename Index>
void AddParts(std::vector<PartInfo> infos, const CsrT<Index>& in_csc, const Relabeling& relabel,
              PartitionConfig* config) {
  int64_t edge_start = 0;
  for (PartInfo& info : infos) {
    info.edge_start = edge_start;
    for (int64_t i = info.node_start; i < info.node_end; ++i) {
      edge_start += in_csc.Degree(relabel.orig[i]);
    }
    info.edge_end = edge_start;
    config->parts.push_back(std::move(info));
  }
}

// Everything after loading, for one index width: symmetrize, assign,
// relabel, and write the partitions into `tmp_dir`.
template <typename Index>
void PartitionAndWrite(const PartitionOptions& options, Dataset& d, bool undirected,
                       const std::string& graph_name, StageTimer& timer, const std::string& tmp_dir,
                       PartitionConfig* out, int64_t* cut, int64_t* undirected_edges,
                       int64_t* used_sparsify) {
  const int64_t n = d.num_nodes;
  // METIS needs about 9x its adjacency in memory; the features are not
  // needed until writing, so they wait on disk instead of adding to the peak
  // (from before the adjacency is built).
  const Spilled<float> spill(tmp_dir + "/.features.spill", &d.features);
  const Spilled<float> edge_spill(tmp_dir + "/.edge_features.spill", &d.edge_features);
  timer.Begin("symmetrize");
  Adjacency<Index> adj = BuildAdjacency<Index>(&d, undirected, options.num_threads);
  const HeldOutChooser held(options.val_edges, options.data.seed);
  const std::vector<int64_t> held_pairs = HoldOutEdges(held, options.val_edges, &adj);
  const CsrT<Index>& in_csc = adj.in_csc();
  std::vector<uint8_t> masks[3] = {MaskOf(n, d.train_idx), MaskOf(n, d.valid_idx),
                                   MaskOf(n, d.test_idx)};

  const std::string method =
      AssignMethod(options.part_method, adj.sym.num_entries(), std::is_same_v<Index, int32_t>);
  timer.Begin(method == "metis" ? "metis" : method + " assignment");
  const std::vector<int32_t> part = AssignParts(options, method, adj, masks[0], used_sparsify);

  timer.Begin("relabel");
  const Relabeling relabel = Relabel(part, options.num_parts);
  *cut = EdgeCut(adj.sym, part);
  *undirected_edges = adj.sym.num_entries() / 2;

  timer.Begin("write");
  DescribePartitioning(options, d, graph_name, method, in_csc.num_entries(), undirected, out);
  out->user_node_ids = !d.node_ids.empty();
  if (held.active()) {
    out->val_edges_fraction = options.val_edges;
    out->num_val_edges = static_cast<int64_t>(held_pairs.size() / 2);
    out->val_negatives = kValNegatives;
  }
  const ValEdges val = SplitValEdges(held, held_pairs, part, relabel, n, options.num_parts);
  // Partitions are independent files: write (and hash) them in parallel.
  std::vector<PartInfo> infos(options.num_parts);
  ParallelFor(options.num_parts, options.num_threads, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      infos[p].dir = "part" + std::to_string(p);
      const std::string dir = tmp_dir + "/" + infos[p].dir;
      WritePart(d, spill.data(), in_csc, adj.edge_ids ? &adj.eids : nullptr, &adj.reverse,
                edge_spill.data(), relabel, static_cast<int>(p), masks, dir, &infos[p]);
      if (held.active()) WriteValEdges(val, static_cast<int>(p), dir + "/", &infos[p]);
    }
  });
  AddParts(std::move(infos), in_csc, relabel, out);
  timer.End();
}

// --node_feat_from_edges: node features from the edge features' means, when
// asked or when the graph has edge features and no node features.
void DeriveNodeFeatures(const PartitionOptions& options, bool undirected, Dataset* d) {
  if (!NodeFeaturesFromEdgesWanted(options, d->name, d->feature_dim, d->edge_feature_dim)) return;
  const int64_t had = d->feature_dim;
  // Edges held out for link evaluation leave the graph before anything sees
  // it: their features do not reach the means either.
  const HeldOutChooser held(options.val_edges, options.data.seed);
  NodeFeaturesFromEdges(d, undirected,
                        held.active() ? std::function<bool(int64_t, int64_t)>(held) : nullptr);
  SayNodeFeaturesFromEdges(options, d->name, had, d->edge_feature_dim, undirected);
}

}  // namespace

PartitionResult RunPartition(const PartitionOptions& options) {
  options.Validate();
  CheckOutput(options);
  if (IsHeteroDataset(options.data)) {
    if (options.data.feature_format == "sparse") {
      throw ConfigError("--feature_format sparse: typed graphs keep dense node features so far");
    }
    CheckTypedPartitionOptions(options);
    return RunHeteroPartition(options);
  }
  StageTimer timer;

  timer.Begin("load " +
              (options.data.files.given() ? options.data.files.edges : options.data.dataset));
  Dataset d = LoadDataset(options.data);
  ApplyLabelTask(&d, options.task);
  if (d.label_kind != LabelKind::kClass) {
    GNN_LOG(kInfo) << d.name << ": " << d.label_width << " " << LabelKindName(d.label_kind)
                   << " label column" << (d.label_width == 1 ? "" : "s")
                   << " per node (float32 label.npy; gnn-train --task "
                   << LabelTaskName(d.label_kind) << ")";
  }
  const int64_t n = d.num_nodes;
  if (options.num_parts > n) {
    throw ConfigError("--num_parts " + std::to_string(options.num_parts) + " exceeds the " +
                      std::to_string(n) + " nodes of " + d.name);
  }
  const bool undirected = TreatAsUndirected(options.direction(), d.undirected_reason);
  LogDirection(options.direction(), d.name, d.undirected_reason, d.num_edges(),
               undirected ? EdgeOrder{} : CountEdgeOrder(d.src, d.dst));
  DeriveNodeFeatures(options, undirected, &d);
  SelectEdgeWeight(options.edge_weight, &d);
  if (d.edge_labeled()) DescribeEdgeLabels(options, d);
  const std::string graph_name = options.graph_name.empty() ? d.name : options.graph_name;
  const int64_t input_edges = d.num_edges();
  // Stored entries over all entries of the node features (the report's
  // feature_density), counted before the rows wait on disk.
  double density = 0;
  if (d.feature_dim > 0) {
    const int64_t nnz = d.sparse() ? d.sparse_features.nnz()
                                   : CountNonZero(d.features.data(), d.num_nodes, d.feature_dim,
                                                  options.num_threads);
    density = static_cast<double>(nnz) /
              (static_cast<double>(d.num_nodes) * static_cast<double>(d.feature_dim));
  }

  TempOutput tmp(AbsoluteOutput(options.output) + ".tmp.");
  PartitionConfig config;
  int64_t cut = 0, undirected_edges = 0, used_sparsify = 0;
  // Ids that fit 32 bits halve the adjacency's memory (and METIS reads it
  // in place); DGL-scale graphs beyond that keep 64-bit ids.
  if (n < std::numeric_limits<int32_t>::max()) {
    PartitionAndWrite<int32_t>(options, d, undirected, graph_name, timer, tmp.path(), &config, &cut,
                               &undirected_edges, &used_sparsify);
  } else {
    PartitionAndWrite<int64_t>(options, d, undirected, graph_name, timer, tmp.path(), &config, &cut,
                               &undirected_edges, &used_sparsify);
  }

  json report = PartitionReport(config, input_edges, undirected_edges, cut, timer);
  if (config.part_method == "metis" && used_sparsify > 0) {
    report["sparsify"] = used_sparsify;
    // Chosen by gnn-partition to fit in memory, not asked for.
    if (used_sparsify != options.sparsify) report["sparsify_auto"] = true;
  }
  if (config.edge_feature_dim > 0) report["edge_feature_dim"] = config.edge_feature_dim;
  if (d.feature_dim > 0) {
    // The format chosen, and the density that chose it (auto).
    report["feature_format"] = d.sparse() ? "sparse" : "dense";
    report["feature_density"] = density;
  }
  if (config.label_kind != LabelKind::kClass) {
    report["label_kind"] = LabelKindName(config.label_kind);
    report["label_width"] = config.label_width;
  }
  config.report = report;

  const std::string json_name = graph_name + ".json";
  WriteFileAtomic(tmp.path() + "/" + json_name, PartitionConfigText(config));
  Publish(tmp, options.output);
  GNN_LOG(kInfo) << "wrote " << options.num_parts << " partitions of " << graph_name << " to "
                 << options.output;
  return PartitionResult{(fs::path(options.output) / json_name).string(), report};
}

}  // namespace gnn
