// Preflight: everything that would stop a launch, checked before anything
// starts, one line per problem.
#pragma once

#include <string>
#include <vector>

#include "cluster/launch_options.h"
#include "common/error.h"

namespace gnn {

// One problem that stops a launch: its line, and the exit code of its
// class (common/error.h): 2 configuration (flags, ip_config, ports,
// binaries, the trainer's flags), 3 data (partition config and files,
// workspaces), 5 an ssh check that timed out, 6 a machine ssh cannot
// reach; a trainer flag check passes on gnn-train's own code.
struct LaunchProblem {
  std::string message;
  int exit_code = kExitConfig;
};

// Every problem that would stop the launch, one each (empty = go):
// unreadable/malformed ip_config or partition config, partition count !=
// machines, busy local ports (naming the holder), missing binaries or
// files on any machine, remote machines that ssh cannot reach. The
// launcher reads ip_config and part_config in machine 0's workspace when
// they are there, else relative to the current directory.
std::vector<LaunchProblem> CheckLaunch(const LaunchOptions& options);

// "" if TCP `port` can be bound on this host at `host`, else why not.
std::string PortBusy(const std::string& host, int port);

}  // namespace gnn
