// Progress of a long stage (partitioning, an epoch, evaluation). Nothing is
// shown for a stage that ends within `quiet_for` (2 s); after that, on a
// terminal one live line below the log ("[role] epoch 3: 812/2450 batches
// (33%), 41.2/s, ETA 40 s"), redrawn about 5 times a second; in a log file
// (stderr not a terminal) a plain line every `log_every` (10 s). --quiet
// (log level above info) silences it. Work is counted with Add() from any
// thread; a stage without counts (total 0) shows its elapsed time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace gnn {

struct ProgressOptions {
  std::chrono::milliseconds quiet_for{2000};
  std::chrono::milliseconds log_every{10000};
  std::chrono::milliseconds redraw_every{200};
  int terminal = -1;  // -1: stderr is a terminal?; 0 / 1: force (tests)
};

class Progress {
 public:
  Progress(std::string what, int64_t total, std::string unit, ProgressOptions options = {});
  ~Progress();  // Done()
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Add(int64_t n = 1) { done_.fetch_add(n, std::memory_order_relaxed); }
  // Stops reporting and removes the live line; idempotent.
  void Done();

  // "epoch 3: 812/2450 batches (33%), 41.2/s, ETA 40 s" (or "metis: 35 s"
  // without a total), for `done` after `elapsed_s`.
  static std::string Describe(const std::string& what, int64_t done, int64_t total,
                              const std::string& unit, double elapsed_s);

 private:
  void Run();
  std::string Line() const;

  std::string what_, unit_;
  int64_t total_;
  ProgressOptions options_;
  bool terminal_ = false;
  std::chrono::steady_clock::time_point start_;
  std::atomic<int64_t> done_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gnn
