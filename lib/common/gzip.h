// Streaming gzip reading in line-aligned chunks, and gzip writing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace gnn {

// Calls `parse(begin, end, first_line)` for consecutive chunks of the
// decompressed file, each made of whole lines ('\n'-terminated except maybe
// the file's last line); first_line is the 1-based line number of the
// chunk's first line. Decompression runs on a background thread while
// `parse` runs on the caller's, so the two overlap; chunks arrive in order.
// Blocking; returns when the file is done. Throws DataError naming `path` if
// it is missing, not gzip, corrupt or truncated; exceptions from `parse`
// propagate after the reader thread has stopped.
void ForEachGzipChunk(const std::string& path,
                      const std::function<void(const char*, const char*, int64_t)>& parse);

// Writes a gzip file atomically (temp name + rename) at the given level.
class GzipWriter {
 public:
  GzipWriter(const std::string& path, int level = 6);
  ~GzipWriter();
  GzipWriter(const GzipWriter&) = delete;
  GzipWriter& operator=(const GzipWriter&) = delete;
  void Write(const char* data, size_t size);
  void Write(const std::string& s) { Write(s.data(), s.size()); }
  void Commit();

 private:
  std::string path_, tmp_;
  void* gz_ = nullptr;
};

}  // namespace gnn
