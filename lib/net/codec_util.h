// Helpers the message codecs share (messages.cc, row_messages.cc,
// typed_messages.cc): shape checks that throw ProtocolError naming the
// type, and replies' errors said as the peer's. Internal to lib/net.
#pragma once

#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/error.h"
#include "net/messages.h"
#include "net/protocol.h"

namespace gnn::net::codec {

inline std::string N(size_t n) { return std::to_string(n); }

[[noreturn]] inline void Malformed(MsgType type, const std::string& what) {
  throw ProtocolError(std::string("malformed ") + MsgTypeName(type) + ": " + what);
}

// Throws unless `m` is a `type` message with no fields and `frames` array
// frames.
inline void Expect(const Message& m, MsgType type, size_t frames) {
  FieldReader(m, type, {}).Frames(frames);
}

// The optional coding and format fields: written only when not the
// default (int64 ids, float32 rows), read as the default when absent.
inline void PutCoding(Message* m, IdCoding c) {
  if (c != IdCoding::kInt64) m->header.Add(Key::kCoding, static_cast<int64_t>(c));
}
inline IdCoding CodingOf(const FieldReader& f, MsgType type) {
  return IdCodingOf(f.Get(Key::kCoding, 0), type);
}
inline void PutFormat(Message* m, RowFormat f) {
  if (f != RowFormat::kFloat32) m->header.Add(Key::kFormat, static_cast<int64_t>(f));
}
inline RowFormat FormatOf(const FieldReader& f, MsgType type) {
  const int64_t v = f.Get(Key::kFormat, 0);
  if (v != 0 && v != 1) Malformed(type, "row format " + std::to_string(v));
  return static_cast<RowFormat>(v);
}

// Throws unless `ptr` are offsets of groups spanning `ids` ids: from 0 to
// ids, never decreasing.
inline void CheckGroups(MsgType type, size_t ids, const std::vector<int64_t>& ptr) {
  if (ptr.empty() || ptr.front() != 0 || ptr.back() != static_cast<int64_t>(ids)) {
    Malformed(type, "group offsets do not span its " + N(ids) + " ids");
  }
  for (size_t k = 0; k + 1 < ptr.size(); ++k) {
    if (ptr[k + 1] < ptr[k]) Malformed(type, "group offsets decrease at group " + N(k));
  }
}

[[noreturn]] inline void Bad(const std::string& peer, const std::string& what) {
  throw ProtocolError(peer + " sent " + what);
}

// A shape error of a reply, said as the peer's.
template <typename F>
auto FromPeer(const std::string& peer, F decode) {
  try {
    return decode();
  } catch (const ProtocolError& e) {
    Bad(peer, std::string("a ") + e.what());
  }
}

// zmq_msg_copy shares a buffer by reference count (tiny messages are copied).
// It marks the source as shared but never changes its bytes, so a const
// frame may be shared.
inline zmq::message_t Share(const zmq::message_t& frame) {
  zmq::message_t out;
  out.copy(const_cast<zmq::message_t&>(frame));
  return out;
}

}  // namespace gnn::net::codec
