#include "dist_partition/dist_partition.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <new>
#include <numeric>

#include "common/fs.h"
#include "common/log.h"
#include "common/npy.h"
#include "common/parallel.h"
#include "common/random.h"
#include "common/timer.h"
#include "dist_partition/agreement.h"
#include "dist_partition/dist_edge_data.h"
#include "dist_partition/dist_exchange.h"
#include "dist_partition/dist_hetero.h"
#include "dist_partition/dist_job.h"
#include "dist_partition/dist_label_rows.h"
#include "dist_partition/dist_output.h"
#include "dist_partition/mpi_comm.h"
#include "dist_partition/scotch_assign.h"
#include "graph/chunked.h"
#include "graph/csr.h"
#include "partition/assign.h"
#include "partition/config.h"
#include "partition/hetero_partition.h"
#include "partition/partition_util.h"

namespace gnn {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

class Job {
 public:
  Job(MpiComm& comm, PartitionOptions o, const DistributedOptions& d)
      : comm_(comm), agree_(comm), o_(std::move(o)), d_(d), P_(comm.size()), me_(comm.rank()) {}

  PartitionResult Run();

 private:
  void CheckInput();
  void ReadNodeData();
  // Edges to the owners of their ends, then this rank's adjacencies.
  void ExchangeEdges();
  // Reads this rank's edge chunks, one per round, and sends each edge to
  // its destination's owner and, reversed, to its source's owner. Returns
  // the (row, col) pairs received, one buffer per round.
  std::vector<std::vector<int64_t>> SendEdges();
  // Edge chunk c into (src, dst), checked against the node count (agreed;
  // nothing to read when c is past this rank's chunks).
  void ReadEdges(int c, std::vector<int64_t>* src, std::vector<int64_t>* dst);
  // One send buffer of (row, col) pairs, grouped by owner; `counts` per rank.
  // With edge data, (row, col, tag) triples: tag 2 * input edge id (+1 on
  // an undirected edge's added reverse), -1 on a directed edge's reverse
  // (symmetric adjacency only); `first`: the input id of src[0].
  std::vector<int64_t> PackEdges(const std::vector<int64_t>& src, const std::vector<int64_t>& dst,
                                 int64_t first, std::vector<int64_t>* counts) const;
  // The input's edge count over all ranks (and rank 0's direction line).
  void CountInputEdges(int64_t read, const EdgeOrder& order);
  // sym_ and in_ from the received pairs, which it frees.
  void BuildAdjacency(std::vector<std::vector<int64_t>>* received);
  void Assign();
  void Relabel();
  // Rows, then features, to their partition's rank.
  void ExchangeRows();
  // Each node's row and in-neighbours to its partition's rank, into rows_
  // and indices_; frees the adjacencies and labels. Returns the nodes sent
  // to each rank.
  std::vector<int64_t> SendRows();
  // Feature chunks, one per round, into feat_ in new-id order; `nodes`:
  // what SendRows sent to each rank.
  void ExchangeFeatures(const std::vector<int64_t>& nodes);
  // Feature chunk c (agreed; none past this rank's chunks); its width must
  // be `width` once that is known (>= 0), which it sets.
  std::vector<float> ReadFeatureChunk(int c, int64_t* width);
  // Round 0: every rank read a chunk, and the widths must agree; sizes feat_.
  void AgreeFeatureWidth(int64_t width);
  // The stored edges' data from the ranks that read them, written into
  // tmp's part<me>/ as it arrives; node features from their means and edge
  // weights (--node_feat_from_edges, --edge_weight) as the single-machine
  // partitioner makes them.
  void ExchangeEdgeData(const std::string& tmp);
  PartInfo Write(const std::string& tmp);
  PartitionResult Publish(const PartInfo& mine, TempOutput& tmp);

  // The stored in-edges: the symmetric adjacency itself when undirected
  // and without edge data (which keeps repeated edges apart).
  bool keep_in() const { return !undirected_ || edge_data_; }
  const Csr& in() const { return keep_in() ? in_ : sym_; }

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
  Agreement agree_;
  PartitionOptions o_;
  DistributedOptions d_;
  const int P_, me_;
  StageTimer timer_;

  ChunkedMeta meta_;
  int c0_ = 0, c1_ = 0;  // this rank's chunks [c0, c1)
  Ranges ranges_;
  int64_t n_ = 0, lo_ = 0, hi_ = 0;
  bool undirected_ = false;
  bool edge_data_ = false;  // edge features or an edge task's labels
  Ranges edge_ranges_;      // the input edges each rank read
  std::vector<int64_t> labels_;
  std::vector<uint8_t> masks_;  // bits as NodeRow::masks
  int64_t num_classes_ = 0, input_edges_ = 0;

  // Rows: this rank's nodes; entries: global input ids, new ids after Relabel. in_:
  // directed graphs only.
  Csr sym_, in_;
  std::vector<int32_t> part_;
  std::vector<int64_t> part_start_, new_local_, remote_, remote_new_;
  int64_t cut_ = 0, undirected_edges_ = 0, stored_edges_ = 0;
  std::string method_;
  int64_t scotch_edges_ = 0;  // undirected edges PT-Scotch saw

  // Rows of the partition this rank writes, in new-id order.
  std::vector<NodeRow> rows_;
  std::vector<int64_t> indices_;
  std::vector<float> feat_;
  int64_t feature_dim_ = 0;

  // Edge data: in_'s tags (PackEdges), then the stored edges' (in new-id
  // order); the edges this rank read; the files written.
  std::vector<int64_t> in_tags_, stored_tags_;
  OwnedEdgeData owned_edges_;
  PartInfo edge_info_;
  int64_t edge_width_ = 0;  // stored feature columns (1 with --edge_weight)

  // Label rows (multi-label or regression): this rank's, then its
  // partition's in new-id order.
  LabelRows label_rows_;
  std::vector<float> part_label_rows_;
};

void Job::CheckInput() {
  agree_.Run("checking the input", [&] {
    if (o_.num_parts == 0) o_.num_parts = P_;
    o_.Validate();
    if (o_.part_method == "stream") {
      throw ConfigError(
          "--part_method stream runs on one machine; --distributed takes metis (PT-Scotch) or "
          "random");
    }
    if (o_.val_edges > 0) throw ConfigError("--val_edges is not supported with --distributed");
    if (d_.machines > 0 && d_.machines != P_) {
      throw ConfigError("--ip_config lists " + std::to_string(d_.machines) + " machines but " +
                        std::to_string(P_) + " processes were started");
    }
    if (o_.num_parts != P_) {
      throw ConfigError("--num_parts " + std::to_string(o_.num_parts) +
                        " must equal the number of machines (" + std::to_string(P_) +
                        "): each machine writes its own partition");
    }
    if (o_.data.files.given()) {
      throw ConfigError(
          "--distributed reads DGL's chunked format: write it from the plain files first, "
          "gnn-dataset --edges ... --write_chunked " +
          std::to_string(P_) + " --output DIR");
    }
    if (!IsChunkedFolder(o_.data.dataset)) {
      throw ConfigError(
          "--distributed reads a chunked dataset (a folder with metadata.json, "
          "from gnn-dataset --write_chunked N); " +
          o_.data.dataset + " is not one");
    }
    CheckOutput(o_);
    meta_ = ReadChunkedMeta(o_.data.dataset);
    if (meta_.hetero()) CheckTypedPartitionOptions(o_);
    if (o_.data.ignore_edge_data) {
      RefuseEdgeData(o_.data.dataset + "/metadata.json", meta_.edge_data, true);
    } else if (meta_.hetero()) {
      TypedEdgeFeatures(meta_);  // labels on two relations: one line, before any work
    } else {
      edge_data_ = !meta_.edge_data.empty();
    }
    if (!edge_data_ && !o_.edge_weight.empty()) {
      throw ConfigError("--edge_weight " + o_.edge_weight + ": " + meta_.graph_name +
                        " has no edge features");
    }
    for (size_t t = 0; t < meta_.node_types.size(); ++t) {
      if (NodeData(meta_, t, kChunkUserIds)) {
        throw DataError(o_.data.dataset + "/metadata.json: node_data." + meta_.node_types[t] + "." +
                        kChunkUserIds +
                        " (the user's node ids) is not carried by --distributed yet (gnn-partition "
                        "on one machine keeps them)");
      }
    }
    int64_t nodes = 0;
    for (size_t t = 0; t < meta_.node_types.size(); ++t) nodes += meta_.NumNodes(t);
    if (o_.num_parts > nodes) {
      throw ConfigError("--num_parts " + std::to_string(o_.num_parts) + " exceeds the " +
                        std::to_string(nodes) + " nodes of " + o_.data.dataset);
    }
    if (meta_.num_chunks < P_) {
      throw ConfigError(o_.data.dataset + " has " + std::to_string(meta_.num_chunks) +
                        " chunks; --distributed needs at least one per machine (" +
                        std::to_string(P_) + ")");
    }
  });
  c0_ = static_cast<int>(int64_t{me_} * meta_.num_chunks / P_);
  c1_ = static_cast<int>(int64_t{me_ + 1} * meta_.num_chunks / P_);
  for (int r = 0; r <= P_; ++r) {
    ranges_.start.push_back(
        meta_.ChunkStart(0, static_cast<int>(int64_t{r} * meta_.num_chunks / P_)));
  }
  n_ = meta_.NumNodes(0);
  lo_ = ranges_.start[static_cast<size_t>(me_)];
  hi_ = ranges_.start[static_cast<size_t>(me_) + 1];
  undirected_ = TreatAsUndirected(o_.direction(), meta_.undirected_reason);
  edge_ranges_ = EdgeRanges(meta_, P_);
}

void Job::ReadNodeData() {
  int64_t max_label = -1;
  bool rows = false;
  agree_.Run("reading node data", [&] {
    rows = ChunkedLabelRows(meta_, o_.task);
    max_label = ReadLabelsAndMasks(meta_, 0, c0_, c1_, rows ? nullptr : &labels_, &masks_);
  });
  if (rows) {
    label_rows_ = ReadLabelRows(comm_, agree_, meta_, o_.task, c0_, c1_, lo_, &labels_, &max_label);
    // NodeRow's class id stays 0 beside rows of targets.
    if (label_rows_.kind != LabelKind::kClass) labels_.assign(static_cast<size_t>(hi_ - lo_), 0);
  }
  // Class ids read as rows count max + 1 classes, as SetLabelRows does.
  num_classes_ =
      std::max(rows ? 0 : meta_.num_classes, comm_.AllreduceMax(max_label + 1, "reading labels"));
  if (label_rows_.kind == LabelKind::kMultilabel) num_classes_ = label_rows_.width;
  if (label_rows_.kind == LabelKind::kRegression) num_classes_ = 0;
}

void Job::ExchangeEdges() {
  std::vector<std::vector<int64_t>> received = SendEdges();
  timer_.Begin("build adjacency");
  BuildAdjacency(&received);
  if (edge_data_) {
    const int64_t repeats = comm_.AllreduceSum(SortRowsWithTags(&in_, &in_tags_, o_.num_threads),
                                               "building the adjacency");
    if (me_ == 0) SayRepeatedEdges(repeats, undirected_);
  } else if (!undirected_) {
    SortRows(&in_, false, o_.num_threads);
  }
  SortRows(&sym_, true, o_.num_threads);
  // The neighbours other ranks hold, sorted.
  for (int64_t g : sym_.indices) {
    if (g < lo_ || g >= hi_) remote_.push_back(g);
  }
  std::sort(remote_.begin(), remote_.end());
  remote_.erase(std::unique(remote_.begin(), remote_.end()), remote_.end());
  remote_.shrink_to_fit();
}

std::vector<std::vector<int64_t>> Job::SendEdges() {
  const int rounds = static_cast<int>(comm_.AllreduceMax(int64_t{c1_ - c0_}, "reading edges"));
  // Received (row, col) pairs, one buffer per round; for a directed graph
  // ~col marks a pair that is only the reverse of an edge (symmetric
  // adjacency, not an in-edge).
  std::vector<std::vector<int64_t>> received;
  int64_t read = 0;
  EdgeOrder order;  // for the --undirected hint
  for (int i = 0; i < rounds; ++i) {
    std::vector<int64_t> src, dst;
    ReadEdges(c0_ + i, &src, &dst);
    const int64_t first = edge_ranges_.start[static_cast<size_t>(me_)] + read;
    read += static_cast<int64_t>(src.size());
    if (!undirected_) order.Add(CountEdgeOrder(src, dst));
    std::vector<int64_t> counts;
    const std::vector<int64_t> send = PackEdges(src, dst, first, &counts);
    FreeVector(src);
    FreeVector(dst);
    std::vector<int64_t> got_counts;
    received.push_back(comm_.Alltoallv(send, counts, &got_counts, "exchanging edges"));
  }
  CountInputEdges(read, order);
  return received;
}

void Job::ReadEdges(int c, std::vector<int64_t>* src, std::vector<int64_t>* dst) {
  agree_.Run("reading edges", [&] {
    if (c >= c1_) return;
    ReadEdgeChunk(meta_, 0, c, src, dst);
    for (size_t k = 0; k < src->size(); ++k) {
      const int64_t s = (*src)[k], d = (*dst)[k];
      if (s < 0 || s >= n_ || d < 0 || d >= n_) {
        throw DataError(o_.data.dataset + ": edge chunk " + std::to_string(c) + " has edge (" +
                        std::to_string(s) + ", " + std::to_string(d) + ") outside the " +
                        std::to_string(n_) + " nodes");
      }
    }
  });
}

std::vector<int64_t> Job::PackEdges(const std::vector<int64_t>& src,
                                    const std::vector<int64_t>& dst, int64_t first,
                                    std::vector<int64_t>* counts) const {
  // Each edge goes to its destination's owner (an in-edge) and, reversed,
  // to its source's owner (the symmetric adjacency; with edge data and
  // undirected, an in-edge too).
  const int64_t stride = edge_data_ ? 3 : 2;
  counts->assign(static_cast<size_t>(P_), 0);
  for (size_t k = 0; k < src.size(); ++k) {
    (*counts)[static_cast<size_t>(ranges_.Owner(dst[k]))] += stride;
    if (src[k] != dst[k]) (*counts)[static_cast<size_t>(ranges_.Owner(src[k]))] += stride;
  }
  std::vector<int64_t> at = Offsets(*counts);
  std::vector<int64_t> send(static_cast<size_t>(at.back()));
  auto put = [&](int64_t row, int64_t col, int64_t tag) {
    int64_t* p = &send[static_cast<size_t>(at[static_cast<size_t>(ranges_.Owner(row))])];
    p[0] = row, p[1] = col;
    if (edge_data_) p[2] = tag;
    at[static_cast<size_t>(ranges_.Owner(row))] += stride;
  };
  for (size_t k = 0; k < src.size(); ++k) {
    const int64_t id = first + static_cast<int64_t>(k);
    put(dst[k], src[k], 2 * id);
    if (src[k] == dst[k]) continue;
    if (edge_data_) {
      put(src[k], dst[k], undirected_ ? 2 * id + 1 : -1);
    } else {
      put(src[k], undirected_ ? dst[k] : ~dst[k], 0);
    }
  }
  return send;
}

void Job::CountInputEdges(int64_t read, const EdgeOrder& order) {
  const std::vector<int64_t> sums =
      comm_.AllreduceSum({read, order.forward, order.backward, order.loops}, "counting edges");
  input_edges_ = sums[0];
  if (me_ == 0) {
    LogDirection(o_.direction(), meta_.graph_name, meta_.undirected_reason, input_edges_,
                 EdgeOrder{sums[1], sums[2], sums[3]});
  }
}

void Job::BuildAdjacency(std::vector<std::vector<int64_t>>* received) {
  // The symmetric adjacency (sorted, no duplicates, no self-loops) and,
  // for a directed graph or one with edge data, the in-edges as the
  // single-machine path stores them (every edge, duplicates and self-loops
  // kept, rows sorted; with edge data each entry's tag in in_tags_).
  const int64_t local = hi_ - lo_;
  const size_t stride = edge_data_ ? 3 : 2;
  // Whether an entry is an in-edge, and its source.
  auto in_edge = [&](const int64_t* e) {
    return edge_data_ ? e[2] >= 0 : !undirected_ && e[1] >= 0;
  };
  auto source = [&](const int64_t* e) { return e[1] < 0 ? ~e[1] : e[1]; };
  sym_.indptr.assign(static_cast<size_t>(local) + 1, 0);
  if (keep_in()) in_.indptr.assign(static_cast<size_t>(local) + 1, 0);
  for (const std::vector<int64_t>& got : *received) {
    for (size_t k = 0; k < got.size(); k += stride) {
      const int64_t* e = &got[k];
      const size_t row = static_cast<size_t>(e[0] - lo_);
      if (in_edge(e)) ++in_.indptr[row + 1];
      if (source(e) != e[0]) ++sym_.indptr[row + 1];
    }
  }
  // Both adjacencies filled in one pass, each round's buffer freed as soon
  // as it is read.
  std::vector<int64_t> sym_at, in_at;
  auto prepare = [&](Csr* csr, std::vector<int64_t>* at) {
    for (int64_t v = 0; v < local; ++v) csr->indptr[v + 1] += csr->indptr[v];
    csr->indices.resize(static_cast<size_t>(csr->indptr[local]));
    at->assign(csr->indptr.begin(), csr->indptr.end() - 1);
  };
  prepare(&sym_, &sym_at);
  if (keep_in()) prepare(&in_, &in_at);
  if (edge_data_) in_tags_.resize(in_.indices.size());
  for (std::vector<int64_t>& got : *received) {
    for (size_t k = 0; k < got.size(); k += stride) {
      const int64_t* e = &got[k];
      const size_t row = static_cast<size_t>(e[0] - lo_);
      if (in_edge(e)) {
        const size_t at = static_cast<size_t>(in_at[row]++);
        in_.indices[at] = source(e);
        if (edge_data_) in_tags_[at] = e[2];
      }
      if (source(e) != e[0]) sym_.indices[static_cast<size_t>(sym_at[row]++)] = source(e);
    }
    FreeVector(got);
  }
  FreeVector(*received);
}

void Job::Assign() {
  const int64_t local = hi_ - lo_;
  if (o_.part_method == "random") {
    method_ = "random";
    timer_.Begin("random assignment");
    // The single-machine shuffle (12 bytes per node on every machine while
    // it is drawn), so both paths give the same partitions.
    std::vector<int32_t> all = RandomAssign(n_, o_.num_parts, o_.data.seed);
    part_.assign(all.begin() + lo_, all.begin() + hi_);
    return;
  }
  method_ = "ptscotch";
  timer_.Begin("ptscotch");
  // PT-Scotch balances one weight: each asked-for constraint adds a share
  // scaled so that every constraint weighs as much as the node count.
  std::vector<int64_t> weights(static_cast<size_t>(local), 1);
  const int64_t train = o_.balance_train
                            ? comm_.AllreduceSum(std::count_if(masks_.begin(), masks_.end(),
                                                               [](uint8_t m) { return m & 1; }),
                                                 "weighing nodes")
                            : 0;
  const int64_t in_edges = comm_.AllreduceSum(in().num_entries(), "weighing nodes");
  for (int64_t v = 0; v < local; ++v) {
    double w = 1;
    if (train > 0 && (masks_[static_cast<size_t>(v)] & 1)) {
      w += static_cast<double>(n_) / static_cast<double>(train);
    }
    if (o_.balance_edges && in_edges > 0) {
      w += static_cast<double>(in().Degree(v)) * static_cast<double>(n_) /
           static_cast<double>(in_edges);
    }
    weights[static_cast<size_t>(v)] = static_cast<int64_t>(w + 0.5);
  }
  Csr sparse;
  if (d_.sparsify > 0)
    sparse = Sparsify(comm_, ranges_, lo_, sym_, remote_, d_.sparsify, o_.data.seed);
  Csr& graph = d_.sparsify > 0 ? sparse : sym_;
  scotch_edges_ = comm_.AllreduceSum(graph.num_entries(), "sparsifying") / 2;
  if (d_.sparsify > 0) {
    GNN_LOG(kInfo) << "PT-Scotch partitions " << scotch_edges_ << " undirected edges (--sparsify "
                   << d_.sparsify << ")";
  }
  agree_.Run("partitioning with PT-Scotch", [&] {
    part_ = ScotchAssign(comm_, graph.indptr, graph.indices, weights, o_.num_parts,
                         kScotchImbalance, o_.data.seed);
  });
}

void Job::Relabel() {
  timer_.Begin("relabel");
  const int64_t local = hi_ - lo_;
  // New ids: partition-major, then input id (the single-machine order):
  // this rank's nodes of part p follow those of lower ranks.
  std::vector<int64_t> counts(static_cast<size_t>(o_.num_parts), 0);
  for (int32_t p : part_) ++counts[static_cast<size_t>(p)];
  const std::vector<int64_t> total = comm_.AllreduceSum(counts, "relabeling");
  std::vector<int64_t> fill = comm_.ExscanSum(counts, "relabeling");
  part_start_ = Offsets(total);
  for (int p = 0; p < o_.num_parts; ++p) fill[static_cast<size_t>(p)] += part_start_[p];
  new_local_.resize(static_cast<size_t>(local));
  for (int64_t v = 0; v < local; ++v) {
    new_local_[static_cast<size_t>(v)] = fill[static_cast<size_t>(part_[static_cast<size_t>(v)])]++;
  }
  // New ids of the neighbours other ranks hold: ask their owners.
  remote_new_ = AskOwners(
      comm_, ranges_, remote_, [&](int64_t v) { return new_local_[static_cast<size_t>(v)]; },
      "relabeling");

  // Every stored neighbour becomes its new id once, here; the cut and the
  // rows sent to the partitions read them as they are.
  for (Csr* csr : {&sym_, &in_}) {
    ParallelFor(csr->num_entries(), o_.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) csr->indices[k] = NewId(csr->indices[k]);
    });
  }
  FreeVector(remote_);
  FreeVector(remote_new_);
  int64_t cut = 0;
  for (int64_t v = 0; v < local; ++v) {
    for (int64_t k = sym_.indptr[v]; k < sym_.indptr[v + 1]; ++k) {
      cut += PartOfNew(sym_.indices[k]) != part_[static_cast<size_t>(v)];
    }
  }
  const std::vector<int64_t> sums =
      comm_.AllreduceSum({cut, sym_.num_entries(), in().num_entries()}, "counting the cut");
  cut_ = sums[0] / 2;
  undirected_edges_ = sums[1] / 2;
  stored_edges_ = sums[2];
}

void Job::ExchangeRows() {
  timer_.Begin("exchange rows");
  const std::vector<int64_t> nodes = SendRows();
  // Features, one chunk per round, straight into place: rows from rank q
  // start where q's nodes of this partition start.
  timer_.Begin("exchange features");
  ExchangeFeatures(nodes);
  if (label_rows_.kind != LabelKind::kClass) {
    part_label_rows_ = MoveLabelRows(comm_, nodes, part_, rows_.size(), &label_rows_);
  }
  FreeVector(part_);
  FreeVector(masks_);
}

std::vector<int64_t> Job::SendRows() {
  const int64_t local = hi_ - lo_;
  const Csr& in_edges = in();
  // Nodes go to their partition's rank in input-id order; ranks' pieces
  // arrive in rank order: new-id order.
  std::vector<int64_t> nodes(static_cast<size_t>(P_), 0), entries(static_cast<size_t>(P_), 0);
  for (int64_t v = 0; v < local; ++v) {
    ++nodes[static_cast<size_t>(part_[static_cast<size_t>(v)])];
    entries[static_cast<size_t>(part_[static_cast<size_t>(v)])] += in_edges.Degree(v);
  }
  std::vector<int64_t> at = Offsets(nodes), eat = Offsets(entries);
  std::vector<NodeRow> send(static_cast<size_t>(local));
  std::vector<int64_t> ids(static_cast<size_t>(eat.back()));
  std::vector<int64_t> tags(edge_data_ ? ids.size() : 0);
  for (int64_t v = 0; v < local; ++v) {
    const size_t p = static_cast<size_t>(part_[static_cast<size_t>(v)]);
    NodeRow& row = send[static_cast<size_t>(at[p]++)];
    row.orig = lo_ + v;
    row.degree = in_edges.Degree(v);
    row.label = labels_[static_cast<size_t>(v)];
    row.masks = masks_[static_cast<size_t>(v)];
    for (int64_t k = in_edges.indptr[v]; k < in_edges.indptr[v + 1]; ++k) {
      if (edge_data_) tags[static_cast<size_t>(eat[p])] = in_tags_[static_cast<size_t>(k)];
      ids[static_cast<size_t>(eat[p]++)] = in_edges.indices[k];
    }
  }
  for (Csr* csr : {&sym_, &in_}) {
    FreeVector(csr->indptr);
    FreeVector(csr->indices);
  }
  FreeVector(labels_);
  FreeVector(in_tags_);
  std::vector<int64_t> got;
  rows_ = comm_.Alltoallv(send, nodes, &got, "exchanging rows");
  FreeVector(send);
  indices_ = comm_.Alltoallv(ids, entries, &got, "exchanging rows");
  if (edge_data_) stored_tags_ = comm_.Alltoallv(tags, entries, &got, "exchanging rows");
  return nodes;
}

void Job::ExchangeFeatures(const std::vector<int64_t>& nodes) {
  std::vector<int64_t> ones(static_cast<size_t>(P_), 1), unused;
  const std::vector<int64_t> from = comm_.Alltoallv(nodes, ones, &unused, "exchanging features");
  std::vector<int64_t> cursor = Offsets(from);
  const bool has_feat = NodeData(meta_, 0, "feat") != nullptr;
  const int rounds =
      has_feat ? static_cast<int>(comm_.AllreduceMax(int64_t{c1_ - c0_}, "features")) : 0;
  int64_t width = -1;
  int64_t first = lo_;  // input id of the next chunk's first node
  for (int i = 0; i < rounds; ++i) {
    const int c = c0_ + i;
    const std::vector<float> rows = ReadFeatureChunk(c, &width);
    if (i == 0) AgreeFeatureWidth(width);
    const int64_t count = c < c1_ ? meta_.nodes_per_chunk[0][static_cast<size_t>(c)] : 0;
    ExchangeFeatureRows(
        comm_, rows.data(), count, feature_dim_,
        [&](int64_t i) { return part_[static_cast<size_t>(first + i - lo_)]; }, feat_.data(),
        &cursor);
    first += count;
  }
}

std::vector<float> Job::ReadFeatureChunk(int c, int64_t* width) {
  std::vector<float> rows;
  agree_.Run("reading features", [&] {
    if (c >= c1_) return;
    int64_t w = 0;
    rows = ReadChunkNodeData<float>(meta_, 0, "feat", c, &w);
    if (*width >= 0 && w != *width) {
      throw DataError(o_.data.dataset + ": feature chunk " + std::to_string(c) + " has " +
                      std::to_string(w) + " columns, chunk " + std::to_string(c0_) + " has " +
                      std::to_string(*width));
    }
    *width = w;
  });
  return rows;
}

void Job::AgreeFeatureWidth(int64_t width) {
  const std::vector<int64_t> mm = comm_.AllreduceMax({width, -width}, "features");
  agree_.Run("reading features", [&] {
    if (mm[0] != -mm[1]) {
      throw DataError(o_.data.dataset + ": feature chunks have " + std::to_string(-mm[1]) +
                      " and " + std::to_string(mm[0]) + " columns");
    }
  });
  feature_dim_ = width;
  feat_.resize(static_cast<size_t>(rows_.size() * static_cast<size_t>(width)));
}

void Job::ExchangeEdgeData(const std::string& tmp) {
  if (!edge_data_) return;
  timer_.Begin("exchange edge data");
  owned_edges_ = ReadOwnedEdgeData(comm_, agree_, meta_, c0_, c1_, edge_ranges_);
  std::vector<int64_t> degrees(rows_.size());
  for (size_t i = 0; i < rows_.size(); ++i) degrees[i] = rows_[i].degree;
  const PartEdges edges = PartEdgesFromTags(std::move(stored_tags_), degrees);
  edge_width_ = WritePartEdgeData(
      comm_, agree_, o_, meta_.graph_name, undirected_, edge_ranges_, owned_edges_, edges, me_ == 0,
      tmp + "/part" + std::to_string(me_), &feat_, &feature_dim_, &edge_info_);
  FreeVector(owned_edges_.features);
  FreeVector(owned_edges_.labels);
  FreeVector(owned_edges_.split);
}

PartInfo Job::Write(const std::string& tmp) {
  timer_.Begin("write");
  PartInfo info = WriteReceivedPart(tmp, me_, part_start_[static_cast<size_t>(me_)],
                                    part_start_[static_cast<size_t>(me_) + 1], &rows_, &indices_,
                                    &feat_, feature_dim_, &part_label_rows_,
                                    label_rows_.kind == LabelKind::kClass ? 0 : label_rows_.width);
  // The edge files ExchangeEdgeData wrote.
  info.files.insert(edge_info_.files.begin(), edge_info_.files.end());
  std::copy_n(edge_info_.num_split_edges, 3, info.num_split_edges);
  return info;
}

PartitionResult Job::Publish(const PartInfo& mine, TempOutput& tmp) {
  timer_.Begin("publish");
  PartitionConfig config;
  config.graph_name = o_.graph_name.empty() ? meta_.graph_name : o_.graph_name;
  config.dataset = o_.data.dataset;
  config.num_nodes = n_;
  config.num_edges = stored_edges_;
  config.part_method = method_;
  config.num_parts = o_.num_parts;
  config.halo_hops = 1;
  config.feature_dim = feature_dim_;
  config.edge_feature_dim = edge_width_;
  config.edge_labels = owned_edges_.labeled;
  config.edge_label_kind = owned_edges_.kind;
  config.num_edge_classes = owned_edges_.num_classes;
  config.num_classes = num_classes_;
  config.label_kind = label_rows_.kind;
  config.label_width = label_rows_.kind == LabelKind::kClass ? 0 : label_rows_.width;
  config.balance_train = o_.balance_train;
  config.balance_edges = o_.balance_edges;
  config.undirected = undirected_;
  config.seed = o_.data.seed;
  config.parts = GatherParts(comm_, mine);
  json report = PartitionReport(config, input_edges_, undirected_edges_, cut_, timer_);
  AddMachinesReport(comm_, timer_, &report);
  if (method_ == "ptscotch") {
    report["engine"] = ScotchVersion();
    report["sparsify"] = d_.sparsify;
    report["engine_edges"] = scotch_edges_;
  }
  if (edge_width_ > 0) report["edge_feature_dim"] = edge_width_;
  if (config.label_kind != LabelKind::kClass) {
    report["label_kind"] = LabelKindName(config.label_kind);
    report["label_width"] = config.label_width;
  }
  config.report = report;
  const std::string json_name = config.graph_name + ".json";

  PublishOncePerFilesystem(comm_, agree_, tmp, json_name, PartitionConfigText(config), o_.output);
  timer_.End();
  return PartitionResult{(fs::path(o_.output) / json_name).string(), report};
}

PartitionResult Job::Run() {
  timer_.Begin("load");
  CheckInput();
  if (meta_.hetero()) return RunDistributedHetero(comm_, agree_, o_, d_, meta_, timer_);
  ReadNodeData();
  timer_.Begin("exchange edges");
  ExchangeEdges();
  Assign();
  Relabel();
  ExchangeRows();
  std::unique_ptr<TempOutput> tmp = AgreedTempOutput(comm_, agree_, o_.output);
  ExchangeEdgeData(tmp->path());
  PartInfo mine;
  agree_.Run("writing the partition", [&] { mine = Write(tmp->path()); });
  return Publish(mine, *tmp);
}

}  // namespace

PartitionResult RunDistributedJob(MpiComm& comm, PartitionOptions options,
                                  const DistributedOptions& d) {
  Job job(comm, std::move(options), d);
  return job.Run();
}

}  // namespace gnn
