// The lock-file protocol every gnn shared-memory segment follows (a
// partition, ShmPartition; a machine's hot-row cache, ShmRowCache), in one
// place.
//
// Segment "/gnn-..." lives at /dev/shm/gnn-... with a lock file beside it
// (ShmLockPath). Its creator holds an exclusive open-file-description lock
// on the lock file while it fills the segment and downgrades it atomically
// to a shared one when the segment is complete; every attacher holds a
// shared lock while mapped. Whoever takes the exclusive lock therefore knows
// nobody is attached. The kernel drops the locks of a process that dies, so
// the last survivor (ReleaseSegment) removes the segment even after crashes.
#pragma once

#include <chrono>
#include <string>

namespace gnn::shm {

// strerror(errno).
std::string Errno();

// Owns a file descriptor; closes it unless released.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// F_OFD_SETLK of `type` (F_RDLCK, F_WRLCK) on the whole file without
// blocking; false if a conflicting lock is held. Throws Error on other
// failures.
bool TryLock(int fd, short type);

// Whether `fd` is still the file `path` names: a departing handle may have
// unlinked the lock file between our open() and our lock.
bool StillLinked(int fd, const std::string& path);

// ConfigError unless `name` is '/' then up to 99 of [A-Za-z0-9._-].
void CheckName(const std::string& name);

// `s` with characters outside [A-Za-z0-9._-] replaced by '_', cut to max_len.
std::string Sanitize(const std::string& s, size_t max_len);

// "12.3 MiB".
std::string MiB(uint64_t bytes);

// The exclusive lock on `lock_path` (created if missing) when nobody holds
// it: returns its descriptor, or -1 when another handle holds a lock on it.
// Throws ConfigError naming `name` if the lock file cannot be opened.
int TryLockForCreate(const std::string& name, const std::string& lock_path);

// A handle leaves segment `name`: drops its lock on `lock_fd`, then, polling
// up to `wait` for the others to leave, removes the segment and its lock
// file if it was the last holder (then returns true). Closes lock_fd.
// Never throws.
bool ReleaseSegment(int lock_fd, const std::string& name, const std::string& lock_path,
                    std::chrono::milliseconds wait);

// Removes segment `name` once nobody holds it, waiting up to `wait` for its
// holders to leave (exit or be killed): for a process that outlives the
// segment's users without holding it (server 0 and its machine's row
// cache). Returns at once when there is no such segment. Never throws.
void RemoveWhenFree(const std::string& name, std::chrono::milliseconds wait);

}  // namespace gnn::shm
