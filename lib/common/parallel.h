// Minimal fork-join parallelism over index ranges (std::thread, no pool).
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
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

}  // namespace gnn
