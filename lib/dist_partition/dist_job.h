// The partitioning job on one rank, MPI already started (dist_command.cc
// starts and finalizes it around the job).
#pragma once

#include "dist_partition/dist_partition.h"
#include "dist_partition/mpi_comm.h"

namespace gnn {

// Reads this rank's chunks, exchanges, assigns and writes this rank's
// partition (a typed graph: RunDistributedHetero); every error is agreed
// (JobFailed on every rank) except a wait that times out. Collective.
PartitionResult RunDistributedJob(MpiComm& comm, PartitionOptions options,
                                  const DistributedOptions& d);

}  // namespace gnn
