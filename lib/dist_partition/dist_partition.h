// gnn-partition --distributed: partitioning across machines, one MPI rank
// per machine. Rank r reads only its run of chunks of a chunked dataset
// (lib/graph/chunked), the ranks exchange edges so each holds the adjacency
// of its own nodes, PT-Scotch assigns the parts, and the ranks exchange
// rows so that rank p writes part<p>/ itself. No rank ever holds the whole
// graph; ids are 64-bit throughout. The output is the single-machine
// format (same files, same config keys and checks).
#pragma once

#include <chrono>
#include <ostream>
#include <string>

#include "common/error.h"
#include "partition/partition.h"

namespace gnn {

struct DistributedOptions {
  // --ip_config: the machines, one per line ("" = none). Outside an MPI
  // launcher RunDistributedPartitionCommand starts mpirun over them.
  std::string ip_config;
  // Machines the ip_config lists (0: none given); the ranks must match it.
  int machines = 0;
  // Bound on every wait for the other machines.
  std::chrono::duration<double> wait_timeout{1800};
  // PT-Scotch sees each undirected edge {u, v} with probability
  // min(1, sparsify / max(deg u, deg v)) (a symmetric, seeded draw): hubs
  // keep about `sparsify` edges, low-degree nodes all theirs. 0: every edge.
  // The cut is always counted on the whole graph. PT-Scotch's multilevel
  // hierarchy of a small-world graph keeps most of its edges at every level
  // (~110 bytes per edge entry on products): this is what keeps a machine's
  // memory near 1/P of the single-machine partitioner's.
  int64_t sparsify = 16;

  // ConfigError naming the first bad field (RunDistributedPartitionCommand
  // calls it).
  void Validate() const;
};

// The job failed (on this machine or another) and its one error line was
// printed by rank 0: the process exits with `code` and prints nothing more.
class JobFailed : public Error {
 public:
  JobFailed(int code, const std::string& message) : Error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// True when this process was started by an MPI launcher (mpirun, srun...).
bool UnderMpiLauncher();

// Runs the job on this rank (MPI is initialized and finalized here).
// options.num_parts 0 means one part per rank. Returns on every rank; the
// result's report is complete on every rank. Bad input on any machine:
// rank 0 prints one line "gnn-partition: error: [machine i: ]<message>",
// every rank removes what it wrote, MPI is finalized, and all throw
// JobFailed with the exit code of the error's class. A wait that times
// out, or an error outside those agreements (out of memory in an
// exchange), prints one line and ends the whole job (MPI_Abort).
PartitionResult RunDistributedPartition(PartitionOptions options, const DistributedOptions& d,
                                        int* argc, char*** argv, int* rank);

// gnn-partition --distributed, all of it: with d.ip_config and outside an
// MPI launcher, this very command again under mpirun (RelaunchUnderMpirun:
// does not return); otherwise the job on this rank (RunDistributedPartition,
// d.machines read from d.ip_config), whose report and config path rank 0
// prints to `out`. Returns 0, or the exit code of a failed job whose one
// error line rank 0 printed.
int RunDistributedPartitionCommand(PartitionOptions options, DistributedOptions d, int* argc,
                                   char*** argv, std::ostream& out);

}  // namespace gnn
