#include "common/npz.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/error.h"
#include "common/fs.h"

namespace gnn {

namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr size_t kEndSize = 22;        // the end-of-directory record without its comment
constexpr size_t kMaxComment = 65535;  // a 16-bit length
// zlib's counts are 32-bit: longer buffers go through in pieces.
constexpr uint64_t kPiece = uint64_t{1} << 30;

// Little-endian fields of the archive, every read bounds-checked.
class Bytes {
 public:
  Bytes(const std::string& b, const std::string& path) : b_(b), path_(path) {}
  void Need(uint64_t at, uint64_t n) const {
    if (at > b_.size() || n > b_.size() - at) {
      throw DataError(path_ + ": truncated or not a .npz (a zip archive of .npy files)");
    }
  }
  uint64_t Int(uint64_t at, int bytes) const {
    Need(at, static_cast<uint64_t>(bytes));
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) {
      v = (v << 8) | static_cast<unsigned char>(b_[static_cast<size_t>(at) + i]);
    }
    return v;
  }
  size_t size() const { return b_.size(); }
  const char* data() const { return b_.data(); }

 private:
  const std::string& b_;
  const std::string& path_;
};

// Where the central directory is and how many entries it has.
struct Directory {
  uint64_t entries = 0, size = 0, offset = 0;
};

Directory FindDirectory(const Bytes& z, const std::string& path) {
  if (z.size() < kEndSize) throw DataError(path + ": not a .npz (too short for a zip archive)");
  const size_t lowest = z.size() > kEndSize + kMaxComment ? z.size() - kEndSize - kMaxComment : 0;
  size_t end = z.size();
  for (size_t at = z.size() - kEndSize + 1; at-- > lowest;) {
    if (z.Int(at, 4) == kEndOfDirectory) {
      end = at;
      break;
    }
  }
  if (end == z.size()) {
    throw DataError(path + ": not a .npz (no zip directory; np.savez or scipy.sparse.save_npz " +
                    std::string("write one)"));
  }
  Directory d{z.Int(end + 10, 2), z.Int(end + 12, 4), z.Int(end + 16, 4)};
  if (d.entries == 0xFFFF || d.size == 0xFFFFFFFF || d.offset == 0xFFFFFFFF) {
    if (end < 20 || z.Int(end - 20, 4) != kZip64Locator) {
      throw DataError(path + ": malformed zip64 directory");
    }
    const uint64_t record = z.Int(end - 20 + 8, 8);
    if (z.Int(record, 4) != kZip64End) throw DataError(path + ": malformed zip64 directory");
    d = Directory{z.Int(record + 32, 8), z.Int(record + 40, 8), z.Int(record + 48, 8)};
  }
  z.Need(d.offset, d.size);
  return d;
}

uint32_t Crc(const char* data, uint64_t n) {
  uLong crc = crc32(0, Z_NULL, 0);
  for (uint64_t done = 0; done < n;) {
    const uint64_t k = std::min(kPiece, n - done);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data + done), static_cast<uInt>(k));
    done += k;
  }
  return static_cast<uint32_t>(crc);
}

// A raw deflate stream of `in_size` bytes that must inflate to exactly `size`.
std::string Inflate(const char* in, uint64_t in_size, uint64_t size, const std::string& member) {
  std::string out(static_cast<size_t>(size) + 1, '\0');  // a spare byte shows a longer stream
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw DataError(member + ": cannot start inflating");
  uint64_t in_done = 0, out_done = 0;
  int rc = Z_OK;
  while (true) {
    if (zs.avail_in == 0 && in_done < in_size) {
      const uint64_t k = std::min(kPiece, in_size - in_done);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in + in_done));
      zs.avail_in = static_cast<uInt>(k);
      in_done += k;
    }
    if (zs.avail_out == 0) {
      const uint64_t k = std::min(kPiece, size + 1 - out_done);
      if (k == 0) break;
      zs.next_out = reinterpret_cast<Bytef*>(&out[static_cast<size_t>(out_done)]);
      zs.avail_out = static_cast<uInt>(k);
      out_done += k;
    }
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK) break;  // the end, or no progress possible (truncated), or corrupt
  }
  const uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || produced != size) {
    throw DataError(member + ": corrupt compressed data (" + std::to_string(produced) + " of " +
                    std::to_string(size) + " bytes inflated)");
  }
  out.resize(static_cast<size_t>(size));
  return out;
}

}  // namespace

std::map<std::string, std::string> ReadNpz(const std::string& path) {
  const std::string file = ReadFile(path);
  const Bytes z(file, path);
  const Directory dir = FindDirectory(z, path);
  std::map<std::string, std::string> out;
  uint64_t at = dir.offset;
  for (uint64_t e = 0; e < dir.entries; ++e) {
    if (z.Int(at, 4) != kCentralHeader) throw DataError(path + ": malformed zip directory");
    const uint64_t method = z.Int(at + 10, 2), crc = z.Int(at + 16, 4);
    uint64_t packed = z.Int(at + 20, 4), size = z.Int(at + 24, 4), local = z.Int(at + 42, 4);
    const uint64_t name_len = z.Int(at + 28, 2), extra_len = z.Int(at + 30, 2),
                   comment_len = z.Int(at + 32, 2);
    z.Need(at + 46, name_len + extra_len + comment_len);
    std::string name(file.data() + at + 46, static_cast<size_t>(name_len));
    // zip64's extra field holds the sizes and offset that did not fit.
    const uint64_t extra_end = at + 46 + name_len + extra_len;
    for (uint64_t x = at + 46 + name_len; x + 4 <= extra_end;) {
      const uint64_t id = z.Int(x, 2), end = x + 4 + z.Int(x + 2, 2);
      if (end > extra_end) break;
      uint64_t v = x + 4;
      if (id == 0x0001) {
        for (uint64_t* field : {&size, &packed, &local}) {
          if (*field == 0xFFFFFFFF && v + 8 <= end) {
            *field = z.Int(v, 8);
            v += 8;
          }
        }
      }
      x = end;
    }
    at = extra_end + comment_len;
    const std::string member = path + " (member " + name + ")";
    if (z.Int(local, 4) != kLocalHeader) throw DataError(member + ": malformed zip entry");
    const uint64_t data_at = local + 30 + z.Int(local + 26, 2) + z.Int(local + 28, 2);
    z.Need(data_at, packed);
    std::string bytes;
    if (method == 0) {
      if (packed != size) throw DataError(member + ": stored sizes disagree");
      bytes.assign(file.data() + data_at, static_cast<size_t>(size));
    } else if (method == 8) {
      // Deflate expands at most ~1032x: a larger claim is corrupt, not allocated.
      if (size / 1032 > packed + 1) throw DataError(member + ": implausible uncompressed size");
      bytes = Inflate(file.data() + data_at, packed, size, member);
    } else {
      throw DataError(member + ": compression method " + std::to_string(method) +
                      " (numpy writes stored or deflate)");
    }
    if (Crc(bytes.data(), bytes.size()) != crc)
      throw DataError(member + ": CRC mismatch (corrupt)");
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
      name.resize(name.size() - 4);
    out[name] = std::move(bytes);
  }
  return out;
}

}  // namespace gnn
