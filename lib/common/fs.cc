#include "common/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace gnn {

namespace fs = std::filesystem;

AtomicFile::AtomicFile(const std::string& path) : path_(path), tmp_(path + ".tmp") {
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) {
    throw DataError("cannot write " + path + ": " + std::strerror(errno));
  }
}

AtomicFile::~AtomicFile() {
  if (file_) {
    std::fclose(file_);
    std::remove(tmp_.c_str());
  }
}

void AtomicFile::Write(const void* data, size_t size) {
  if (size == 0) return;
  if (std::fwrite(data, 1, size, file_) != size) {
    throw DataError("write failed for " + path_ + ": " + std::strerror(errno));
  }
}

void AtomicFile::Commit() {
  bool ok = std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
  int err = errno;
  ok = (std::fclose(file_) == 0) && ok;
  file_ = nullptr;
  if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    if (ok) err = errno;
    std::remove(tmp_.c_str());
    throw DataError("cannot finish writing " + path_ + ": " + std::strerror(err));
  }
}

void WriteFileAtomic(const std::string& path, const std::string& text) {
  AtomicFile f(path);
  f.Write(text.data(), text.size());
  f.Commit();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool PathExists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

std::string FileSignature(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    throw DataError("missing file " + path + ": " + std::strerror(errno));
  }
  long long mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  return std::to_string(static_cast<long long>(st.st_size)) + ":" + std::to_string(mtime_ns);
}

void RemoveAllQuietly(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

void MakeDirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw DataError("cannot create directory " + path + ": " + ec.message());
}

}  // namespace gnn
