// Per-node launchers watch each other: a thread pings every other
// machine's server 0 about 3 times a second, and a machine silent for a
// while has failed (its launcher tore its job down) or is gone.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "net/ip_config.h"
#include "net/security.h"

namespace gnn {

// True if server `s` of machine `m` answers a Ping within `timeout_ms`.
// `keys` are the job's: a server of another job (or a stranger's) does not answer.
bool Ping(zmq::context_t& ctx, const net::JobKeys& keys, const MachineAddress& machine, int m,
          int s, int timeout_ms);

// Pings server 0 of every machine but `self` from its own thread (self < 0:
// watches nothing) and remembers since when each has been silent.
class PeerWatch {
 public:
  PeerWatch(const std::vector<MachineAddress>& machines, int self, const net::JobKeys& keys);
  ~PeerWatch() { Stop(); }
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;
  void Stop();
  // "machine 1 (host:port) stopped answering N s ago" for the peer silent
  // longest, if for more than `for_s` seconds; "" otherwise.
  std::string Silent(double for_s);

 private:
  std::vector<MachineAddress> machines_;
  net::JobKeys keys_;
  std::vector<std::chrono::steady_clock::time_point> silent_since_;
  std::mutex mu_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gnn
