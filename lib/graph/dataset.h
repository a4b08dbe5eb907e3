// In-memory node-property-prediction dataset and the entry point that loads
// one from an OGB raw folder, a name under --root, or a synthetic: spec.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/label_kind.h"
#include "common/sparse_rows.h"

namespace gnn {

struct Dataset {
  std::string name;  // "ogbn-products", "cora", "synthetic-small", ...
  int64_t num_nodes = 0;
  // Edges exactly as the source lists them (src -> dst). Datasets known to
  // be undirected list each undirected edge once.
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  int64_t feature_dim = 0;
  std::vector<float> features;  // row-major [num_nodes, feature_dim]
  // Or the same rows kept sparse (DatasetOptions::feature_format):
  // [num_nodes, feature_dim] CSR, `features` then empty.
  SparseRows sparse_features;
  bool sparse() const { return sparse_features.rows() > 0; }
  std::vector<int64_t> labels;  // [num_nodes]; -1 = no label
  int64_t num_classes = 0;      // max label + 1 (multilabel: width)
  // Multi-label (0/1) or regression labels: row-major float32 [num_nodes,
  // label_width] in `targets`, `labels` then empty; the split lists say
  // which nodes count. kClass: width 0, no targets.
  LabelKind label_kind = LabelKind::kClass;
  int64_t label_width = 0;
  std::vector<float> targets;
  std::vector<int64_t> train_idx, valid_idx, test_idx;  // sorted, unique
  // The user's id of each row (--node_ids), distinct; empty: rows are the
  // ids. Partitions keep them (kUserIdsFile) for inference and serving.
  std::vector<int64_t> node_ids;
  // Edge features (OGB raw/edge-feat.csv.gz, chunked edge_data, CSV
  // columns beyond the two ends, synthetic efeat=): row i belongs to listed
  // edge i (src[i], dst[i]). Width 0 and empty when the graph has none.
  int64_t edge_feature_dim = 0;
  // Where each named edge array's columns are among the edge features
  // (a chunked dataset's edge_data, in name order): name, first column,
  // width. Empty for inputs whose columns have no names.
  struct EdgeColumns {
    std::string name;
    int64_t first = 0, width = 0;
  };
  std::vector<EdgeColumns> edge_feature_columns;
  std::vector<float> edge_features;  // row-major [num_edges, edge_feature_dim]
  // Edge labels for the edge tasks (OGB raw/edge-label.csv.gz with
  // split/<name>/edge_{train,valid,test}.csv.gz, synthetic etask=): per
  // listed edge, its class (edge_labels, -1 for none; edge_label_kind
  // kClass, num_edge_classes = max + 1) or its value (edge_targets,
  // kRegression), and its split (edge_split: 0 none, 1 train, 2 valid, 3
  // test). All empty when the graph has no edge labels.
  LabelKind edge_label_kind = LabelKind::kClass;
  std::vector<int64_t> edge_labels;
  std::vector<float> edge_targets;
  int64_t num_edge_classes = 0;
  std::vector<uint8_t> edge_split;
  bool edge_labeled() const { return !edge_split.empty(); }
  // Why the graph is known to be undirected ("ogbn-products is a known
  // undirected dataset", "the synthetic generator lists each undirected
  // edge once"); empty when it is not known to be.
  std::string undirected_reason;

  bool known_undirected() const { return !undirected_reason.empty(); }
  int64_t num_edges() const { return static_cast<int64_t>(src.size()); }
  // Checks every invariant above (ids in range, sizes, split disjointness,
  // edge features finite); throws DataError naming `name` and the broken
  // invariant.
  void Validate() const;
  // The edge labels' part of Validate (sizes, classes in range, finite
  // values, a split that holds an edge).
  void ValidateEdgeLabels() const;
};

// Dataset::ValidateEdgeLabels' checks over `num_edges` edges' labels and
// split, for any graph that labels edges (a typed graph's one relation too);
// DataError naming `name`.
void ValidateEdgeLabelArrays(const std::string& name, int64_t num_edges, LabelKind kind,
                             int64_t num_classes, const std::vector<int64_t>& labels,
                             const std::vector<float>& targets, const std::vector<uint8_t>& split);

// Puts `d`'s node features in `format` (DatasetOptions::feature_format)
// and returns the line that says what was chosen and why ("" when the
// graph has no node features).
std::string ApplyFeatureFormat(Dataset* d, const std::string& format, int threads = 0);

// Labels read as rows of numbers ([N, width], row-major; any unlabelled
// class row marked by NaN is not allowed) become class ids when they are one
// column of integers, multi-label targets when several columns of 0/1, and
// regression targets otherwise; `task` (gnn-partition --task: "auto",
// "node", "multilabel", "node_regression") says it explicitly. One line
// naming `what` (the file) when the values do not fit the task (a fraction
// for class ids, a value other than 0/1 for multi-label, NaN anywhere).
// Returns a line for the log saying what was chosen and why ("" for class
// ids found as such).
std::string SetLabelRows(Dataset* d, std::vector<double> rows, int64_t width,
                         const std::string& task, const std::string& what);

// SetLabelRows's choice from what the rows hold (every value an integer,
// every value 0 or 1) for readers that see them in pieces, with its
// errors; and its log line ("" for class ids).
LabelKind ChooseLabelKind(const std::string& task, int64_t width, bool integral, bool binary,
                          const std::string& what);
std::string LabelKindLine(LabelKind kind, int64_t width, const std::string& task,
                          const std::string& what);

// gnn-partition --task on labels already read as class ids: "multilabel"
// makes a 0/1 column one binary label, "node_regression" makes the ids
// values; "auto" and "node" keep them. DataError naming the dataset when
// they do not fit.
void ApplyLabelTask(Dataset* d, const std::string& task);
// Its rule for label rows read as `read` (multilabel or regression): the
// kind an explicit `task` (not auto) makes them, or DataError naming
// `name` when it does not fit.
LabelKind TaskOnLabelRows(LabelKind read, const std::string& task, const std::string& name);

// Node features from edge features (gnn-partition --node_feat_from_edges,
// as PyG's and DGL's ogbn-proteins examples do): each node's mean over the
// features of its in-edges, both directions of each edge when `undirected`
// (a self-loop once); 0 for a node without any. They replace `d`'s node
// features when it has none, else are appended as columns. DataError when
// `d` has no edge features. Edges for which `skip(src, dst)` holds (edges
// held out for link evaluation) do not count.
void NodeFeaturesFromEdges(Dataset* d, bool undirected,
                           const std::function<bool(int64_t, int64_t)>& skip = nullptr);

// The plain files of a graph (graph/plain_files.h), in place of a --dataset.
struct PlainFiles {
  std::string edges;         // --edges FILE
  std::string edge_columns;  // --edge_columns src,dst: names (header) or 0-based positions
  std::string edge_feat;     // --edge_feat FILE.npy [E] or [E, k]: the edges' features
  std::string node_feat;     // --node_feat FILE.npy [N, F]
  std::string labels;        // --labels FILE.npy [N]
  std::string train_ids, valid_ids, test_ids;  // --train_ids ... : ids or masks
  std::string node_ids;                        // --node_ids FILE: the user's int64 id of each row
  std::string graph_name;                      // the dataset's name (--graph_name)

  bool given() const;
  // ConfigError naming a missing or contradictory flag.
  void Validate() const;
};

struct DatasetOptions {
  // "ogbn-products" (looked up as <root>/ogbn_products), a path to an OGB
  // raw folder (contains raw/), or "synthetic:<preset or key=value list>".
  std::string dataset;
  PlainFiles files;  // --edges, --node_feat, ...: the other way to give the graph
  std::string root = "dataset";
  // Split folder under split/; empty = the only one there.
  std::string split;
  // Where parsed arrays are cached as .npy; empty = <dataset folder>/processed.
  std::string cache_dir;
  bool use_cache = true;
  uint64_t seed = 0;    // synthetic generators only
  int num_threads = 0;  // 0 = hardware concurrency
  // Edge data gnn does not carry (edge labels or weights files, a typed
  // graph's per-relation data, edge data for the distributed partitioner)
  // is refused, naming it, unless this says to drop it; with it, edge
  // features are dropped too (one warning line names everything dropped).
  bool ignore_edge_data = false;
  // How node features come back: "dense" rows; "sparse" CSR rows
  // (Dataset::sparse_features); "auto" sparse when at most
  // kSparseFeatureDensity of the entries are stored, else dense. The OGB
  // reader builds the CSR as it parses (never the dense matrix) unless
  // this is "dense"; other inputs are read dense and converted.
  std::string feature_format = "dense";

  // ConfigError naming the first bad field (LoadDataset calls it).
  void Validate() const;
};

// Edge data the input holds that gnn does not carry yet, each as the file
// or metadata key that holds it: OGB raw files beside edge.csv.gz
// (edge_weight.csv.gz, ...; not edge-feat.csv.gz and edge-label.csv.gz,
// which are carried), per-relation files beside a typed graph's
// edge.csv.gz (edge_reltype.csv.gz is structure, not data; edge-feat.csv.gz
// and edge-label.csv.gz are not carried for typed graphs yet).
// `features_carried`: raw/edge-feat.csv.gz and raw/edge-label.csv.gz are
// read (a homogeneous graph) and so not listed.
std::vector<std::string> OgbEdgeDataFiles(const std::string& folder, bool features_carried);
// OGB's edge features: raw/edge-feat.csv.gz, one row per line of edge.csv.gz.
constexpr const char* kOgbEdgeFeatFile = "edge-feat.csv.gz";
// OGB-style edge labels (read with split/<name>/edge_{train,valid,test}.csv.gz).
constexpr const char* kOgbEdgeLabelFile = "edge-label.csv.gz";

// Refuses `found` edge data of `dataset` before any work: DataError naming
// the first item and the flag that drops it, or, with `ignore`, one warning
// line naming everything dropped. Nothing when `found` is empty.
// `why` follows the name in the refusal.
void RefuseEdgeData(const std::string& dataset, const std::vector<std::string>& found, bool ignore,
                    const std::string& why = "which gnn does not carry into partitions yet");

// The OGB folder options.dataset names (a path holding raw/, or a name
// under options.root with '-' as '_'); "" if there is none.
std::string FindOgbFolder(const DatasetOptions& options);

// Loads a dataset. Throws ConfigError (unknown name/preset) or DataError
// (missing/corrupt/malformed files, naming the file and line).
Dataset LoadDataset(const DatasetOptions& options);

// DGL's dataset aliases resolved to OGB names ("ogb-product" ->
// "ogbn-products", "ogb-paper100M" -> "ogbn-papers100M"); others unchanged.
std::string OgbDatasetName(const std::string& name);

// Datasets known to be undirected although listed once per edge (OGB's
// ogbn-products, ogbn-proteins; Planetoid's Cora, CiteSeer, PubMed), by
// name: the reason as Dataset::undirected_reason words it, or "".
std::string KnownUndirectedReason(const std::string& name);

// --undirected, --directed, or neither (decided by what is known of the graph).
enum class DirectionFlag { kAuto, kUndirected, kDirected };

// How the listed edges run: the evidence behind the --undirected hint.
struct EdgeOrder {
  int64_t forward = 0;   // src < dst
  int64_t backward = 0;  // src > dst
  int64_t loops = 0;     // src == dst
  void Add(int64_t src, int64_t dst) { (src < dst ? forward : src > dst ? backward : loops) += 1; }
  void Add(const EdgeOrder& o) { forward += o.forward, backward += o.backward, loops += o.loops; }
  // Every edge but self-loops runs one way, as OGB and Planetoid store an
  // undirected graph (each pair once); a DAG in topological order looks the same.
  bool OneWay() const { return forward + backward > 0 && (forward == 0 || backward == 0); }
};
EdgeOrder CountEdgeOrder(const std::vector<int64_t>& src, const std::vector<int64_t>& dst);

// Whether reverse edges are added: the flag decides; without one, a graph
// known to be undirected (`undirected_reason` not empty) is, any other is not.
bool TreatAsUndirected(DirectionFlag flag, const std::string& undirected_reason);

// The one line every partitioning run logs: directed or undirected and why
// (the flag, a known dataset, the default), and for a directed graph whose
// `order` is one-way the suggestion to pass --undirected (never a guess: a
// DAG looks the same). *suggest is set when that suggestion is made, so the
// caller logs the line as a warning.
std::string DirectionLine(DirectionFlag flag, const std::string& name,
                          const std::string& undirected_reason, int64_t num_edges,
                          const EdgeOrder& order, bool* suggest);

}  // namespace gnn
