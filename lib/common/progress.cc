#include "common/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "common/log.h"

namespace gnn {

namespace {

using Clock = std::chrono::steady_clock;

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Duration(double s) {
  if (s < 90) return Fixed(s, 0) + " s";
  if (s < 5400) return Fixed(s / 60, 1) + " min";
  return Fixed(s / 3600, 1) + " h";
}

}  // namespace

Progress::Progress(std::string what, int64_t total, std::string unit, ProgressOptions options)
    : what_(std::move(what)),
      unit_(std::move(unit)),
      total_(total),
      options_(options),
      terminal_(options.terminal >= 0 ? options.terminal == 1 : ::isatty(STDERR_FILENO) == 1),
      start_(Clock::now()) {
  if (GetLogLevel() > LogLevel::kInfo) return;  // --quiet
  thread_ = std::thread([this] { Run(); });
}

Progress::~Progress() { Done(); }

void Progress::Done() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string Progress::Describe(const std::string& what, int64_t done, int64_t total,
                               const std::string& unit, double elapsed_s) {
  if (total <= 0) return what + ": " + Duration(elapsed_s);
  std::string s = what + ": " + std::to_string(done) + "/" + std::to_string(total) + " " + unit +
                  " (" + Fixed(100.0 * static_cast<double>(done) / static_cast<double>(total), 0) +
                  "%)";
  if (done > 0 && elapsed_s > 0) {
    const double rate = static_cast<double>(done) / elapsed_s;
    s += ", " + Fixed(rate, rate < 10 ? 2 : 1) + "/s";
    if (done < total) s += ", ETA " + Duration(static_cast<double>(total - done) / rate);
  }
  return s;
}

std::string Progress::Line() const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  return Describe(what_, done_.load(std::memory_order_relaxed), total_, unit_, elapsed);
}

void Progress::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, options_.quiet_for, [this] { return stop_; })) return;  // a short stage
  const auto every = terminal_ ? options_.redraw_every : options_.log_every;
  bool shown = false;
  while (true) {
    if (terminal_) {
      SetStatusLine(Line());
      shown = true;
    } else {
      LogLine(LogLevel::kInfo, Line());
    }
    if (cv_.wait_for(lock, every, [this] { return stop_; })) break;
  }
  if (shown) SetStatusLine("");
}

}  // namespace gnn
