// Sending and receiving protocol messages with deadlines, and a client
// connection to one server (DEALER) with request/reply matching.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "net/protocol.h"
#include "net/security.h"

namespace gnn::net {

using Millis = std::chrono::milliseconds;

// Sends `route` frames (ROUTER identities; may be empty), the header, then
// the array frames. Consumes m.frames. Non-blocking sends that cannot be
// queued within `timeout` throw TimeoutError.
void Send(zmq::socket_t& socket, Message& m, std::vector<zmq::message_t>* route = nullptr,
          Millis timeout = Millis(10000));

// Receives one whole multipart message within `timeout`; false on timeout.
bool RecvParts(zmq::socket_t& socket, std::vector<zmq::message_t>* parts, Millis timeout);

// One server as a client sees it: requests started, then finished by id.
// Connection is the real one, over a socket; a test stands in for it with
// servers in the same process (tests/support/in_process_owners.h), so that
// what is written against it (DistGraph's planners) is tested without
// sockets. Not thread-safe: one thread per peer.
class Peer {
 public:
  virtual ~Peer() = default;
  // Names the server in errors, e.g. "machine 1 server 0 at 10.0.0.2:30051".
  virtual const std::string& peer() const = 0;
  // Sends a request and returns without waiting; returns its request id
  // (Connection::Start says how `expected_reply_bytes` and `deadline` bound
  // what is in flight).
  virtual uint64_t Start(Message request, uint64_t expected_reply_bytes = 0,
                         std::chrono::steady_clock::time_point deadline = {}) = 0;
  // The reply to `request_id`. A kError reply throws PeerError naming the
  // peer; no reply by `deadline` throws TimeoutError naming the peer and
  // `what`.
  virtual Message Finish(uint64_t request_id, std::chrono::steady_clock::time_point deadline,
                         const std::string& what) = 0;
  // Start + Finish.
  Message Call(Message request, Millis timeout);
};

// A connection to one server. Not thread-safe: one thread per connection.
class Connection : public Peer {
 public:
  // `peer` names the server in errors, e.g. "machine 1 server 0 at 10.0.0.2:30051".
  // `keys`: the job's (a CURVE client), or JobKeys::Insecure() for plaintext.
  Connection(zmq::context_t& ctx, const std::string& endpoint, std::string peer,
             const JobKeys& keys);
  const std::string& peer() const override { return peer_; }

  // Sends a request and returns without waiting; returns its request id.
  // `expected_reply_bytes` (0: small or unknown) keeps what is in flight on
  // this connection within kClientWindowBytes, inside every server's reply
  // window, and at most kClientMaxInFlight requests unanswered: when this
  // request's reply would not fit, or too many are unanswered, replies already on
  // their way are received first (kept for their Finish), waiting until
  // `deadline` (TimeoutError naming the peer). Stamps the request with the
  // reply bytes taken so far (Header::taken_bytes).
  uint64_t Start(Message request, uint64_t expected_reply_bytes = 0,
                 std::chrono::steady_clock::time_point deadline = {}) override;
  // Waits for the reply to `request_id`. Replies to other requests still in
  // flight on this connection (servers answer concurrently, so out of
  // order) are kept for their own Finish; replies to abandoned (timed-out)
  // requests are dropped. A kError reply throws PeerError naming the peer;
  // no reply by `deadline` throws TimeoutError naming the peer and `what`.
  Message Finish(uint64_t request_id, std::chrono::steady_clock::time_point deadline,
                 const std::string& what) override;

  zmq::socket_t& socket() { return socket_; }
  // Reply bytes taken from the socket so far (every frame of every reply).
  uint64_t taken_bytes() const { return taken_bytes_; }

 private:
  // Receives one reply until `deadline` (false on timeout), counts it as
  // taken and decodes it; a ProtocolError names the peer and `what`.
  bool ReceiveOne(std::chrono::steady_clock::time_point deadline, const std::string& what,
                  Message* out);
  // A reply to `id` arrived: it no longer counts against the window.
  void Arrived(uint64_t id);

  zmq::socket_t socket_;
  std::string peer_;
  uint64_t next_id_ = 1;
  std::set<uint64_t> in_flight_;
  std::map<uint64_t, Message> early_;
  uint64_t taken_bytes_ = 0;
  std::map<uint64_t, uint64_t> expected_;  // in-flight request -> reply bytes it expects
  uint64_t expected_in_flight_ = 0;
};

// Issues one request per connection concurrently and gathers the replies in
// order. Throws the first failure (TimeoutError / PeerError) after the
// deadline or as soon as it is known.
std::vector<Message> CallAll(std::vector<std::pair<Peer*, Message>> calls, Millis timeout);

}  // namespace gnn::net
