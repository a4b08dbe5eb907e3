// Where a trainer computes (gnn-train --num_gpus, DGL's meaning: GPUs per
// machine; the i-th trainer of a machine uses GPU i % N), and whether this
// gnn-train can compute there. The same learner code runs with the CPU as
// its device in a CPU build, which is what the tests run.
#pragma once

#include <torch/torch.h>

#include <string>

namespace gnn {

struct TrainOptions;

// Whether this gnn-train was built against a CUDA LibTorch with the CUDA
// kernels of lib/kernels (scripts/build-cuda.sh).
bool BuiltWithCuda();

// ConfigError in one line when --num_gpus > 0 cannot be honoured: a build
// without CUDA (use scripts/build-cuda.sh), no visible device, or fewer
// devices than asked. Every model and task has a GPU path.
void CheckDevice(const TrainOptions& o);

// cuda:(trainer_id % num_gpus) with --num_gpus >= 1, else the CPU.
torch::Device TrainDevice(const TrainOptions& o);

// The bytes of the GPU feature cache: --gpu_cache_mb when given (>= 0);
// automatic (-1, the default) is half the GPU's free memory for a
// standalone GPU trainer, none otherwise (distributed trainers, the CPU).
int64_t DeviceCacheBytes(const TrainOptions& o);

}  // namespace gnn
