// gnn-partition: split a graph into partitions for distributed training
// (flags as DGL's partition_graph.py; partition/partition_flags.h).
#include <CLI/CLI.hpp>
#include <iostream>

#include "common/cli.h"
#include "common/error.h"
#include "common/log.h"
#include "partition/partition.h"
#include "partition/partition_flags.h"
#ifdef GNN_WITH_PTSCOTCH
#include "dist_partition/dist_partition.h"
#endif

int main(int argc, char** argv) {
  gnn::PartitionCommand c;
  CLI::App app{"Partition a graph for distributed GNN training.", "gnn-partition"};
  gnn::AddPartitionFlags(app, &c);
  int quiet_exit = 0;
  const int code = gnn::RunMain(app, argc, argv, [&] {
    gnn::SetLogRole("partition");
    if (c.quiet) gnn::SetLogLevel(gnn::LogLevel::kWarn);
    gnn::FinishPartitionFlags(app, &c);
    if (c.distributed) {
#ifdef GNN_WITH_PTSCOTCH
      gnn::DistributedOptions d;
      d.ip_config = c.ip_config;
      d.wait_timeout = std::chrono::duration<double>(c.wait_timeout);
      d.sparsify = c.sparsify;
      if (!c.num_parts_given) c.options.num_parts = 0;  // one per machine
      quiet_exit = gnn::RunDistributedPartitionCommand(c.options, d, &argc, &argv, std::cout);
      return;
#else
      throw gnn::ConfigError(
          "this gnn-partition was built without MPI and PT-Scotch (apt install libptscotch-dev "
          "libopenmpi-dev openmpi-bin, then rebuild): --distributed is not available");
#endif
    }
    const gnn::PartitionResult r = gnn::RunPartition(c.options);
    std::cout << gnn::FormatPartitionReport(r.report) << "partition config: " << r.config_path
              << std::endl;
  });
  return code != 0 ? code : quiet_exit;
}
