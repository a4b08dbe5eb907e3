// gnn-sampler: sample mini-batches for one trainer across all partitions
// (DGL's sampler processes).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>

#include "client/sampler_service.h"
#include "common/cli.h"
#include "common/error.h"
#include "common/log.h"
#include "common/memory.h"

namespace {
std::atomic<bool> g_stop{false};
// A stop ends the loop between batches; a sampler blocked in a request to
// a dead server (up to --timeout_ms) holds nothing worth waiting for, so
// it exits 1 s later whatever it is doing: its trainer's job is ending.
void OnSignal(int) {
  g_stop = true;
  ::alarm(1);
}
void OnAlarm(int) { ::_exit(gnn::kExitPeer); }
}  // namespace

int main(int argc, char** argv) {
  gnn::SamplerOptions o;
  o.graph.local_machine_id = -1;
  bool no_local = false;
  CLI::App app{"Sample mini-batches for a trainer across graph partitions.", "gnn-sampler"};
  app.add_option("--ip_config", o.graph.ip_config, "machines, one 'IP [PORT]' per line");
  app.add_option("--part_config", o.graph.part_config, "partition config JSON");
  app.add_option("--machine_id", o.graph.local_machine_id,
                 "this machine (its partition is read from shared memory)");
  app.add_option("--num_servers", o.graph.num_servers, "servers per machine");
  app.add_option("--trainer_endpoint", o.trainer_endpoint, "where the trainer listens");
  app.add_option("--trainer_id", o.trainer_id, "trainer this sampler serves");
  app.add_option("--sampler_id", o.sampler_id, "index among the trainer's samplers");
  app.add_option("--job_id", o.graph.job_id, "job id (must match the trainer's and servers')");
  app.add_option("--timeout_ms", o.graph.timeout_ms, "deadline per request round")
      ->capture_default_str();
  app.add_option("--idle_timeout_s", o.idle_timeout_s, "exit when the trainer is silent this long")
      ->capture_default_str();
  app.add_flag("--no_local", no_local, "reach the local partition over the network too");
  std::string secret_file;
  bool insecure = false;
  gnn::AddJobSecretFlags(app, &secret_file, &insecure);
  gnn::KeepFreedMemoryForReuse();  // batch buffers are reused, not re-faulted, every step
  std::signal(SIGTERM, OnSignal);  // before anything else (see gnn-server)
  std::signal(SIGINT, OnSignal);
  std::signal(SIGALRM, OnAlarm);
  return gnn::RunMain(app, argc, argv, [&] {
    gnn::FlagFromEnv(app, "--ip_config", "GNN_IP_CONFIG", &o.graph.ip_config);
    gnn::FlagFromEnv(app, "--part_config", "GNN_PART_CONFIG", &o.graph.part_config);
    gnn::FlagFromEnv(app, "--trainer_endpoint", "GNN_TRAINER_ENDPOINT", &o.trainer_endpoint);
    gnn::FlagFromEnv(app, "--job_id", "GNN_JOB_ID", &o.graph.job_id);
    gnn::FlagFromEnv(app, "--machine_id", "GNN_MACHINE_ID", &o.graph.local_machine_id);
    gnn::FlagFromEnv(app, "--num_servers", "GNN_NUM_SERVERS", &o.graph.num_servers);
    gnn::FlagFromEnv(app, "--trainer_id", "GNN_TRAINER_ID", &o.trainer_id);
    gnn::FlagFromEnv(app, "--sampler_id", "GNN_SAMPLER_ID", &o.sampler_id);
    gnn::JobSecretFromEnv(app, &secret_file, &insecure);
    if (no_local) o.graph.local_machine_id = -1;
    gnn::SetLogRole("sampler " + std::to_string(o.trainer_id) + "." + std::to_string(o.sampler_id));
    o.graph.keys = gnn::net::ResolveJobKeys(secret_file, insecure, o.graph.job_id, "gnn-sampler");
    gnn::RunSampler(o, g_stop);
  });
}
