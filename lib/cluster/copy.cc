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

#include "cluster/copy_transfer.h"
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
using namespace copy;

// Throws the first error, of its own class, with the others on its line
// ("; also: ..."): gnn-copy's one error line and exit code however many
// machines (or files) failed.
void ThrowErrors(const std::vector<std::exception_ptr>& errors) {
  constexpr size_t kNamed = 3;  // others named; the rest counted
  std::exception_ptr first;
  std::string others;
  size_t count = 0;
  for (const auto& e : errors) {
    if (!e) continue;
    if (!first) {
      first = e;
      continue;
    }
    if (++count > kNamed) continue;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      others += std::string(count == 1 ? "; also: " : "; ") + x.what();
    }
  }
  if (!first) return;
  if (count > kNamed) others += "; and " + std::to_string(count - kNamed) + " more";
  try {
    std::rethrow_exception(first);
  } catch (const std::exception& x) {
    if (others.empty()) throw;
    ThrowAs(x, x.what() + others);
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
      throw DataError(
          CannotMessage("open --script_folder", o.script_folder, DirectoryErrno(o.script_folder)));
    }
    const std::string base = Basename(fs::absolute(o.script_folder).lexically_normal().string());
    std::vector<std::string> files;
    for (auto it = fs::recursive_directory_iterator(o.script_folder, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_regular_file()) {
        files.push_back(fs::relative(it->path(), o.script_folder).string());
      }
    }
    if (ec) throw DataError(CannotMessage("list --script_folder", o.script_folder, ec));
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
        throw ConfigError("--ship_binaries: " + path +
                          " is missing or not executable (build it first)");
      }
      plan->shared.push_back(HashedItem(path, "bin/" + name));
    }
  }
}

void PlanMachines(const CopyOptions& o, const std::string& rel, Plan* plan) {
  const std::vector<MachineAddress> addresses = ReadIpConfig(o.ip_config);
  CheckMachinesForParts(plan->config.num_parts, static_cast<int>(addresses.size()), o.ip_config);
  const char* home = std::getenv("HOME");
  for (size_t i = 0; i < addresses.size(); ++i) {
    Machine m;
    m.index = static_cast<int>(i);
    m.address = addresses[i];
    m.local = RunsLocally(o.ssh, m.address.host);
    m.workspace = MachineWorkspace(o.workspace,
                                   o.workspace_index.empty() ? m.index : o.workspace_index.at(i));
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
    // Machine i serves (and receives) partition i mod P.
    const int p = MachinePartition(m.index, plan->config.num_parts);
    const PartInfo& part = plan->config.parts[static_cast<size_t>(p)];
    for (const auto& [name, f] : part.files) {
      m.items.push_back(Item{plan->config.FilePath(p, name),
                             Join(Join(rel, plan->part_dirs[static_cast<size_t>(p)]), name),
                             f.sha256, f.bytes, true});
    }
    // The user's ids of every partition (8 bytes a node): each machine's
    // gnn-serve maps request ids to nodes of any partition.
    for (int q = 0; plan->config.user_node_ids && q < plan->config.num_parts; ++q) {
      if (q == p) continue;
      const PartFile& f = plan->config.parts[static_cast<size_t>(q)].files.at(kUserIdsFile);
      m.items.push_back(Item{plan->config.FilePath(q, kUserIdsFile),
                             Join(Join(rel, plan->part_dirs[static_cast<size_t>(q)]), kUserIdsFile),
                             f.sha256, f.bytes, true});
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
  ThrowErrors(ForEachParallel(static_cast<int>(files.size()), threads, [&](int i) {
    const Item& item = *files[static_cast<size_t>(i)];
    if (stop && stop->load() != 0) throw Error("interrupted while checking the sources");
    const std::string sha = Sha256File(item.source);
    if (sha != item.sha256) {
      throw DataError(item.source + ": checksum mismatch (sha256 " + sha + ", expected " +
                      item.sha256 + "); nothing copied");
    }
  }));
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

// The plan, its sources hashed and verified: what every machine receives.
Plan MakePlan(const CopyOptions& o, const std::atomic<int>* stop) {
  std::string rel;
  InsidePath(o.rel_data_path, &rel);
  Plan plan;
  PlanConfig(o, &plan);
  PlanMachines(o, rel, &plan);  // before the (slower) hashing: a wrong count fails at once
  PlanShared(o, rel, &plan);
  MergeShared(&plan);
  for (auto& m : plan.machines) m.stop = stop;
  VerifySources(plan, o.jobs, stop);
  return plan;
}

bool AnyRemote(const Plan& plan) {
  bool any_remote = false;
  for (const auto& m : plan.machines) any_remote = any_remote || !m.local;
  return any_remote;
}

// The tools remote machines need here: ssh, and rsync or scp as --transfer
// asks.
void CheckTransferTools(const CopyOptions& o, bool local_rsync) {
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

// One ssh control socket per remote machine, in a folder removed with the
// returned one. They live in /tmp: their paths must stay short.
std::unique_ptr<ScopedTempDir> PlaceControlSockets(Plan* plan) {
  auto sockets = std::make_unique<ScopedTempDir>("/tmp", "gnn-copy-");
  for (auto& m : plan->machines) {
    if (!m.local) m.control_path = sockets->path() + "/" + std::to_string(m.index);
  }
  return sockets;
}

// The staging folder (each machine's temporaries, and the rewritten
// partition config, which becomes the config's source).
std::unique_ptr<ScopedTempDir> Stage(const CopyOptions& o, Plan* plan) {
  auto stage = std::make_unique<ScopedTempDir>(fs::temp_directory_path().string(), "gnn-copy-");
  if (plan->json_rewritten) {
    const std::string path = stage->path() + "/" + Basename(o.part_config);
    WriteFileAtomic(path, plan->json_text);
    for (auto& m : plan->machines) m.items.front().source = path;
  }
  return stage;
}

// Every machine's copy, o.jobs at a time, with live progress. The first
// machine's error is thrown, the others' logged.
CopyReport CopyAll(const CopyOptions& o, const Plan& plan, bool local_rsync,
                   const ScopedTempDir* stage, std::ostream& out, const std::atomic<int>* stop) {
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
  ThrowErrors(errors);
  return report;
}

// The closing line: files and bytes copied over all machines.
void PrintTotals(const CopyOptions& o, const CopyReport& report, std::ostream& out) {
  size_t files = 0, unchanged = 0;
  uint64_t bytes = 0;
  for (const auto& r : report.machines) {
    files += r.copied.size();
    unchanged += static_cast<size_t>(r.unchanged);
    bytes += r.copied_bytes;
  }
  const size_t n = report.machines.size();
  out << (o.dry_run ? "dry run: would copy " : "done: copied ") << Files(files) << " ("
      << Megabytes(bytes) << ") to " << n << (n == 1 ? " machine, " : " machines, ") << unchanged
      << " unchanged\n"
      << std::flush;
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
  if (!(timeout.count() > 0)) throw ConfigError("--timeout_s must be > 0");
  ssh.Validate();
}

CopyReport RunCopy(const CopyOptions& o, std::ostream& out, const std::atomic<int>* stop) {
  o.Validate();
  Plan plan = MakePlan(o, stop);
  const bool any_remote = AnyRemote(plan);
  const bool local_rsync = !FindOnPath("rsync").empty();
  if (any_remote) CheckTransferTools(o, local_rsync);
  std::unique_ptr<ScopedTempDir> sockets;
  if (any_remote) sockets = PlaceControlSockets(&plan);
  if (!plan.new_secret.empty()) {
    net::WriteSecretFile(o.secret_file, plan.new_secret.substr(0, plan.new_secret.size() - 1));
    GNN_LOG(kInfo) << "made a new cluster secret " << o.secret_file << " (mode 0600)";
  }
  std::unique_ptr<ScopedTempDir> stage;
  if (!o.dry_run) stage = Stage(o, &plan);
  CopyReport report = CopyAll(o, plan, local_rsync, stage.get(), out, stop);
  PrintTotals(o, report, out);
  return report;
}

}  // namespace gnn
