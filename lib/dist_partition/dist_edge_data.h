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

// Reads them (ReadEdgeDataChunk's errors, agreed) and agrees with the
// other ranks on widths and the label kind, checking labels as
// Dataset::Validate does. Collective.
OwnedEdgeData ReadOwnedEdgeData(MpiComm& comm, Agreement& agree, const ChunkedMeta& m, int c0,
                                int c1, const Ranges& edge_ranges);

// The edge data of the stored edges `eids` (input edge ids, in stored
// order) from the ranks that read them, in rounds of at most
// FeatureSliceBytes() of replies. Collective.
struct StoredEdgeData {
  std::vector<float> features;  // [stored, width]
  std::vector<double> labels;   // [stored] when labeled
  std::vector<uint8_t> split;   // [stored] when labeled
};
StoredEdgeData FetchEdgeData(MpiComm& comm, const Ranges& edge_ranges, const OwnedEdgeData& owned,
                             const std::vector<int64_t>& eids);

// Node features from edges (--node_feat_from_edges): each of `rows`
// nodes' `feature_dim` columns, then the mean of its stored in-edges'
// `width` features (node i's edges: entries [at[i], at[i + 1]) of `eids`
// and `features`), summed in input edge order as NodeFeaturesFromEdges
// sums them.
std::vector<float> AppendEdgeMeans(const std::vector<float>& feat, int64_t feature_dim,
                                   const std::vector<int64_t>& at, const std::vector<int64_t>& eids,
                                   const std::vector<float>& features, int64_t width);

// The writer's last steps on its stored edges' data, as the single-machine
// partitioner takes them: node features from the edges' means
// (--node_feat_from_edges; `at`: each owned node's first stored edge, as
// AppendEdgeMeans) and edge weights (--edge_weight), each said in one line
// when `say`, errors agreed. Returns the stored feature columns.
int64_t FinishEdgeData(const PartitionOptions& o, const std::string& name, bool undirected,
                       const std::vector<int64_t>& at, const std::vector<int64_t>& eids,
                       const OwnedEdgeData& owned, bool say, Agreement& agree,
                       std::vector<float>* feat, int64_t* feature_dim, StoredEdgeData* stored);

// Writes the partition's edge files into `dir` (orig_eids, edge_feat when
// width > 0, edge_label and edge_split when labeled; `reverse`: 1 on an
// undirected edge's added reverse) and records them in *info.
void WriteStoredEdgeData(const std::string& dir, const std::vector<int64_t>& eids,
                         const std::vector<uint8_t>& reverse, const StoredEdgeData& data,
                         int64_t width, const OwnedEdgeData& owned, PartInfo* info);

}  // namespace gnn
