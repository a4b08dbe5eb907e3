#include "cluster/copy_main.h"

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <iostream>

#include "cluster/copy.h"
#include "common/cli.h"
#include "common/log.h"

namespace gnn {

namespace {

std::atomic<int> g_signal{0};
// The first signal stops the copy cleanly; a second one ends it at once.
void OnSignal(int sig) {
  if (g_signal.exchange(sig) != 0) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

void RegisterCopyFlags(CLI::App& app, CopyOptions* o) {
  app.add_option("--ip_config", o->ip_config,
                 "machines, one 'IP [PORT]' per line; machine i gets partition i")
      ->required();
  app.add_option(
         "--workspace", o->workspace,
         "destination folder on every machine; {machine} = machine index, ~/ = the remote home")
      ->required();
  app.add_option("--rel_data_path", o->rel_data_path,
                 "partitions go to WORKSPACE/REL_DATA_PATH (relative; default: the workspace)");
  app.add_option("--part_config", o->part_config, "partition config JSON written by gnn-partition")
      ->required();
  app.add_option("--secret_file", o->secret_file,
                 "cluster secret for per-node/Slurm launches: made here (mode 0600) if missing, "
                 "shipped to WORKSPACE/<its name> with mode 0600");
  app.add_option("--script_folder", o->script_folder,
                 "folder copied to WORKSPACE/<its name> on every machine");
  app.add_option("--ssh_port", o->ssh.port, "ssh port of remote machines")->capture_default_str();
  app.add_option("--ssh_username", o->ssh.username, "ssh user for remote machines");
  app.add_option("--ssh_config", o->ssh.config,
                 "ssh client config file (ssh/scp -F, rsync -e \"ssh -F\")");
  app.add_flag("--force_ssh", o->ssh.force, "reach every machine over ssh, this host too");
  AddSecondsOption(app, "--ssh_connect_timeout_s", &o->ssh.connect_timeout,
                   "give up on a machine whose ssh server does not answer within this time "
                   "(ssh -o ConnectTimeout)");
  app.add_flag(
      "--ship_binaries", o->ship_binaries,
      "also copy gnn-server, gnn-sampler, gnn-train, gnn-launch, gnn-copy from this executable's "
      "folder to WORKSPACE/bin (gnn-launch puts it first on PATH)");
  app.add_option("--transfer", o->transfer,
                 "auto (rsync where installed here and there, else scp), rsync or scp")
      ->capture_default_str();
  app.add_flag("--dry_run", o->dry_run,
               "print what would be copied (looking, read-only, at what is there); write nothing");
  app.add_option("--jobs", o->jobs, "machines handled in parallel")->capture_default_str();
  AddSecondsOption(app, "--timeout_s", &o->timeout,
                   "deadline of every ssh/scp/rsync call, plus 1 s per MB moved");
}

int CopyMain(int argc, char** argv) {
  CopyOptions o;
  CLI::App app{
      "Copy partition i of a partitioned graph to machine i of an ip_config (ssh + rsync/scp, or a "
      "local copy for this host) and verify its sha256 there. With --ship_binaries the remote "
      "machines need no gnn install, but still need the shared libraries (e.g. LibTorch).",
      "gnn-copy"};
  RegisterCopyFlags(app, &o);
  const int rc = RunMain(app, argc, argv, [&] {
    SetLogRole("copy");
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
    std::signal(SIGHUP, OnSignal);
    // An ssh that exits at once (refused, unreachable) closes the stdin we
    // feed it: the write must fail with EPIPE and the ssh's error be
    // reported, not kill gnn-copy (seen: exit by SIGPIPE, no message).
    std::signal(SIGPIPE, SIG_IGN);
    RunCopy(o, std::cout, &g_signal);
  });
  return g_signal != 0 ? 128 + g_signal : rc;
}

}  // namespace gnn
