// DGL's chunked graph format: a dataset split by id range into N chunks
// (metadata.json; edges/<src:rel:dst>/ and node_data/<type>/ files), the
// input of distributed partitioning, where each machine reads only its
// chunks. Homogeneous datasets are one node type "_N" and one relation
// "_N:_E:_N". Written with numpy edge chunks ([E, 2] int64, type-local
// ids); edges DGL tools wrote as text ("csv", space-delimited) read too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/dataset.h"
#include "graph/hetero.h"

namespace gnn {

// What metadata.json says, checked: counts non-negative, one file per chunk,
// every path relative and inside the folder.
struct ChunkedMeta {
  std::string dir;  // the folder (absolute or as given)
  std::string graph_name;
  int num_chunks = 0;
  std::vector<std::string> node_types;
  std::vector<std::vector<int64_t>> nodes_per_chunk;  // [type][chunk]
  std::vector<std::string> edge_types;                // "src:rel:dst"
  std::vector<std::vector<int64_t>> edges_per_chunk;  // [relation][chunk]
  struct Files {
    std::string format;              // "numpy" or "csv"
    char delimiter = ' ';            // csv
    std::vector<std::string> paths;  // one per chunk, relative to dir
  };
  std::vector<Files> edges;                                           // [relation]
  std::vector<std::vector<std::pair<std::string, Files>>> node_data;  // [type] -> (name, files)
  // Every edge_data entry, as "edge_data.<src:rel:dst>.<name>", and its
  // files per relation. A homogeneous graph's are read as edge features and
  // an edge task's labels (ReadChunkedDataset, or chunk by chunk with
  // ReadEdgeDataChunk); typed graphs' are refused (RefuseEdgeData).
  std::vector<std::string> edge_data;
  std::vector<std::vector<std::pair<std::string, Files>>> edge_data_files;  // [relation]
  std::vector<std::string> edge_data_unknown;  // entries whose relation is not in edge_type
  // gnn's own keys (DGL's readers ignore them).
  std::string target;  // the labelled type
  int64_t num_classes = 0;
  // gnn.label_kind: "multilabel" or "regression" when the labels are rows
  // of targets (gnn-dataset writes it; DGL's tools do not).
  LabelKind label_kind = LabelKind::kClass;
  // Why the graph is known to be undirected (gnn.known_undirected, or a
  // known graph_name: KnownUndirectedReason); "" when it is not.
  std::string undirected_reason;

  bool hetero() const { return node_types.size() != 1 || edge_types.size() != 1; }
  int64_t NumNodes(size_t type) const;
  // First id of chunk c within its type (chunks are contiguous id ranges).
  int64_t ChunkStart(size_t type, int c) const;
};

// True when `path` is a folder holding metadata.json.
bool IsChunkedFolder(const std::string& path);

// Reads and checks DIR/metadata.json; DataError naming the file and key.
ChunkedMeta ReadChunkedMeta(const std::string& dir);

// Writes `d` as `chunks` chunks into `dir` (which must not exist): into a
// fresh sibling folder renamed to `dir` when complete, so a failure leaves
// nothing half-written. ConfigError when chunks < 1 or exceeds a type's
// node count.
void WriteChunked(const Dataset& d, int chunks, const std::string& dir);
void WriteChunked(const HeteroDataset& d, int chunks, const std::string& dir);

// The whole dataset (every chunk). DataError for missing or inconsistent
// files; ConfigError when the folder's kind (homogeneous or not) is not
// the one asked for.
// Edge data in metadata.json: a homogeneous graph's arrays are its edge
// features (float, [edges] or [edges, k] per chunk, columns in name order;
// "label" with "train_mask", "val_mask", "test_mask" are an edge task's
// labels and split); a typed graph's are each relation's edge features and
// one relation's edge task (HeteroDataset::edge_task). With
// `ignore_edge_data` it is dropped with one warning line.
Dataset ReadChunkedDataset(const std::string& dir, bool ignore_edge_data);
HeteroDataset ReadChunkedHeteroDataset(const std::string& dir, bool ignore_edge_data);
// A typed graph's edge_data: true when some relation has edge features to
// carry; DataError naming metadata.json for a relation edge_type does not
// list, and for an edge task's names (label, masks) on a second relation.
bool TypedEdgeFeatures(const ChunkedMeta& m);
// The relation whose edges carry an edge task's label and masks (an index
// into edge_types), -1 for none; the same DataErrors.
int TypedEdgeLabelRelation(const ChunkedMeta& m);

// Node data names of the train, validation and test masks.
// Chunks one array may be split into, at most (either direction).
constexpr int kMaxChunkCount = 1 << 16;
extern const char* const kChunkSplitNames[3];
// Node data name of the user's id of each node (gnn-dataset --node_ids):
// int64, kept by gnn-partition as the partitions' node_ids.npy.
extern const char* const kChunkUserIds;

// One chunk at a time, for readers that take only some chunks (each
// machine of a distributed partitioning reads its own). Edge chunk `chunk`
// of relation `relation` appended as (src, dst) pairs (type-local ids, not
// range-checked); DataError naming the file when it is missing or its size
// disagrees with metadata.json.
void ReadEdgeChunk(const ChunkedMeta& m, size_t relation, int chunk, std::vector<int64_t>* src,
                   std::vector<int64_t>* dst);
// The files of node data `name` ("feat", "label", "train_mask", ...) of
// node type `type`, or null.
const ChunkedMeta::Files* NodeData(const ChunkedMeta& m, size_t type, const std::string& name);
// Rows of node data `name` of chunk `chunk` (T = float, int64_t or
// uint8_t); *width = columns (1 for a vector). DataError naming the file
// when it is missing, not numpy or not one row per node of the chunk.
template <typename T>
std::vector<T> ReadChunkNodeData(const ChunkedMeta& m, size_t type, const std::string& name,
                                 int chunk, int64_t* width);

// Whether a homogeneous dataset's labels are rows of targets (multi-label
// or regression) rather than class ids: gnn.label_kind says so, `task`
// (gnn-partition --task) asks for them, or the label array holds floats
// or several columns.
bool ChunkedLabelRows(const ChunkedMeta& m, const std::string& task);
// The --task that SetLabelRows takes for them: `task`, or with "auto" the
// kind gnn.label_kind names.
std::string ChunkedLabelTask(const ChunkedMeta& m, const std::string& task);
// Chunk `chunk`'s label rows as numbers (any numeric dtype; [nodes, width]
// row-major). DataError naming the file for a shape other than the
// chunk's nodes.
std::vector<double> ReadChunkLabelRows(const ChunkedMeta& m, int chunk, int64_t* width);

// Edge data of one chunk of one relation, as ReadChunkedDataset reads it
// whole: every array but an edge task's, in name order, side by side as
// features; an edge task's "label" and masks as labels and a split.
struct EdgeDataChunk {
  int64_t edges = 0;
  int64_t width = 0;                          // feature columns
  std::vector<float> features;                // [edges, width]
  std::vector<Dataset::EdgeColumns> columns;  // each array: name, first column, width
  bool labeled = false;                       // edge_data "label" (with train_mask)
  bool integral = true;                       // the labels are integers (class ids)
  std::vector<double> labels;                 // [edges] when labeled
  std::vector<uint8_t> split;                 // [edges]: 0 none, 1 train, 2 valid, 3 test
};
// Chunk `chunk` of relation `relation`; `first_edge`: its first edge's id
// (named in errors); `earlier`: an earlier chunk's, whose arrays' widths
// this chunk's must have. DataError naming metadata.json or the file for
// a mask without a label, a label without train_mask, an entry of an
// unknown relation, a shape or width that disagrees, an edge in two masks
// or a feature that is not finite.
EdgeDataChunk ReadEdgeDataChunk(const ChunkedMeta& m, size_t relation, int chunk,
                                int64_t first_edge, const EdgeDataChunk* earlier);

}  // namespace gnn
