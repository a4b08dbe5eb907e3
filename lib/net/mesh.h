// The trainers' collectives over the job's CURVE sockets: every rank binds
// one ROUTER (a CURVE server admitting only the job's client key) and
// connects one DEALER to every other rank, so gradients, evaluation rows
// and checkpoints between trainers are encrypted and authenticated like
// everything else of a job (Gloo, which this replaces, crossed the network
// in plaintext). Two primitives over byte buffers: Allgather, where each
// rank sends its buffer to every other rank and every rank ends with the
// same list in rank order, so a sum over it in rank order is the same bits
// everywhere; and Alltoall, where each rank sends every other rank a buffer
// of its own (the sparse gradients' rows to the rank that applies them).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "net/protocol.h"
#include "net/security.h"

namespace gnn::net {

class Authenticator;

// Bytes of one mesh message at most: larger contributions travel in pieces.
constexpr size_t kMeshPieceBytes = size_t{64} << 20;
// Pieces one rank's connection may have waiting, unread, at another rank.
constexpr int kMeshQueuedPieces = 4;

// Not thread-safe: one thread drives every collective (all ranks call the
// same collectives in the same order, as with any process group).
class Mesh {
 public:
  // Binds this rank's ROUTER on `bind_host` (an ephemeral port). `who[r]`
  // names rank r in errors; `timeout` bounds every collective.
  Mesh(int rank, int world, const std::string& bind_host, const JobKeys& keys,
       std::vector<std::string> who, std::chrono::milliseconds timeout);
  ~Mesh();
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  // Where the other ranks reach this one ("tcp://host:port").
  const std::string& endpoint() const { return endpoint_; }
  // Connects to every other rank (`endpoints[r]` from their endpoint()).
  void Connect(const std::vector<std::string>& endpoints);

  // Every rank's `mine`, in rank order (this rank's included). Blocking;
  // TimeoutError naming the ranks not heard from within the timeout,
  // ProtocolError for a malformed or impossible message from a rank.
  std::vector<std::string> Allgather(const std::string& mine);
  // to[r] goes to rank r; returns what each rank sent this one, in rank
  // order (to[rank] itself at this rank's place). Every rank calls it in
  // the same turn as the others, as Allgather; errors as Allgather's, and
  // Error unless to.size() is the world.
  std::vector<std::string> Alltoall(const std::vector<std::string>& to);

  // Bytes this rank sent and received so far.
  uint64_t bytes() const { return bytes_; }

 private:
  // Sends *to[r] to every rank r but this one, then collects.
  std::vector<std::string> Exchange(const std::vector<const std::string*>& to);
  // Receives until every piece of collective `seq` from every other rank
  // is here (pieces of later collectives are kept for them).
  void Collect(uint64_t seq, std::vector<std::string>* out);

  int rank_, world_;
  JobKeys keys_;
  std::vector<std::string> who_;
  std::chrono::milliseconds timeout_;
  zmq::context_t ctx_;
  std::unique_ptr<Authenticator> auth_;
  zmq::socket_t in_;
  std::vector<std::unique_ptr<zmq::socket_t>> out_;  // [rank], null for this rank
  std::string endpoint_;
  uint64_t seq_ = 0;
  uint64_t bytes_ = 0;
  struct Partial {
    std::string data;
    int64_t pieces = -1;  // expected, once the first piece is seen
    int64_t got = 0;
  };
  std::map<std::pair<uint64_t, int>, Partial> pending_;  // (seq, src)
};

}  // namespace gnn::net
