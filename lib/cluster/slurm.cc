#include "cluster/slurm.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cluster/launch_options.h"
#include "cluster/launch_plan.h"
#include "common/error.h"
#include "common/fs.h"
#include "net/ip_config.h"

extern char** environ;

namespace gnn {
namespace {

bool AllDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Splits at commas outside brackets.
std::vector<std::string> SplitTop(const std::string& text, const std::string& whole) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) throw ConfigError("host list '" + whole + "': unbalanced ']'");
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) throw ConfigError("host list '" + whole + "': unbalanced '['");
  parts.push_back(cur);
  return parts;
}

// Expands one item, which may hold several bracket groups ("r[1-2]n[3-4]").
void ExpandItem(const std::string& item, const std::string& whole, std::vector<std::string>* out) {
  size_t open = item.find('[');
  if (open == std::string::npos) {
    out->push_back(item);
    return;
  }
  size_t close = item.find(']', open);
  const std::string prefix = item.substr(0, open);
  const std::string ranges = item.substr(open + 1, close - open - 1);
  const std::string suffix = item.substr(close + 1);
  size_t start = 0;
  while (start <= ranges.size()) {
    size_t comma = ranges.find(',', start);
    std::string r =
        ranges.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = r.find('-');
    std::string lo = r.substr(0, dash), hi = dash == std::string::npos ? lo : r.substr(dash + 1);
    if (!AllDigits(lo) || !AllDigits(hi) || lo.size() > 9 || hi.size() > 9) {
      throw ConfigError("host list '" + whole + "': bad range '" + r + "'");
    }
    long a = std::atol(lo.c_str()), b = std::atol(hi.c_str());
    if (b < a || b - a > 100000)
      throw ConfigError("host list '" + whole + "': bad range '" + r + "'");
    for (long v = a; v <= b; ++v) {
      std::string num = std::to_string(v);
      if (num.size() < lo.size()) num = std::string(lo.size() - num.size(), '0') + num;
      ExpandItem(prefix + num + suffix, whole, out);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

int IntVar(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  if (it == env.end())
    throw ConfigError(std::string("--slurm: ") + name + " is not set (run under srun)");
  if (!AllDigits(it->second) || it->second.size() > 9) {
    throw ConfigError(std::string("--slurm: ") + name + "='" + it->second +
                      "' is not a non-negative integer");
  }
  return std::atoi(it->second.c_str());
}

}  // namespace

std::vector<std::string> ExpandHostList(const std::string& text) {
  std::vector<std::string> hosts;
  for (const auto& item : SplitTop(text, text)) {
    if (item.empty()) throw ConfigError("host list '" + text + "': empty host name");
    ExpandItem(item, text, &hosts);
  }
  return hosts;
}

SlurmNode ReadSlurm(const std::map<std::string, std::string>& env) {
  SlurmNode node;
  node.machine_id = IntVar(env, "SLURM_NODEID");
  node.num_machines = IntVar(env, "SLURM_NNODES");
  auto list = env.find("SLURM_JOB_NODELIST");
  if (list == env.end()) list = env.find("SLURM_NODELIST");
  if (list == env.end())
    throw ConfigError("--slurm: SLURM_JOB_NODELIST is not set (run under srun)");
  node.hosts = ExpandHostList(list->second);
  if (static_cast<int>(node.hosts.size()) != node.num_machines) {
    throw ConfigError("--slurm: SLURM_JOB_NODELIST '" + list->second + "' names " +
                      std::to_string(node.hosts.size()) + " hosts but SLURM_NNODES is " +
                      std::to_string(node.num_machines));
  }
  if (node.machine_id >= node.num_machines) {
    throw ConfigError("--slurm: SLURM_NODEID " + std::to_string(node.machine_id) +
                      " is not below SLURM_NNODES " + std::to_string(node.num_machines));
  }
  auto job = env.find("SLURM_JOB_ID");
  if (job != env.end()) node.job_id = job->second;
  return node;
}

std::map<std::string, std::string> ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  return env;
}

std::string SlurmIpConfig(const std::vector<std::string>& hosts, int port) {
  std::string text = "# written by gnn-launch --slurm from SLURM_JOB_NODELIST\n";
  for (const auto& h : hosts) {
    // An IPv4 literal stays as written. A name becomes its first
    // non-loopback address: a node's own name often maps to 127.0.1.1 in
    // /etc/hosts, which the other nodes could not reach.
    std::string address = h;
    in_addr literal{};
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::inet_pton(AF_INET, h.c_str(), &literal) != 1 &&
        ::getaddrinfo(h.c_str(), nullptr, &hints, &res) == 0) {
      for (addrinfo* r = res; r; r = r->ai_next) {
        const in_addr a = reinterpret_cast<sockaddr_in*>(r->ai_addr)->sin_addr;
        if ((ntohl(a.s_addr) >> 24) == 127) continue;
        char buf[INET_ADDRSTRLEN] = {};
        ::inet_ntop(AF_INET, &a, buf, sizeof(buf));
        address = buf;
        break;
      }
      ::freeaddrinfo(res);
    }
    text += address + " " + std::to_string(port) + "   # " + h + "\n";
  }
  return text;
}

namespace fs = std::filesystem;

void ApplySlurm(bool machine_id_given, int port, LaunchOptions* o) {
  const SlurmNode node = ReadSlurm(ProcessEnvironment());
  if (!machine_id_given) o->machine_id = node.machine_id;
  if (o->job_id.empty() && !node.job_id.empty()) o->job_id = "slurm-" + node.job_id;
  // One file per allocation: a later job on other nodes never reads a
  // stale list from a shared home directory.
  if (o->ip_config.empty()) {
    o->ip_config =
        node.job_id.empty() ? "ip_config-slurm.txt" : "ip_config-slurm-" + node.job_id + ".txt";
  }
  const std::string path = LauncherPath(*o, o->ip_config);
  std::error_code ec;
  if (fs::exists(path, ec)) {
    const size_t listed = ReadIpConfig(path).size();
    if (static_cast<int>(listed) != node.num_machines) {
      throw ConfigError("--slurm: " + path + " lists " + std::to_string(listed) +
                        " machines but SLURM_NNODES is " + std::to_string(node.num_machines) +
                        " (remove it to have it written from the node list)");
    }
    return;
  }
  if (port < 1 || port + 1 > 65535)
    throw ConfigError("--slurm_port " + std::to_string(port) + " out of range");
  // Every node writes the same text; a rename keeps readers from ever
  // seeing half a file, also on a shared file system (where nodes' pids
  // may coincide: the temporary's name is random).
  try {
    WriteFileAtomic(path, SlurmIpConfig(node.hosts, port));
  } catch (const Error& e) {
    throw ConfigError(std::string("--slurm: ") + e.what() + " (does the workspace exist?)");
  }
  if (!o->quiet) {
    std::cerr << "gnn-launch: wrote " << path << " (" << node.hosts.size()
              << " machines) from SLURM_JOB_NODELIST\n";
  }
}

}  // namespace gnn
