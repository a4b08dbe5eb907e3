// gnn-server: serves one partition over ZeroMQ (docs/ARCHITECTURE.md, "Processes
// and how they talk"). Server 0 of a machine puts the partition into
// shared memory; backup servers attach to it. A ROUTER socket bound to the
// machine's own address feeds a pool of worker threads that answer Hello,
// Ping, Sample, SampleAggregate, PullFeatures, PullSums, PullLabels,
// SplitNodes, Metadata, Shutdown, and the typed graphs' requests (typed
// samples, pulls, sums and embedding rows: hetero_server.h).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "net/protocol.h"
#include "net/security.h"
#include "store/shm_partition.h"

namespace gnn {

struct ServerOptions {
  std::string ip_config;    // --ip_config
  std::string part_config;  // --part_config
  int machine_id = -1;      // --machine_id: line of ip_config; serves partition machine_id mod P
  int server_id = 0;        // --server_id: 0 loads, others attach (backups)
  int num_servers = 1;      // --num_servers per machine
  int num_threads = 0;      // --num_threads worker threads (0 = all cores)
  std::string job_id;       // --job_id: only a Shutdown carrying it is obeyed
  net::JobKeys keys;        // from --secret_file and the job id (or --insecure)
  // Empty: bind to the machine's ip_config address. Tests may pass
  // "tcp://127.0.0.1:*" to get an ephemeral port (reported via on_ready).
  std::string bind_endpoint;
  std::chrono::milliseconds attach_timeout{kDefaultAttachTimeoutMs};  // backups wait for server 0
  // A busy port is waited for this long (a restarted run's server, while
  // the one it replaces may still be stopping); 0 = fail at once.
  std::chrono::duration<double> bind_retry{0};
  bool verify_checksums = true;
  // --peer_window_mb: reply bytes one client may leave untaken before its
  // further replies become kErrBusy errors (net/peer_window.h).
  int64_t peer_window_bytes = net::kDefaultPeerWindowBytes;

  void Validate() const;  // ConfigError naming the bad field
};

// How long server 0, stopping, waits for the other holders of its shared
// memory (trainers, samplers) to let go before leaving its removal to them:
// longer than the 10 s after which a process whose launcher is gone exits
// hard, so a sampler stuck on a stopped peer is gone by then.
constexpr std::chrono::milliseconds kServerRemoveWait{12000};
// gnn-server's own allowance for a clean stop once its launcher is gone.
constexpr double kServerStopGraceS = 15;

// Runs the server until `stop` becomes true, a valid Shutdown arrives, or an
// error occurs (thrown: ConfigError for busy ports / mismatches, DataError,
// TimeoutError). `on_ready(endpoint)` is called once it is serving.
// Blocking; checks `stop` at least every 100 ms.
void RunServer(const ServerOptions& options, const std::atomic<bool>& stop,
               const std::function<void(const std::string&)>& on_ready = nullptr);

}  // namespace gnn
