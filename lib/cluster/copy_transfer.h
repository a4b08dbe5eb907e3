// gnn-copy's rooms share these: what a machine receives (Item, Machine),
// small formatting and path helpers, and the transfers themselves (what a
// machine holds, by sha256; local copies; rsync/scp over one shared ssh
// connection per machine). Internal to lib/cluster.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "cluster/copy.h"
#include "net/ip_config.h"

namespace gnn::copy {

constexpr const char* kHashTag = "gnn-copy-hash ";
constexpr const char* kRsyncTag = "gnn-copy-rsync";
constexpr const char* kAbsentTag = "gnn-copy-absent";
// Deadlines grow with the work: transfers may be as slow as 1 MB/s,
// sha256sum as slow as 20 MB/s, before a call counts as hung.
constexpr double kTransferBytesPerS = 1e6;
constexpr double kHashBytesPerS = 20e6;

// One file to put on a machine.
struct Item {
  std::string source;  // local path
  std::string dest;    // relative to the machine's workspace
  std::string sha256;  // what it must hash to where it lands
  uint64_t bytes = 0;
  bool partition = false;  // a partition file (checked against the config before shipping)
};

struct Machine {
  int index = 0;
  MachineAddress address;
  std::string workspace;  // "{machine}" expanded; "~" too for local machines
  bool local = false;
  std::string label;  // "machine 1 (10.0.0.5:22)"
  std::vector<Item> items;
  std::string control_path;  // ssh ControlPath shared by this machine's calls ("" = none)
  const std::atomic<int>* stop = nullptr;  // non-zero: a signal asked us to stop
};

std::string Megabytes(uint64_t bytes);
std::string Size(uint64_t bytes);
std::string Files(size_t n);
std::string Seconds(double s);
std::string Join(const std::string& a, const std::string& b);
// True if `path` is relative and stays inside its base; *normal is its normal form.
bool InsidePath(const std::string& path, std::string* normal);
std::string Basename(const std::string& path);
// Runs fn(i) for i in [0, n) on up to `threads` threads, taking the next
// index as each finishes; the exception of each index, if any.
std::vector<std::exception_ptr> ForEachParallel(int n, int threads,
                                                const std::function<void(int)>& fn);
void RethrowFirst(const std::vector<std::exception_ptr>& errors);

// sha256 of what is at `path` now, "" if absent (a size other than `bytes`
// is a mismatch without reading the file).
std::string LocalHash(const std::string& path, uint64_t bytes);
// Copies through "<dest><suffix>", fsynced, mode kept, renamed into place.
void CopyFileAtomic(const std::string& source, const std::string& dest, const std::string& suffix,
                    const std::atomic<int>* stop);
// What a remote machine holds for m.items (sha256 each, "" if absent) and
// whether it has rsync; PeerError when it cannot be reached.
std::vector<std::string> RemoteCheck(const CopyOptions& o, const Machine& m, bool* has_rsync);
// Moves `changed` to a remote machine by `method` ("rsync"/"scp") from the
// staging folder; the sha256 of each where it landed.
std::vector<std::string> RemoteTransfer(const CopyOptions& o, const Machine& m,
                                        const std::string& method,
                                        const std::vector<const Item*>& changed,
                                        const std::string& stage);
// Closes the machine's shared ssh connection, if any.
void CloseMux(const Machine& m);

}  // namespace gnn::copy
