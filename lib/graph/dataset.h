// In-memory node-property-prediction dataset and the entry point that loads
// one from an OGB raw folder, a name under --root, or a synthetic: spec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gnn {

struct Dataset {
  std::string name;  // "ogbn-products", "cora", "synthetic-small", ...
  int64_t num_nodes = 0;
  // Edges exactly as the source lists them (src -> dst). Datasets marked
  // known_undirected list each undirected edge once.
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  int64_t feature_dim = 0;
  std::vector<float> features;                          // row-major [num_nodes, feature_dim]
  std::vector<int64_t> labels;                          // [num_nodes]; -1 = no label
  int64_t num_classes = 0;                              // max label + 1
  std::vector<int64_t> train_idx, valid_idx, test_idx;  // sorted, unique
  bool known_undirected = false;

  int64_t num_edges() const { return static_cast<int64_t>(src.size()); }
  // Checks every invariant above (ids in range, sizes, split disjointness);
  // throws DataError naming `name` and the broken invariant.
  void Validate() const;
};

struct DatasetOptions {
  // "ogbn-products" (looked up as <root>/ogbn_products), a path to an OGB
  // raw folder (contains raw/), or "synthetic:<preset or key=value list>".
  std::string dataset;
  std::string root = "dataset";
  // Split folder under split/; empty = the only one there.
  std::string split;
  // Where parsed arrays are cached as .npy; empty = <dataset folder>/processed.
  std::string cache_dir;
  bool use_cache = true;
  uint64_t seed = 0;    // synthetic generators only
  int num_threads = 0;  // 0 = hardware concurrency
};

// The OGB folder options.dataset names (a path holding raw/, or a name
// under options.root with '-' as '_'); "" if there is none.
std::string FindOgbFolder(const DatasetOptions& options);

// Loads a dataset. Throws ConfigError (unknown name/preset) or DataError
// (missing/corrupt/malformed files, naming the file and line).
Dataset LoadDataset(const DatasetOptions& options);

// Names of datasets known to be undirected although listed once per edge.
// DGL's dataset aliases resolved to OGB names ("ogb-product" ->
// "ogbn-products", "ogb-paper100M" -> "ogbn-papers100M"); others unchanged.
std::string OgbDatasetName(const std::string& name);

bool IsKnownUndirected(const std::string& name);

}  // namespace gnn
