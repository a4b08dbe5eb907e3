// Shared helpers for the test suites.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/fs.h"
#include "net/security.h"

namespace gnn::test {

// Polls `condition` every 20 ms until it holds (true) or `timeout` passes
// (false): a wait on what a test needs, instead of a fixed sleep.
bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// Waits until the file at `path` has been written anew `times` times (its
// inode, size or modification time changed: a checkpoint renamed into
// place, say) while `keep_going` holds; false if `timeout` passes or
// keep_going stops holding first. Progress of a running job, instead of a
// sleep "to let it run a bit".
bool WaitForRewrites(const std::string& path, int times, std::chrono::milliseconds timeout,
                     const std::function<bool()>& keep_going);

// The suites' cluster secret: a 0600 file made when a test executable
// starts and exported as GNN_SECRET_FILE, so every gnn binary a test starts
// (and every launcher's processes) holds it. Keys(job) are what those
// processes derive for `job`.
void InstallTestSecret();
void RemoveTestSecret();
const std::string& TestSecretFile();
net::JobKeys Keys(const std::string& job_id);

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  const std::string& path() const { return dir_.path(); }
  std::string operator/(const std::string& name) const { return dir_.path() + "/" + name; }

 private:
  ScopedTempDir dir_;
};

// ../shared/datasets/<name> relative to the source tree, or "" when absent
// (tests then print "SKIPPED: ..." and return; ctest reports them skipped).
std::string SharedDataset(const std::string& name);

// Every file under `dir` with its size and modification time, one line each
// in path order: equal before and after means nothing there was written
// (the shared datasets may ship a processed/ cache of their own).
std::string TreeState(const std::string& dir);

// Result of running a real process.
struct ProcessResult {
  int exit_code = -1;  // -signal if killed by a signal
  std::string out;     // stdout
  std::string err;     // stderr
};

// CHECKs that `r` failed (exit > 0) with exactly one error line, its last
// stderr line, starting "<program>: error: " and containing `needle`.
void ExpectOneLine(const ProcessResult& r, const std::string& program, const std::string& needle);

// Runs argv (argv[0] is a path) with a timeout, capturing stdout/stderr.
// Kills the process group and fails the test if it exceeds timeout_s.
ProcessResult RunProcess(const std::vector<std::string>& argv, double timeout_s = 120);

// Path of a built gnn binary, e.g. Bin("gnn-partition").
std::string Bin(const std::string& name);

// Writes `text` gzip-compressed to `path`, creating parent directories.
void WriteGz(const std::string& path, const std::string& text);

}  // namespace gnn::test

#define GNN_SKIP(msg)         \
  do {                        \
    WARN("SKIPPED: " << msg); \
    return;                   \
  } while (0)
