#include "cluster/restart_ledger.h"

#include <algorithm>

namespace gnn {

void RestartLedger::EndRun(int run, const std::vector<const Proc*>& trainers,
                           Clock::time_point ended_at) {
  int64_t reached = -1, resumed = -1;
  Clock::time_point first_step{};
  for (const Proc* p : trainers) {
    reached = std::max(reached, p->step);
    resumed = std::max(resumed, p->resumed_step);
    if (p->checkpoint_step > checkpoint_step_) {
      checkpoint_step_ = p->checkpoint_step;
      checkpoint_path_ = p->checkpoint_path;
    }
    if (p->first_step_at != Clock::time_point{} &&
        (first_step == Clock::time_point{} || p->first_step_at < first_step))
      first_step = p->first_step_at;
  }
  if (run > 0) {
    // Steps run a second time: from where this run resumed up to how far
    // the runs before it had come (or as far as this one got).
    if (resumed >= 0 && reached > resumed)
      steps_replayed_ += std::max<int64_t>(0, std::min(high_water_, reached) - resumed);
    recovery_s_.push_back(
        first_step == Clock::time_point{}
            ? nlohmann::json()
            : nlohmann::json(std::chrono::duration<double>(first_step - previous_end_).count()));
  }
  high_water_ = std::max(high_water_, reached);
  previous_end_ = ended_at;
}

void RestartLedger::ForgetCheckpoint() {
  checkpoint_step_ = -1;
  checkpoint_path_.clear();
}

std::string RestartLedger::ResumeText(bool sees_rank0, bool has_checkpoint_dir) const {
  if (checkpoint_step_ >= 0) {
    return "resuming from " + checkpoint_path_ + " (step " + std::to_string(checkpoint_step_) +
           "), " + std::to_string(std::max<int64_t>(0, high_water_ - checkpoint_step_)) +
           " steps to replay";
  }
  if (sees_rank0) {
    return std::string("no checkpoint yet (") +
           (has_checkpoint_dir ? "" : "no --checkpoint_dir; ") + "training starts again), " +
           std::to_string(std::max<int64_t>(0, high_water_)) + " steps lost";
  }
  return "rank 0 resumes from the newest checkpoint on machine 0";
}

void RestartLedger::AddTo(int restarts, nlohmann::json* summary) const {
  (*summary)["restarts"] = restarts;
  (*summary)["steps_replayed"] = steps_replayed_;
  (*summary)["recovery_s"] = recovery_s_;
}

}  // namespace gnn
