#include "cluster/remote.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/error.h"

extern char** environ;

namespace gnn {

namespace fs = std::filesystem;

void SshOptions::Validate() const {
  if (port < 1 || port > 65535)
    throw ConfigError("--ssh_port " + std::to_string(port) + " out of range [1, 65535]");
  if (!config.empty() && ::access(config.c_str(), R_OK) != 0) {
    throw ConfigError("--ssh_config " + config + ": " + std::strerror(errno));
  }
  if (!(connect_timeout.count() > 0)) throw ConfigError("--ssh_connect_timeout_s must be > 0");
}

bool IsLocalHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0) return true;
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) == 0 && host == name) return true;
  ifaddrs* addrs = nullptr;
  if (::getifaddrs(&addrs) != 0) return false;
  bool found = false;
  for (ifaddrs* a = addrs; a && !found; a = a->ifa_next) {
    if (!a->ifa_addr) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf,
                  sizeof(buf));
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, buf,
                  sizeof(buf));
    } else {
      continue;
    }
    found = host == buf;
  }
  ::freeifaddrs(addrs);
  return found;
}

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string MachineWorkspace(const std::string& workspace, int machine) {
  static const std::string kKey = "{machine}";
  std::string out = workspace;
  for (size_t p = out.find(kKey); p != std::string::npos; p = out.find(kKey, p)) {
    out.replace(p, kKey.size(), std::to_string(machine));
  }
  return out;
}

std::vector<std::string> SshArgv(const SshOptions& ssh, const std::string& host,
                                 const std::string& remote_command) {
  std::vector<std::string> argv = {"ssh"};
  for (auto& o : SshClientOptions(ssh)) argv.push_back(std::move(o));
  argv.push_back(host);
  argv.push_back(remote_command);
  return argv;
}

std::vector<std::string> SshClientOptions(const SshOptions& ssh) {
  std::vector<std::string> opts;
  if (!ssh.config.empty()) {
    opts.push_back("-F");
    opts.push_back(ssh.config);
  }
  const long timeout = std::lround(std::ceil(ssh.connect_timeout.count()));
  const std::vector<std::string> settings = {
      "BatchMode=yes", "ConnectTimeout=" + std::to_string(timeout),
      "Port=" + std::to_string(ssh.port), "ServerAliveInterval=15", "ServerAliveCountMax=4"};
  for (const auto& s : settings) {
    opts.push_back("-o");
    opts.push_back(s);
  }
  if (!ssh.username.empty()) {
    opts.push_back("-o");
    opts.push_back("User=" + ssh.username);
  }
  return opts;
}

std::string ShellPath(const std::string& path) {
  if (path == "~") return "\"$HOME\"";
  if (path.rfind("~/", 0) == 0) return "\"$HOME\"/" + ShellQuote(path.substr(2));
  return ShellQuote(path);
}

std::string RemoteCommand(const std::string& workspace, const std::vector<std::string>& env_vars,
                          const std::string& command) {
  std::string remote = "cd " + ShellPath(workspace) + " && env PATH=\"$PWD/bin:$PATH\"";
  for (const auto& e : env_vars) {
    // A PATH of the caller's keeps WORKSPACE/bin first too.
    remote += e.rfind("PATH=", 0) == 0 ? " PATH=\"$PWD/bin\":" + ShellQuote(e.substr(5))
                                       : " " + ShellQuote(e);
  }
  // Not exec'd: ssh reports a remote death by signal as exit 255, like a
  // lost connection; the shell says which signal it was.
  return remote + " " + command +
         "; rc=$?; if [ $rc -gt 128 ] && [ $rc -lt 160 ]; then echo \"(remote process killed by "
         "signal $((rc - 128)))\" >&2; fi;"
         " exit $rc";
}

std::vector<std::string> NumericLibraryEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string var(*e);
    for (const char* prefix : {"OMP_", "GOMP_", "KMP_", "OPENBLAS_", "MKL_"}) {
      if (var.rfind(prefix, 0) == 0 && var.find('=') != std::string::npos) {
        out.push_back(var);
        break;
      }
    }
  }
  return out;
}

CommandResult WriteFileOverSsh(const SshOptions& ssh, const std::string& host,
                               const std::string& workspace, const std::string& rel_path,
                               const std::string& text, bool owner_only, double timeout_s) {
  const std::string dir = fs::path(rel_path).parent_path().string();
  const std::string tmp = ShellQuote(rel_path + ".tmp"), dest = ShellQuote(rel_path);
  const std::string script = "mkdir -p " + ShellPath(workspace) + " && cd " + ShellPath(workspace) +
                             (owner_only ? " && umask 077" : "") +
                             (dir.empty() ? "" : " && mkdir -p " + ShellQuote(dir)) + " && cat > " +
                             tmp + " && mv -f " + tmp + " " + dest;
  return RunCommand(SshArgv(ssh, host, script), timeout_s, text);
}

}  // namespace gnn
