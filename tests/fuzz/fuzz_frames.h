// Fuzz input -> ZeroMQ frames, shared by the wire-protocol fuzzers: byte 0
// is the number of frames (mod max_frames); every frame but the last is a
// 2-byte little-endian length then that many bytes (cut short at the end of
// the input); the last frame is the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>
#include <zmq.hpp>

namespace gnn::fuzz {

inline std::vector<zmq::message_t> SplitFrames(const uint8_t* data, size_t size,
                                               size_t max_frames) {
  std::vector<zmq::message_t> parts;
  if (size == 0) return parts;
  const size_t frames = data[0] % max_frames;
  size_t pos = 1;
  for (size_t f = 0; f < frames; ++f) {
    size_t len;
    if (f + 1 == frames) {
      len = size - pos;
    } else {
      len = 0;
      if (pos < size) len = data[pos++];
      if (pos < size) len |= static_cast<size_t>(data[pos++]) << 8;
      if (len > size - pos) len = size - pos;
    }
    parts.emplace_back(data + pos, len);
    pos += len;
  }
  return parts;
}

}  // namespace gnn::fuzz
