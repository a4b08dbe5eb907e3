#include "store/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "common/error.h"
#include "common/log.h"

namespace gnn::shm {

namespace {
constexpr size_t kMaxNameLength = 100;
}  // namespace

std::string Errno() { return std::strerror(errno); }

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

// Open-file-description locks (F_OFD_SETLK) instead of flock(): they belong
// to the open file like flock locks (so two handles in one process exclude
// each other, and the kernel drops them when a process dies), but converting
// exclusive -> shared is atomic, so a creator never has a moment in which its
// finished segment looks unowned (flock converts by unlock + relock).
bool TryLock(int fd, short type) {
  struct flock fl;
  std::memset(&fl, 0, sizeof(fl));
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  for (;;) {
    if (fcntl(fd, F_OFD_SETLK, &fl) == 0) return true;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EACCES) return false;
    throw Error("cannot lock a shared memory lock file: " + Errno());
  }
}

bool StillLinked(int fd, const std::string& path) {
  struct stat a, b;
  if (fstat(fd, &a) != 0 || stat(path.c_str(), &b) != 0) return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void CheckName(const std::string& name) {
  bool ok = name.size() >= 2 && name.size() <= kMaxNameLength && name[0] == '/' && name != "/." &&
            name != "/..";
  for (size_t i = 1; ok && i < name.size(); ++i) {
    char c = name[i];
    ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  }
  if (!ok) {
    throw ConfigError("bad shared memory segment name '" + name +
                      "' (want '/' then up to 99 of [A-Za-z0-9._-])");
  }
}

std::string Sanitize(const std::string& s, size_t max_len) {
  std::string out;
  for (char c : s) {
    if (out.size() == max_len) break;
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  return out;
}

std::string MiB(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

int TryLockForCreate(const std::string& name, const std::string& lock_path) {
  for (;;) {
    Fd fd(open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (fd.get() < 0) {
      throw ConfigError("cannot open lock file " + lock_path + " of shared memory segment " + name +
                        ": " + Errno());
    }
    if (!TryLock(fd.get(), F_WRLCK)) return -1;
    if (StillLinked(fd.get(), lock_path)) return fd.release();
    // A departing handle removed that file after our open(): take the new one.
  }
}

bool ReleaseSegment(int lock_fd, const std::string& name, const std::string& lock_path,
                    std::chrono::milliseconds wait) {
  if (lock_fd < 0) return false;
  // Drop our shared lock first, then try the exclusive one: of several
  // handles leaving at once, the last to drop always gets it (an atomic
  // upgrade attempt would let each see the others and all skip cleanup).
  struct flock fl;
  std::memset(&fl, 0, sizeof(fl));
  fl.l_type = F_UNLCK;
  fl.l_whence = SEEK_SET;
  fcntl(lock_fd, F_OFD_SETLK, &fl);
  bool last = false;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  try {
    // Holders that exit, cleanly or by a signal, release their locks: poll
    // for the exclusive one until the deadline.
    while (!(last = TryLock(lock_fd, F_WRLCK)) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    last = last && StillLinked(lock_fd, lock_path);
  } catch (const std::exception& e) {
    GNN_LOG(kWarn) << "shared memory segment " << name << ": " << e.what();
  }
  if (last) {
    // Removing the segment before the lock file: an attacher that opened the
    // old lock file finds it unlinked (StillLinked) and starts over.
    if (shm_unlink(name.c_str()) != 0 && errno != ENOENT) {
      GNN_LOG(kWarn) << "cannot remove shared memory segment " << name << ": " << Errno();
    }
    unlink(lock_path.c_str());
    GNN_LOG(kDebug) << "removed shared memory segment " << name << " (last user)";
  }
  close(lock_fd);
  return last;
}

void RemoveWhenFree(const std::string& name, std::chrono::milliseconds wait) {
  const std::string lock_path = "/dev/shm" + name + ".lock";
  const int fd = open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  ReleaseSegment(fd, name, lock_path, wait);
}

}  // namespace gnn::shm
