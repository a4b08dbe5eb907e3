#include "store/shm_names.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include "common/error.h"
#include "common/sha256.h"
#include "store/shm_segment.h"

namespace gnn {

using shm::Fd;
using shm::Sanitize;
using shm::StillLinked;
using shm::TryLock;

std::string PartitionConfigDigest(const PartitionConfig& config) {
  std::string text = ToJson(config).dump();
  Sha256 sha;
  sha.Update(text.data(), text.size());
  return sha.HexDigest();
}

std::string ShmSegmentName(const std::string& graph_name, const std::string& config_sha256,
                           int part) {
  return "/gnn-" + Sanitize(graph_name, 48) + "-" + Sanitize(config_sha256, 16) + "-p" +
         std::to_string(part);
}

std::string ShmSegmentName(const PartitionConfig& config, int part) {
  return ShmSegmentName(config.graph_name, PartitionConfigDigest(config), part);
}

std::string ShmSegmentPath(const std::string& name) {
  return "/dev/shm/" + (name.empty() || name[0] != '/' ? name : name.substr(1));
}

std::string ShmLockPath(const std::string& name) { return ShmSegmentPath(name) + ".lock"; }

void RemoveShmSegment(const std::string& name) {
  shm_unlink(name.c_str());
  unlink(ShmLockPath(name).c_str());
}

StaleSweep SweepStaleSegments(const std::string& dir, double min_age_s) {
  StaleSweep out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  std::vector<std::string> locks;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.rfind("gnn-", 0) == 0 && n.size() > 5 && n.compare(n.size() - 5, 5, ".lock") == 0)
      locks.push_back(n);
  }
  closedir(d);
  for (const auto& lock : locks) {
    const std::string lock_path = dir + "/" + lock;
    const std::string segment = lock.substr(0, lock.size() - 5);
    struct stat lst;
    if (stat(lock_path.c_str(), &lst) != 0 || difftime(time(nullptr), lst.st_mtime) < min_age_s)
      continue;
    Fd fd(open(lock_path.c_str(), O_RDWR | O_CLOEXEC));
    if (fd.get() < 0) continue;
    // The protocol of Create/Attach: a segment whose lock file nobody holds
    // (not even shared) has no live user. A creator racing us retries.
    bool locked = false;
    try {
      locked = TryLock(fd.get(), F_WRLCK);
    } catch (const Error&) {
      continue;
    }
    if (!locked || !StillLinked(fd.get(), lock_path)) continue;
    struct stat st;
    const std::string seg_path = dir + "/" + segment;
    if (stat(seg_path.c_str(), &st) == 0) out.bytes += static_cast<uint64_t>(st.st_size);
    if (unlink(seg_path.c_str()) == 0) out.names.push_back(segment);
    unlink(lock_path.c_str());
  }
  return out;
}

std::string JobShmName(const std::string& graph_name, const std::string& config_sha256,
                       const std::string& job_id, int part) {
  Sha256 h;
  const std::string key = config_sha256 + "\n" + job_id;
  h.Update(key.data(), key.size());
  return ShmSegmentName(graph_name, h.HexDigest(), part);
}

}  // namespace gnn
