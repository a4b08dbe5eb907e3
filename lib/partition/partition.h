// gnn-partition's job: load a dataset, assign nodes to partitions, relabel so
// each partition owns one contiguous id range, and write the partition
// format (docs/ARCHITECTURE.md, "On-disk formats") atomically.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "graph/dataset.h"
#include "partition/assign.h"

namespace gnn {

struct PartitionOptions {
  DatasetOptions data;                // --dataset --root --split --seed ...
  int num_parts = 4;                  // --num_parts, in [1, num_nodes]
  std::string part_method = "metis";  // --part_method metis|stream|random
  bool balance_train = false;         // --balance_train: METIS constraint on train nodes
  bool balance_edges = false;         // --balance_edges: METIS constraint on in-degree
  bool undirected = false;            // --undirected: add reverse edges (auto for known ones)
  bool directed = false;              // --directed: keep the edges as listed, even for known ones
  std::string output = "data";        // --output folder
  std::string graph_name;             // --graph_name; default: the dataset's name
  bool overwrite = false;             // --overwrite an existing output
  int num_trainers_per_machine = 1;   // accepted as DGL does; recorded only
  int num_threads = 0;                // 0 = all cores
  double val_edges = 0;               // --val_edges: fraction of undirected edges held out
                                      // for link evaluation, in [0, 1)
  // --sparsify K (METIS): METIS sees each undirected edge with probability
  // min(1, K / max of its ends' degrees) (KeepSparsifiedEdge); 0 = every
  // edge. The cut is counted on the whole graph.
  int64_t sparsify = 0;
  bool sparsify_given = false;  // --sparsify was on the command line (else METIS may choose one)
  // --max_memory_gb: the most memory gnn-partition may hold; 0: what the
  // machine (or its cgroup) has available. METIS is kept within it
  // (MetisMemoryOf).
  double max_memory_gb = 0;
  // --node_feat_from_edges: "auto" derives node features as the mean of
  // each node's in-edge features when a graph has edge features and no
  // node features; "mean" always (appended to the node features); "none"
  // never (a graph without node features is then refused).
  std::string node_feat_from_edges = "auto";
  // --edge_weight SPEC: keep one number per edge, the edge weight gnn-train
  // reads (its --edge_weight): a chunked edge_data name of one column, a
  // 0-based column of the edge features, or "mean" (each edge's mean
  // feature). Applied after --node_feat_from_edges saw every column.
  std::string edge_weight;
  // --task auto|node|multilabel|node_regression (--label_dtype float is
  // node_regression): what the labels are; auto detects it (graph/dataset.h
  // SetLabelRows) and says so in one line.
  std::string task = "auto";

  // Throws ConfigError naming the first bad field.
  void Validate() const;
  DirectionFlag direction() const {
    return undirected ? DirectionFlag::kUndirected
           : directed ? DirectionFlag::kDirected
                      : DirectionFlag::kAuto;
  }
};

struct PartitionResult {
  std::string config_path;  // <output>/<graph_name>.json
  nlohmann::json report;    // the partition_report written into the config
};

// What METIS may take now: 90 % of --max_memory_gb less what this process
// holds, or the memory available (AvailableMemoryBytes); sparsifying
// automatically unless --sparsify was given.
MetisMemory MetisMemoryOf(const PartitionOptions& options);

// Runs the whole job. Progress goes to the log; nothing is printed to stdout.
// On any error nothing is left at `output` (a previous output is kept).
PartitionResult RunPartition(const PartitionOptions& options);

// The human-readable report gnn-partition prints on stdout.
std::string FormatPartitionReport(const nlohmann::json& report);

}  // namespace gnn
