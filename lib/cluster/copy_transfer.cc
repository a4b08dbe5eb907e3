#include "cluster/copy_transfer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "cluster/remote.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/sha256.h"
#include "net/ip_config.h"
#include "net/security.h"
#include "partition/config.h"

namespace gnn::copy {

namespace fs = std::filesystem;

std::string Megabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// "812 B", "61.4 kB", "12.30 MB": sizes of single files in the plan.
std::string Size(uint64_t bytes) {
  if (bytes >= 1000000) return Megabytes(bytes);
  char buf[32];
  if (bytes >= 1000) {
    std::snprintf(buf, sizeof(buf), "%.1f kB", static_cast<double>(bytes) / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

std::string Files(size_t n) { return std::to_string(n) + (n == 1 ? " file" : " files"); }

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f", s);
  return buf;
}

std::string Join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "/" + b;
}

// `path` normalized if it is relative and stays inside its base ("" = the
// base itself); false if it is absolute or climbs out with "..".
bool InsidePath(const std::string& path, std::string* normal) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.is_absolute()) return false;
  std::string s = p.string();
  while (!s.empty() && s.back() == '/') s.pop_back();
  if (s == ".") s.clear();
  if (s == ".." || s.rfind("../", 0) == 0) return false;
  *normal = s;
  return true;
}

std::string Basename(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return fs::path(p).filename().string();
}

// Runs fn(i) for i in [0, n) on up to `threads` threads, taking the next
// index as each finishes; the exception of each index, if any.
std::vector<std::exception_ptr> ForEachParallel(int n, int threads,
                                                const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::atomic<int> next{0};
  auto work = [&] {
    for (int i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        errors[static_cast<size_t>(i)] = std::current_exception();
      }
    }
  };
  threads = std::max(1, std::min(threads, n));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return errors;
}

void RethrowFirst(const std::vector<std::exception_ptr>& errors) {
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// ---- local machines -------------------------------------------------------

// sha256 of what is at `path` now, "" if absent; a size that differs from
// `bytes` is a mismatch without reading the file.
std::string LocalHash(const std::string& path, uint64_t bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  if (static_cast<uint64_t>(st.st_size) != bytes) return "size " + std::to_string(st.st_size);
  try {
    return Sha256File(path);
  } catch (const DataError&) {
    return "";
  }
}

// Copies through a temporary name next to `dest`, fsyncs, renames.
void CopyFileAtomic(const std::string& source, const std::string& dest, const std::string& suffix,
                    const std::atomic<int>* stop) {
  std::error_code ec;
  const std::string folder = fs::path(dest).parent_path().string();
  fs::create_directories(folder, ec);
  if (ec) throw DataError(CannotMessage("create folder", folder, ec));
  const std::string tmp = dest + suffix;
  int in = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw DataError(CannotMessage("open", source, errno));
  struct stat st {};
  ::fstat(in, &st);
  int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) {
    int err = errno;
    ::close(in);
    throw DataError(CannotMessage("write", tmp, err));
  }
  std::vector<char> buf(1 << 20);
  std::string failure;
  while (failure.empty()) {
    if (stop && stop->load() != 0) {
      failure = "interrupted";
      break;
    }
    ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) failure = std::string("read ") + source + ": " + std::strerror(errno);
    if (n <= 0) break;
    for (ssize_t done = 0; done < n && failure.empty();) {
      ssize_t w = ::write(out, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) failure = std::string("write ") + tmp + ": " + std::strerror(errno);
      done += std::max<ssize_t>(w, 0);
    }
  }
  if (failure.empty() && (::fchmod(out, st.st_mode & 0777) != 0 || ::fsync(out) != 0)) {
    failure = std::string("finish ") + tmp + ": " + std::strerror(errno);
  }
  ::close(in);
  if (::close(out) != 0 && failure.empty()) {
    failure = std::string("close ") + tmp + ": " + std::strerror(errno);
  }
  if (failure.empty() && ::rename(tmp.c_str(), dest.c_str()) != 0) {
    failure = "rename to " + dest + ": " + std::strerror(errno);
  }
  if (!failure.empty()) {
    ::unlink(tmp.c_str());
    throw DataError("cannot copy " + source + ": " + failure);
  }
}

// ---- remote machines ------------------------------------------------------

// A workspace as scp/rsync name it: relative paths start in the home
// directory, so "~/x" is "x".
std::string RemoteSpec(const std::string& host, const std::string& path) {
  std::string p = path;
  if (p == "~") p = ".";
  if (p.rfind("~/", 0) == 0) p = p.size() == 2 ? "." : p.substr(2);
  return (IsIpv6Literal(host) ? "[" + host + "]" : host) + ":" + p;
}

// Shell lines printing "gnn-copy-hash <sha256>" (or "-" when absent) for
// each item, in order, run in the workspace.
std::string HashScript(const std::vector<const Item*>& items) {
  if (items.empty()) return "";
  std::string s =
      "command -v sha256sum >/dev/null 2>&1 || command -v shasum >/dev/null 2>&1 || "
      "{ echo 'neither sha256sum nor shasum is installed there' >&2; exit 5; }\n"
      "gnn_h() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; "
      "}\n"
      "for f in";
  for (const Item* item : items) s += " " + ShellQuote(item->dest);
  s += "; do if [ -f \"$f\" ]; then echo \"" + std::string(kHashTag) +
       "$(gnn_h < \"$f\")\"; else echo '" + kHashTag + "-'; fi; done\n";
  return s;
}

// Parses HashScript's answer: one sha256 per item ("" when absent).
std::vector<std::string> ParseHashes(const Machine& m, const std::string& out, size_t n,
                                     bool* has_rsync) {
  std::vector<std::string> hashes;
  std::istringstream in(out);
  bool absent = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kHashTag, 0) == 0) {
      std::istringstream words(line.substr(std::strlen(kHashTag)));
      std::string sha;
      words >> sha;
      hashes.push_back(sha == "-" ? "" : sha);
    } else if (line == kRsyncTag) {
      if (has_rsync) *has_rsync = true;
    } else if (line == kAbsentTag) {
      absent = true;
    }
  }
  if (absent && hashes.empty()) hashes.assign(n, "");
  if (hashes.size() != n) {
    throw PeerError(m.label + ": unexpected answer from the remote shell (" + std::to_string(n) +
                    " checksums expected, got " + std::to_string(hashes.size()) + ")");
  }
  return hashes;
}

// Runs a remote call; throws naming the machine unless it exits 0.
CommandResult Remote(const Machine& m, const std::string& what,
                     const std::vector<std::string>& argv, double timeout_s,
                     const std::string& input = "") {
  CommandResult r = RunCommand(argv, timeout_s, input, m.stop);
  if (r.cancelled) throw Error(m.label + ": " + what + " interrupted");
  if (r.timed_out) {
    throw TimeoutError(m.label + ": " + what + " timed out after " + Seconds(timeout_s) + " s");
  }
  if (r.exit_code == 0) return r;
  std::string line = r.LastErrorLine();
  if (line.empty()) line = r.Describe();
  if (what != "ssh") {
    throw PeerError(m.label + ": " + what + " failed (" + r.Describe() + "): " + line);
  }
  // ssh exits 255 for its own errors, else with the remote command's code.
  if (r.exit_code == 255) throw PeerError(m.label + ": ssh failed: " + line);
  throw PeerError(m.label + ": remote command failed (" + r.Describe() + "): " + line);
}

// One ssh connection per machine, shared by the check, the transfer and the
// verification (ControlMaster), so a machine costs one handshake. The master
// exits when CloseMux runs, or by itself once idle for a minute.
std::vector<std::string> MuxOptions(const Machine& m) {
  if (m.control_path.empty()) return {};
  return {"-o", "ControlMaster=auto", "-o", "ControlPath=" + m.control_path,
          "-o", "ControlPersist=60"};
}

void CloseMux(const Machine& m) {
  if (m.control_path.empty() || !PathExists(m.control_path)) return;
  RunCommand({"ssh", "-o", "ControlPath=" + m.control_path, "-O", "exit", m.address.host}, 10);
}

// ssh argv running `command` on machine `m`.
std::vector<std::string> SshCall(const CopyOptions& o, const Machine& m,
                                 const std::string& command) {
  std::vector<std::string> argv = SshArgv(o.ssh, m.address.host, command);
  std::vector<std::string> mux = MuxOptions(m);
  argv.insert(argv.begin() + 1, mux.begin(), mux.end());
  return argv;
}

// ssh options for scp and rsync -e.
std::vector<std::string> TransportOptions(const CopyOptions& o, const Machine& m) {
  std::vector<std::string> opts = SshClientOptions(o.ssh);
  std::vector<std::string> mux = MuxOptions(m);
  opts.insert(opts.end(), mux.begin(), mux.end());
  return opts;
}

std::vector<std::string> ParentDirs(const std::vector<Item>& items) {
  std::set<std::string> dirs;
  for (const auto& item : items) {
    std::string parent = fs::path(item.dest).parent_path().string();
    if (!parent.empty()) dirs.insert(parent);
  }
  return {dirs.begin(), dirs.end()};
}

// One ssh: (unless dry) create the folders, then hash what is there.
std::vector<std::string> RemoteCheck(const CopyOptions& o, const Machine& m, bool* has_rsync) {
  std::string s = "command -v rsync >/dev/null 2>&1 && echo " + std::string(kRsyncTag) + "\n";
  const std::string ws = ShellPath(m.workspace);
  if (o.dry_run) {
    s += "cd " + ws + " 2>/dev/null || { echo " + kAbsentTag + "; exit 0; }\n";
  } else {
    s += "mkdir -p " + ws + " && cd " + ws + " || exit 3\n";
    std::string dirs;
    for (const auto& d : ParentDirs(m.items)) dirs += " " + ShellQuote(d);
    if (!dirs.empty()) s += "mkdir -p --" + dirs + " || exit 3\n";
  }
  std::vector<const Item*> all;
  uint64_t bytes = 0;
  for (const auto& item : m.items) {
    all.push_back(&item);
    bytes += item.bytes;
  }
  s += HashScript(all);
  CommandResult r = Remote(m, "ssh", SshCall(o, m, "sh -s"),
                           o.timeout.count() + static_cast<double>(bytes) / kHashBytesPerS, s);
  return ParseHashes(m, r.out, all.size(), has_rsync);
}

// A folder of symlinks named as the destinations, pointing at the sources:
// one rsync/scp call then moves every changed file.
void StageLinks(const std::string& dir, const std::vector<const Item*>& items) {
  for (const Item* item : items) {
    fs::path link = fs::path(dir) / item->dest;
    std::error_code ec;
    fs::create_directories(link.parent_path(), ec);
    if (ec) throw DataError(CannotMessage("create folder", link.parent_path().string(), ec));
    fs::create_symlink(fs::absolute(item->source), link, ec);
    if (ec) throw DataError(CannotMessage("create link", link.string(), ec));
  }
}

// Copies `changed` to a remote machine; returns the remote sha256 of each.
std::vector<std::string> RemoteTransfer(const CopyOptions& o, const Machine& m,
                                        const std::string& method,
                                        const std::vector<const Item*>& changed,
                                        const std::string& stage) {
  uint64_t bytes = 0;
  for (const Item* item : changed) bytes += item->bytes;
  StageLinks(stage, changed);
  const double transfer_timeout =
      o.timeout.count() + static_cast<double>(bytes) / kTransferBytesPerS;
  const double hash_timeout = o.timeout.count() + static_cast<double>(bytes) / kHashBytesPerS;
  const std::string ws = ShellPath(m.workspace);
  std::string finish = "cd " + ws + " || exit 3\n";
  if (method == "rsync") {
    std::string e = "ssh";
    for (const auto& opt : TransportOptions(o, m)) e += " " + ShellQuote(opt);
    std::string list;
    for (const Item* item : changed) list += item->dest + '\0';
    // rsync writes each file under a temporary name and renames it.
    Remote(m, "rsync",
           {"rsync", "--copy-links", "--perms", "--ignore-times", "--whole-file", "--from0",
            "--files-from=-", "--timeout=" + Seconds(o.timeout.count()), "-e", e, stage + "/",
            RemoteSpec(m.address.host, m.workspace) + "/"},
           transfer_timeout, list);
  } else {
    // scp cannot rename, so files land in a fresh folder of the workspace
    // and are renamed into place (atomic on one file system) afterwards.
    const std::string incoming =
        ".gnn-copy-incoming-" + RandomSuffix() + "-" + std::to_string(m.index);
    auto scp = [&](bool legacy) {
      std::vector<std::string> argv = {"scp"};
      for (const auto& opt : TransportOptions(o, m)) argv.push_back(opt);
      if (legacy) argv.push_back("-O");
      argv.insert(argv.end(), {"-r", "-p", "-q", stage,
                               RemoteSpec(m.address.host, Join(m.workspace, incoming))});
      Remote(m, "scp", argv, transfer_timeout);
    };
    // Not cancellable: it runs after an interruption too.
    auto remove_incoming = [&] {
      RunCommand(SshCall(o, m, "cd " + ws + " && rm -rf -- " + ShellQuote(incoming)), 10);
    };
    try {
      try {
        scp(false);
      } catch (const PeerError& sftp) {
        // scp speaks SFTP by default; servers without the sftp subsystem
        // (minimal sshd configs, dropbear) still take the legacy protocol.
        remove_incoming();
        try {
          scp(true);
        } catch (const PeerError& legacy) {
          throw PeerError(std::string(sftp.what()) + " (and with scp -O: " + legacy.what() + ")");
        }
      }
    } catch (const Error&) {
      remove_incoming();
      throw;
    }
    for (const Item* item : changed) {
      finish += "mv -f -- " + ShellQuote(incoming + "/" + item->dest) + " " +
                ShellQuote(item->dest) + " || exit 4\n";
    }
    finish += "rm -rf -- " + ShellQuote(incoming) + "\n";
  }
  finish += HashScript(changed);
  CommandResult r = Remote(m, "ssh", SshCall(o, m, "sh -s"), hash_timeout, finish);
  return ParseHashes(m, r.out, changed.size(), nullptr);
}

}  // namespace gnn::copy
