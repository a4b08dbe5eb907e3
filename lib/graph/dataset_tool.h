// gnn-dataset's job: load any dataset gnn understands, describe it, and
// optionally write it again (OGB's raw layout, DGL's chunked format).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "graph/dataset.h"

namespace gnn {

struct DatasetToolOptions {
  DatasetOptions data;
  std::string write_ogb;               // an OGB raw folder written here ("" = none)
  std::string write_split = "random";  // the split's name in it
  int write_chunked = 0;               // N chunks in DGL's chunked format (0 = none) ...
  std::string output;                  // ... into this folder, which must not exist
  // Heterogeneous datasets: add a reverse relation (dst, rev-REL, src) for
  // each, as DGL's RGCN example does.
  bool undirected = false;

  // ConfigError naming the first bad flag (RunDatasetTool calls it).
  void Validate() const;
};

// Loads the dataset, writes what `options` asks for, and returns its
// statistics as one JSON object: counts, the seconds each step took and,
// for homogeneous graphs, degrees; for heterogeneous ones, each node type
// and relation. Blocking; throws ConfigError or DataError.
nlohmann::json RunDatasetTool(const DatasetToolOptions& options);

}  // namespace gnn
