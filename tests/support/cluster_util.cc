#include "cluster_util.h"

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <random>
#include <stdexcept>

#include "client/dist_graph.h"
#include "common/log.h"
#include "partition/partition.h"

namespace gnn::test {

std::string MakePartitions(const TempDir& dir, const std::string& dataset, int parts,
                           const std::string& name, const std::string& method,
                           const std::string& feature_format) {
  PartitionOptions o;
  o.data.dataset = dataset;
  if (!feature_format.empty()) o.data.feature_format = feature_format;
  o.part_method = method;
  o.data.cache_dir = dir / "cache";
  o.num_parts = parts;
  o.balance_train = true;
  o.output = dir / name;
  // Quiet: a failing test's own messages come first in its output, not
  // the partitioner's progress (an error still throws and names itself).
  const LogLevel before = GetLogLevel();
  SetLogLevel(LogLevel::kWarn);
  try {
    std::string config = RunPartition(o).config_path;
    SetLogLevel(before);
    return config;
  } catch (...) {
    SetLogLevel(before);
    throw;
  }
}

std::vector<int64_t> DistinctRandomIds(int64_t n, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> used(static_cast<size_t>(n), 0);
  std::vector<int64_t> out;
  while (out.size() < count) {
    const int64_t v = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
    if (!used[static_cast<size_t>(v)]) {
      used[static_cast<size_t>(v)] = 1;
      out.push_back(v);
    }
  }
  return out;
}

DistGraphOptions ClientOptions(const std::string& config, const std::string& ip,
                               const ServerThreads& servers, const std::string& job, int local) {
  DistGraphOptions o;
  o.part_config = config;
  o.ip_config = ip;
  o.endpoints = servers.endpoints();
  o.local_machine_id = local;
  o.job_id = job;
  o.keys = Keys(job);
  o.timeout = std::chrono::milliseconds(20000);
  return o;
}

std::string WriteLoopbackIpConfig(const TempDir& dir, int machines) {
  std::string path = dir / ("ip_config_" + std::to_string(machines) + ".txt");
  std::ofstream out(path);
  for (int m = 0; m < machines; ++m) out << "127.0.0.1 " << 40000 + 10 * m << "\n";
  return path;
}

ServerThreads::ServerThreads(const std::string& ip_config, const std::string& part_config,
                             int machines, int num_servers, const std::string& job_id) {
  endpoints_.assign(machines, std::vector<std::string>(num_servers));
  std::mutex mu;
  std::condition_variable cv;
  int ready = 0, failed = 0;
  for (int m = 0; m < machines; ++m) {
    for (int s = 0; s < num_servers; ++s) {
      threads_.emplace_back([&, m, s] {
        ServerOptions o;
        o.ip_config = ip_config;
        o.part_config = part_config;
        o.machine_id = m;
        o.server_id = s;
        o.num_servers = num_servers;
        o.num_threads = 2;
        o.job_id = job_id;
        o.keys = Keys(job_id);
        o.bind_endpoint = "tcp://127.0.0.1:*";
        o.attach_timeout = std::chrono::milliseconds(20000);
        try {
          RunServer(o, stop_, [&](const std::string& ep) {
            std::lock_guard<std::mutex> lock(mu);
            endpoints_[m][s] = ep;
            ++ready;
            cv.notify_all();
          });
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mu);
          errors_.push_back(e.what());
          ++failed;
          cv.notify_all();
        }
      });
    }
  }
  std::unique_lock<std::mutex> lock(mu);
  bool ok = cv.wait_for(lock, std::chrono::seconds(60),
                        [&] { return ready + failed == machines * num_servers; });
  if (!ok || failed) {
    std::string why = ok ? errors_.front() : "servers did not start within 60 s";
    lock.unlock();
    Stop();
    throw std::runtime_error(why);
  }
}

void ServerThreads::Stop() {
  stop_ = true;
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

ServerThreads::~ServerThreads() { Stop(); }

}  // namespace gnn::test
