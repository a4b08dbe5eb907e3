// gnn-sampler: sample mini-batches for one trainer across all partitions
// (DGL's sampler processes).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>

#include "client/sampler_service.h"
#include "common/cli.h"
#include "common/error.h"
#include "common/launch_env.h"
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
    gnn::FlagFromEnv(app, "--ip_config", gnn::launch_env::kIpConfig, &launch.ip_config);
    gnn::FlagFromEnv(app, "--part_config", gnn::launch_env::kPartConfig, &launch.part_config);
    gnn::FlagFromEnv(app, "--trainer_endpoint", gnn::launch_env::kTrainerEndpoint,
                     &launch.trainer_endpoint);
    gnn::FlagFromEnv(app, "--job_id", gnn::launch_env::kJobId, &launch.job_id);
    gnn::FlagFromEnv(app, "--machine_id", gnn::launch_env::kMachineId, &launch.machine_id);
    gnn::FlagFromEnv(app, "--num_servers", gnn::launch_env::kNumServers, &launch.num_servers);
    gnn::FlagFromEnv(app, "--trainer_id", gnn::launch_env::kTrainerId, &launch.trainer_id);
    gnn::FlagFromEnv(app, "--sampler_id", gnn::launch_env::kSamplerId, &launch.sampler_id);
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
