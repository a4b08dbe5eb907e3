// gnn-launch: start a whole job (servers, then trainers) on every machine of
// an ip_config, as DGL's tools/launch.py does. Local machines (loopback or
// an address of this host) get child processes; remote machines are reached
// with ssh. Every output line is prefixed "[machine role rank]" on stderr and
// kept in one log file per process. The first process that fails stops the
// job; nothing the launcher started survives it.
#pragma once

#include <atomic>
#include <string>
#include <vector>

namespace gnn {

struct LaunchOptions {
  std::string workspace = ".";  // remote processes `cd` here; relative paths start here
  int num_trainers = 1;         // trainers per machine
  int num_samplers = 0;         // gnn-sampler processes per trainer (the trainer starts them)
  int num_servers = 1;          // servers per machine
  std::string part_config;      // relative to workspace unless absolute
  std::string ip_config;        // relative to workspace unless absolute
  int ssh_port = 22;
  std::string ssh_username;     // "" = ssh's default
  int master_port = 29500;      // trainer rendezvous on machine 0
  std::string log_dir;          // "" = WORKSPACE/logs/JOB_ID
  std::string job_id;           // "" = "job-<pid>-<time>"
  double grace_s = 5;           // SIGTERM, then SIGKILL after this long
  double server_ready_timeout_s = 60;  // every server must answer a Ping by then
  std::string command;          // trainer command line (shell words)
  std::string server_binary;    // gnn-server to run ("" = next to this executable)

  void Validate() const;  // ConfigError naming the bad field
};

// Every problem that would stop the launch, one message each (empty = go):
// unreadable/malformed ip_config or partition config, partition count !=
// machines, busy local ports (naming the holder), missing binaries.
std::vector<std::string> CheckLaunch(const LaunchOptions& options);

// Runs the job to the end. Returns the launcher's exit code: 0 when every
// trainer exited 0 (rank 0's last stdout line, a JSON summary, is printed
// on stdout with "wall_time_s" added); 1 when a process failed; 128+sig
// when `signal` became non-zero (set by the caller's SIGINT/SIGTERM
// handler). Call from the main thread (children die with it).
int RunLaunch(const LaunchOptions& options, const std::atomic<int>& signal);

// True for 127.0.0.1, localhost, ::1 and the addresses of this host.
bool IsLocalHost(const std::string& host);

// 'text' quoted for a POSIX shell.
std::string ShellQuote(const std::string& text);

// The ssh command line that runs `env_vars` + `command` in `workspace` on
// `host` (BatchMode, port, optional user).
std::vector<std::string> SshArgv(const std::string& host, int port, const std::string& user,
                                 const std::string& workspace,
                                 const std::vector<std::string>& env_vars,
                                 const std::string& command);

}  // namespace gnn
