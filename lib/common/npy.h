// NumPy .npy files (format 1.0, little-endian, C order): the on-disk form of
// every tensor, so numpy.load and torch can open them directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/sha256.h"

namespace gnn {

enum class DType { kUInt8, kInt32, kInt64, kFloat32 };

const char* DTypeDescr(DType dtype);  // "<f4", "<i8", ...
size_t DTypeSize(DType dtype);

template <typename T>
DType DTypeOf();
template <>
inline DType DTypeOf<uint8_t>() { return DType::kUInt8; }
template <>
inline DType DTypeOf<int32_t>() { return DType::kInt32; }
template <>
inline DType DTypeOf<int64_t>() { return DType::kInt64; }
template <>
inline DType DTypeOf<float>() { return DType::kFloat32; }

struct NpyHeader {
  DType dtype;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // bytes from the start of the file
  int64_t NumElements() const;
};

// What was written: bytes on disk and the sha256 of the file.
struct WrittenFile {
  uint64_t bytes = 0;
  std::string sha256;
};

// Streams an array to disk atomically while hashing it. Append exactly
// prod(shape) elements, then Commit(). Not thread-safe.
class NpyWriter {
 public:
  NpyWriter(const std::string& path, DType dtype, std::vector<int64_t> shape);
  void Append(const void* data, int64_t num_elements);
  WrittenFile Commit();

 private:
  AtomicFile file_;
  Sha256 sha_;
  DType dtype_;
  int64_t expected_ = 0;
  int64_t written_ = 0;
  uint64_t bytes_ = 0;
};

template <typename T>
WrittenFile WriteNpy(const std::string& path, const T* data, std::vector<int64_t> shape) {
  NpyWriter w(path, DTypeOf<T>(), shape);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  w.Append(data, n);
  return w.Commit();
}

template <typename T>
WrittenFile WriteNpy(const std::string& path, const std::vector<T>& v) {
  return WriteNpy(path, v.data(), {static_cast<int64_t>(v.size())});
}

// Parses and validates the header; checks that the file size matches the
// shape. Throws DataError naming the file.
NpyHeader ReadNpyHeader(const std::string& path);

// Reads a whole array, checking dtype and (when expected_shape is non-empty)
// the shape; -1 in expected_shape matches any extent. Throws DataError.
template <typename T>
std::vector<T> ReadNpy(const std::string& path, const std::vector<int64_t>& expected_shape = {},
                       std::vector<int64_t>* shape_out = nullptr);

}  // namespace gnn
