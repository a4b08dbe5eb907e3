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
  gnn::SamplerLaunch launch;  // the trainer writes these flags (SamplerLaunch::ToArgv)
  CLI::App app{"Sample mini-batches for a trainer across graph partitions.", "gnn-sampler"};
  gnn::AddSamplerFlags(app, &launch);
  gnn::KeepFreedMemoryForReuse();  // batch buffers are reused, not re-faulted, every step
  std::signal(SIGTERM, OnSignal);  // before anything else (see gnn-server)
  std::signal(SIGINT, OnSignal);
  std::signal(SIGALRM, OnAlarm);
  return gnn::RunMain(app, argc, argv, [&] {
    gnn::FlagFromEnv(app, "--ip_config", "GNN_IP_CONFIG", &launch.ip_config);
    gnn::FlagFromEnv(app, "--part_config", "GNN_PART_CONFIG", &launch.part_config);
    gnn::FlagFromEnv(app, "--trainer_endpoint", "GNN_TRAINER_ENDPOINT", &launch.trainer_endpoint);
    gnn::FlagFromEnv(app, "--job_id", "GNN_JOB_ID", &launch.job_id);
    gnn::FlagFromEnv(app, "--machine_id", "GNN_MACHINE_ID", &launch.machine_id);
    gnn::FlagFromEnv(app, "--num_servers", "GNN_NUM_SERVERS", &launch.num_servers);
    gnn::FlagFromEnv(app, "--trainer_id", "GNN_TRAINER_ID", &launch.trainer_id);
    gnn::FlagFromEnv(app, "--sampler_id", "GNN_SAMPLER_ID", &launch.sampler_id);
    gnn::JobSecretFromEnv(app, &launch.secret_file, &launch.insecure);
    if (app.count("--no_local") > 0) launch.machine_id = -1;
    gnn::SetLogRole("sampler " + std::to_string(launch.trainer_id) + "." +
                    std::to_string(launch.sampler_id));
    // Its trainer started it, not gnn-launch: its lines reach the launcher
    // through the trainer's stderr, under the trainer's prefix, so they
    // keep their own role ("[0 trainer 0] [sampler 0.1] ...").
    gnn::ShowLogRole(true);
    gnn::RunSampler(gnn::ToSamplerOptions(launch), g_stop);
  });
}
