#include "common/memory_info.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace gnn {

namespace {

// The first number of a file ("max" or anything else unreadable: -1).
int64_t ReadNumber(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) return -1;
  try {
    size_t used = 0;
    const long long v = std::stoll(word, &used);
    return used == word.size() && v >= 0 ? static_cast<int64_t>(v) : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

// The number after `key` on the line of `path` that starts with it
// ("MemAvailable:   123 kB", a memory.stat's "inactive_file 4096"); -1
// if absent or not a number.
int64_t ReadKeyed(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream fields(line.substr(key.size()));
      long long v = -1;
      fields >> v;
      return v < 0 ? -1 : static_cast<int64_t>(v);
    }
  }
  return -1;
}

// A /proc "Key: N kB" line in bytes; -1 if absent.
int64_t ReadKiB(const std::string& path, const std::string& key) {
  const int64_t kb = ReadKeyed(path, key);
  return kb < 0 ? -1 : kb * 1024;
}

// The cgroup of this process (v2: "0::/path"; v1: the memory
// controller's line), as a path below /sys/fs/cgroup; empty if unknown.
std::string CgroupDir(bool* v2) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1_path, v2_path;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (controllers.empty()) v2_path = path;
    std::stringstream list(controllers);
    std::string c;
    while (std::getline(list, c, ',')) {
      if (c == "memory") v1_path = path;
    }
  }
  if (!v1_path.empty()) {
    *v2 = false;
    return "/sys/fs/cgroup/memory" + v1_path;
  }
  *v2 = true;
  return v2_path.empty() ? std::string() : "/sys/fs/cgroup" + v2_path;
}

}  // namespace

int64_t AvailableMemoryBytes() {
  int64_t best = ReadKiB("/proc/meminfo", "MemAvailable:");
  auto take = [&](int64_t headroom) {
    if (headroom >= 0) best = best < 0 ? headroom : std::min(best, headroom);
  };
  bool v2 = true;
  std::string dir = CgroupDir(&v2);
  // Each level of the hierarchy may limit it; walk up to the root.
  while (!dir.empty()) {
    const int64_t limit = ReadNumber(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    int64_t usage = ReadNumber(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
    // The usage counts page cache the kernel drops before it kills anyone.
    const int64_t cache =
        ReadKeyed(dir + "/memory.stat", v2 ? "inactive_file " : "total_inactive_file ");
    if (usage >= 0 && cache > 0) usage = std::max<int64_t>(0, usage - cache);
    // v1 reports "no limit" as a huge number.
    if (limit >= 0 && usage >= 0 && limit < (int64_t{1} << 60))
      take(std::max<int64_t>(0, limit - usage));
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos || dir == "/sys/fs/cgroup" || dir == "/sys/fs/cgroup/memory")
      break;
    dir = dir.substr(0, slash);
  }
  return best;
}

int64_t CurrentRssBytes() {
  const int64_t rss = ReadKiB("/proc/self/status", "VmRSS:");
  return rss < 0 ? 0 : rss;
}

std::string MemoryText(int64_t bytes) {
  char text[32];
  if (bytes < (int64_t{1} << 30)) {
    std::snprintf(text, sizeof text, "%.0f MiB", static_cast<double>(bytes) / (1 << 20));
  } else {
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  }
  return text;
}

}  // namespace gnn
