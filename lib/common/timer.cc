#include "common/timer.h"

#include <fstream>
#include <iomanip>
#include <sstream>

#include "common/log.h"

namespace gnn {

void StageTimer::Begin(const std::string& name) {
  End();
  open_ = name;
  watch_.Reset();
  live_ = std::make_unique<Progress>(name, 0, "");
  GNN_LOG(kInfo) << name << " ... (elapsed " << std::fixed << std::setprecision(1)
                 << total_.Seconds() << " s)";
}

void StageTimer::End() {
  if (open_.empty()) return;
  live_.reset();
  double s = watch_.Seconds();
  stages_.emplace_back(open_, s);
  GNN_LOG(kInfo) << open_ << " done in " << std::fixed << std::setprecision(2) << s
                 << " s (elapsed " << std::setprecision(1) << total_.Seconds() << " s, peak RSS "
                 << PeakRssBytes() / (1 << 20) << " MiB)";
  open_.clear();
}

long long PeakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      long long kb = 0;
      fields >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

}  // namespace gnn
