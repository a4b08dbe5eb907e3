// Test helpers for the distributed data plane: partitions on disk, servers
// running as threads on loopback with ephemeral ports.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "partition/config.h"
#include "server/server.h"
#include "test_util.h"

namespace gnn::test {

// Partitions `dataset` into `parts` under dir/name by `method` (--part_method);
// returns the config path.
std::string MakePartitions(const TempDir& dir, const std::string& dataset, int parts,
                           const std::string& name, const std::string& method = "metis");

// Writes an ip_config with `machines` loopback lines (ports are not used
// when servers bind ephemeral endpoints).
std::string WriteLoopbackIpConfig(const TempDir& dir, int machines);

// Servers (num_servers per machine) as threads in this process, each bound
// to tcp://127.0.0.1:* . Stops and joins them on destruction.
class ServerThreads {
 public:
  ServerThreads(const std::string& ip_config, const std::string& part_config, int machines,
                int num_servers, const std::string& job_id);
  ~ServerThreads();
  // endpoints()[machine][server]
  const std::vector<std::vector<std::string>>& endpoints() const { return endpoints_; }
  void Stop();

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  std::vector<std::vector<std::string>> endpoints_;
  std::vector<std::string> errors_;
};

}  // namespace gnn::test
