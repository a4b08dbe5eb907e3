// File-system helpers: atomic writes, file signatures, scoped temp dirs.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace gnn {

// Writes a file through "<path>.tmp", fsyncs and renames it over `path`.
// On any failure the temporary is removed and DataError names the path.
// Not thread-safe for the same path.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();  // removes the temporary if Commit() was not reached
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void Write(const void* data, size_t size);
  // Flushes, fsyncs and renames into place.
  void Commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string tmp_;
  FILE* file_ = nullptr;
};

// Writes `text` to `path` atomically.
void WriteFileAtomic(const std::string& path, const std::string& text);

// Reads a whole (small) file. Throws DataError naming the path.
std::string ReadFile(const std::string& path);

bool PathExists(const std::string& path);

// "size:mtime_ns" of a file, used to notice that an input changed.
// Throws DataError if the file is missing.
std::string FileSignature(const std::string& path);

// Recursively removes `path` if it exists; never throws.
void RemoveAllQuietly(const std::string& path);

// Makes `path` a fresh directory, creating parents. Throws DataError.
void MakeDirs(const std::string& path);

}  // namespace gnn
