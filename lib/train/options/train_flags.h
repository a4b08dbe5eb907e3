// gnn-train's flags: each concern's struct (train_options.h) registered by
// one function, the launcher's environment read once after parsing. The
// flags keep DGL's and GraphStorm's spellings (scripts rely on them).
#pragma once

#include "train/options/train_options.h"

namespace CLI {
class App;
}

namespace gnn {

void RegisterRunFlags(CLI::App& app, RunOptions* o);
void RegisterModelFlags(CLI::App& app, ModelOptions* o);
void RegisterTaskFlags(CLI::App& app, TaskOptions* o);
void RegisterClusterFlags(CLI::App& app, ClusterOptions* o);
void RegisterInferenceFlags(CLI::App& app, InferenceOptions* o);
// All of them, and the flags that are read into TrainOptions only after
// parsing (--no_self_loop). Call FinishTrainFlags after app.parse.
void RegisterTrainFlags(CLI::App& app, TrainOptions* o);

// After parsing: the launcher's environment (GNN_*, launch_env.h) for the
// flags not given, --no_self_loop, the flags only one task takes, and the
// model's defaults for what the user left unset. ConfigError naming the flag.
void FinishTrainFlags(const CLI::App& app, TrainOptions* o);
// Its first part, for binaries that join a job as a trainer does
// (gnn-serve): the launcher's GNN_* environment for the cluster flags and
// --num_omp_threads not given, and the job's secret. `app` must have
// RegisterClusterFlags' flags and --num_omp_threads.
void ClusterFlagsFromEnv(const CLI::App& app, TrainOptions* o);

}  // namespace gnn
