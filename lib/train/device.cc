#include "train/device.h"

#include "common/error.h"
#include "train/trainer.h"

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
  if (o.gpu_cache_mb > 0 && !o.standalone) {
    throw ConfigError(
        "--gpu_cache_mb: the GPU feature cache serves --standalone training so far "
        "(distributed trainers read their batches' rows from gnn-samplers or the "
        "machine's hot-row cache)");
  }
  if (o.task != "node" || (o.model != "graphsage" && o.model != "gcn" && o.model != "gat")) {
    throw ConfigError(flag +
                      ": the GPU path trains --model graphsage, gcn and gat with --task node "
                      "so far (--model " +
                      o.model + " --task " + o.task + " runs on the CPU: --num_gpus -1)");
  }
}

torch::Device TrainDevice(const TrainOptions& o) {
  if (o.num_gpus <= 0) return torch::Device(torch::kCPU);
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(o.trainer_id % o.num_gpus));
}

}  // namespace gnn
