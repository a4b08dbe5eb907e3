#include "net/mesh.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "net/channel.h"

namespace gnn::net {

using Clock = std::chrono::steady_clock;

Mesh::Mesh(int rank, int world, const std::string& bind_host, const JobKeys& keys,
           std::vector<std::string> who, std::chrono::milliseconds timeout)
    : rank_(rank),
      world_(world),
      keys_(keys),
      who_(std::move(who)),
      timeout_(timeout),
      in_(ctx_, zmq::socket_type::router) {
  if (world < 1 || rank < 0 || rank >= world || static_cast<int>(who_.size()) != world) {
    throw ConfigError("a trainer mesh needs 0 <= rank < world and a name per rank");
  }
  // Only the job's trainers complete a handshake (CURVE + ZAP).
  auth_ = std::make_unique<Authenticator>(ctx_, keys, "the trainers' collective");
  in_.set(zmq::sockopt::linger, 0);
  in_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(kMeshPieceBytes) + (1 << 20));
  // At most a few pieces per rank wait in ZeroMQ (each <= kMeshPieceBytes);
  // a rank sending more waits in its own process until they are taken.
  in_.set(zmq::sockopt::rcvhwm, kMeshQueuedPieces);
  keys.MakeServer(in_);
  const std::string host =
      bind_host.find(':') != std::string::npos ? "[" + bind_host + "]" : bind_host;
  try {
    in_.bind("tcp://" + host + ":*");
  } catch (const zmq::error_t& e) {
    throw ConfigError("the trainers' collective cannot bind " + bind_host + ": " + e.what());
  }
  endpoint_ = in_.get(zmq::sockopt::last_endpoint);
}

Mesh::~Mesh() = default;

void Mesh::Connect(const std::vector<std::string>& endpoints) {
  if (static_cast<int>(endpoints.size()) != world_) {
    throw ConfigError("the trainers' collective needs one endpoint per rank");
  }
  out_.resize(world_);
  for (int r = 0; r < world_; ++r) {
    if (r == rank_) continue;
    auto s = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::dealer);
    s->set(zmq::sockopt::linger, 1000);
    s->set(zmq::sockopt::sndhwm, 0);  // a collective's pieces are bounded by its data
    keys_.MakeClient(*s);
    try {
      s->connect(endpoints[r]);
    } catch (const zmq::error_t& e) {
      throw ConfigError("cannot reach " + who_[r] + " at " + endpoints[r] + ": " + e.what());
    }
    out_[r] = std::move(s);
  }
}

std::vector<std::string> Mesh::Allgather(const std::string& mine) {
  std::vector<const std::string*> to(static_cast<size_t>(world_), &mine);
  return Exchange(to);
}

std::vector<std::string> Mesh::Alltoall(const std::vector<std::string>& to) {
  if (to.size() != static_cast<size_t>(world_)) {
    throw Error("all-to-all among trainers: " + std::to_string(to.size()) + " buffers for " +
                std::to_string(world_) + " ranks");
  }
  std::vector<const std::string*> each;
  for (const std::string& s : to) each.push_back(&s);
  return Exchange(each);
}

std::vector<std::string> Mesh::Exchange(const std::vector<const std::string*>& to) {
  if (out_.empty() && world_ > 1) throw Error("the trainers' collective is not connected");
  const uint64_t seq = ++seq_;
  for (int r = 0; r < world_; ++r) {
    if (r == rank_) continue;
    const std::string& mine = *to[static_cast<size_t>(r)];
    const size_t pieces =
        std::max<size_t>(1, (mine.size() + kMeshPieceBytes - 1) / kMeshPieceBytes);
    for (size_t p = 0; p < pieces; ++p) {
      const size_t first = p * kMeshPieceBytes;
      const size_t len = std::min(kMeshPieceBytes, mine.size() - std::min(first, mine.size()));
      Message m = MakeMessage(MsgType::kMeshPart, seq,
                              {{Key::kSource, static_cast<int64_t>(rank_)},
                               {Key::kPiece, static_cast<int64_t>(p)},
                               {Key::kPieces, static_cast<int64_t>(pieces)}});
      AddArray(&m, mine.data() + first, len);
      bytes_ += len;
      Send(*out_[r], m, nullptr, timeout_);
    }
  }
  std::vector<std::string> out(world_);
  out[rank_] = *to[static_cast<size_t>(rank_)];
  Collect(seq, &out);
  return out;
}

void Mesh::Collect(uint64_t seq, std::vector<std::string>* out) {
  const auto deadline = Clock::now() + timeout_;
  auto complete = [&](int r) {
    auto it = pending_.find({seq, r});
    return it != pending_.end() && it->second.got == it->second.pieces;
  };
  auto all_here = [&] {
    for (int r = 0; r < world_; ++r) {
      if (r != rank_ && !complete(r)) return false;
    }
    return true;
  };
  std::vector<zmq::message_t> parts;
  while (!all_here()) {
    const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    if (left.count() <= 0 || !RecvParts(in_, &parts, left)) {
      std::string missing;
      for (int r = 0; r < world_; ++r) {
        if (r != rank_ && !complete(r)) missing += (missing.empty() ? "" : ", ") + who_[r];
      }
      throw TimeoutError("collective among trainers: " + missing + " did not answer within " +
                         std::to_string(timeout_.count() / 1000) + " s");
    }
    if (parts.size() < 2) continue;
    parts.erase(parts.begin());  // the sender's routing id
    Message m = Decode(std::move(parts));
    FieldReader f(m, MsgType::kMeshPart, {Key::kSource, Key::kPiece, Key::kPieces});
    f.Frames(1);
    const int64_t src = f.Get(Key::kSource), piece = f.Get(Key::kPiece),
                  pieces = f.Get(Key::kPieces);
    const uint64_t at = m.header.request_id;
    if (m.header.msg_type() != MsgType::kMeshPart || src < 0 || src >= world_ || src == rank_ ||
        pieces < 1 || piece < 0 || piece >= pieces || at < seq || at > seq + 1) {
      throw ProtocolError("collective among trainers: unexpected " + m.header.DebugString());
    }
    Partial& p = pending_[{at, static_cast<int>(src)}];
    if (p.pieces < 0) p.pieces = pieces;
    // Pieces of one sender arrive in order over its one connection.
    if (p.pieces != pieces || piece != p.got) {
      throw ProtocolError("collective among trainers: " + who_[src] + " sent piece " +
                          std::to_string(piece) + " of " + std::to_string(pieces) + " out of turn");
    }
    p.data.append(static_cast<const char*>(m.frames[0].data()), m.frames[0].size());
    bytes_ += m.frames[0].size();
    ++p.got;
  }
  for (int r = 0; r < world_; ++r) {
    if (r == rank_) continue;
    auto it = pending_.find({seq, r});
    (*out)[r] = std::move(it->second.data);
    pending_.erase(it);
  }
}

}  // namespace gnn::net
