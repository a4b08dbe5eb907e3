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

#ifdef __linux__
#include <sched.h>
#endif

namespace gnn {

// Every core of the host, whatever this process may use.
inline int HostCores() {
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

// The cores this process may run on: its CPU affinity (taskset, Slurm's
// --cpus-per-task, a cpuset), not every core of the host, so that
// processes bound to a share of a machine start a thread per core of that
// share rather than oversubscribing it.
inline int UsableCores() {
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return std::min(n, HostCores());
  }
#endif
  return HostCores();
}

// `requested` threads, or with 0 (or less) one per usable core.
inline int ResolveThreads(int requested) { return requested > 0 ? requested : UsableCores(); }

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
