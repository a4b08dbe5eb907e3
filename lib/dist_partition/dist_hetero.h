// gnn-partition --distributed for a heterogeneous chunked graph (several
// node types and relations): each rank reads its run of chunks of every
// node type and relation, and the ranks write the single-machine
// heterogeneous partitioner's files (partition/hetero_partition: the same
// writer) with the same config. Inside a Job of dist_partition.cc, after
// its input checks.
#pragma once

#include "common/timer.h"
#include "dist_partition/agreement.h"
#include "dist_partition/dist_partition.h"
#include "dist_partition/mpi_comm.h"
#include "graph/chunked.h"
#include "partition/partition.h"

namespace gnn {

// The typed job on this rank (collective; `meta` is hetero(), options
// checked, num_parts equal to the ranks), its stages timed on `timer` (in
// its "load" stage on entry). Bad input anywhere: JobFailed on
// every rank, as RunDistributedPartition says.
PartitionResult RunDistributedHetero(MpiComm& comm, Agreement& agree, const PartitionOptions& o,
                                     const DistributedOptions& d, const ChunkedMeta& meta,
                                     StageTimer& timer);

}  // namespace gnn
