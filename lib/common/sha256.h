// SHA-256 (FIPS 180-4), incremental. Not thread-safe per object.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gnn {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  // Finishes and returns the lowercase hex digest; the object must not be
  // updated afterwards.
  std::string HexDigest();

 private:
  void Block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_;
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// HMAC-SHA256 (RFC 2104) of `message` under `key`: 32 raw bytes.
std::array<uint8_t, 32> HmacSha256(const std::string& key, const std::string& message);

// Hex SHA-256 of a whole file. Throws DataError if it cannot be read.
std::string Sha256File(const std::string& path);

}  // namespace gnn
