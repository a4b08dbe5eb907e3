#include "dist_partition/mpirun.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "common/error.h"
#include "common/log.h"

namespace gnn {

std::string MpirunHosts(const std::vector<MachineAddress>& machines, const std::string& ip_config) {
  std::vector<std::pair<std::string, int>> runs;
  for (const MachineAddress& m : machines) {
    if (!runs.empty() && runs.back().first == m.host) {
      ++runs.back().second;
      continue;
    }
    for (const auto& r : runs) {
      if (r.first == m.host) {
        throw ConfigError(ip_config + ":" + std::to_string(m.line) + ": host " + m.host +
                          " appears on lines apart; --distributed needs a host's lines "
                          "next to each other");
      }
    }
    runs.emplace_back(m.host, 1);
  }
  std::string hosts;
  for (const auto& [host, slots] : runs) {
    hosts += (hosts.empty() ? "" : ",") + host + ":" + std::to_string(slots);
  }
  return hosts;
}

void RelaunchUnderMpirun(const std::string& ip_config, int argc, char** argv) {
  const std::vector<MachineAddress> machines = ReadIpConfig(ip_config);
  const std::string hosts = MpirunHosts(machines, ip_config);
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  // Not bound to one core: gnn-partition uses every core of its machine.
  std::vector<std::string> words = {"mpirun", "--quiet", "--bind-to",
                                    "none",   "-np",     std::to_string(machines.size()),
                                    "--host", hosts};
  if (::geteuid() == 0) words.push_back("--allow-run-as-root");
  words.push_back(ec ? std::string(argv[0]) : self);
  for (int i = 1; i < argc; ++i) words.push_back(argv[i]);
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  GNN_LOG(kInfo) << "starting " << machines.size() << " machines with mpirun --host " << hosts;
  ::execvp("mpirun", args.data());
  throw ConfigError(std::string("--distributed --ip_config starts its machines with mpirun: ") +
                    std::strerror(errno) + " (apt install openmpi-bin)");
}

}  // namespace gnn
