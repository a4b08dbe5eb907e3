// Heterogeneous node-property-prediction datasets (OGB's ogbn-mag shape):
// several node types, each with its own ids 0..count-1; relations
// (source type, name, destination type) with type-local edge lists;
// features on some node types (the others get learnable embeddings);
// labels and splits on one target type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/dataset.h"

namespace gnn {

struct NodeType {
  std::string name;
  int64_t num_nodes = 0;
  int64_t feature_dim = 0;      // 0: no features
  std::vector<float> features;  // row-major [num_nodes, feature_dim]
};

struct Relation {
  std::string src_type, name, dst_type;
  std::vector<int64_t> src, dst;  // type-local ids
  // The edges' features (OGB's raw/relations/<rel>/edge-feat.csv.gz, a
  // chunked graph's edge_data.<src:rel:dst>.feat): row i is edge i's,
  // [num_edges, edge_feature_dim] row-major; width 0: none.
  int64_t edge_feature_dim = 0;
  std::vector<float> edge_features;
  int64_t num_edges() const { return static_cast<int64_t>(src.size()); }
  // DGL's canonical edge type, "src:name:dst".
  std::string Key() const { return src_type + ":" + name + ":" + dst_type; }
};

struct HeteroDataset {
  std::string name;
  std::vector<NodeType> node_types;
  std::vector<Relation> relations;
  std::string target;           // the labelled node type, e.g. "paper"
  std::vector<int64_t> labels;  // [target's num_nodes]; -1 = no label
  int64_t num_classes = 0;
  std::vector<int64_t> train_idx, valid_idx, test_idx;  // target-local, sorted, unique
  // A typed edge task's labels (gnn-train --target_etype; a chunked graph's
  // edge_data.<src:rel:dst>.label with its masks, synthetic etask=): the
  // labelled relation (an index into relations; -1: none) and, per edge of
  // it in input order, its class or value and split, as Dataset's edge
  // label fields (0 none, 1 train, 2 valid, 3 test).
  struct EdgeLabels {
    int relation = -1;
    LabelKind kind = LabelKind::kClass;
    int64_t num_classes = 0;
    std::vector<int64_t> labels;
    std::vector<float> targets;
    std::vector<uint8_t> split;
  };
  EdgeLabels edge_task;
  bool edge_labeled() const { return edge_task.relation >= 0; }

  // Index of node type `name` in node_types; -1 if there is none.
  int TypeIndex(const std::string& name) const;
  int64_t num_nodes() const;
  int64_t num_edges() const;
  // Checks every invariant above (types known and unique, ids in range,
  // sizes, labels, splits); DataError naming the dataset and what is wrong.
  void Validate() const;
};

// DGL's RGCN example on ogbn-mag (--undirected here): for every relation
// (s, r, d) a reverse relation (d, "rev-" + r, s) with the edges turned
// around (each keeping its features), appended after the originals.
void AddReverseRelations(HeteroDataset* d);

// True if options.dataset names a heterogeneous dataset: synthetic:mag,
// synthetic:mag-small, or an OGB folder with raw/num-node-dict.csv.gz.
bool IsHeteroDataset(const DatasetOptions& options);

// Loads a heterogeneous dataset (see IsHeteroDataset). ConfigError for an
// unknown name, DataError for bad files.
HeteroDataset LoadHeteroDataset(const DatasetOptions& options);

}  // namespace gnn
