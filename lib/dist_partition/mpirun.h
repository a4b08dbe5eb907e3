// gnn-partition --distributed --ip_config FILE started by hand: the same
// command again under mpirun, one process per machine of the ip_config.
#pragma once

#include <string>
#include <vector>

#include "net/ip_config.h"

namespace gnn {

// mpirun's --host list for `machines`, in their order: "host:slots,...",
// each host once with as many slots as it has lines. ConfigError (naming
// `ip_config` and the line) when a host's lines are not next to each other:
// mpirun places a host's processes together.
std::string MpirunHosts(const std::vector<MachineAddress>& machines, const std::string& ip_config);

// Runs this very command (`argc`, `argv` as main got them) again under
// mpirun over the machines of `ip_config`, in its order (machine i writes
// part<i>/ on machine i). Does not return: exec's mpirun, or throws
// ConfigError when mpirun cannot be started.
[[noreturn]] void RelaunchUnderMpirun(const std::string& ip_config, int argc, char** argv);

}  // namespace gnn
