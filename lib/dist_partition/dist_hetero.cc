#include "dist_partition/dist_hetero.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/fs.h"
#include "common/log.h"
#include "common/npy.h"
#include "common/parallel.h"
#include "common/timer.h"
#include "dist_partition/dist_exchange.h"
#include "dist_partition/dist_hetero_edges.h"
#include "dist_partition/dist_output.h"
#include "dist_partition/scotch_assign.h"
#include "graph/csr.h"
#include "graph/hetero.h"
#include "partition/assign.h"
#include "partition/config.h"
#include "partition/hetero_partition.h"
#include "partition/partition_util.h"

namespace gnn {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What a rank sends the owner of a partition about each node it gives it.
struct TypedRow {
  int64_t new_id = 0, orig = 0, degree = 0, label = 0;  // orig: type-local input id
  uint8_t masks = 0;                                    // bit m: train, valid, test
};

class HeteroJob {
 public:
  HeteroJob(MpiComm& comm, Agreement& agree, const PartitionOptions& o, const DistributedOptions& d,
            const ChunkedMeta& meta, StageTimer& timer)
      : comm_(comm),
        agree_(agree),
        o_(o),
        d_(d),
        meta_(meta),
        P_(comm.size()),
        me_(comm.rank()),
        T_(meta.node_types.size()),
        timer_(timer) {}

  PartitionResult Run();

 private:
  // The relations' node types (reverses added with --undirected), the
  // layout and the description the config is written from.
  void Describe();
  void ReadTargets();
  // Edge chunks, one relation of one chunk per exchange: each in-edge to
  // its destination's owner as (row, relation x n + homogeneous source),
  // which is also that row's entry of the symmetric adjacency; the
  // source's entry is its reverse relation's in-edge (--undirected) or
  // (row, ~neighbour).
  void ExchangeEdges();
  // The in-edge CSR (in_, and in_tags_ with edge features) and the
  // symmetric adjacency (sym_) from the received (row, value[, tag])
  // entries, which it frees.
  void BuildAdjacency(std::vector<std::vector<int64_t>>* received, size_t stride);
  void ReadEdges(int c, size_t e, std::vector<int64_t>* src, std::vector<int64_t>* dst);
  void Assign();
  void Relabel();
  void ExchangeRows();
  // Type t's feature chunks, one per round, into feat_[t] in new-id order;
  // rows from rank q land from cursor[q] on.
  void ExchangeFeatures(size_t t, std::vector<int64_t> cursor);
  // With edge features: reads this rank's, fetches the partition's and
  // writes its edge files into tmp (collective).
  void WriteEdgeFeatures(const std::string& tmp);
  PartInfo Write(const std::string& tmp);
  PartitionResult Publish(const PartInfo& mine, TempOutput& tmp);

  int64_t local() const { return hi_ - lo_; }
  // Node type of this rank's node v (0-based in its range).
  size_t TypeOfLocal(int64_t v) const {
    const std::vector<int64_t>& w = layout_.within[static_cast<size_t>(me_)];
    return static_cast<size_t>(std::upper_bound(w.begin(), w.end(), v) - w.begin()) - 1;
  }
  int64_t NewId(int64_t g) const {
    if (g >= lo_ && g < hi_) return new_local_[static_cast<size_t>(g - lo_)];
    const auto it = std::lower_bound(remote_.begin(), remote_.end(), g);
    return remote_new_[static_cast<size_t>(it - remote_.begin())];
  }
  int PartOfNew(int64_t id) const {
    return static_cast<int>(std::upper_bound(part_start_.begin(), part_start_.end(), id) -
                            part_start_.begin()) -
           1;
  }

  MpiComm& comm_;
  Agreement& agree_;
  const PartitionOptions& o_;
  const DistributedOptions& d_;
  const ChunkedMeta& meta_;
  const int P_, me_;
  const size_t T_;
  StageTimer& timer_;

  HeteroDataset shape_;                      // types, relations, target, classes: no arrays
  std::vector<size_t> src_type_, dst_type_;  // per input relation
  size_t target_ = 0;
  int c0_ = 0, c1_ = 0;
  TypedLayout layout_;
  Ranges ranges_;
  int64_t n_ = 0, lo_ = 0, hi_ = 0, input_edges_ = 0;
  std::vector<int64_t> labels_;  // this rank's target nodes
  std::vector<uint8_t> masks_;

  // Rows: this rank's nodes. in_: keys (relation x n + homogeneous source,
  // then relation x n + new source after Relabel); sym_: job ids, then new ids.
  Csr in_, sym_;
  std::vector<int32_t> part_;
  std::vector<int64_t> part_start_, type_start_, new_local_, remote_, remote_new_;
  int64_t cut_ = 0, undirected_edges_ = 0, stored_edges_ = 0, scotch_edges_ = 0;
  std::string method_;

  // The partition this rank writes, in new-id order.
  std::vector<TypedRow> rows_;
  std::vector<int64_t> indptr_, keys_;
  std::vector<std::vector<float>> feat_;  // per type

  // Edge features (edges_): each in-edge's tag (2 x job edge id, + 1 on an
  // added reverse) beside in_'s entries, then beside keys_.
  bool edges_ = false;
  int labelled_ = -1;  // the relation of an edge task's labels
  TypedEdgeIds edge_ids_;
  std::vector<int64_t> in_tags_, tags_;
  PartInfo edge_info_;  // the edge files WriteEdgeFeatures wrote
};

void HeteroJob::Describe() {
  agree_.Run("checking the input", [&] {
    shape_.name = meta_.graph_name;
    for (size_t t = 0; t < T_; ++t) {
      NodeType nt;
      nt.name = meta_.node_types[t];
      nt.num_nodes = meta_.NumNodes(t);
      shape_.node_types.push_back(std::move(nt));
    }
    const std::string file = meta_.dir + "/metadata.json";
    for (const std::string& key : meta_.edge_types) {
      const size_t a = key.find(':'), b = key.rfind(':');
      if (a == std::string::npos || a == b) {
        throw DataError(file + ": edge type '" + key + "' is not src:rel:dst");
      }
      Relation r;
      r.src_type = key.substr(0, a);
      r.name = key.substr(a + 1, b - a - 1);
      r.dst_type = key.substr(b + 1);
      for (const std::string& type : {r.src_type, r.dst_type}) {
        if (shape_.TypeIndex(type) < 0) {
          throw DataError(file + ": edge type '" + key + "' names node type '" + type +
                          "', which node_type does not list");
        }
      }
      src_type_.push_back(static_cast<size_t>(shape_.TypeIndex(r.src_type)));
      dst_type_.push_back(static_cast<size_t>(shape_.TypeIndex(r.dst_type)));
      shape_.relations.push_back(std::move(r));
    }
    if (o_.undirected) AddReverseRelations(&shape_);
    shape_.target = meta_.target;
    target_ = static_cast<size_t>(shape_.TypeIndex(meta_.target));
    for (const char* name :
         {"label", kChunkSplitNames[0], kChunkSplitNames[1], kChunkSplitNames[2]}) {
      if (!NodeData(meta_, target_, name)) {
        throw DataError(file + ": the target type " + meta_.target + " has no " + name);
      }
    }
    // Keys are relation x n + node: they must fit 63 bits.
    n_ = 0;
    for (const NodeType& nt : shape_.node_types) n_ += nt.num_nodes;
    if (static_cast<double>(n_) * static_cast<double>(shape_.relations.size()) >= 0x1.0p62) {
      throw ConfigError(o_.data.dataset + ": too many nodes and relations for 64-bit edge keys");
    }
    labelled_ = o_.data.ignore_edge_data ? -1 : TypedEdgeLabelRelation(meta_);
    edges_ = !o_.data.ignore_edge_data && (TypedEdgeFeatures(meta_) || labelled_ >= 0);
  });
  if (edges_) edge_ids_ = MakeTypedEdgeIds(meta_, P_);
  c0_ = static_cast<int>(int64_t{me_} * meta_.num_chunks / P_);
  c1_ = static_cast<int>(int64_t{me_ + 1} * meta_.num_chunks / P_);
  layout_.first.assign(T_, {});
  layout_.offset.assign(1, 0);
  for (size_t t = 0; t < T_; ++t) {
    for (int r = 0; r <= P_; ++r) {
      layout_.first[t].push_back(
          meta_.ChunkStart(t, static_cast<int>(int64_t{r} * meta_.num_chunks / P_)));
    }
    layout_.offset.push_back(layout_.offset.back() + meta_.NumNodes(t));
  }
  layout_.base.assign(1, 0);
  for (int r = 0; r < P_; ++r) {
    std::vector<int64_t> w(1, 0);
    for (size_t t = 0; t < T_; ++t) {
      w.push_back(w.back() + layout_.first[t][static_cast<size_t>(r) + 1] -
                  layout_.first[t][static_cast<size_t>(r)]);
    }
    layout_.base.push_back(layout_.base.back() + w.back());
    layout_.within.push_back(std::move(w));
  }
  ranges_.start = layout_.base;
  lo_ = layout_.base[static_cast<size_t>(me_)];
  hi_ = layout_.base[static_cast<size_t>(me_) + 1];
  if (me_ == 0) {
    GNN_LOG(kInfo) << "treating " << meta_.graph_name << "'s " << meta_.edge_types.size()
                   << " relations as "
                   << (o_.undirected ? "undirected (--undirected): adding a reverse relation for "
                                       "each"
                                     : "directed (typed relations keep their direction; "
                                       "--undirected adds a reverse relation for each)");
  }
}

void HeteroJob::ReadTargets() {
  int64_t max_label = -1;
  agree_.Run("reading node data",
             [&] { max_label = ReadLabelsAndMasks(meta_, target_, c0_, c1_, &labels_, &masks_); });
  shape_.num_classes =
      std::max(meta_.num_classes, comm_.AllreduceMax(max_label + 1, "reading labels"));
}

void HeteroJob::ReadEdges(int c, size_t e, std::vector<int64_t>* src, std::vector<int64_t>* dst) {
  agree_.Run("reading edges", [&] {
    if (c >= c1_) return;
    ReadEdgeChunk(meta_, e, c, src, dst);
    const int64_t ns = meta_.NumNodes(src_type_[e]), nd = meta_.NumNodes(dst_type_[e]);
    for (size_t k = 0; k < src->size(); ++k) {
      const int64_t s = (*src)[k], d = (*dst)[k];
      if (s < 0 || s >= ns || d < 0 || d >= nd) {
        throw DataError(o_.data.dataset + ": edge chunk " + std::to_string(c) + " of " +
                        meta_.edge_types[e] + " has edge (" + std::to_string(s) + ", " +
                        std::to_string(d) + ") outside its " + std::to_string(ns) + " source and " +
                        std::to_string(nd) + " destination nodes");
      }
    }
  });
}

void HeteroJob::ExchangeEdges() {
  timer_.Begin("exchange edges");
  const size_t R = meta_.edge_types.size();
  const int rounds = static_cast<int>(comm_.AllreduceMax(int64_t{c1_ - c0_}, "reading edges"));
  std::vector<std::vector<int64_t>> received;
  int64_t read = 0;
  // With edge features an entry is (row, value, tag), else (row, value).
  const size_t stride = edges_ ? 3 : 2;
  std::vector<int64_t> read_of(R, 0);  // edges of each relation read so far
  for (int i = 0; i < rounds; ++i) {
    for (size_t e = 0; e < R; ++e) {
      std::vector<int64_t> src, dst;
      ReadEdges(c0_ + i, e, &src, &dst);
      read += static_cast<int64_t>(src.size());
      const int64_t first_id = edges_ ? edge_ids_.Id(me_, e, read_of[e]) : 0;
      read_of[e] += static_cast<int64_t>(src.size());
      const int64_t so = layout_.offset[src_type_[e]], dof = layout_.offset[dst_type_[e]];
      const int64_t key = static_cast<int64_t>(e) * n_, rev_key = static_cast<int64_t>(R + e) * n_;
      // Two passes: count per owner, then fill.
      std::vector<int64_t> counts(static_cast<size_t>(P_), 0);
      std::vector<int64_t> at;
      std::vector<int64_t> send;
      for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
          at = Offsets(counts);
          send.resize(static_cast<size_t>(at.back()));
        }
        auto put = [&](int64_t row, int64_t value, int64_t tag) {
          const size_t r = static_cast<size_t>(ranges_.Owner(row));
          if (pass == 0) {
            counts[r] += static_cast<int64_t>(stride);
            return;
          }
          send[static_cast<size_t>(at[r])] = row;
          send[static_cast<size_t>(at[r]) + 1] = value;
          if (stride == 3) send[static_cast<size_t>(at[r]) + 2] = tag;
          at[r] += static_cast<int64_t>(stride);
        };
        for (size_t k = 0; k < src.size(); ++k) {
          const int64_t js = layout_.JobId(src_type_[e], src[k]);
          const int64_t jd = layout_.JobId(dst_type_[e], dst[k]);
          // The in-edge gives the destination's row of the symmetric
          // adjacency too; the source's row comes from the reverse
          // relation's in-edge or, without one, a pair of its own.
          const int64_t tag = 2 * (first_id + static_cast<int64_t>(k));
          put(jd, key + so + src[k], tag);
          if (o_.undirected) {
            put(js, rev_key + dof + dst[k], tag + 1);
          } else if (js != jd) {
            put(js, ~jd, -1);
          }
        }
      }
      FreeVector(src);
      FreeVector(dst);
      std::vector<int64_t> got_counts;
      received.push_back(comm_.Alltoallv(send, counts, &got_counts, "exchanging edges"));
    }
  }
  input_edges_ = comm_.AllreduceSum(read, "counting edges") * (o_.undirected ? 2 : 1);
  BuildAdjacency(&received, stride);
}

void HeteroJob::BuildAdjacency(std::vector<std::vector<int64_t>>* received, size_t stride) {
  timer_.Begin("build adjacency");
  in_.indptr.assign(static_cast<size_t>(local()) + 1, 0);
  sym_.indptr.assign(static_cast<size_t>(local()) + 1, 0);
  // The symmetric adjacency's neighbour in a received pair (-1: none, a
  // self-loop).
  auto neighbour = [&](int64_t row, int64_t value) -> int64_t {
    if (value < 0) return ~value;
    const int64_t g = layout_.JobIdOfHomogeneous(value % n_);
    return g == row ? -1 : g;
  };
  for (const std::vector<int64_t>& got : *received) {
    for (size_t k = 0; k < got.size(); k += stride) {
      const size_t row = static_cast<size_t>(got[k] - lo_) + 1;
      if (got[k + 1] >= 0) ++in_.indptr[row];
      if (neighbour(got[k], got[k + 1]) >= 0) ++sym_.indptr[row];
    }
  }
  std::vector<int64_t> in_at, sym_at;
  for (auto [csr, at] : {std::pair{&in_, &in_at}, std::pair{&sym_, &sym_at}}) {
    for (int64_t v = 0; v < local(); ++v) csr->indptr[v + 1] += csr->indptr[v];
    csr->indices.resize(static_cast<size_t>(csr->indptr[local()]));
    at->assign(csr->indptr.begin(), csr->indptr.end() - 1);
  }
  if (edges_) in_tags_.resize(in_.indices.size());
  for (std::vector<int64_t>& got : *received) {
    for (size_t k = 0; k < got.size(); k += stride) {
      const size_t row = static_cast<size_t>(got[k] - lo_);
      const int64_t value = got[k + 1], g = neighbour(got[k], value);
      if (value >= 0) {
        if (edges_) in_tags_[static_cast<size_t>(in_at[row])] = got[k + 2];
        in_.indices[static_cast<size_t>(in_at[row]++)] = value;
      }
      if (g >= 0) sym_.indices[static_cast<size_t>(sym_at[row]++)] = g;
    }
    FreeVector(got);
  }
  // A row's in-edges sorted by key: by relation, then by the source's input
  // id; repeated edges by input line (their tags), as on one machine.
  if (edges_) {
    SortRowsWithTags(&in_, &in_tags_, o_.num_threads);
  } else {
    SortRows(&in_, false, o_.num_threads);
  }
  SortRows(&sym_, true, o_.num_threads);
  for (int64_t g : sym_.indices) {
    if (g < lo_ || g >= hi_) remote_.push_back(g);
  }
  std::sort(remote_.begin(), remote_.end());
  remote_.erase(std::unique(remote_.begin(), remote_.end()), remote_.end());
  remote_.shrink_to_fit();
}

void HeteroJob::Assign() {
  const size_t me = static_cast<size_t>(me_);
  if (o_.part_method == "random") {
    method_ = "random";
    timer_.Begin("random assignment");
    // The single-machine shuffle over homogeneous ids (12 bytes per node on
    // every machine while it is drawn): both paths give the same partitions.
    const std::vector<int32_t> all = RandomAssign(n_, o_.num_parts, o_.data.seed);
    for (size_t t = 0; t < T_; ++t) {
      part_.insert(part_.end(), all.begin() + layout_.offset[t] + layout_.first[t][me],
                   all.begin() + layout_.offset[t] + layout_.first[t][me + 1]);
    }
    return;
  }
  method_ = "ptscotch";
  timer_.Begin("ptscotch");
  // PT-Scotch balances one weight: the single-machine constraints (one per
  // node type, then train nodes and in-degree when asked) folded into one,
  // each scaled to weigh as much as the node count.
  int64_t train = 0;
  if (o_.balance_train) {
    train = comm_.AllreduceSum(
        std::count_if(masks_.begin(), masks_.end(), [](uint8_t m) { return m & 1; }),
        "weighing nodes");
  }
  const int64_t in_edges = comm_.AllreduceSum(in_.num_entries(), "weighing nodes");
  const double n = static_cast<double>(n_);
  std::vector<int64_t> weights(static_cast<size_t>(local()), 1);
  for (int64_t v = 0; v < local(); ++v) {
    const size_t t = TypeOfLocal(v);
    double w = n / static_cast<double>(std::max<int64_t>(1, meta_.NumNodes(t)));
    if (t == target_ && train > 0 && (masks_[static_cast<size_t>(v - layout_.within[me][t])] & 1)) {
      w += n / static_cast<double>(train);
    }
    if (o_.balance_edges && in_edges > 0) {
      w += static_cast<double>(in_.Degree(v)) * n / static_cast<double>(in_edges);
    }
    weights[static_cast<size_t>(v)] = std::max<int64_t>(1, static_cast<int64_t>(w + 0.5));
  }
  Csr sparse;
  if (d_.sparsify > 0)
    sparse = Sparsify(comm_, ranges_, lo_, sym_, remote_, d_.sparsify, o_.data.seed);
  Csr& graph = d_.sparsify > 0 ? sparse : sym_;
  scotch_edges_ = comm_.AllreduceSum(graph.num_entries(), "sparsifying") / 2;
  agree_.Run("partitioning with PT-Scotch", [&] {
    part_ = ScotchAssign(comm_, graph.indptr, graph.indices, weights, o_.num_parts,
                         kScotchImbalance, o_.data.seed);
  });
}

void HeteroJob::Relabel() {
  timer_.Begin("relabel");
  // New ids: partition-major, then type, then input id (the single-machine
  // order): this rank's nodes of (part, type) follow those of lower ranks.
  const size_t parts = static_cast<size_t>(o_.num_parts);
  std::vector<int64_t> counts(parts * T_, 0);
  for (int64_t v = 0; v < local(); ++v) {
    ++counts[static_cast<size_t>(part_[static_cast<size_t>(v)]) * T_ + TypeOfLocal(v)];
  }
  const std::vector<int64_t> total = comm_.AllreduceSum(counts, "relabeling");
  std::vector<int64_t> fill = comm_.ExscanSum(counts, "relabeling");
  type_start_ = Offsets(total);  // [part x type + 1]: part-major, then type
  part_start_.clear();
  for (size_t p = 0; p <= parts; ++p) part_start_.push_back(type_start_[p * T_]);
  for (size_t k = 0; k < fill.size(); ++k) fill[k] += type_start_[k];
  new_local_.resize(static_cast<size_t>(local()));
  for (int64_t v = 0; v < local(); ++v) {
    const size_t k = static_cast<size_t>(part_[static_cast<size_t>(v)]) * T_ + TypeOfLocal(v);
    new_local_[static_cast<size_t>(v)] = fill[k]++;
  }
  remote_new_ = AskOwners(
      comm_, ranges_, remote_, [&](int64_t v) { return new_local_[static_cast<size_t>(v)]; },
      "relabeling");
  ParallelFor(sym_.num_entries(), o_.num_threads, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) sym_.indices[k] = NewId(sym_.indices[k]);
  });
  ParallelFor(in_.num_entries(), o_.num_threads, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t key = in_.indices[k], rel = key / n_;
      in_.indices[k] = rel * n_ + NewId(layout_.JobIdOfHomogeneous(key % n_));
    }
  });
  FreeVector(remote_);
  FreeVector(remote_new_);
  int64_t cut = 0;
  for (int64_t v = 0; v < local(); ++v) {
    for (int64_t k = sym_.indptr[v]; k < sym_.indptr[v + 1]; ++k) {
      cut += PartOfNew(sym_.indices[k]) != part_[static_cast<size_t>(v)];
    }
  }
  const std::vector<int64_t> sums =
      comm_.AllreduceSum({cut, sym_.num_entries(), in_.num_entries()}, "counting the cut");
  cut_ = sums[0] / 2;
  undirected_edges_ = sums[1] / 2;
  stored_edges_ = sums[2];
  FreeVector(sym_.indptr);
  FreeVector(sym_.indices);
}

void HeteroJob::ExchangeRows() {
  timer_.Begin("exchange rows");
  const size_t me = static_cast<size_t>(me_);
  std::vector<int64_t> nodes(static_cast<size_t>(P_), 0), entries(static_cast<size_t>(P_), 0);
  // (part, type) counts of this rank's nodes, for placing the feature rows.
  std::vector<int64_t> type_counts(static_cast<size_t>(P_) * T_, 0);
  for (int64_t v = 0; v < local(); ++v) {
    const size_t p = static_cast<size_t>(part_[static_cast<size_t>(v)]);
    ++nodes[p];
    entries[p] += in_.Degree(v);
    ++type_counts[p * T_ + TypeOfLocal(v)];
  }
  std::vector<int64_t> at = Offsets(nodes), eat = Offsets(entries);
  std::vector<TypedRow> send(static_cast<size_t>(local()));
  std::vector<int64_t> keys(static_cast<size_t>(eat.back()));
  std::vector<int64_t> tags(edges_ ? keys.size() : 0);
  for (int64_t v = 0; v < local(); ++v) {
    const size_t p = static_cast<size_t>(part_[static_cast<size_t>(v)]), t = TypeOfLocal(v);
    TypedRow& row = send[static_cast<size_t>(at[p]++)];
    row.new_id = new_local_[static_cast<size_t>(v)];
    row.orig = layout_.first[t][me] + v - layout_.within[me][t];
    row.degree = in_.Degree(v);
    if (t == target_) {
      const size_t i = static_cast<size_t>(v - layout_.within[me][t]);
      row.label = labels_[i];
      row.masks = masks_[i];
    }
    for (int64_t k = in_.indptr[v]; k < in_.indptr[v + 1]; ++k) {
      if (edges_) tags[static_cast<size_t>(eat[p])] = in_tags_[static_cast<size_t>(k)];
      keys[static_cast<size_t>(eat[p]++)] = in_.indices[k];
    }
  }
  FreeVector(in_.indptr);
  FreeVector(in_.indices);
  FreeVector(in_tags_);
  FreeVector(labels_);
  FreeVector(masks_);
  std::vector<int64_t> got;
  std::vector<TypedRow> rows = comm_.Alltoallv(send, nodes, &got, "exchanging rows");
  FreeVector(send);
  std::vector<int64_t> got_keys = comm_.Alltoallv(keys, entries, &got, "exchanging rows");
  FreeVector(keys);
  std::vector<int64_t> got_tags;
  if (edges_) got_tags = comm_.Alltoallv(tags, entries, &got, "exchanging rows");
  FreeVector(tags);
  // Pieces arrive in rank order; new ids are type-major across ranks: place
  // each row (and its in-edges) at its new id.
  const int64_t start = part_start_[me], owned = part_start_[me + 1] - start;
  rows_.resize(static_cast<size_t>(owned));
  for (const TypedRow& r : rows) rows_[static_cast<size_t>(r.new_id - start)] = r;
  indptr_.assign(static_cast<size_t>(owned) + 1, 0);
  for (int64_t i = 0; i < owned; ++i) indptr_[i + 1] = indptr_[i] + rows_[i].degree;
  keys_.resize(got_keys.size());
  tags_.resize(got_tags.size());
  int64_t from = 0;
  for (const TypedRow& r : rows) {
    std::copy_n(got_keys.begin() + from, r.degree, keys_.begin() + indptr_[r.new_id - start]);
    if (edges_) {
      std::copy_n(got_tags.begin() + from, r.degree, tags_.begin() + indptr_[r.new_id - start]);
    }
    from += r.degree;
  }
  FreeVector(rows);
  FreeVector(got_keys);
  FreeVector(got_tags);

  timer_.Begin("exchange features");
  std::vector<int64_t> unused;
  std::vector<int64_t> per_rank(static_cast<size_t>(P_), static_cast<int64_t>(T_));
  // from_rank[q x T + t]: rank q's nodes of type t in this partition.
  const std::vector<int64_t> from_rank =
      comm_.Alltoallv(type_counts, per_rank, &unused, "exchanging features");
  feat_.assign(T_, {});
  for (size_t t = 0; t < T_; ++t) {
    if (!NodeData(meta_, t, "feat")) continue;
    std::vector<int64_t> cursor(static_cast<size_t>(P_), 0);
    for (int q = 1; q < P_; ++q) {
      cursor[static_cast<size_t>(q)] =
          cursor[static_cast<size_t>(q) - 1] + from_rank[static_cast<size_t>(q - 1) * T_ + t];
    }
    ExchangeFeatures(t, cursor);
  }
  FreeVector(part_);
}

void HeteroJob::ExchangeFeatures(size_t t, std::vector<int64_t> cursor) {
  const size_t me = static_cast<size_t>(me_);
  const int rounds = static_cast<int>(comm_.AllreduceMax(int64_t{c1_ - c0_}, "features"));
  int64_t width = -1;
  int64_t first = layout_.first[t][me];  // type-local id of the next chunk's first node
  for (int i = 0; i < rounds; ++i) {
    const int c = c0_ + i;
    std::vector<float> rows;
    agree_.Run("reading features", [&] {
      if (c >= c1_) return;
      int64_t w = 0;
      rows = ReadChunkNodeData<float>(meta_, t, "feat", c, &w);
      if (width >= 0 && w != width) {
        throw DataError(o_.data.dataset + ": feature chunk " + std::to_string(c) + " of " +
                        meta_.node_types[t] + " has " + std::to_string(w) + " columns, chunk " +
                        std::to_string(c0_) + " has " + std::to_string(width));
      }
      width = w;
    });
    if (i == 0) {
      const std::vector<int64_t> mm = comm_.AllreduceMax({width, -width}, "features");
      agree_.Run("reading features", [&] {
        if (mm[0] != -mm[1]) {
          throw DataError(o_.data.dataset + ": feature chunks of " + meta_.node_types[t] +
                          " have " + std::to_string(-mm[1]) + " and " + std::to_string(mm[0]) +
                          " columns");
        }
      });
      shape_.node_types[t].feature_dim = width;
      const int64_t owned = type_start_[me * T_ + t + 1] - type_start_[me * T_ + t];
      feat_[t].resize(static_cast<size_t>(owned * width));
    }
    const int64_t count = c < c1_ ? meta_.nodes_per_chunk[t][static_cast<size_t>(c)] : 0;
    const int64_t job_first = layout_.within[me][t] + first - layout_.first[t][me];
    ExchangeFeatureRows(
        comm_, rows.data(), count, width,
        [&](int64_t k) { return part_[static_cast<size_t>(job_first + k)]; }, feat_[t].data(),
        &cursor);
    first += count;
  }
}

PartInfo HeteroJob::Write(const std::string& tmp) {
  timer_.Begin("write");
  const size_t me = static_cast<size_t>(me_);
  PartInfo info;
  info.dir = "part" + std::to_string(me_);
  const std::string dir = tmp + "/" + info.dir;
  MakeDirs(dir);
  info.node_start = part_start_[me];
  info.node_end = part_start_[me + 1];
  for (size_t t = 0; t < T_; ++t) {
    info.ntype_ranges.push_back({type_start_[me * T_ + t], type_start_[me * T_ + t + 1]});
  }
  WriteTypedEdges(
      dir, indptr_, shape_.relations.size(),
      [&](int64_t i, std::vector<int64_t>* src, std::vector<int64_t>* etype) {
        for (int64_t k = indptr_[i]; k < indptr_[i + 1]; ++k) {
          src->push_back(keys_[k] % n_);
          etype->push_back(keys_[k] / n_);
        }
      },
      &info);
  FreeVector(keys_);
  auto record = [&](const std::string& name, const WrittenFile& f) {
    info.files[name] = PartFile{f.bytes, f.sha256};
  };
  std::vector<int64_t> column;
  for (const TypedRow& r : rows_) column.push_back(r.orig);
  record("orig_nids.npy", WriteNpy(dir + "/orig_nids.npy", column));
  for (size_t t = 0; t < T_; ++t) {
    const int64_t dim = shape_.node_types[t].feature_dim;
    if (dim == 0) continue;
    const std::string name = TypedFeatureFile(shape_.node_types[t].name);
    const auto [b, e] = info.ntype_ranges[t];
    record(name, WriteNpy(dir + "/" + name, feat_[t].data(), {e - b, dim}));
    FreeVector(feat_[t]);
  }
  const auto [tb, te] = info.ntype_ranges[target_];
  std::vector<int64_t> labels;
  std::vector<uint8_t> masks[3];
  for (int64_t i = tb; i < te; ++i) {
    const TypedRow& r = rows_[static_cast<size_t>(i - info.node_start)];
    labels.push_back(r.label);
    for (int m = 0; m < 3; ++m) masks[m].push_back((r.masks >> m) & 1);
  }
  WriteTypedTargets(dir, shape_.target, labels, masks, &info);
  info.files.insert(edge_info_.files.begin(), edge_info_.files.end());
  std::copy_n(edge_info_.num_split_edges, 3, info.num_split_edges);
  info.edge_end = indptr_.back();
  FreeVector(rows_);
  return info;
}

void HeteroJob::WriteEdgeFeatures(const std::string& tmp) {
  if (!edges_) return;
  timer_.Begin("exchange edge data");
  std::vector<int64_t> widths;
  const OwnedEdgeData owned =
      ReadOwnedTypedEdgeData(comm_, agree_, meta_, c0_, c1_, edge_ids_, &widths);
  DescribeTypedEdgeData(o_, meta_, owned, widths, labelled_, me_ == 0, &shape_);
  WriteTypedPartEdgeData(comm_, edge_ids_, owned, labelled_, tags_, indptr_,
                         tmp + "/part" + std::to_string(me_), &edge_info_);
  FreeVector(tags_);
}

PartitionResult HeteroJob::Publish(const PartInfo& mine, TempOutput& tmp) {
  timer_.Begin("publish");
  const std::string graph_name = o_.graph_name.empty() ? meta_.graph_name : o_.graph_name;
  // Feature widths of the types this rank read none of are known elsewhere.
  std::vector<int64_t> dims;
  for (const NodeType& nt : shape_.node_types) dims.push_back(nt.feature_dim);
  dims = comm_.AllreduceMax(dims, "describing the partitions");
  for (size_t t = 0; t < T_; ++t) shape_.node_types[t].feature_dim = dims[t];
  PartitionConfig config =
      DescribeHeteroPartitioning(o_, shape_, graph_name, n_, stored_edges_, method_);
  config.parts = GatherParts(comm_, mine);
  json report = HeteroReport(config, shape_, input_edges_, undirected_edges_, cut_, timer_);
  AddMachinesReport(comm_, timer_, &report);
  if (method_ == "ptscotch") {
    report["engine"] = ScotchVersion();
    report["sparsify"] = d_.sparsify;
    report["engine_edges"] = scotch_edges_;
  }
  config.report = report;
  const std::string json_name = graph_name + ".json";
  PublishOncePerFilesystem(comm_, agree_, tmp, json_name, PartitionConfigText(config), o_.output);
  timer_.End();
  return PartitionResult{(fs::path(o_.output) / json_name).string(), report};
}

PartitionResult HeteroJob::Run() {
  Describe();
  ReadTargets();
  ExchangeEdges();
  Assign();
  Relabel();
  ExchangeRows();
  std::unique_ptr<TempOutput> tmp = AgreedTempOutput(comm_, agree_, o_.output);
  WriteEdgeFeatures(tmp->path());
  PartInfo mine;
  agree_.Run("writing the partition", [&] { mine = Write(tmp->path()); });
  return Publish(mine, *tmp);
}

}  // namespace

PartitionResult RunDistributedHetero(MpiComm& comm, Agreement& agree, const PartitionOptions& o,
                                     const DistributedOptions& d, const ChunkedMeta& meta,
                                     StageTimer& timer) {
  HeteroJob job(comm, agree, o, d, meta, timer);
  return job.Run();
}

}  // namespace gnn
