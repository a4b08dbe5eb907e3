// Wall-clock stopwatch and a stage timer that logs "stage ... done in X s".
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/progress.h"

namespace gnn {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void Reset() { start_ = std::chrono::steady_clock::now(); }
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Records named stage durations in order; Log() lines go through GNN_LOG,
// and a stage running past 2 s shows its elapsed time live (Progress).
class StageTimer {
 public:
  // Starts timing `name`, closing the previous stage if one is open.
  void Begin(const std::string& name);
  // Closes the open stage (if any) and logs its duration.
  void End();
  const std::vector<std::pair<std::string, double>>& stages() const { return stages_; }
  double Total() const { return total_.Seconds(); }

 private:
  std::string open_;
  std::unique_ptr<Progress> live_;
  Stopwatch watch_;
  Stopwatch total_;
  std::vector<std::pair<std::string, double>> stages_;
};

// Peak resident set size of this process in bytes (from /proc/self/status).
long long PeakRssBytes();

}  // namespace gnn
