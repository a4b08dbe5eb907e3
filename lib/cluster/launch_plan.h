// Where each machine's processes run and which files they read: the
// workspace of every machine, paths inside it, the binaries to start.
// Shared by preflight (CheckLaunch), the launcher and --slurm.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "cluster/launch_options.h"
#include "net/ip_config.h"

namespace gnn {

// `path` inside `workspace` (absolute and normalized) unless it is absolute.
std::string InWorkspace(const std::string& workspace, const std::string& path);

// The first shell word of `command`; the rest (with its leading blank) in `rest`.
std::string FirstWord(const std::string& command, std::string* rest);

// Absolute path of the trainer binary on this host, "" if not found.
std::string ResolveBinary(const std::string& word, const std::string& workspace);

// The gnn-server local machines run.
std::string ServerBinary(const LaunchOptions& o);

// A leading "~/" as the local shell would expand it.
std::string ExpandHome(const std::string& path);

// Now + `seconds` on the steady clock.
std::chrono::steady_clock::time_point DeadlineAfter(double seconds);

// Where machine m's processes run and which files they read.
struct MachinePlan {
  MachineAddress address;
  bool local = false;
  std::string workspace;    // absolute for local machines; as given (maybe "~/...") for remote
  std::string part_config;  // as the machine's processes see it
  std::string ip_config;
};

// The launcher's own copy of a workspace-relative file: in machine 0's
// workspace if it is there, else relative to the current directory.
std::string LauncherPath(const LaunchOptions& o, const std::string& path);

// Machine m's workspace is the one of "{machine}" = origin[m] (a job moved
// off a lost machine keeps each survivor's workspace); empty origin = m.
std::vector<MachinePlan> PlanMachines(const LaunchOptions& o,
                                      const std::vector<MachineAddress>& machines,
                                      const std::vector<int>& origin = {});

}  // namespace gnn
