// In-process sampling ahead of a trainer (gnn-train with --num_samplers
// 0): one thread with its own DistGraph (sockets are per thread) makes the
// epoch's mini-batches in order into a bounded queue, packing layer 0's
// means and building the backward pass's transposes off the training
// thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "client/dist_graph.h"
#include "net/batch_codec.h"

namespace gnn {

class Prefetcher {
 public:
  // `prepare` (optional) completes each batch on the sampling thread just
  // before it is sampled (see SamplerPool::SetPrepare). At most `prefetch`
  // batches wait in the queue.
  Prefetcher(const DistGraphOptions& options, int prefetch,
             std::function<void(net::SeedBatch*)> prepare = nullptr);
  ~Prefetcher();

  // Stops the batches in progress (if any) and starts making `batches`.
  void Start(std::vector<net::SeedBatch> batches);
  // The next batch in order; nullopt when all were taken. Rethrows the
  // sampling thread's error; TimeoutError if none comes within 8 request
  // timeouts (every request has its own deadline: this guards a bug).
  std::optional<MiniBatch> Next();

 private:
  void Run(std::vector<net::SeedBatch>& batches);
  void Join();

  DistGraphOptions options_;
  int prefetch_;
  std::function<void(net::SeedBatch*)> prepare_;
  std::unique_ptr<DistGraph> graph_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<MiniBatch> queue_;
  size_t remaining_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
};

}  // namespace gnn
