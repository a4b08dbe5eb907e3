#include "cluster/launch_plan.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "cluster/remote.h"

namespace gnn {

namespace fs = std::filesystem;

std::string InWorkspace(const std::string& workspace, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return (fs::absolute(workspace) / path).lexically_normal().string();
}

std::string FirstWord(const std::string& command, std::string* rest) {
  size_t b = command.find_first_not_of(" \t\n");
  if (b == std::string::npos) {
    if (rest) rest->clear();
    return "";
  }
  size_t e = command.find_first_of(" \t\n", b);
  if (rest) *rest = e == std::string::npos ? "" : command.substr(e);
  return command.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

std::string ResolveBinary(const std::string& word, const std::string& workspace) {
  if (word.empty()) return "";
  if (word.find('/') == std::string::npos) {
    // As the process's own PATH will find it: WORKSPACE/bin first.
    const std::string shipped = InWorkspace(workspace, "bin/" + word);
    if (IsExecutableFile(shipped)) return shipped;
    std::string p = FindOnPath(word);
    if (!p.empty()) return p;
  }
  std::string p = InWorkspace(workspace, word);
  return IsExecutableFile(p) ? p : "";
}

// The gnn-server local machines run.
std::string ServerBinary(const LaunchOptions& o) {
  return o.server_binary.empty() ? SelfDir() + "/gnn-server" : o.server_binary;
}

std::chrono::steady_clock::time_point DeadlineAfter(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(seconds));
}

std::string ExpandHome(const std::string& path) {
  const char* home = std::getenv("HOME");
  if (home && (path == "~" || path.rfind("~/", 0) == 0)) return std::string(home) + path.substr(1);
  return path;
}

std::string LauncherPath(const LaunchOptions& o, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  std::error_code ec;
  const std::string ws0 = ExpandHome(MachineWorkspace(o.workspace, std::max(o.machine_id, 0)));
  std::string in_ws = InWorkspace(ws0, path);
  if (fs::exists(in_ws, ec)) return in_ws;
  return fs::exists(path, ec) ? fs::absolute(path).lexically_normal().string() : in_ws;
}

std::vector<MachinePlan> PlanMachines(const LaunchOptions& o,
                                      const std::vector<MachineAddress>& machines,
                                      const std::vector<int>& origin) {
  std::vector<MachinePlan> plans;
  for (size_t m = 0; m < machines.size(); ++m) {
    MachinePlan p;
    p.address = machines[m];
    p.local = RunsLocally(o.ssh, machines[m].host);
    const std::string ws =
        MachineWorkspace(o.workspace, origin.empty() ? static_cast<int>(m) : origin[m]);
    if (p.local) {
      p.workspace = fs::absolute(ExpandHome(ws)).lexically_normal().string();
      p.part_config = InWorkspace(p.workspace, o.part_config);
      p.ip_config = InWorkspace(p.workspace, o.ip_config);
    } else {
      p.workspace = ws;
      p.part_config = o.part_config;  // the remote process runs in its workspace
      p.ip_config = o.ip_config;
    }
    plans.push_back(p);
  }
  return plans;
}

}  // namespace gnn
