// gnn-partition --distributed as a command: MPI started and finalized
// around the job (dist_partition.cc), one error line however it fails.
#include <iostream>
#include <optional>

#include "common/log.h"
#include "dist_partition/dist_job.h"
#include "dist_partition/mpi_comm.h"
#include "dist_partition/mpirun.h"
#include "net/ip_config.h"

namespace gnn {

void DistributedOptions::Validate() const {
  if (machines < 0) throw ConfigError("the machine count must be >= 0");
  if (!(wait_timeout.count() > 0)) throw ConfigError("--wait_timeout must be > 0 seconds");
  if (sparsify < 0) throw ConfigError("--sparsify must be >= 0 (0: every edge)");
}

PartitionResult RunDistributedPartition(PartitionOptions options, const DistributedOptions& d,
                                        int* argc, char*** argv, int* rank) {
  std::optional<PartitionResult> result;
  std::optional<JobFailed> failed;
  {
    MpiComm comm(argc, argv, d.wait_timeout.count());
    *rank = comm.rank();
    SetLogRole("partition[" + std::to_string(comm.rank()) + "]");
    if (comm.rank() != 0 && GetLogLevel() < LogLevel::kWarn) SetLogLevel(LogLevel::kWarn);
    try {
      result = RunDistributedJob(comm, std::move(options), d);
    } catch (const JobFailed& e) {
      // Printed once, and only after every rank has cleaned up: mpirun
      // ends the whole job as soon as one process exits non-zero.
      if (comm.rank() == 0) std::cerr << "gnn-partition: error: " << e.what() << std::endl;
      comm.Barrier("stopping");
      failed = e;
    } catch (const std::exception& e) {
      // Outside an agreement (out of memory in an exchange, an MPI error):
      // the others may be waiting in a collective, so the job ends here.
      std::cerr << "gnn-partition: error: machine " << comm.rank() << ": " << e.what() << std::endl;
      comm.Abort(ExitCodeOf(e));
    }
  }  // MPI finalized here, on every rank alike
  if (failed) throw *failed;
  return *result;
}

int RunDistributedPartitionCommand(PartitionOptions options, DistributedOptions d, int* argc,
                                   char*** argv, std::ostream& out) {
  d.Validate();
  if (!d.ip_config.empty()) {
    if (!UnderMpiLauncher()) RelaunchUnderMpirun(d.ip_config, *argc, *argv);
    d.machines = static_cast<int>(ReadIpConfig(d.ip_config).size());
  }
  int rank = 0;
  try {
    const PartitionResult r = RunDistributedPartition(std::move(options), d, argc, argv, &rank);
    if (rank == 0) {
      out << FormatPartitionReport(r.report) << "partition config: " << r.config_path << std::endl;
    }
  } catch (const JobFailed& e) {
    return e.code();
  }
  return 0;
}

}  // namespace gnn
