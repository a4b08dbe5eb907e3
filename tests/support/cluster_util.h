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

namespace gnn {
struct DistGraphOptions;  // client/dist_graph.h: include it to call ClientOptions
}  // namespace gnn

namespace gnn::test {

class ServerThreads;

// Partitions `dataset` into `parts` under dir/name by `method` (--part_method);
// returns the config path.
// `feature_format` (auto, dense, sparse; empty: the dataset options'
// default) is gnn-partition's --feature_format.
std::string MakePartitions(const TempDir& dir, const std::string& dataset, int parts,
                           const std::string& name, const std::string& method = "metis",
                           const std::string& feature_format = "");

// `count` distinct node ids of [0, n), drawn from `seed`.
std::vector<int64_t> DistinctRandomIds(int64_t n, size_t count, uint64_t seed);

// A DistGraph's options for servers as threads: `config`, `ip`, their
// endpoints, job `job` with its keys, local machine `local` (-1: none), a
// 20 s request timeout.
DistGraphOptions ClientOptions(const std::string& config, const std::string& ip,
                               const ServerThreads& servers, const std::string& job, int local);

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
