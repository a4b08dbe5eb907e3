#include "train/loop/device.h"

#include <algorithm>

#include "common/error.h"
#include "train/options/train_options.h"

#if GNN_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace gnn {

bool BuiltWithCuda() {
#if GNN_CUDA_KERNELS
  return true;
#else
  return false;
#endif
}

void CheckDevice(const TrainOptions& o) {
  if (o.gpu_cache_mb > 0 && o.num_gpus <= 0) {
    throw ConfigError("--gpu_cache_mb " + std::to_string(o.gpu_cache_mb) +
                      " keeps feature rows on a GPU: it needs --num_gpus >= 1");
  }
  if (o.num_gpus <= 0) return;
  const std::string flag = "--num_gpus " + std::to_string(o.num_gpus);
  if (!BuiltWithCuda()) {
    throw ConfigError(flag +
                      ": this gnn-train was built without CUDA (a CPU LibTorch); the GPU build "
                      "is scripts/build-cuda.sh; use --num_gpus -1 for CPU");
  }
  const int64_t visible = torch::cuda::is_available() ? torch::cuda::device_count() : 0;
  if (visible == 0) {
    throw ConfigError(flag +
                      ": no CUDA device is visible to this process (check nvidia-smi and "
                      "CUDA_VISIBLE_DEVICES); use --num_gpus -1 for CPU");
  }
  if (o.num_gpus > visible) {
    throw ConfigError(flag + ": only " + std::to_string(visible) + " CUDA device" +
                      (visible == 1 ? " is" : "s are") + " visible");
  }
  if (o.gpu_cache_mb > 0 && !o.standalone) {  // automatic (-1): none when distributed
    throw ConfigError(
        "--gpu_cache_mb: the GPU feature cache serves --standalone training so far "
        "(distributed trainers read their batches' rows from gnn-samplers or the "
        "machine's hot-row cache)");
  }
  if (o.gpu_cache_mb > 0 && (o.model == "rgcn" || o.model == "rgat")) {
    throw ConfigError("--gpu_cache_mb " + std::to_string(o.gpu_cache_mb) + ": --model " + o.model +
                      " keeps no GPU feature cache yet (typed batches bring their rows; "
                      "use --gpu_cache_mb 0)");
  }
}

torch::Device TrainDevice(const TrainOptions& o) {
  if (o.num_gpus <= 0) return torch::Device(torch::kCPU);
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(o.trainer_id % o.num_gpus));
}

int64_t DeviceCacheBytes(const TrainOptions& o) {
  if (o.gpu_cache_mb >= 0) {  // in double: a huge --gpu_cache_mb must not overflow
    return static_cast<int64_t>(std::min(static_cast<double>(o.gpu_cache_mb) * (1 << 20), 9e18));
  }
  if (o.num_gpus <= 0 || !o.standalone) return 0;
#if GNN_CUDA_KERNELS
  // Half of what is free before the model and the batches take theirs.
  const c10::cuda::CUDAGuard on(TrainDevice(o));
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    throw Error("--gpu_cache_mb: could not read the free memory of " + TrainDevice(o).str());
  }
  return static_cast<int64_t>(free / 2);
#else
  return 0;
#endif
}

}  // namespace gnn
