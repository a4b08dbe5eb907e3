// What gnn-launch knows of a job's progress across its runs, from the
// trainers' "@gnn" lines (cluster/supervisor): how far training got (a
// high-water mark over all runs), the newest checkpoint, and for each
// restarted run the steps it ran a second time and how long after the
// failure before it it was training again.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cluster/supervisor.h"

namespace gnn {

class RestartLedger {
 public:
  using Clock = std::chrono::steady_clock;

  // Takes what the trainers of run `run` (0 = the first) reported; the run
  // ended (failed, or finished) at `ended_at`. Call once per run, in order.
  void EndRun(int run, const std::vector<const Proc*>& trainers, Clock::time_point ended_at);
  // The checkpoint is gone with its machine: the next run starts over.
  void ForgetCheckpoint();

  int64_t checkpoint_step() const { return checkpoint_step_; }  // -1: none seen
  const std::string& checkpoint_path() const { return checkpoint_path_; }
  int64_t high_water() const { return high_water_; }  // -1: no step yet

  // The restart line's last part: "resuming from PATH (step S), N steps to
  // replay"; with no checkpoint, "no checkpoint yet (...), N steps lost"
  // when this launcher sees rank 0's reports, else what rank 0 will do.
  std::string ResumeText(bool sees_rank0, bool has_checkpoint_dir) const;
  // "restarts", "steps_replayed" and "recovery_s" (seconds per restart,
  // null for a run that never trained) into a summary.
  void AddTo(int restarts, nlohmann::json* summary) const;

 private:
  int64_t high_water_ = -1, checkpoint_step_ = -1, steps_replayed_ = 0;
  std::string checkpoint_path_;
  nlohmann::json recovery_s_ = nlohmann::json::array();
  Clock::time_point previous_end_{};
};

}  // namespace gnn
