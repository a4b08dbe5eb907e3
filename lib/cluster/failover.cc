#include "cluster/failover.h"

#include <filesystem>
#include <iostream>
#include <sstream>

#include "cluster/copy.h"
#include "cluster/launch_plan.h"
#include "cluster/remote.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/process.h"
#include "partition/config.h"

namespace gnn {

namespace fs = std::filesystem;

std::vector<int> ProbeLost(const SshOptions& ssh, const std::vector<MachineAddress>& all,
                           const std::vector<int>& machines, std::vector<std::string>* why) {
  std::vector<int> lost;
  for (int m : machines) {
    const std::string& host = all[static_cast<size_t>(m)].host;
    if (RunsLocally(ssh, host)) continue;
    const CommandResult r = RunCommand(SshArgv(ssh, host, "true"), ssh.connect_timeout.count() + 5);
    if (r.exit_code == 0) continue;
    lost.push_back(m);
    std::string err = r.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    const size_t nl = err.rfind('\n');
    if (nl != std::string::npos) err = err.substr(nl + 1);
    why->push_back("machine " + std::to_string(m) + " (" + host + ") does not answer: ssh " +
                   r.Describe() + (err.empty() ? "" : ": " + err));
  }
  return lost;
}

std::vector<int> Reassign(const std::vector<int>& survivors,
                          const std::vector<std::set<int>>& holds, int num_parts) {
  const int n = static_cast<int>(survivors.size());
  if (n < num_parts) {
    throw ConfigError(std::to_string(n) + (n == 1 ? " machine is" : " machines are") +
                      " left for " + std::to_string(num_parts) + " partitions");
  }
  std::vector<int> order(static_cast<size_t>(n), -1);
  std::vector<bool> placed(static_cast<size_t>(n), false);
  // First, every slot a survivor can take without a copy (in survivor
  // order, so an unchanged cluster keeps its order)...
  for (int j = 0; j < n; ++j) {
    const int part = MachinePartition(j, num_parts);
    for (int i = 0; i < n; ++i) {
      if (placed[static_cast<size_t>(i)]) continue;
      if (holds[static_cast<size_t>(survivors[static_cast<size_t>(i)])].count(part)) {
        order[static_cast<size_t>(j)] = survivors[static_cast<size_t>(i)];
        placed[static_cast<size_t>(i)] = true;
        break;
      }
    }
  }
  // ...then the others fill the slots left, and receive a copy.
  for (int j = 0, i = 0; j < n; ++j) {
    if (order[static_cast<size_t>(j)] >= 0) continue;
    while (placed[static_cast<size_t>(i)]) ++i;
    order[static_cast<size_t>(j)] = survivors[static_cast<size_t>(i)];
    placed[static_cast<size_t>(i)] = true;
  }
  return order;
}

namespace {

// The ip_config of `order`, written at `ip_path` on this host; its text.
std::string WriteRunIpConfig(const std::vector<MachineAddress>& all, const std::vector<int>& order,
                             const std::string& ip_path) {
  std::ostringstream text;
  for (int m : order) {
    const MachineAddress& a = all[static_cast<size_t>(m)];
    const bool v6 = IsIpv6Literal(a.host);
    text << (v6 ? "[" + a.host + "]" : a.host) << " " << a.port << "\n";
  }
  WriteFileAtomic(ip_path, text.str());
  return text.str();
}

// Seconds a remote write of a small file may take, beyond connecting.
constexpr double kShipTimeoutS = 30;

}  // namespace

void ShipIpConfig(const LaunchOptions& o, const std::vector<MachineAddress>& all,
                  const std::vector<int>& order, const std::string& ip_path) {
  const std::string text = WriteRunIpConfig(all, order, ip_path);
  const std::string name = fs::path(ip_path).filename().string();
  for (int m : order) {
    const std::string& host = all[static_cast<size_t>(m)].host;
    const std::string ws = MachineWorkspace(o.workspace, m);
    if (RunsLocally(o.ssh, host)) {
      WriteFileAtomic(InWorkspace(ExpandHome(ws), name), text);
      continue;
    }
    const CommandResult r = WriteFileOverSsh(o.ssh, host, ws, name, text, false,
                                             o.ssh.connect_timeout.count() + kShipTimeoutS);
    if (r.exit_code != 0) {
      throw PeerError("machine " + std::to_string(m) + " (" + host + "): cannot write " + name +
                      ": ssh " + r.Describe() + ": " + r.LastErrorLine());
    }
  }
}

void ShipRunLayout(const LaunchOptions& o, const std::vector<MachineAddress>& all,
                   const std::vector<int>& order, const std::string& ip_path,
                   const std::string& part_source) {
  WriteRunIpConfig(all, order, ip_path);
  if (fs::path(part_source).filename() != fs::path(o.part_config).filename()) {
    throw ConfigError("--part_source " + part_source + " and --part_config " + o.part_config +
                      " name different files (a restart ships the source to where the job "
                      "reads the config)");
  }
  CopyOptions c;
  c.ip_config = ip_path;
  c.workspace = o.workspace;
  c.workspace_index = order;
  c.rel_data_path = fs::path(o.part_config).parent_path().string();
  c.part_config = part_source;
  c.ssh = o.ssh;
  RunCopy(c, std::cerr);
}

}  // namespace gnn
