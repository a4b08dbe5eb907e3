// Edge data in a distributed partitioning (a homogeneous chunked dataset's
// edge features and an edge task's labels and split): each rank reads the
// edge data of the edge chunks it read, and the rank that writes a
// partition asks the readers for the rows of the edges it stores, by input
// edge id. The files it writes are the single-machine partitioner's
// (partition.cc WritePart), byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dist_partition/agreement.h"
#include "dist_partition/dist_exchange.h"
#include "dist_partition/mpi_comm.h"
#include "graph/chunked.h"
#include "partition/config.h"
#include "partition/partition.h"

namespace gnn {

// Which rank read which input edges: the edges of chunks [c0, c1) of rank
// r, for the same chunk split as the nodes'.
Ranges EdgeRanges(const ChunkedMeta& m, int ranks);

// The edge data of this rank's edge chunks [c0, c1), input edges
// [first, first + count), and what every rank agreed on.
struct OwnedEdgeData {
  int64_t first = 0, count = 0;
  int64_t width = 0;                          // feature columns
  std::vector<Dataset::EdgeColumns> columns;  // each array: name, first column, width
  std::vector<float> features;                // [count, width]
  bool labeled = false;
  LabelKind kind = LabelKind::kClass;     // class ids when every rank's labels are integers
  int64_t num_classes = 0;                // classes: 1 + the largest label of an edge in a split
  int64_t split_count[4] = {0, 0, 0, 0};  // edges in no split, train, valid, test (all ranks)
  std::vector<double> labels;             // [count] when labeled
  std::vector<uint8_t> split;             // [count]: 0 none, 1 train, 2 valid, 3 test
};

// The label kind (class ids when every rank's labels are `integral`),
// class count and split counts of o->labels and o->split over every rank,
// and the labels checked as Dataset::ValidateEdgeLabels checks them.
// Collective.
void AgreeLabels(MpiComm& comm, Agreement& agree, const ChunkedMeta& m, bool integral,
                 OwnedEdgeData* o);

// Reads them (ReadEdgeDataChunk's errors, agreed) and agrees with the
// other ranks on widths and the label kind, checking labels as
// Dataset::Validate does. Collective.
OwnedEdgeData ReadOwnedEdgeData(MpiComm& comm, Agreement& agree, const ChunkedMeta& m, int c0,
                                int c1, const Ranges& edge_ranges);

// The edge data of the stored edges `eids` (input edge ids, in stored
// order) from the ranks that read them, in rounds of whole nodes (`at`:
// node i's edges are entries [at[i], at[i + 1])) of about a quarter of
// FeatureSliceBytes() of replies: each round's feature rows go to
// on_rows(b, e, rows [(e - b), width]) in stored order, so no rank holds
// its partition's edge features whole; labels and split land in *stored.
// Collective.
struct StoredEdgeData {
  std::vector<double> labels;  // [stored] when labeled
  std::vector<uint8_t> split;  // [stored] when labeled
};
using EdgeRows = std::function<void(int64_t b, int64_t e, const float* rows)>;
void FetchEdgeData(MpiComm& comm, const Ranges& edge_ranges, const OwnedEdgeData& owned,
                   const std::vector<int64_t>& eids, const std::vector<int64_t>& at,
                   StoredEdgeData* stored, const EdgeRows& on_rows);

// --node_feat_from_edges for one node: the mean of its `count` edges'
// `width` features into out[0, width), summed in input edge order (`eids`)
// as NodeFeaturesFromEdges sums them; zeros for a node without edges.
void PutEdgeMean(const int64_t* eids, const float* rows, int64_t count, int64_t width, float* out);

// A partition's edges, as the single-machine partitioner writes them.
struct PartEdges {
  std::vector<int64_t> eids;     // input edge id of each stored edge
  std::vector<uint8_t> reverse;  // 1 on an undirected edge's added reverse
  std::vector<int64_t> at;       // owned node i's edges: [at[i], at[i + 1])
};

// The partition's edges from the tags that travelled with them (2 x input
// id + 1 on an added reverse; made input ids in place) and its owned
// nodes' degrees.
PartEdges PartEdgesFromTags(std::vector<int64_t> tags, const std::vector<int64_t>& degrees);

// Fetches and writes the partition's edge data into `dir`: edge_feat.npy
// as it arrives (each edge's weight with --edge_weight), node features
// from the edges' means appended to *feat (--node_feat_from_edges), then
// orig_eids.npy and, when labeled, edge_label.npy and edge_split.npy, all
// recorded in *info; the choices said in one line each when `say`, errors
// agreed. Returns the stored feature columns. Collective.
int64_t WritePartEdgeData(MpiComm& comm, Agreement& agree, const PartitionOptions& o,
                          const std::string& name, bool undirected, const Ranges& edge_ranges,
                          const OwnedEdgeData& owned, const PartEdges& edges, bool say,
                          const std::string& dir, std::vector<float>* feat, int64_t* feature_dim,
                          PartInfo* info);

}  // namespace gnn
