// Minimal fork-join parallelism (std::thread, no pool): static slices of
// an index range, or chunks handed out dynamically.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace gnn {

inline int ResolveThreads(int requested) {
  if (requested > 0) return requested;
  unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

// Calls fn(begin, end) on `threads` contiguous slices of [0, n) in parallel
// and waits. The first exception thrown by any slice is rethrown.
template <typename Fn>
void ParallelFor(int64_t n, int threads, Fn fn) {
  threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(ResolveThreads(threads), n)));
  if (threads == 1) {
    fn(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(threads);
  for (int t = 0; t < threads; ++t) {
    int64_t b = n * t / threads, e = n * (t + 1) / threads;
    pool.emplace_back([&, t, b, e] {
      try {
        fn(b, e);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& err : errors) {
    if (err) std::rethrow_exception(err);
  }
}

// Calls fn(c) for every chunk c of [0, num_chunks), handed out dynamically
// to up to `threads` threads (this one included) and waits. Each chunk
// should write only its own output, so scheduling never shows in results.
// The first exception stops the hand-out and is rethrown.
template <typename Fn>
void ParallelChunks(int64_t num_chunks, int threads, const Fn& fn) {
  const int workers = static_cast<int>(std::min<int64_t>(ResolveThreads(threads), num_chunks));
  if (workers <= 1) {
    for (int64_t c = 0; c < num_chunks; ++c) fn(c);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      for (int64_t c = next++; c < num_chunks; c = next++) fn(c);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next = num_chunks;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace gnn
