#include "net/channel.h"

#include <algorithm>

#include "common/error.h"

namespace gnn::net {

using Clock = std::chrono::steady_clock;

namespace {

bool WaitFor(zmq::socket_t& socket, short events, Millis timeout) {
  zmq::pollitem_t item{socket.handle(), 0, events, 0};
  auto deadline = Clock::now() + timeout;
  while (true) {
    auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    if (left.count() < 0) left = Millis(0);
    try {
      if (zmq::poll(&item, 1, left) > 0) return true;
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
    if (Clock::now() >= deadline) return false;
  }
}

}  // namespace

void Send(zmq::socket_t& socket, Message& m, std::vector<zmq::message_t>* route, Millis timeout) {
  if (!WaitFor(socket, ZMQ_POLLOUT, timeout)) {
    throw TimeoutError("could not send " + m.header.DebugString() + " within " +
                       std::to_string(timeout.count()) + " ms");
  }
  if (route) {
    for (auto& r : *route) socket.send(r, zmq::send_flags::sndmore);
  }
  zmq::message_t header = EncodeHeader(m.header);
  socket.send(header, m.frames.empty() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  for (size_t i = 0; i < m.frames.size(); ++i) {
    socket.send(m.frames[i],
                i + 1 == m.frames.size() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  }
  m.frames.clear();
}

bool RecvParts(zmq::socket_t& socket, std::vector<zmq::message_t>* parts, Millis timeout) {
  parts->clear();
  if (!WaitFor(socket, ZMQ_POLLIN, timeout)) return false;
  while (true) {
    zmq::message_t part;
    // A multipart message arrives atomically, so the rest is already here.
    if (!socket.recv(part, zmq::recv_flags::none)) return false;
    bool more = part.more();
    parts->push_back(std::move(part));
    if (!more) return true;
  }
}

Connection::Connection(zmq::context_t& ctx, const std::string& endpoint, std::string peer,
                       const JobKeys& keys)
    : socket_(ctx, zmq::socket_type::dealer), peer_(std::move(peer)) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.set(zmq::sockopt::sndhwm, kMaxQueuedMessages);
  socket_.set(zmq::sockopt::rcvhwm, kClientQueuedReplies);
  // A reply larger than any a server sends (kMaxReplyBytes) is not read.
  socket_.set(zmq::sockopt::maxmsgsize, kMaxReplyBytes);
  keys.MakeClient(socket_);
  try {
    socket_.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw ConfigError("cannot connect to " + peer_ + " (" + endpoint + "): " + e.what());
  }
}

uint64_t Connection::Start(Message request, uint64_t expected_reply_bytes,
                           Clock::time_point deadline) {
  if (deadline == Clock::time_point{}) deadline = Clock::now() + Millis(60000);
  const std::string what = MsgTypeName(request.header.msg_type());
  // Make room in the window: take replies already on their way.
  auto full = [&] {
    // Requests not yet answered (early_ holds answers already taken).
    return in_flight_.size() - early_.size() >= static_cast<size_t>(kClientMaxInFlight) ||
           (expected_in_flight_ > 0 &&
            expected_in_flight_ + expected_reply_bytes > static_cast<uint64_t>(kClientWindowBytes));
  };
  while (full()) {
    Message m;
    if (!ReceiveOne(deadline, what, &m)) {
      throw TimeoutError(peer_ + " did not answer earlier requests in time (" +
                         std::to_string(expected_in_flight_ >> 20) + " MiB of replies awaited)");
    }
    const uint64_t got = m.header.request_id;
    Arrived(got);
    if (in_flight_.count(got)) early_[got] = std::move(m);
  }
  uint64_t id = next_id_++;
  request.header.request_id = id;
  request.header.taken_bytes = taken_bytes_;
  Send(socket_, request);
  in_flight_.insert(id);
  if (expected_reply_bytes > 0) {
    expected_[id] = expected_reply_bytes;
    expected_in_flight_ += expected_reply_bytes;
  }
  return id;
}

void Connection::Arrived(uint64_t id) {
  auto it = expected_.find(id);
  if (it == expected_.end()) return;
  expected_in_flight_ -= it->second;
  expected_.erase(it);
}

bool Connection::ReceiveOne(Clock::time_point deadline, const std::string& what, Message* out) {
  std::vector<zmq::message_t> parts;
  auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
  if (left.count() < 0 || !RecvParts(socket_, &parts, std::max(left, Millis(0)))) return false;
  for (const zmq::message_t& p : parts) taken_bytes_ += p.size();
  try {
    *out = Decode(std::move(parts));
  } catch (const ProtocolError& e) {
    throw ProtocolError(peer_ + " sent a malformed reply to " + what + ": " + e.what());
  }
  return true;
}

Message Connection::Finish(uint64_t request_id, Clock::time_point deadline,
                           const std::string& what) {
  // Whatever happens, this request is no longer awaited afterwards.
  struct Forget {
    Connection* c;
    uint64_t id;
    ~Forget() {
      c->in_flight_.erase(id);
      c->Arrived(id);  // abandoned or answered: no longer in the window
    }
  } forget{this, request_id};
  Message m;
  auto early = early_.find(request_id);
  if (early != early_.end()) {
    m = std::move(early->second);
    early_.erase(early);
  } else {
    while (true) {
      if (!ReceiveOne(deadline, what, &m)) {
        throw TimeoutError(peer_ + " did not answer " + what + " in time");
      }
      const uint64_t got = m.header.request_id;
      if (got == request_id) break;
      Arrived(got);
      if (in_flight_.count(got)) early_[got] = std::move(m);  // another pending request's
      // else: a late reply to an abandoned request
    }
  }
  if (m.header.msg_type() == MsgType::kError) {
    throw PeerError(peer_ + " refused " + what + ": " + m.header.text);
  }
  return m;
}

Message Peer::Call(Message request, Millis timeout) {
  std::string what = MsgTypeName(request.header.msg_type());
  uint64_t id = Start(std::move(request));
  return Finish(id, Clock::now() + timeout, what);
}

std::vector<Message> CallAll(std::vector<std::pair<Peer*, Message>> calls, Millis timeout) {
  auto deadline = Clock::now() + timeout;
  std::vector<uint64_t> ids;
  std::vector<std::string> whats;
  for (auto& [conn, msg] : calls) {
    whats.push_back(MsgTypeName(msg.header.msg_type()));
    ids.push_back(conn->Start(std::move(msg)));
  }
  // Replies are collected in order; each wait shares the one deadline, so
  // the slowest server bounds the total.
  std::vector<Message> replies;
  for (size_t i = 0; i < calls.size(); ++i) {
    replies.push_back(calls[i].first->Finish(ids[i], deadline, whats[i]));
  }
  return replies;
}

}  // namespace gnn::net
