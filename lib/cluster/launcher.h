// gnn-launch: start a whole job (servers, then trainers) on every machine of
// an ip_config, as DGL's tools/launch.py does. Local machines (loopback or
// an address of this host) get child processes; remote machines are reached
// with ssh. Every output line is prefixed "[machine role rank]" on stderr and
// kept in one log file per process. The first process that fails stops the
// job; nothing the launcher started survives it. With --max_restarts the
// job then starts again, and the trainers continue from rank 0's newest
// checkpoint.
#pragma once

#include <atomic>

#include "cluster/launch_options.h"

namespace gnn {

// Runs the job to the end. Returns the launcher's exit code: 0 when every
// trainer exited 0 (rank 0's last stdout line, a JSON summary, is printed
// on stdout with "wall_time_s", "restarts", "steps_replayed" and
// "recovery_s" added); when the job failed, the class of the process
// that caused it: its own exit code when it is 2-6 (a trainer's bad data
// is 3), 6 when it was killed by a signal or its machine was lost, 5 when
// a server did not answer in time, else 1; 128+sig when `signal` became
// non-zero (set by the caller's SIGINT/SIGTERM handler). Throws DataError
// (before anything starts) when the log folder cannot be made or written.
// Call from the main thread (children die with it).
int RunLaunch(const LaunchOptions& options, const std::atomic<int>& signal);

}  // namespace gnn
