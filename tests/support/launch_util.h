// Test helpers for gnn-launch jobs on loopback: a 2-machine deployment of
// synthetic:tiny, the processes of a job, and checks that a job left
// nothing behind (processes, shared memory).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "process_util.h"
#include "test_util.h"

namespace gnn::test {

// The last line of `out` (trailing newlines ignored).
std::string LastLine(const std::string& out);

// gnn-train --standalone --quiet with `args`: REQUIREs exit 0 and returns
// the summary (its last stdout line).
nlohmann::json RunStandaloneTrainer(std::vector<std::string> args);

// Pids of processes whose environment carries GNN_JOB_ID=job (or the id of
// one of its restarted runs, job-rN), or whose parent is `parent` (0 =
// ignore), optionally only with comm `comm`.
std::vector<pid_t> JobProcesses(const std::string& job, pid_t parent = 0,
                                const std::string& comm = "");

// `args` with the value after `flag` replaced by `value`.
std::vector<std::string> WithFlag(std::vector<std::string> args, const std::string& flag,
                                  const std::string& value);

// One machine's per-node launcher (machine >= 0, with the test's cluster
// secret) of a 2-machine job in `ws`, or one launcher for both (-1).
std::vector<std::string> PerNodeArgs(const std::string& ws, const std::string& config, int machine,
                                     int master, const std::string& command,
                                     std::vector<std::string> extra = {});

// A 2-machine loopback deployment of synthetic:tiny.
struct Setup {
  TempDir dir;
  std::string config;
  std::string ip = "ip_config.txt";  // relative to the workspace
  std::string job;
  std::vector<int> ports;  // machine 0, machine 1, master
  std::string graph_name;

  explicit Setup(const std::string& tag);

  // gnn-launch's argv (1 trainer with 1 sampler and 1 server per machine)
  // with `extra` flags, running `command`.
  std::vector<std::string> Args(const std::string& command,
                                std::vector<std::string> extra = {}) const;
  // A gnn-train command line with `flags`.
  std::string Train(const std::string& flags) const;
  // Every /dev/shm entry of this job's segments (its first `runs` runs).
  std::vector<std::string> ShmLeft(int runs = 1) const;
  // Waits up to `timeout` for the job's processes and segments to
  // disappear; CHECKs that they did (and removes what is left).
  void RequireNothingLeft(pid_t launcher, std::chrono::seconds timeout = std::chrono::seconds(5),
                          int runs = 1) const;
  // Waits until a gnn-train of this job runs; its pid.
  pid_t WaitTrainer(ChildProcess& launcher) const;
  // Waits until the job is mid-training: a trainer finished an epoch.
  void WaitTraining(ChildProcess& launcher) const;
  // Runs gnn-launch over Train(flags) to the end (log in dir/log),
  // REQUIREs exit 0 within 240 s and that nothing is left behind; the
  // summary line of machine 0's trainer.
  nlohmann::json Launch(const std::string& flags, const std::string& log) const;
};

}  // namespace gnn::test
