#include "cluster/copy.h"

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

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/sha256.h"
#include "net/ip_config.h"
#include "net/security.h"
#include "partition/config.h"

namespace gnn {

const std::vector<std::string> kShippedBinaries = {"gnn-server", "gnn-sampler", "gnn-train",
                                                   "gnn-launch", "gnn-copy"};

namespace {

namespace fs = std::filesystem;

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

// ---- what every machine receives ------------------------------------------

struct Plan {
  PartitionConfig config;
  std::string json_text;  // the partition config as every machine receives it
  bool json_rewritten = false;
  std::string new_secret;              // a cluster secret to write once every check passed
  std::vector<std::string> part_dirs;  // per partition, relative to the JSON's folder
  std::vector<Item> shared;            // items every machine receives
  std::vector<Machine> machines;
};

// Part dirs must be relative and inside the config's folder to be valid on
// another machine; any that is not is rewritten to "part<i>". Otherwise the
// JSON stays byte-identical (servers and trainers compare its checksum).
void PlanConfig(const CopyOptions& o, Plan* plan) {
  // The user's own config may name its partitions by absolute paths; the
  // configs shipped to the machines are rewritten relative (and confined).
  plan->config = LoadPartitionConfig(o.part_config, PartDirs::kAnywhere);
  plan->json_text = ReadFile(o.part_config);
  for (int i = 0; i < plan->config.num_parts; ++i) {
    std::string dir;
    if (!InsidePath(plan->config.parts[static_cast<size_t>(i)].dir, &dir) || dir.empty()) {
      plan->json_rewritten = true;
      dir = "part" + std::to_string(i);
    }
    plan->part_dirs.push_back(dir);
  }
  if (!plan->json_rewritten) return;
  PartitionConfig shipped = plan->config;
  for (int i = 0; i < shipped.num_parts; ++i) {
    shipped.parts[static_cast<size_t>(i)].dir = plan->part_dirs[static_cast<size_t>(i)];
  }
  plan->json_text = PartitionConfigText(shipped);
}

Item HashedItem(const std::string& source, const std::string& dest) {
  struct stat st {};
  if (::stat(source.c_str(), &st) != 0) {
    throw DataError("missing source file " + source + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) throw DataError(source + " is not a regular file");
  return Item{source, dest, Sha256File(source), static_cast<uint64_t>(st.st_size)};
}

// The cluster secret, checked as every binary checks it (owner-only, long
// enough). A missing one is planned here and written by RunCopy only once
// every check passed (never in a dry run). Its mode travels with it (local
// copies keep it, rsync --perms, scp -p).
Item SecretItem(const CopyOptions& o, Plan* plan) {
  const std::string dest = Basename(o.secret_file);
  std::error_code ec;
  if (fs::exists(o.secret_file, ec)) {
    net::ReadSecretFile(o.secret_file);
    return HashedItem(o.secret_file, dest);
  }
  const std::string text = net::NewSecret() + "\n";
  Sha256 sha;
  sha.Update(text.data(), text.size());
  if (!o.dry_run) plan->new_secret = text;
  return Item{o.secret_file, dest, sha.HexDigest(), text.size()};
}

void PlanShared(const CopyOptions& o, const std::string& rel, Plan* plan) {
  Sha256 sha;
  sha.Update(plan->json_text.data(), plan->json_text.size());
  // The source of a rewritten JSON is staged later (RunCopy), when writing.
  plan->shared.push_back(Item{plan->json_rewritten ? "" : o.part_config,
                              Join(rel, Basename(o.part_config)), sha.HexDigest(),
                              plan->json_text.size()});
  plan->shared.push_back(HashedItem(o.ip_config, Basename(o.ip_config)));
  if (!o.script_folder.empty()) {
    std::error_code ec;
    if (!fs::is_directory(o.script_folder, ec)) {
      throw DataError("--script_folder " + o.script_folder + " is not a folder");
    }
    const std::string base = Basename(fs::absolute(o.script_folder).lexically_normal().string());
    std::vector<std::string> files;
    for (auto it = fs::recursive_directory_iterator(o.script_folder, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_regular_file()) {
        files.push_back(fs::relative(it->path(), o.script_folder).string());
      }
    }
    if (ec) throw DataError("cannot list --script_folder " + o.script_folder + ": " + ec.message());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      plan->shared.push_back(HashedItem(Join(o.script_folder, f), Join(base, f)));
    }
  }
  if (!o.secret_file.empty()) plan->shared.push_back(SecretItem(o, plan));
  if (o.ship_binaries) {
    const std::string dir = o.binary_dir.empty() ? SelfDir() : o.binary_dir;
    for (const auto& name : kShippedBinaries) {
      const std::string path = dir + "/" + name;
      if (::access(path.c_str(), X_OK) != 0) {
        throw DataError("--ship_binaries: " + path +
                        " is missing or not executable (build it first)");
      }
      plan->shared.push_back(HashedItem(path, "bin/" + name));
    }
  }
}

void PlanMachines(const CopyOptions& o, const std::string& rel, Plan* plan) {
  const std::vector<MachineAddress> addresses = ReadIpConfig(o.ip_config);
  if (static_cast<size_t>(plan->config.num_parts) != addresses.size()) {
    throw ConfigError(
        o.part_config + " has " + std::to_string(plan->config.num_parts) + " partitions but " +
        o.ip_config + " lists " + std::to_string(addresses.size()) +
        (addresses.size() == 1 ? " machine" : " machines") + " (machine i receives partition i)");
  }
  const char* home = std::getenv("HOME");
  for (size_t i = 0; i < addresses.size(); ++i) {
    Machine m;
    m.index = static_cast<int>(i);
    m.address = addresses[i];
    m.local = RunsLocally(o.ssh, m.address.host);
    m.workspace = MachineWorkspace(o.workspace, m.index);
    if (m.local && home && (m.workspace == "~" || m.workspace.rfind("~/", 0) == 0)) {
      m.workspace = home + m.workspace.substr(1);
    }
    const std::string& host = m.address.host;
    m.label = "machine " + std::to_string(i) + " (" +
              (m.local ? host + ", local)"
                       : (IsIpv6Literal(host) ? "[" + host + "]" : host) + ":" +
                             std::to_string(o.ssh.port) + ")");
    for (const auto& other : plan->machines) {
      if (other.address.host == host && other.workspace == m.workspace) {
        GNN_LOG(kWarn) << "machines " << other.index << " and " << i << " share workspace "
                       << m.workspace << " on " << host
                       << ", which will hold both partitions (use {machine} in --workspace)";
      }
    }
    const PartInfo& part = plan->config.parts[i];
    for (const auto& [name, f] : part.files) {
      m.items.push_back(Item{plan->config.FilePath(m.index, name),
                             Join(Join(rel, plan->part_dirs[i]), name), f.sha256, f.bytes, true});
    }
    plan->machines.push_back(std::move(m));
  }
}

// Every machine gets the shared items first (the JSON is items.front()).
void MergeShared(Plan* plan) {
  for (auto& m : plan->machines) {
    m.items.insert(m.items.begin(), plan->shared.begin(), plan->shared.end());
    std::set<std::string> dests;
    for (const auto& item : m.items) {
      if (!dests.insert(item.dest).second) {
        throw ConfigError("two files would land at " + Join(m.workspace, item.dest) + " on " +
                          m.label);
      }
    }
  }
}

// Every partition file is checked against the config before anything is
// shipped: a corrupt source must not spread to the cluster.
void VerifySources(const Plan& plan, int threads, const std::atomic<int>* stop) {
  std::vector<const Item*> files;
  for (const auto& m : plan.machines) {
    for (const auto& item : m.items) {
      if (!item.partition) continue;
      struct stat st {};
      if (::stat(item.source.c_str(), &st) != 0) {
        throw DataError("missing source file " + item.source + ": " + std::strerror(errno) +
                        "; nothing copied");
      }
      if (static_cast<uint64_t>(st.st_size) != item.bytes) {
        throw DataError(item.source + ": " + std::to_string(st.st_size) +
                        " bytes, the partition config says " + std::to_string(item.bytes) +
                        "; nothing copied");
      }
      files.push_back(&item);
    }
  }
  RethrowFirst(ForEachParallel(static_cast<int>(files.size()), threads, [&](int i) {
    const Item& item = *files[static_cast<size_t>(i)];
    if (stop && stop->load() != 0) throw Error("interrupted while checking the sources");
    const std::string sha = Sha256File(item.source);
    if (sha != item.sha256) {
      throw DataError(item.source + ": checksum mismatch (sha256 " + sha + ", expected " +
                      item.sha256 + "); nothing copied");
    }
  }));
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
  fs::create_directories(fs::path(dest).parent_path(), ec);
  if (ec) throw DataError("cannot create the folder of " + dest + ": " + ec.message());
  const std::string tmp = dest + suffix;
  int in = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw DataError("cannot read " + source + ": " + std::strerror(errno));
  struct stat st {};
  ::fstat(in, &st);
  int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) {
    int err = errno;
    ::close(in);
    throw DataError("cannot write " + tmp + ": " + std::strerror(err));
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
                           o.timeout_s + static_cast<double>(bytes) / kHashBytesPerS, s);
  return ParseHashes(m, r.out, all.size(), has_rsync);
}

// A folder of symlinks named as the destinations, pointing at the sources:
// one rsync/scp call then moves every changed file.
void StageLinks(const std::string& dir, const std::vector<const Item*>& items) {
  for (const Item* item : items) {
    fs::path link = fs::path(dir) / item->dest;
    fs::create_directories(link.parent_path());
    fs::create_symlink(fs::absolute(item->source), link);
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
  const double transfer_timeout = o.timeout_s + static_cast<double>(bytes) / kTransferBytesPerS;
  const double hash_timeout = o.timeout_s + static_cast<double>(bytes) / kHashBytesPerS;
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
            "--files-from=-", "--timeout=" + Seconds(o.timeout_s), "-e", e, stage + "/",
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

// ---- one machine ----------------------------------------------------------

MachineCopyResult CopyToMachine(const CopyOptions& o, const Machine& m, bool local_rsync,
                                const std::string& stage, std::ostream& out, std::mutex& out_mu) {
  MachineCopyResult result;
  result.machine = m.index;
  result.label = m.label;
  result.workspace = m.workspace;
  std::vector<std::string> have;
  if (m.local) {
    result.method = "local";
    for (const auto& item : m.items) {
      have.push_back(LocalHash(Join(m.workspace, item.dest), item.bytes));
    }
  } else {
    bool remote_rsync = false;
    have = RemoteCheck(o, m, &remote_rsync);
    if (o.transfer == "rsync" && !remote_rsync) {
      throw PeerError(m.label + ": rsync is not installed there (use --transfer scp or auto)");
    }
    result.method =
        o.transfer == "auto" ? (local_rsync && remote_rsync ? "rsync" : "scp") : o.transfer;
  }
  std::vector<const Item*> changed;
  std::ostringstream plan;
  for (size_t k = 0; k < m.items.size(); ++k) {
    const Item& item = m.items[k];
    const bool same = have[k] == item.sha256;
    if (same) {
      ++result.unchanged;
    } else {
      changed.push_back(&item);
      result.copied.push_back(item.dest);
      result.copied_bytes += item.bytes;
    }
    if (o.dry_run) {
      plan << "  " << (same ? "keep " : "copy ") << item.dest << " (" << Size(item.bytes) << ")\n";
    }
  }
  const std::string head =
      m.label + (m.local ? "" : " via " + result.method) + " -> " + m.workspace + ": ";
  if (o.dry_run) {
    std::lock_guard<std::mutex> lock(out_mu);
    out << head << "would copy " << Files(changed.size()) << " (" << Megabytes(result.copied_bytes)
        << "), " << result.unchanged << " unchanged (dry run)\n"
        << plan.str() << std::flush;
    return result;
  }
  std::vector<std::string> now;
  if (!changed.empty() && m.local) {
    const std::string suffix = ".gnn-copy-" + RandomSuffix() + "-" + std::to_string(m.index);
    for (const Item* item : changed) {
      const std::string dest = Join(m.workspace, item->dest);
      try {
        CopyFileAtomic(item->source, dest, suffix, m.stop);
      } catch (const DataError& e) {
        throw DataError(m.label + ": " + e.what());
      }
      now.push_back(LocalHash(dest, item->bytes));
    }
  } else if (!changed.empty()) {
    now = RemoteTransfer(o, m, result.method, changed, stage);
  }
  for (size_t k = 0; k < changed.size(); ++k) {
    if (now[k] != changed[k]->sha256) {
      throw DataError(m.label + ": " + Join(m.workspace, changed[k]->dest) +
                      ": checksum mismatch after copying (" +
                      (now[k].empty() ? std::string("file missing") : "sha256 " + now[k]) +
                      ", expected " + changed[k]->sha256 + ")");
    }
  }
  std::lock_guard<std::mutex> lock(out_mu);
  out << head << "copied " << Files(changed.size()) << " (" << Megabytes(result.copied_bytes)
      << "), " << result.unchanged << " unchanged, verified\n"
      << std::flush;
  return result;
}

}  // namespace

void CopyOptions::Validate() const {
  if (ip_config.empty()) throw ConfigError("--ip_config is required");
  if (workspace.empty()) throw ConfigError("--workspace is required");
  if (part_config.empty()) throw ConfigError("--part_config is required");
  std::string rel;
  if (!InsidePath(rel_data_path, &rel)) {
    throw ConfigError("--rel_data_path " + rel_data_path +
                      " must be a relative path inside the workspace");
  }
  if (transfer != "auto" && transfer != "rsync" && transfer != "scp") {
    throw ConfigError("--transfer " + transfer + " must be auto, rsync or scp");
  }
  if (jobs < 1) throw ConfigError("--jobs " + std::to_string(jobs) + " must be >= 1");
  if (!(timeout_s > 0)) throw ConfigError("--timeout_s must be > 0");
  ssh.Validate();
}

CopyReport RunCopy(const CopyOptions& o, std::ostream& out, const std::atomic<int>* stop) {
  o.Validate();
  std::string rel;
  InsidePath(o.rel_data_path, &rel);
  Plan plan;
  PlanConfig(o, &plan);
  PlanMachines(o, rel, &plan);  // before the (slower) hashing: a wrong count fails at once
  PlanShared(o, rel, &plan);
  MergeShared(&plan);
  for (auto& m : plan.machines) m.stop = stop;
  VerifySources(plan, o.jobs, stop);

  bool any_remote = false;
  for (const auto& m : plan.machines) any_remote = any_remote || !m.local;
  const bool local_rsync = !FindOnPath("rsync").empty();
  if (any_remote) {
    if (FindOnPath("ssh").empty()) {
      throw ConfigError("ssh is not installed here (needed for remote machines)");
    }
    if (o.transfer == "rsync" && !local_rsync) {
      throw ConfigError("--transfer rsync: rsync is not installed here");
    }
    if (o.transfer != "rsync" && !local_rsync && FindOnPath("scp").empty()) {
      throw ConfigError("neither rsync nor scp is installed here (needed for remote machines)");
    }
  }

  // ssh control sockets live in /tmp: their paths must stay short.
  std::unique_ptr<ScopedTempDir> sockets;
  if (any_remote) {
    sockets = std::make_unique<ScopedTempDir>("/tmp", "gnn-copy-");
    for (auto& m : plan.machines) {
      if (!m.local) m.control_path = sockets->path() + "/" + std::to_string(m.index);
    }
  }
  if (!plan.new_secret.empty()) {
    net::WriteSecretFile(o.secret_file, plan.new_secret.substr(0, plan.new_secret.size() - 1));
    std::cerr << "gnn-copy: made a new cluster secret " << o.secret_file << " (mode 0600)\n";
  }
  std::unique_ptr<ScopedTempDir> stage;
  if (!o.dry_run) {
    stage = std::make_unique<ScopedTempDir>(fs::temp_directory_path().string(), "gnn-copy-");
    if (plan.json_rewritten) {
      const std::string path = stage->path() + "/" + Basename(o.part_config);
      WriteFileAtomic(path, plan.json_text);
      for (auto& m : plan.machines) m.items.front().source = path;
    }
  }

  CopyReport report;
  report.machines.resize(plan.machines.size());
  std::mutex out_mu;
  const int n = static_cast<int>(plan.machines.size());
  uint64_t total_bytes = 0;
  for (const auto& m : plan.machines) {
    for (const auto& item : m.items) total_bytes += item.bytes;
  }
  // Machines done of all, live past 2 s (transfers run inside rsync/scp).
  Progress progress("gnn-copy (" + Megabytes(total_bytes) + " planned)", n, "machines");
  std::vector<std::exception_ptr> errors = ForEachParallel(n, o.jobs, [&](int i) {
    const Machine& m = plan.machines[static_cast<size_t>(i)];
    const std::string dir = stage ? stage->path() + "/m" + std::to_string(i) : "";
    struct Closer {
      const Machine& m;
      ~Closer() { CloseMux(m); }
    } closer{m};
    struct Count {
      Progress& p;
      ~Count() { p.Add(); }
    } count{progress};
    try {
      report.machines[static_cast<size_t>(i)] = CopyToMachine(o, m, local_rsync, dir, out, out_mu);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw DataError(m.label + ": " + e.what());
    }
  });
  if (stop && stop->load() != 0) {
    throw Error("interrupted by signal " + std::to_string(stop->load()) +
                "; every file in place is complete (temporaries removed)");
  }
  std::exception_ptr first;
  for (const auto& e : errors) {
    if (!e) continue;
    if (!first) {
      first = e;
      continue;
    }
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      GNN_LOG(kError) << x.what();
    }
  }
  if (first) std::rethrow_exception(first);

  size_t files = 0, unchanged = 0;
  uint64_t bytes = 0;
  for (const auto& r : report.machines) {
    files += r.copied.size();
    unchanged += static_cast<size_t>(r.unchanged);
    bytes += r.copied_bytes;
  }
  out << (o.dry_run ? "dry run: would copy " : "done: copied ") << Files(files) << " ("
      << Megabytes(bytes) << ") to " << n << (n == 1 ? " machine, " : " machines, ") << unchanged
      << " unchanged\n"
      << std::flush;
  return report;
}

}  // namespace gnn
