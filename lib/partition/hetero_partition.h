// gnn-partition for heterogeneous graphs (ogbn-mag's shape): METIS over the
// homogeneous view (every relation, types ignored) with one balance
// constraint per node type (DGL's balance_ntypes) besides --balance_train
// and --balance_edges; new ids grouped by partition, then node type; per
// partition the in-edges of every relation with their relation (etype.npy),
// per-type features and the target type's labels and masks. The format is
// described at PartInfo (partition/config.h).
#pragma once

#include "partition/partition.h"

namespace gnn {

// RunPartition's path for a heterogeneous dataset (IsHeteroDataset).
// --undirected adds DGL's reverse relations.
PartitionResult RunHeteroPartition(const PartitionOptions& options);

}  // namespace gnn
