// NumPy .npy files (format 1.0, little-endian, C order): the on-disk form of
// every tensor, so numpy.load and torch can open them directly.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/fs.h"
#include "common/sha256.h"

namespace gnn {

// kFloat16 and kFloat64 are read (ReadNpyFloats), never written.
enum class DType { kUInt8, kInt32, kInt64, kFloat32, kFloat16, kFloat64 };

const char* DTypeDescr(DType dtype);  // "<f4", "<i8", ...
size_t DTypeSize(DType dtype);

template <typename T>
DType DTypeOf();
template <>
inline DType DTypeOf<uint8_t>() {
  return DType::kUInt8;
}
template <>
inline DType DTypeOf<int32_t>() {
  return DType::kInt32;
}
template <>
inline DType DTypeOf<int64_t>() {
  return DType::kInt64;
}
template <>
inline DType DTypeOf<float>() {
  return DType::kFloat32;
}

// Headers longer than this are rejected as corrupt (numpy's own reader
// refuses headers over 10000 bytes by default).
constexpr size_t kMaxNpyHeaderBytes = 1 << 16;
// numpy's limit on the number of dimensions.
constexpr size_t kMaxNpyDims = 64;

struct NpyHeader {
  DType dtype = DType::kUInt8;
  std::vector<int64_t> shape;
  size_t data_offset = 0;    // bytes from the start of the file
  int64_t num_elements = 0;  // prod(shape), checked against overflow
  uint64_t data_bytes = 0;   // num_elements * DTypeSize(dtype), checked
  int64_t NumElements() const { return num_elements; }
};

// prod(shape), or DataError "<what>: ..." when an extent is negative or the
// product (or its size in bytes for `dtype`) does not fit int64.
int64_t ShapeElements(const std::vector<int64_t>& shape, DType dtype, const std::string& what);

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
  const int64_t n = ShapeElements(shape, DTypeOf<T>(), path);
  NpyWriter w(path, DTypeOf<T>(), std::move(shape));
  w.Append(data, n);
  return w.Commit();
}

template <typename T>
WrittenFile WriteNpy(const std::string& path, const std::vector<T>& v) {
  return WriteNpy(path, v.data(), {static_cast<int64_t>(v.size())});
}

// Parses and validates the header of a .npy file from memory: `data` holds
// the first `size` bytes of a file of `file_size` bytes (at least the whole
// header; more is ignored). Every count is overflow-checked and the file
// size must equal data_offset + data_bytes. Throws DataError "<name>: ...".
// Pure function, thread-safe.
NpyHeader ParseNpyHeader(const void* data, size_t size, uint64_t file_size,
                         const std::string& name);

// Reads and checks the header of the file at `path` (ParseNpyHeader).
// Throws DataError naming the file.
NpyHeader ReadNpyHeader(const std::string& path);

// Reads a whole array, checking dtype and (when expected_shape is non-empty)
// the shape; -1 in expected_shape matches any extent. Throws DataError.
template <typename T>
std::vector<T> ReadNpy(const std::string& path, const std::vector<int64_t>& expected_shape = {},
                       std::vector<int64_t>* shape_out = nullptr);

// A numeric array of any dtype read as float32 (float16/64 converted) or
// as int64 (uint8, bool, int32 widened; a float array is a DataError
// naming the file and dtype). *header gets its header (shape, dtype).
std::vector<float> ReadNpyFloats(const std::string& path, NpyHeader* header);
std::vector<int64_t> ReadNpyInts(const std::string& path, NpyHeader* header);
// The same conversions of an array's data already in memory (`data`
// holds header.data_bytes bytes, e.g. a .npz member's); `name` in errors.
std::vector<float> NpyToFloats(const NpyHeader& header, const char* data);
std::vector<int64_t> NpyToInts(const NpyHeader& header, const char* data, const std::string& name);

}  // namespace gnn
