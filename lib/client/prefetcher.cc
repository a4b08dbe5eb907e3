#include "client/prefetcher.h"

#include <string>

#include "common/error.h"
#include "sampling/edge_batch.h"
#include "sampling/sampler.h"

namespace gnn {

Prefetcher::Prefetcher(const DistGraphOptions& options, int prefetch,
                       std::function<void(net::SeedBatch*)> prepare)
    : options_(options), prefetch_(prefetch), prepare_(std::move(prepare)) {}

Prefetcher::~Prefetcher() { Join(); }

void Prefetcher::Start(std::vector<net::SeedBatch> batches) {
  Join();
  std::lock_guard<std::mutex> lock(mu_);
  queue_.clear();
  error_ = nullptr;
  stop_ = false;
  remaining_ = batches.size();
  thread_ = std::thread([this, batches = std::move(batches)]() mutable { Run(batches); });
}

std::optional<MiniBatch> Prefetcher::Next() {
  std::unique_lock<std::mutex> lock(mu_);
  if (remaining_ == 0) return std::nullopt;
  const auto limit = options_.timeout * 8;
  if (!cv_.wait_for(lock, limit, [&] { return !queue_.empty() || error_; })) {
    throw TimeoutError("in-process sampling produced no mini-batch within " +
                       std::to_string(limit.count()) + " ms");
  }
  if (queue_.empty() && error_) std::rethrow_exception(error_);
  MiniBatch mb = std::move(queue_.front());
  queue_.pop_front();
  --remaining_;
  cv_.notify_all();
  return mb;
}

void Prefetcher::Run(std::vector<net::SeedBatch>& batches) {
  try {
    if (!graph_) graph_ = std::make_unique<DistGraph>(options_);
    for (auto& sb : batches) {
      if (prepare_) prepare_(&sb);
      EdgeExclusion exclude(sb.exclude);
      MiniBatch mb = graph_->MakeBatch(sb.seeds, sb.fanouts, sb.replace, sb.rng_seed,
                                       exclude.empty() ? nullptr : &exclude);
      mb.index = sb.index;
      // Layer 0's means and the backward pass's transposes, made here
      // rather than on the trainer's critical path.
      if (options_.pack_input_means) PackInputMeans(&mb, 1);
      // Sparse rows: the first layer projects before it aggregates, so
      // a gradient flows through block 0 too.
      for (size_t l = mb.sparse ? 0 : 1; l < mb.blocks.size(); ++l) BuildTranspose(&mb.blocks[l]);
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return static_cast<int>(queue_.size()) < prefetch_ || stop_; });
      if (stop_) return;
      queue_.push_back(std::move(mb));
      cv_.notify_all();
      if (prepare_) sb = net::SeedBatch();  // release what was sampled
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::current_exception();
    cv_.notify_all();
  }
}

void Prefetcher::Join() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace gnn
