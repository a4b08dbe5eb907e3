// Where a typed distributed partitioning's nodes and edges are, and its
// edge features and one relation's edge labels. Nodes get job ids (TypedLayout); every
// relation's edges get a job edge id (rank-major over the edge chunks each
// rank read, then relation, then line), travel to their partition tagged
// with it, and the rank writing a partition fetches their feature rows by
// it (FetchEdgeData), writing edge_feat.npy, orig_eids.npy and the edge
// label files as the single machine does (hetero_partition.cc), byte for
// byte.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dist_partition/agreement.h"
#include "dist_partition/dist_edge_data.h"
#include "dist_partition/dist_exchange.h"
#include "dist_partition/mpi_comm.h"
#include "graph/chunked.h"
#include "graph/hetero.h"
#include "partition/config.h"

namespace gnn {

// Where each node is. Rank r reads chunks [c0(r), c0(r + 1)) of every node
// type, so it holds type t's type-local ids [first[t][r], first[t][r + 1]).
// The job numbers nodes rank-major, then by type, then by type-local id
// ("job ids"): each rank's nodes are one range, as PT-Scotch wants. The
// input's homogeneous ids (type-major: offset[t] + type-local id) key the
// relabeling and the stored order, as on one machine.
struct TypedLayout {
  std::vector<std::vector<int64_t>> first;   // [type][rank + 1]
  std::vector<int64_t> base;                 // [rank + 1]: each rank's first job id
  std::vector<std::vector<int64_t>> within;  // [rank][type + 1]: a type's start in its rank's range
  std::vector<int64_t> offset;               // [type + 1]: homogeneous input ids

  int64_t JobId(size_t t, int64_t local) const {
    const std::vector<int64_t>& f = first[t];
    const size_t r =
        static_cast<size_t>(std::upper_bound(f.begin(), f.end(), local) - f.begin()) - 1;
    return base[r] + within[r][t] + (local - f[r]);
  }
  size_t TypeOfHomogeneous(int64_t h) const {
    return static_cast<size_t>(std::upper_bound(offset.begin(), offset.end(), h) - offset.begin()) -
           1;
  }
  int64_t JobIdOfHomogeneous(int64_t h) const {
    const size_t t = TypeOfHomogeneous(h);
    return JobId(t, h - offset[t]);
  }
};

// Rank q reads chunks [c0(q), c0(q + 1)) of every relation (the nodes'
// chunk split): its edges are one range of job edge ids, relation-major
// within it.
struct TypedEdgeIds {
  Ranges ranges;                             // [rank + 1]: each rank's first job edge id
  std::vector<std::vector<int64_t>> within;  // [rank][relation + 1]: a relation's start in it
  std::vector<std::vector<int64_t>> line0;   // [rank][relation]: the line of its first edge there

  // The job edge id of the k-th edge of relation e that rank q read.
  int64_t Id(int q, size_t e, int64_t k) const {
    return ranges.start[static_cast<size_t>(q)] + within[static_cast<size_t>(q)][e] + k;
  }
  // The relation of job edge id j and its line in that relation's input.
  std::pair<size_t, int64_t> Line(int64_t j) const;
};
TypedEdgeIds MakeTypedEdgeIds(const ChunkedMeta& m, int ranks);

// This rank's edges' features, relation-major as their job ids are
// (OwnedEdgeData::first its first id), each relation's in its first
// (*widths)[e] columns of the widest, the rest 0; with an edge task
// (TypedEdgeLabelRelation) the labelled relation's labels and split at its
// edges' places, every other edge in no split. Reads every relation's
// chunks [c0, c1) (ReadEdgeDataChunk's errors, agreed); the ranks agree on
// each relation's width and the label kind. Collective.
OwnedEdgeData ReadOwnedTypedEdgeData(MpiComm& comm, Agreement& agree, const ChunkedMeta& m, int c0,
                                     int c1, const TypedEdgeIds& ids, std::vector<int64_t>* widths);

// What the config says of the edge data: each relation's feature width
// (`widths`, a reverse relation's its edges'), and an edge task's labels
// (owned.labeled) on relation `labelled` (said in one line when `say`).
void DescribeTypedEdgeData(const PartitionOptions& o, const ChunkedMeta& m,
                           const OwnedEdgeData& owned, const std::vector<int64_t>& widths,
                           int labelled, bool say, HeteroDataset* shape);

// Fetches the data of the partition's stored edges (`tags`: 2 x job edge
// id, + 1 on an added reverse, in stored order; owned node i's edges at
// [at[i], at[i + 1])) and writes into `dir` orig_eids.npy, edge_feat.npy
// as its rows arrive (when there are features) and, with labels on
// relation `labelled`, edge_label.npy and edge_split.npy, recorded in
// *info with the split counts. Collective.
void WriteTypedPartEdgeData(MpiComm& comm, const TypedEdgeIds& ids, const OwnedEdgeData& owned,
                            int labelled, const std::vector<int64_t>& tags,
                            const std::vector<int64_t>& at, const std::string& dir, PartInfo* info);

}  // namespace gnn
