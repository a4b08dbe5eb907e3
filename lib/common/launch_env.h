// The environment gnn-launch gives the processes it starts (and a trainer
// its samplers): each variable named once, here, for the code that writes
// it and the binaries that read it (FlagFromEnv, at the top of main).
#pragma once

#include <string>

namespace gnn::launch_env {

inline constexpr char kIpConfig[] = "GNN_IP_CONFIG";
inline constexpr char kPartConfig[] = "GNN_PART_CONFIG";
inline constexpr char kMachineId[] = "GNN_MACHINE_ID";
inline constexpr char kJobId[] = "GNN_JOB_ID";
inline constexpr char kServerId[] = "GNN_SERVER_ID";
inline constexpr char kNumServers[] = "GNN_NUM_SERVERS";
inline constexpr char kNumServerThreads[] = "GNN_NUM_SERVER_THREADS";
inline constexpr char kTrainerId[] = "GNN_TRAINER_ID";
inline constexpr char kNumTrainers[] = "GNN_NUM_TRAINERS";
inline constexpr char kNumSamplers[] = "GNN_NUM_SAMPLERS";
inline constexpr char kSamplerId[] = "GNN_SAMPLER_ID";
inline constexpr char kTrainerEndpoint[] = "GNN_TRAINER_ENDPOINT";
inline constexpr char kMasterAddr[] = "GNN_MASTER_ADDR";
inline constexpr char kMasterPort[] = "GNN_MASTER_PORT";
inline constexpr char kNumOmpThreads[] = "GNN_NUM_OMP_THREADS";
// How many of the job's machines share a trainer's host (ip_config lines
// with its address): their trainers split the host's cores.
inline constexpr char kMachinesOnHost[] = "GNN_MACHINES_ON_HOST";
// The job's restart generation, progress lines for the launcher, and the
// newest checkpoint step it saw (checkpoint.h's ReadResumeBytes).
inline constexpr char kRestart[] = "GNN_RESTART";
inline constexpr char kReportProgress[] = "GNN_REPORT_PROGRESS";
inline constexpr char kResumeStep[] = "GNN_RESUME_STEP";
// common/cli.h: watch stdin for the launcher's stop line; the job's keys.
inline constexpr char kWatchStdin[] = "GNN_WATCH_STDIN";
inline constexpr char kSecretFile[] = "GNN_SECRET_FILE";
inline constexpr char kInsecure[] = "GNN_INSECURE";

// "NAME=value", an entry of a child's environment.
inline std::string Entry(const char* name, const std::string& value) {
  return std::string(name) + "=" + value;
}

}  // namespace gnn::launch_env
