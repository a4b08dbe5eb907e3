// Preflight: everything that would stop a launch, checked before anything
// starts, one line per problem.
#pragma once

#include <string>
#include <vector>

#include "cluster/launcher.h"

namespace gnn {

// Every problem that would stop the launch, one message each (empty = go):
// unreadable/malformed ip_config or partition config, partition count !=
// machines, busy local ports (naming the holder), missing binaries or
// files on any machine, remote machines that ssh cannot reach. The
// launcher reads ip_config and part_config in machine 0's workspace when
// they are there, else relative to the current directory.
std::vector<std::string> CheckLaunch(const LaunchOptions& options);

// "" if TCP `port` can be bound on this host at `host`, else why not.
std::string PortBusy(const std::string& host, int port);

}  // namespace gnn
