// The trainers' rendezvous: a small key-value store (what c10d's TCPStore
// does for Gloo) served by rank 0 on the master address only, over a CURVE
// socket with the job's keys, so only the job's trainers can read or write
// it. Values are bytes; Add keeps decimal counters, as TCPStore does.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "net/security.h"

namespace gnn::net {

// Limits of one store: what a buggy or hostile member can make rank 0 hold.
constexpr size_t kMaxKvKeys = 1 << 16;
constexpr size_t kMaxKvBytes = size_t{64} << 20;
constexpr int64_t kMaxKvMessageBytes = int64_t{4} << 20;

class KvServer {
 public:
  // Binds `endpoint` (e.g. "tcp://10.0.0.1:29500"), waiting up to
  // `bind_retry_s` for a busy port (BindRetrying); ConfigError naming it
  // when it cannot. Serves from its own thread until destroyed.
  KvServer(const std::string& endpoint, const JobKeys& keys, double bind_retry_s = 0);
  ~KvServer();
  KvServer(const KvServer&) = delete;
  KvServer& operator=(const KvServer&) = delete;

 private:
  zmq::context_t ctx_;
  std::unique_ptr<Authenticator> auth_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// One client connection; thread-safe (calls are serialized).
class KvClient {
 public:
  // `where` names the store in errors ("the rendezvous at 10.0.0.1:29500").
  KvClient(const std::string& endpoint, const JobKeys& keys, std::string where);
  ~KvClient();
  KvClient(const KvClient&) = delete;
  KvClient& operator=(const KvClient&) = delete;

  // Every call blocks until the store answers (at most set_timeout's
  // time: TimeoutError naming the store), and a refusal (store full, a
  // counter that would overflow) is a PeerError naming it.
  void Set(const std::string& key, const std::string& value);
  // The value, or nullopt while the key is not set.
  std::optional<std::string> TryGet(const std::string& key);
  // Waits for the key until `timeout`; TimeoutError naming it after that.
  std::string Get(const std::string& key, std::chrono::milliseconds timeout);
  // Adds `delta` to the counter at `key` (0 when unset) and returns its new
  // value; an error when the key holds something else than a counter.
  int64_t Add(const std::string& key, int64_t delta);
  // True when the key existed (and is now gone), false when it did not.
  bool Delete(const std::string& key);
  // True when every one of `keys` is set.
  bool Check(const std::vector<std::string>& keys);
  // How many keys the store holds.
  int64_t NumKeys();

  // Every call waits at most this long for the store to answer.
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }

 private:
  std::vector<std::string> Call(std::vector<std::string> request);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string where_;
  std::chrono::milliseconds timeout_{30000};
};

}  // namespace gnn::net
