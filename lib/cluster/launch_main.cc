#include "cluster/launch_main.h"

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <iostream>

#include "cluster/launcher.h"
#include "cluster/preflight.h"
#include "cluster/slurm.h"
#include "common/cli.h"
#include "common/error.h"
#include "net/ip_config.h"

namespace gnn {

namespace {
std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal = sig; }

// What gnn-launch's command line holds beyond LaunchOptions.
struct LaunchCommandLine {
  LaunchOptions o;
  std::vector<std::string> command;
  bool slurm = false;
  int slurm_port = kDefaultPort;
  std::string extra_envs;
};

// DGL launch.py's flags and gnn's own, into *c.
void RegisterLaunchFlags(CLI::App& app, LaunchCommandLine* c) {
  app.add_option(
         "--workspace", c->o.workspace,
         "working directory of every process; relative paths start here; {machine} = machine index")
      ->capture_default_str();
  app.add_option("--num_trainers", c->o.num_trainers, "trainers per machine")
      ->capture_default_str();
  app.add_option("--num_samplers", c->o.num_samplers, "gnn-sampler processes per trainer")
      ->capture_default_str();
  app.add_option("--num_servers", c->o.num_servers, "servers per machine")->capture_default_str();
  app.add_option("--part_config", c->o.part_config,
                 "partition config JSON (relative to workspace)");
  app.add_option("--ip_config", c->o.ip_config,
                 "machines, one 'IP [PORT]' per line (relative to workspace)");
  app.add_option("--ssh_port", c->o.ssh.port, "ssh port of remote machines")->capture_default_str();
  app.add_option("--ssh_username", c->o.ssh.username, "ssh user for remote machines");
  app.add_option("--ssh_config", c->o.ssh.config, "ssh client config file (ssh -F)");
  app.add_flag("--force_ssh", c->o.ssh.force, "reach every machine over ssh, this host too");
  AddSecondsOption(app, "--ssh_connect_timeout_s", &c->o.ssh.connect_timeout,
                   "give up on a machine whose ssh server does not answer within this time "
                   "(ssh -o ConnectTimeout)");
  app.add_option("--master_port", c->o.master_port, "trainer rendezvous port on machine 0")
      ->capture_default_str();
  app.add_option("--log_dir", c->o.log_dir,
                 "one log file per process (default WORKSPACE/logs/JOB_ID)");
  app.add_option("--job_id", c->o.job_id, "job id shared by every process (default: generated)");
  app.add_option(
      "--secret_file", c->o.secret_file,
      "cluster secret (mode 0600) on every machine; the job's keys derive from it and the job id "
      "(default: a fresh secret per job; per-node and --slurm launches need one)");
  app.add_flag("--insecure", c->o.insecure,
               "plaintext and unauthenticated: anyone on the network may read the graph");
  AddSecondsOption(app, "--grace_s", &c->o.grace, "SIGTERM, then SIGKILL after this many seconds");
  app.add_option("--max_restarts", c->o.max_restarts,
                 "after a failure, start the job again this many times at most; trainers resume "
                 "from their --checkpoint_dir")
      ->capture_default_str();
  AddSecondsOption(app, "--restart_backoff_s", &c->o.restart_backoff,
                   "wait this long after a failure before starting again");
  app.add_option("--part_source", c->o.part_source,
                 "the whole partitioned graph on this host (gnn-copy's --part_config): a restart "
                 "moves a lost machine's partition to the machines left");
  AddSecondsOption(app, "--server_ready_timeout_s", &c->o.server_ready_timeout,
                   "every server must answer a ping within this time");
  app.add_option(
      "--machine_id", c->o.machine_id,
      "per-node mode: start only this machine's processes (run on every machine; no ssh)");
  AddSecondsOption(app, "--peer_timeout_s", &c->o.peer_timeout,
                   "per-node mode: wait this long for the other machines' servers");
  AddSecondsOption(app, "--peer_grace_s", &c->o.peer_grace,
                   "per-node mode: a machine silent this long while our trainers run has "
                   "failed");
  app.add_flag(
      "--slurm", c->slurm,
      "per-node mode under srun: machine id from SLURM_NODEID; --ip_config is written from "
      "SLURM_JOB_NODELIST when the file does not exist");
  app.add_option("--slurm_port", c->slurm_port,
                 "server base port in an ip_config written by --slurm")
      ->capture_default_str();
  app.add_flag("--quiet", c->o.quiet,
               "print only errors, warnings and the final summary (the processes' lines still go "
               "to their log files)");
  // DGL launch.py's flags.
  app.add_option("--num_omp_threads", c->o.num_omp_threads,
                 "trainers' OMP_NUM_THREADS and gnn-train --num_omp_threads (0 = gnn-train's own "
                 "share of the cores)")
      ->capture_default_str();
  app.add_option("--num_server_threads", c->o.num_server_threads,
                 "gnn-server --num_threads (0 = all cores)")
      ->capture_default_str();
  app.add_option("--extra_envs", c->extra_envs,
                 "NAME=value entries exported to every process, separated by blanks or commas "
                 "(e.g. --extra_envs LD_LIBRARY_PATH=/opt/lib NCCL_DEBUG=INFO)");
  app.add_flag("--keep_alive", c->o.keep_alive, "DGL's; ignored (with a warning saying why)");
  app.add_option("--graph_format", c->o.graph_format, "DGL's; ignored (with a warning saying why)");
  app.add_option("command", c->command, "trainer command, e.g. \"gnn-train --num_epochs 2\"")
      ->required();
}

}  // namespace

int LaunchMain(int argc, char** argv) {
  LaunchCommandLine c;
  LaunchOptions& o = c.o;
  CLI::App app{"Launch a distributed training job (servers, then trainers) on every machine.",
               "gnn-launch"};
  RegisterLaunchFlags(app, &c);
  int code = 0;
  std::vector<std::string> args = GatherExtraEnvWords(argc, argv);
  std::vector<char*> arg_ptrs;
  for (auto& a : args) arg_ptrs.push_back(a.data());
  int rc = RunMain(app, static_cast<int>(arg_ptrs.size()), arg_ptrs.data(), [&] {
    for (const auto& w : c.command) o.command += (o.command.empty() ? "" : " ") + w;
    o.extra_envs = ParseExtraEnvs(c.extra_envs);
    if (c.slurm) ApplySlurm(app.count("--machine_id") > 0, c.slurm_port, &o);
    o.Validate();
    WarnIgnored(o);
    // Every problem, one line each; the exit code is the first one's class.
    // The master port stays reserved among this host's jobs from the check
    // until this launcher ends (PortReservation).
    PortReservation master_port;
    std::vector<LaunchProblem> problems = CheckLaunch(o, &master_port);
    if (!problems.empty()) {
      for (const auto& p : problems) std::cerr << "gnn-launch: error: " << p.message << "\n";
      code = problems.front().exit_code;
      return;
    }
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
    std::signal(SIGHUP, OnSignal);
    std::signal(SIGPIPE, SIG_IGN);
    code = RunLaunch(o, g_signal);
  });
  return rc != 0 ? rc : code;
}

}  // namespace gnn
