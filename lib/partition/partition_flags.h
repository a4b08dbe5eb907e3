// gnn-partition's command line (DGL's partition_graph.py flags, and ours):
// every flag registered once, and the checks that need several of them.
// apps/gnn-partition/main.cc parses and runs it.
#pragma once

#include <cstdint>
#include <string>

#include "partition/partition.h"

namespace CLI {
class App;
}

namespace gnn {

struct PartitionCommand {
  PartitionOptions options;
  bool quiet = false;  // no progress lines on stderr
  // --distributed: one process per machine, each partitioning its chunks
  // (dist_partition/dist_partition.h), over --ip_config's machines.
  bool distributed = false;
  std::string ip_config;
  double wait_timeout = 1800;  // seconds, at each step of --distributed
  // --sparsify; when not given, the mode's default (16 distributed, else
  // PartitionOptions::sparsify's).
  int64_t sparsify = -1;
  // --num_parts was given (--distributed otherwise takes one per machine).
  bool num_parts_given = false;
};

void AddPartitionFlags(CLI::App& app, PartitionCommand* c);

// After parsing: fills what follows from several flags and refuses, in
// one ConfigError each, what does not go together (--ip_config without
// --distributed; what --distributed does not carry yet).
void FinishPartitionFlags(const CLI::App& app, PartitionCommand* c);

}  // namespace gnn
