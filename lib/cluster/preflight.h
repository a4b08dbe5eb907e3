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

// --master_port reserved among this host's gnn-launch jobs from a
// launcher's check until it ends: a lock (flock) on a file per port in the
// temp folder (mode 0666, shared by every user; never a link), so two jobs
// started together with one master port cannot both pass the check; the
// second is refused at once, before anything starts, instead of finding the
// port taken when its trainers meet. Released when the launcher exits (its
// children do not inherit it). Without a usable lock file the port check
// alone stands.
class PortReservation {
 public:
  PortReservation() = default;
  ~PortReservation();
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  // Takes `port` (machine 0 at `host`; the lock is per port): "" when this
  // launcher holds it now, else which gnn-launch holds it (its pid and
  // start time, when it could say).
  std::string Take(const std::string& host, int port);

 private:
  int fd_ = -1;
};

// Every problem that would stop the launch, one each (empty = go):
// unreadable/malformed ip_config or partition config, partition count !=
// machines, busy local ports (naming the holder), missing binaries or
// files on any machine, remote machines that ssh cannot reach. The
// launcher reads ip_config and part_config in machine 0's workspace when
// they are there, else relative to the current directory.
// The trainer command's flags and files are checked by its own binary
// (--check_only) in every machine's workspace: locally, or over ssh on a
// remote one. With `hold`, the master port is reserved in it when this
// launcher runs machine 0 (PortReservation).
std::vector<LaunchProblem> CheckLaunch(const LaunchOptions& options,
                                       PortReservation* hold = nullptr);

// "" if TCP `port` can be bound on this host at `host`, else why not.
std::string PortBusy(const std::string& host, int port);

}  // namespace gnn
