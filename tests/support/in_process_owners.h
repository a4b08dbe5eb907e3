// The servers of a partitioned graph inside the test's own process, for
// DistGraph's planners to run against without sockets (as LevelDB's tests
// run against a fake Env). Each partition's arrays sit in a shared-memory
// segment of this test, and its requests are answered by the servers' own
// handlers (server/handlers.h Answer), every request and reply encoded
// and decoded as on the wire. The DistGraph reaches them through
// net::Peer (DistGraphOptions::connect). A test sees every request a
// planner sends (requests()), can change any reply (tamper) or keep a
// partition silent.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "client/dist_graph.h"
#include "net/channel.h"
#include "net/protocol.h"

namespace gnn {
struct ServerState;
}  // namespace gnn

namespace gnn::test {

class InProcessOwners {
 public:
  // Every partition of `part_config`, as machine p's server 0 of job `job`.
  InProcessOwners(const std::string& part_config, const std::string& job);
  ~InProcessOwners();
  InProcessOwners(const InProcessOwners&) = delete;
  InProcessOwners& operator=(const InProcessOwners&) = delete;

  // A DistGraph's options over these owners: no local partition, a 2 s
  // request timeout, everything else the defaults.
  DistGraphOptions Options();

  // One request as an owner received it.
  struct Request {
    int part;
    net::Message message;
  };
  // Every request so far, in the order they were sent; and forget them.
  const std::vector<Request>& requests() const { return requests_; }
  void ClearRequests() { requests_.clear(); }

  // Bytes that crossed the in-process wire so far, requests and replies:
  // header frames, and array frames.
  struct Bytes {
    uint64_t headers = 0;
    uint64_t frames = 0;
  };
  const Bytes& bytes() const { return bytes_; }

  // Called on every reply before the planner sees it (null: none).
  std::function<void(int part, net::Message* reply)> tamper;
  // Partitions whose owner never answers: Finish waits out the deadline.
  std::set<int> silent;

  // For the peers (in_process_owners.cc).
  net::Message Answer(int part, net::Message request);
  void Count(const std::vector<zmq::message_t>& parts);

 private:
  struct Owner;
  std::string part_config_;
  std::string job_;
  std::vector<std::unique_ptr<Owner>> owners_;
  std::vector<Request> requests_;
  Bytes bytes_;
};

}  // namespace gnn::test
