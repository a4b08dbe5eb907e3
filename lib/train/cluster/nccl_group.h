// The trainers' gradient all-reduce on GPUs: NCCL through c10d's
// ProcessGroupNCCL, its ranks found through the job's own rendezvous (a
// c10d::Store over net::KvClient, so the set-up is CURVE-authenticated like
// every other collective). NCCL's own traffic is plaintext, as NCCL is
// (README, "What is not ours to protect"). Only a CUDA build has it
// (GNN_CUDA_KERNELS); elsewhere constructing one is a ConfigError.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>

#include "net/security.h"

namespace gnn {

class NcclGroup {
 public:
  // `store_endpoint` / `keys`: the rendezvous the trainers met at (a second
  // connection to it); `where` names it in errors.
  NcclGroup(const std::string& store_endpoint, const net::JobKeys& keys, const std::string& where,
            int rank, int world, std::chrono::milliseconds timeout);
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  // flat (a CUDA tensor) := the mean over the ranks of their `flat`. Every
  // rank gets the same bits (NCCL's sum order differs from the host
  // collective's rank order: equal to it within rounding, not bitwise).
  void AllreduceMean(torch::Tensor& flat);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gnn
