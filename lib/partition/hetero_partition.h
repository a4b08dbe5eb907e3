// gnn-partition for heterogeneous graphs (ogbn-mag's shape): METIS over the
// homogeneous view (every relation, types ignored) with one balance
// constraint per node type (DGL's balance_ntypes) besides --balance_train
// and --balance_edges; new ids grouped by partition, then node type; per
// partition the in-edges of every relation with their relation (etype.npy),
// per-type features and the target type's labels and masks. The format is
// described at PartInfo (partition/config.h).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/timer.h"
#include "graph/hetero.h"
#include "partition/config.h"
#include "partition/partition.h"

namespace gnn {

// RunPartition's path for a heterogeneous dataset (IsHeteroDataset).
// --undirected adds DGL's reverse relations.
PartitionResult RunHeteroPartition(const PartitionOptions& options);

// What a typed graph's partitioning (on one machine or --distributed) does
// not take: --edge_weight, --node_feat_from_edges, a --task other than
// node; one ConfigError each.
void CheckTypedPartitionOptions(const PartitionOptions& options);

// The one writer of a typed partition's files, for the single-machine and
// the distributed partitioner (whose outputs are byte-identical for the
// same assignment). Each records its files in `info`.

// indptr.npy (`indptr`: [owned + 1]), then indices.npy and etype.npy
// streamed together: row(i, &sources, &relations) appends owned node i's
// in-edges (new source ids and their relations, in stored order). Counts
// info->etype_edges over `num_relations`.
void WriteTypedEdges(
    const std::string& dir, const std::vector<int64_t>& indptr, size_t num_relations,
    const std::function<void(int64_t, std::vector<int64_t>*, std::vector<int64_t>*)>& row,
    PartInfo* info);
// The file of a node type's feature rows, "<type>-feat.npy".
std::string TypedFeatureFile(const std::string& type);
// <target>-label.npy and <target>-{train,valid,test}_mask.npy of the
// part's target nodes (in new-id order); the masks' counts into info.
void WriteTypedTargets(const std::string& dir, const std::string& target,
                       const std::vector<int64_t>& labels, const std::vector<uint8_t> masks[3],
                       PartInfo* info);

// The config's description of a typed partitioning: `d`'s types (names,
// sizes, feature widths), relations (keys only), target and classes; its
// parts come later.
PartitionConfig DescribeHeteroPartitioning(const PartitionOptions& options, const HeteroDataset& d,
                                           const std::string& graph_name, int64_t num_nodes,
                                           int64_t stored_edges, const std::string& method);
// The report: as the homogeneous one, plus each type's nodes per part.
nlohmann::json HeteroReport(const PartitionConfig& config, const HeteroDataset& d,
                            int64_t input_edges, int64_t undirected_edges, int64_t cut,
                            const StageTimer& timer);

}  // namespace gnn
