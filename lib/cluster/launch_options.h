// gnn-launch's settings (LaunchOptions, checked once where the flags
// enter) and DGL launch.py's spellings of them: --extra_envs as several
// words, the flags it takes that mean nothing here.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "cluster/remote.h"
#include "net/ip_config.h"

namespace gnn {

struct LaunchOptions {
  // Every process runs in its machine's workspace; relative paths start
  // there. "{machine}" expands to the machine index (two "machines" on one
  // host get two workspaces), a leading "~/" to the home directory.
  std::string workspace = ".";
  int num_trainers = 1;     // trainers per machine
  int num_samplers = 0;     // gnn-sampler processes per trainer (the trainer starts them)
  int num_servers = 1;      // servers per machine
  std::string part_config;  // relative to workspace unless absolute
  std::string ip_config;    // relative to workspace unless absolute
  SshOptions ssh;           // how remote machines are reached
  int master_port = kDefaultMasterPort;    // trainer rendezvous on machine 0
  std::string log_dir;                     // "" = WORKSPACE/logs/JOB_ID
  std::string job_id;                      // "" = "job-<pid>-<time>"
  std::chrono::duration<double> grace{5};  // SIGTERM, then SIGKILL after this long
  // Every server must answer a Ping by then.
  std::chrono::duration<double> server_ready_timeout{60};
  std::string command;        // trainer command line (shell words)
  std::string server_binary;  // gnn-server to run ("" = next to this executable)
  // Per-node mode (>= 0): start and supervise only this machine's
  // processes, as local children; run once on every machine, the
  // launchers form one job without ssh. The job id then defaults to one
  // derived from ip_config, part_config and master port, so all agree.
  int machine_id = -1;
  // Per-node: wait this long for other machines' servers.
  std::chrono::duration<double> peer_timeout{300};
  // Per-node: a peer silent this long while our trainers run has failed.
  std::chrono::duration<double> peer_grace{10};
  // Security (cluster/job_secret.h): a cluster secret on every machine, or
  // "" for a fresh per-job secret (one launcher for all machines only).
  std::string secret_file;
  bool insecure = false;  // plaintext, unauthenticated, said in the log
  // Automatic recovery: after a failure (not a configuration or data error,
  // nor a signal) tear down, wait restart_backoff, start every process
  // again; the trainers resume from the checkpoint in their
  // --checkpoint_dir (GNN_RESTART). At most max_restarts times.
  int max_restarts = 0;
  std::chrono::duration<double> restart_backoff{3};
  // The whole partitioned graph on this host (the config gnn-copy read):
  // a restart after a machine stopped answering over ssh moves the job to
  // the machines left (machine j serves partition j mod P) and copies what
  // they lack from here. Without it, a lost machine ends the job.
  std::string part_source;
  // DGL launch.py's settings. Every process gets extra_envs ("NAME=value";
  // gnn-launch's own GNN_* variables cannot be set so). Trainers get
  // OMP_NUM_THREADS and GNN_NUM_OMP_THREADS (gnn-train's --num_omp_threads
  // unless its command sets it) when num_omp_threads > 0; servers get
  // GNN_NUM_SERVER_THREADS (gnn-server's --num_threads) when
  // num_server_threads > 0. keep_alive and graph_format have no meaning
  // here: WarnIgnored says so.
  std::vector<std::string> extra_envs;
  int num_omp_threads = 0;
  int num_server_threads = 0;
  bool keep_alive = false;
  std::string graph_format;
  // Only errors, warnings and the final summary: no progress lines, no
  // lines of the processes (their log files still get them).
  bool quiet = false;

  void Validate() const;  // ConfigError naming the bad field
};

// --extra_envs as DGL's launch.py takes it: "NAME=value" entries separated
// by blanks or by commas that start a new "NAME=" (a value may hold a
// comma: "A=x,y,B=2" is A=x,y and B=2). ConfigError naming an entry that
// is not NAME=value or sets a GNN_ variable.
std::vector<std::string> ParseExtraEnvs(const std::string& text);

// argv with DGL's spelling "--extra_envs A=1 B=2" (several words, argparse
// nargs='+') made one value "--extra_envs" "A=1 B=2": the words after it
// that look like NAME=value are gathered (the trainer command is not).
std::vector<std::string> GatherExtraEnvWords(int argc, char** argv);

// One warning line on stderr for each DGL flag given that means nothing to
// gnn-launch (--keep_alive, --graph_format), saying why.
void WarnIgnored(const LaunchOptions& options);

}  // namespace gnn
