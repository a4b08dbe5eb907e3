#include "common/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/fs.h"

namespace gnn {

namespace {

constexpr size_t kChunkBytes = 4 << 20;
constexpr size_t kMaxQueued = 4;

struct Chunk {
  std::string data;
  int64_t first_line = 1;
};

// Bounded queue between the decompressing thread and the parser.
class ChunkQueue {
 public:
  void Push(Chunk c) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return q_.size() < kMaxQueued || cancelled_; });
    if (cancelled_) return;
    q_.push_back(std::move(c));
    not_empty_.notify_one();
  }
  // Returns false when the producer finished and the queue is drained.
  bool Pop(Chunk* out) {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return !q_.empty() || done_; });
    if (q_.empty()) return false;
    *out = std::move(q_.front());
    q_.pop_front();
    not_full_.notify_one();
    return true;
  }
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    not_empty_.notify_all();
  }
  void Cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    not_full_.notify_all();
  }
  bool cancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }

 private:
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Chunk> q_;
  bool done_ = false;
  bool cancelled_ = false;
};

void Decompress(const std::string& path, ChunkQueue* queue) {
  FilePtr f = OpenForRead(path);
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  // 16 + MAX_WBITS: gzip wrapper only, so a plain file is reported as corrupt.
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw DataError("zlib init failed for " + path);
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, &inflateEnd);

  std::vector<unsigned char> in(1 << 20);
  std::string carry;  // partial last line of the previous chunk
  int64_t next_line = 1;
  bool stream_end = false;
  bool eof = false;
  while (!queue->cancelled()) {
    std::string out = std::move(carry);
    carry.clear();
    size_t have = out.size();
    out.resize(std::max(kChunkBytes, have + (1 << 16)));
    // Fill `out` with decompressed bytes.
    while (have < out.size() && !(eof && zs.avail_in == 0)) {
      if (zs.avail_in == 0 && !eof) {
        size_t n = std::fread(in.data(), 1, in.size(), f.get());
        if (std::ferror(f.get())) throw DataError(CannotMessage("read", path, errno));
        if (n == 0) {
          eof = true;
          continue;
        }
        zs.next_in = in.data();
        zs.avail_in = static_cast<uInt>(n);
      }
      if (stream_end) {
        // Concatenated gzip members are legal: start the next one.
        if (zs.avail_in == 0) continue;
        inflateReset(&zs);
        stream_end = false;
      }
      zs.next_out = reinterpret_cast<unsigned char*>(&out[have]);
      zs.avail_out = static_cast<uInt>(out.size() - have);
      int rc = inflate(&zs, Z_NO_FLUSH);
      have = out.size() - zs.avail_out;
      if (rc == Z_STREAM_END) {
        stream_end = true;
      } else if (rc == Z_BUF_ERROR) {
        if (eof && zs.avail_in == 0) break;
      } else if (rc != Z_OK) {
        throw DataError(path + ": corrupt gzip data (" + (zs.msg ? zs.msg : "inflate failed") +
                        ")");
      }
    }
    out.resize(have);
    bool finished = eof && zs.avail_in == 0;
    if (finished && !stream_end && (have > 0 || zs.total_in > 0)) {
      throw DataError(path + ": truncated gzip file (unexpected end of data)");
    }
    if (finished && zs.total_in == 0) {
      throw DataError(path + ": empty file, not gzip");
    }
    if (!finished) {
      size_t cut = out.rfind('\n');
      if (cut == std::string::npos) {
        if (out.size() > (size_t{256} << 20)) throw DataError(path + ": line longer than 256 MiB");
        carry = std::move(out);
        continue;
      }
      carry.assign(out, cut + 1, std::string::npos);
      out.resize(cut + 1);
    }
    int64_t lines = std::count(out.begin(), out.end(), '\n');
    Chunk c{std::move(out), next_line};
    next_line += lines;
    if (!c.data.empty()) queue->Push(std::move(c));
    if (finished) break;
  }
}

}  // namespace

void ForEachGzipChunk(const std::string& path,
                      const std::function<void(const char*, const char*, int64_t)>& parse) {
  ChunkQueue queue;
  std::exception_ptr reader_error;
  std::thread reader([&] {
    try {
      Decompress(path, &queue);
    } catch (...) {
      reader_error = std::current_exception();
    }
    queue.Finish();
  });
  std::exception_ptr parse_error;
  try {
    Chunk c;
    while (queue.Pop(&c)) parse(c.data.data(), c.data.data() + c.data.size(), c.first_line);
  } catch (...) {
    parse_error = std::current_exception();
    queue.Cancel();
  }
  reader.join();
  // A reader error (corrupt data) explains a parse error that follows from it.
  if (reader_error) std::rethrow_exception(reader_error);
  if (parse_error) std::rethrow_exception(parse_error);
}

GzipWriter::GzipWriter(const std::string& path, int level) : path_(path), tmp_(path + ".tmp") {
  std::string mode = "wb" + std::to_string(level);
  gz_ = gzopen(tmp_.c_str(), mode.c_str());
  if (!gz_) throw DataError(CannotMessage("write", path, errno));
  gzbuffer(static_cast<gzFile>(gz_), 1 << 20);
}

GzipWriter::~GzipWriter() {
  if (gz_) {
    gzclose(static_cast<gzFile>(gz_));
    std::remove(tmp_.c_str());
  }
}

void GzipWriter::Write(const char* data, size_t size) {
  while (size > 0) {
    unsigned n = static_cast<unsigned>(std::min<size_t>(size, 1u << 30));
    if (gzwrite(static_cast<gzFile>(gz_), data, n) != static_cast<int>(n)) {
      const int err = errno;
      int zerr = Z_OK;
      const char* why = gzerror(static_cast<gzFile>(gz_), &zerr);
      if (zerr == Z_ERRNO) throw DataError(CannotMessage("write", path_, err));
      throw DataError("cannot write " + path_ + ": " + why);
    }
    data += n;
    size -= n;
  }
}

void GzipWriter::Commit() {
  const int rc = gzclose(static_cast<gzFile>(gz_));
  int err = errno;
  gz_ = nullptr;
  if (rc == Z_OK) {
    if (std::rename(tmp_.c_str(), path_.c_str()) == 0) return;
    err = errno;
  }
  std::remove(tmp_.c_str());
  if (rc != Z_OK && rc != Z_ERRNO) {
    throw DataError("cannot finish writing " + path_ + ": zlib error " + std::to_string(rc));
  }
  throw DataError(CannotMessage("finish writing", path_, err));
}

}  // namespace gnn
