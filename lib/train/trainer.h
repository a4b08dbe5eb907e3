// gnn-train's job, as DGL's train_dist.py: in standalone mode on one
// partition with no servers, or as one of many trainers of a cluster
// (servers, samplers, gradient all-reduce). Sample, train the model
// (--model), evaluate layer-wise, checkpoint, and summarise.
#pragma once

#include <nlohmann/json.hpp>

#include "train/options/train_options.h"

namespace gnn {

// Runs training; returns the summary object (best_val_acc, test_acc,
// final_test_acc, epochs, mean_epoch_time_s, seeds_per_s, ...). The folders
// of --save_model / --save_embeddings are checked before training; if the
// final write still fails, the summary carries "output_error" (the error's
// line) and the caller reports it after the summary.
nlohmann::json RunTrain(const TrainOptions& options);
// What RunTrain checks before any work: the options, and the partition
// config against them (--check_only; gnn-launch runs it before it starts
// anything). Throws ConfigError / DataError naming the flag or file.
void CheckTrain(const TrainOptions& options);

// gnn-train's whole command line: registers every flag (train_flags.h),
// reads the launcher's environment, checks the backend, then checks or
// runs and prints the summary as the last stdout line. Returns the exit
// code (common/cli.h's RunMain). Call from main.
int TrainMain(int argc, char** argv);

}  // namespace gnn
