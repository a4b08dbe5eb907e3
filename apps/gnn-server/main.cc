// gnn-server: serve one partition (DGL's server processes).
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>

#include "common/cli.h"
#include "common/launch_env.h"
#include "common/log.h"
#include "net/ports.h"
#include "server/server.h"

namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  gnn::ServerOptions o;
  CLI::App app{"Serve one graph partition to samplers and trainers.", "gnn-server"};
  // gnn-launch passes the required ones in the environment (GNN_*).
  app.add_option("--ip_config", o.ip_config,
                 "machines, one 'IP [PORT]' per line (required; env GNN_IP_CONFIG)");
  app.add_option("--part_config", o.part_config,
                 "partition config JSON (required; env GNN_PART_CONFIG)");
  app.add_option("--machine_id", o.machine_id,
                 "this machine's line in ip_config, 0-based (required; env GNN_MACHINE_ID); it "
                 "serves partition machine_id mod num_parts");
  app.add_option("--server_id", o.server_id,
                 "0 loads the partition into shared memory; others are backups that attach to "
                 "it (env GNN_SERVER_ID)")
      ->capture_default_str();
  app.add_option("--num_servers", o.num_servers, "servers per machine (env GNN_NUM_SERVERS)")
      ->capture_default_str();
  app.add_option("--num_threads", o.num_threads,
                 "worker threads, 0 = all cores (env GNN_NUM_SERVER_THREADS)")
      ->capture_default_str();
  app.add_option("--job_id", o.job_id,
                 "only Shutdown requests carrying this id are obeyed; names the shared memory "
                 "(env GNN_JOB_ID)");
  app.add_option_function<int64_t>(
         "--peer_window_mb", [&](int64_t mb) { o.peer_window_bytes = mb << 20; },
         "MB of replies one client may leave unread before further replies to it become "
         "errors (bounds the memory any one peer can make this server hold)")
      ->default_str(std::to_string(o.peer_window_bytes >> 20));
  std::string secret_file;
  bool insecure = false;
  gnn::AddJobSecretFlags(app, &secret_file, &insecure);
  app.add_option_function<int64_t>(
         "--attach_timeout_ms",
         [&](int64_t ms) { o.attach_timeout = std::chrono::milliseconds(ms); },
         "backups wait this long for server 0")
      ->default_str(std::to_string(o.attach_timeout.count()));
  // Before anything else: a launcher gone at once (stdin EOF) sends SIGTERM
  // while the flags are still being read.
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGHUP, OnSignal);  // a hang-up is a stop: free the shared memory
  return gnn::RunMain(
      app, argc, argv,
      [&] {
        gnn::FlagFromEnv(app, "--ip_config", gnn::launch_env::kIpConfig, &o.ip_config);
        gnn::FlagFromEnv(app, "--part_config", gnn::launch_env::kPartConfig, &o.part_config);
        gnn::FlagFromEnv(app, "--job_id", gnn::launch_env::kJobId, &o.job_id);
        gnn::FlagFromEnv(app, "--machine_id", gnn::launch_env::kMachineId, &o.machine_id);
        gnn::FlagFromEnv(app, "--server_id", gnn::launch_env::kServerId, &o.server_id);
        gnn::FlagFromEnv(app, "--num_servers", gnn::launch_env::kNumServers, &o.num_servers);
        gnn::FlagFromEnv(app, "--num_threads", gnn::launch_env::kNumServerThreads, &o.num_threads);
        gnn::JobSecretFromEnv(app, &secret_file, &insecure);
        int restart = 0;
        gnn::FlagFromEnv(app, nullptr, gnn::launch_env::kRestart, &restart);
        if (restart > 0) o.bind_retry = std::chrono::duration<double>(gnn::kBindRetryS);
        gnn::SetLogRole("server " + std::to_string(o.machine_id) + "." +
                        std::to_string(o.server_id));
        o.keys = gnn::net::ResolveJobKeys(secret_file, insecure, o.job_id, "gnn-server");
        gnn::RunServer(o, g_stop);
      },
      gnn::kServerStopGraceS);
}
