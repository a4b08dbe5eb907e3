// The partition config (<output>/<graph_name>.json): what every binary reads
// to find partitions, their node ranges and the checksums of their files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/label_kind.h"

namespace gnn {

constexpr int kPartitionFormatVersion = 1;

// Tensor files of every partition folder, in the order they are written.
extern const std::vector<std::string> kPartFiles;
// Held-out edges for link evaluation (gnn-partition --val_edges), in every
// partition folder when the config has "val_edges": val_edges.npy int64
// [K, 2] (head, tail; the partition owns the tail) and val_neg.npy int64
// [K, negatives_per_edge] (corrupted tails of each head). Global new ids.
extern const std::vector<std::string> kValEdgeFiles;
// The user's ids of a partition's nodes (gnn-partition --node_ids): int64
// [num_nodes], row i the id of the node orig_nids[i] names; in every
// partition folder when the config has "user_node_ids": true.
constexpr const char* kUserIdsFile = "node_ids.npy";
// Edge features (a config with "edge_feature_dim": E): every partition
// folder holds edge_feat.npy, float32 [stored in-edges, E], row k the
// features of the in-edge indices.npy[k] names, and orig_eids.npy, int64
// [stored in-edges], that edge's input edge id (its 0-based row in the
// input's edge list: a line of OGB's edge.csv.gz, a data row of a CSV). With --undirected both
// stored directions of an input edge carry its id and features; repeated input edges stay separate
// edges.
constexpr const char* kEdgeFeatFile = "edge_feat.npy";
constexpr const char* kOrigEidsFile = "orig_eids.npy";
// Edge labels (a config with "edge_labels"): every partition folder holds
// orig_eids.npy (as above), edge_label.npy (the label of each stored
// in-edge's input edge: int64 class, -1 for none, or float32 value) and
// edge_split.npy (uint8 [stored in-edges]: 1 train, 2 valid, 3 test on
// the stored in-edge that runs as the input lists the edge, source to
// destination, 4 there for an edge in no split; 0 on its reverse), so each
// input edge is one stored in-edge with a split, owned by its destination's
// partition, and each labelled one an example.
constexpr const char* kEdgeLabelFile = "edge_label.npy";
constexpr const char* kEdgeSplitFile = "edge_split.npy";
// Sparse node features (a config with "feature_format": "sparse"): in
// place of feat.npy every partition folder holds the CSR of its nodes'
// rows, feat_indptr.npy (int64 [num_nodes + 1]), feat_indices.npy (int32
// [nnz], sorted within a row) and, unless "feature_binary" (every value
// 1), feat_values.npy (float32 [nnz]).
constexpr const char* kFeatIndptrFile = "feat_indptr.npy";
constexpr const char* kFeatIndicesFile = "feat_indices.npy";
constexpr const char* kFeatValuesFile = "feat_values.npy";
// Corrupted tails stored per held-out edge (for MRR).
constexpr int kValNegatives = 100;

struct PartFile {
  uint64_t bytes = 0;
  std::string sha256;
};

// Heterogeneous partitions (several node types or relations, DGL's keys):
// new ids are grouped by partition, then by node type, so each type owns
// one range per partition (node_map[type][part]); stored in-edges are
// counted per partition and relation (edge_map[etype][part]: a range of
// that many ids, relations in etype order; the stored order itself is the
// CSC's, with each edge's relation in etype.npy). A
// partition folder then holds indptr.npy, indices.npy (every relation, new
// ids), etype.npy (int64 relation index of each stored in-edge; each
// node's in-edges are sorted by relation, then by the source's input id),
// orig_nids.npy (type-local input id of each owned node), <type>-feat.npy
// for each type with features, and <target>-label.npy and
// <target>-{train,valid,test}_mask.npy for the labelled type.
constexpr const char* kEtypeFile = "etype.npy";

struct PartInfo {
  std::string dir;                       // relative to the config's folder, e.g. "part0"
  int64_t node_start = 0, node_end = 0;  // owned new ids [start, end)
  int64_t edge_start = 0, edge_end = 0;  // in-edges stored here (global edge ids)
  // Heterogeneous: owned new ids of each node type, [start, end) in ntype
  // order, and stored in-edges of each relation in etype order.
  std::vector<std::pair<int64_t, int64_t>> ntype_ranges;
  std::vector<int64_t> etype_edges;
  int64_t num_train = 0, num_valid = 0, num_test = 0;
  int64_t num_val_edges = 0;  // held-out edges whose tail this partition owns
  // Labelled edges stored here in the train, valid and test splits.
  int64_t num_split_edges[3] = {0, 0, 0};
  std::map<std::string, PartFile> files;  // file name -> size and sha256
  int64_t num_nodes() const { return node_end - node_start; }
  int64_t num_edges() const { return edge_end - edge_start; }
};

struct PartitionConfig {
  int format_version = kPartitionFormatVersion;
  std::string graph_name;
  std::string dataset;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;  // directed in-edges stored over all partitions
  std::string part_method;
  int num_parts = 0;
  int halo_hops = 1;
  int64_t feature_dim = 0;
  int64_t num_classes = 0;  // class ids' count; multi-label: label_width; regression: 0
  // The labels' kind (common/label_kind.h): class ids are label.npy int64
  // [n]; multi-label 0/1 and regression values float32 [n, label_width].
  LabelKind label_kind = LabelKind::kClass;
  int64_t label_width = 0;  // 0 for class ids
  bool balance_train = false;
  bool balance_edges = false;
  bool undirected = false;
  uint64_t seed = 0;
  // --val_edges: fraction of undirected edges held out (removed from every
  // partition's CSC) for link evaluation; 0 = none.
  double val_edges_fraction = 0;
  int64_t num_val_edges = 0;
  int val_negatives = 0;  // columns of val_neg.npy
  // gnn-partition --node_ids: every partition holds kUserIdsFile, the
  // user's int64 id of each of its nodes (aligned with orig_nids), and
  // inference and serving speak those ids instead of input rows.
  bool user_node_ids = false;
  // Width of every stored in-edge's features (kEdgeFeatFile); 0: none.
  int64_t edge_feature_dim = 0;
  // Node features as CSR files (kFeatIndptrFile ...) instead of feat.npy;
  // feature_binary: no values file, every stored value is 1.
  bool sparse_features = false;
  bool feature_binary = false;
  // Edge labels (kEdgeLabelFile, kEdgeSplitFile): class ids
  // (num_edge_classes of them) or regression values.
  bool edge_labels = false;
  LabelKind edge_label_kind = LabelKind::kClass;
  int64_t num_edge_classes = 0;
  // A typed graph's labelled relation ("src:rel:dst", edge_labels.etype):
  // only its stored in-edges have a split; empty for a homogeneous graph.
  std::string target_etype;
  std::vector<PartInfo> parts;
  nlohmann::json report;  // partition_report, kept as written
  // Node types and relations ("src:rel:dst") in id order; {"_N"} and
  // {"_N:_E:_N"} for a homogeneous graph. Heterogeneous only: the labelled
  // type and each type's feature width (0: none).
  std::vector<std::string> ntypes{"_N"};
  std::vector<std::string> etypes{"_N:_E:_N"};
  std::string target_ntype;
  std::vector<int64_t> ntype_feature_dims;
  // Heterogeneous, with edge features: each relation's width (0: none).
  // kEdgeFeatFile is then [stored edges, edge_feature_dim] with
  // edge_feature_dim the widest; an edge of a narrower relation fills its
  // relation's first columns and leaves the others 0.
  std::vector<int64_t> etype_edge_feature_dims;

  // The width of the labelled edges' own features (edge_feature_dim; a
  // typed graph's target_etype's width, 0 without edge features).
  int64_t LabelledEdgeFeatureDim() const;

  // Heterogeneous configs name their labelled type (target_ntype).
  bool hetero() const { return !target_ntype.empty(); }
  // The files every partition folder holds (kPartFiles, or the
  // heterogeneous list above, kUserIdsFile when user_node_ids, the
  // edge files when edge_feature_dim > 0, the edge label files when
  // edge_labels),
  // without the held-out edges.
  std::vector<std::string> PartFileNames() const;
  // ConfigError for a heterogeneous config: `who` (a server, a trainer)
  // takes one node type and one relation so far.
  void RequireHomogeneous(const std::string& who) const;

  std::string base_dir;  // folder of the JSON file (not serialized)

  // Partition that owns `node`; -1 if none. Up to 16 parts it counts the
  // parts that end at or before `node`, without branches: a batch's owners
  // alternate at random, and on a 2-way split a search's branch is a coin
  // toss the CPU misses half the time. A binary search beyond.
  int PartOf(int64_t node) const {
    const size_t n = parts.size();
    size_t p = 0;
    if (n <= 16) {
      for (size_t k = 0; k < n; ++k) p += static_cast<size_t>(node >= parts[k].node_end);
    } else {
      p = static_cast<size_t>(
          std::upper_bound(parts.begin(), parts.end(), node,
                           [](int64_t v, const PartInfo& q) { return v < q.node_end; }) -
          parts.begin());
    }
    return p < n && node >= parts[p].node_start ? static_cast<int>(p) : -1;
  }
  // Heterogeneous: the node type of global id `node` (-1 if none), and
  // where each type starts in the input's homogeneous numbering (type-major:
  // type t's input id v is offset[t] + v; [num types + 1] entries). With
  // orig_nids this is the key that makes sampling and initial embeddings
  // the same for a node whatever the partitioning.
  int NtypeOf(int64_t node) const;
  std::vector<int64_t> InputTypeOffsets() const;
  // Each relation's source node type (an index into ntypes), from its
  // "src:rel:dst" name.
  std::vector<int> RelationSrcTypes() const;
  // Absolute-or-relative path of a file of partition `part`.
  std::string FilePath(int part, const std::string& file) const;
};

// Machines and partitions (GraphLearn's rule): an ip_config may list more
// machines than there are partitions; machine m serves partition
// m mod num_parts, so partition p is served by machines p, p + P, p + 2P...
inline int MachinePartition(int machine, int num_parts) { return machine % num_parts; }
// The machines of `num_machines` that serve partition `part`, in order.
std::vector<int> PartitionMachines(int part, int num_parts, int num_machines);
// ConfigError unless 1 <= num_parts <= num_machines (what = where the
// machines come from, named in the message).
void CheckMachinesForParts(int num_parts, int num_machines, const std::string& what);
// The edge tasks' seeds: the trainers of the machines serving a partition
// take even slices of each split of its labelled edges (`split[e]` is edge
// e's: 1 train, 2 valid, 3 test, anything else none).
struct EdgeShares {
  std::vector<int64_t> split[3];  // this rank's positions in `split`: train, valid, test
  int64_t max_train_share = 0;    // the largest train slice of any rank of any partition
};
EdgeShares ShareLabeledEdges(const PartitionConfig& config, int part,
                             const std::vector<uint8_t>& split, int num_machines, int num_trainers,
                             int machine_id, int trainer_id);

nlohmann::json ToJson(const PartitionConfig& config);
// The config file's text (ToJson, indented): the one writer of it, for
// gnn-partition and for gnn-copy's rewritten copies.
std::string PartitionConfigText(const PartitionConfig& config);

// Parses and checks invariants: every value's type and range (counts
// non-negative and below 2^62, num_parts in [1, 2^20], ...), node and edge
// ranges contiguous and covering [0, num_nodes) and [0, num_edges), per-part
// counts consistent, every file listed with a sha256, and every part_dir
// confined to `base_dir` (relative, no "..", not escaping through
// symlinks). `source` names the file in errors: one DataError line naming
// the file and the key.
// kAnywhere is for gnn-copy's source config only, which may point at its
// partitions by absolute paths (its user wrote it; what it ships is
// rewritten relative): every other reader confines part_dir.
enum class PartDirs { kConfined, kAnywhere };

PartitionConfig ParsePartitionConfig(const nlohmann::json& j, const std::string& base_dir,
                                     const std::string& source,
                                     PartDirs dirs = PartDirs::kConfined);

// ParsePartitionConfig of JSON text (DataError if it is not JSON).
PartitionConfig ParsePartitionConfigText(const std::string& text, const std::string& base_dir,
                                         const std::string& source,
                                         PartDirs dirs = PartDirs::kConfined);

// Reads and parses `<path>`; throws DataError naming the path.
PartitionConfig LoadPartitionConfig(const std::string& path, PartDirs dirs = PartDirs::kConfined);

// Checks one partition file against what the config recorded: a missing
// file (with errno's words), a truncated or longer one ("truncated: 100000
// of 15522384 bytes; copy it again (gnn-copy)"), then its sha256. Throws
// DataError naming the path and what to do.
void VerifyPartFile(const std::string& path, const PartFile& expected);
// VerifyPartFile for every file of partition `part`, in name order; throws
// for the first that fails.
void VerifyPartFiles(const PartitionConfig& config, int part);

}  // namespace gnn
