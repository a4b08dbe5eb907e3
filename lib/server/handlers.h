// What a gnn-server answers: one function per request type of a plain
// partition (Hello, Ping, Sample, the pulls, SampleAggregate, PullSums,
// Metadata, SplitNodes, Shutdown), and HandleRequest, which picks one
// (a typed partition's requests go to HeteroServing first). Each decodes
// its request (a malformed one throws ProtocolError), answers, or returns
// the Error reply that says why not. server.cc owns the sockets, the
// workers that call HandleRequest, and the partition's lifetime.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "net/protocol.h"
#include "partition/config.h"
#include "server/hetero_server.h"
#include "server/server.h"
#include "store/shm_partition.h"

namespace gnn {

// What every handler reads: the flags, the partition config and the
// partition's arrays in shared memory.
struct ServerState {
  const ServerOptions* options = nullptr;
  PartitionConfig config;
  std::string config_sha;
  const PartitionView* view = nullptr;
  // Heterogeneous partitions: served by `hetero`; `view` then holds only
  // the node range, counts and CSC (Hello, Metadata).
  std::unique_ptr<HeteroServing> hetero;
  std::string name;  // "machine 1 server 0"
  std::atomic<bool> shutdown{false};
};

// The reply to `req`. Throws ProtocolError for a malformed request and
// DataError for one that is well formed but cannot be answered (the
// worker turns either into an Error reply); other refusals are returned
// as Error replies.
net::Message HandleRequest(ServerState& s, const net::Message& req);

// A request as it arrives (header and array frames), decoded and answered:
// a request that does not decode, or that HandleRequest refuses by
// throwing, gets the Error reply that says why (kErrVersion,
// kErrUnknownType, kErrMalformed, kErrBadRequest, kErrInternal), with its
// request id whenever the header decoded. What every worker thread does.
net::Message Answer(ServerState& s, std::vector<zmq::message_t>&& parts);

}  // namespace gnn
