#include "common/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "common/error.h"

namespace gnn {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxNameAttempts = 100;

std::string ParentDir(const std::string& path) {
  std::string parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

}  // namespace

std::string CannotMessage(const std::string& verb, const std::string& path, int err) {
  return "cannot " + verb + " " + path + ": " + std::strerror(err);
}

std::string CannotMessage(const std::string& verb, const std::string& path,
                          const std::error_code& ec) {
  return "cannot " + verb + " " + path + ": " + ec.message();
}

int DirectoryErrno(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return errno;
  return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

FilePtr OpenForRead(const std::string& path) {
  FilePtr f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw DataError(CannotMessage("open", path, errno));
  struct stat st;
  if (::fstat(::fileno(f.get()), &st) != 0) throw DataError(CannotMessage("open", path, errno));
  if (S_ISDIR(st.st_mode)) throw DataError(CannotMessage("open", path, EISDIR));
  return f;
}

std::string RandomSuffix() {
  // random_device draws from the kernel, so processes sharing a pid (on
  // another host of a shared file system) or forked copies do not repeat.
  thread_local std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%012llx",
                static_cast<unsigned long long>(v & 0xffffffffffffULL));
  return buf;
}

std::string MakeUniqueDir(const std::string& prefix) {
  for (int i = 0; i < kMaxNameAttempts; ++i) {
    std::string path = prefix + RandomSuffix();
    if (::mkdir(path.c_str(), 0777) == 0) return path;
    if (errno != EEXIST) {
      throw DataError(CannotMessage("create directory", path, errno));
    }
  }
  throw DataError("cannot create a unique directory " + prefix + "*: every name was taken");
}

ScopedTempDir::ScopedTempDir(const std::string& parent, const std::string& prefix) {
  std::string base = parent;
  if (base.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp && *tmp ? tmp : "/tmp";
  }
  path_ = MakeUniqueDir(base + "/" + prefix);
}

ScopedTempDir::~ScopedTempDir() { RemoveAllQuietly(path_); }

void SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    int err = errno;
    if (fd >= 0) ::close(fd);
    throw DataError(CannotMessage("sync directory", dir, err));
  }
  ::close(fd);
}

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  for (int i = 0; i < kMaxNameAttempts && !file_; ++i) {
    tmp_ = path + ".tmp." + RandomSuffix();
    int fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd >= 0) file_ = ::fdopen(fd, "wb");
    if (!file_) {
      int err = errno;
      if (fd >= 0) {
        ::close(fd);
        ::unlink(tmp_.c_str());
      }
      throw DataError(CannotMessage("write", path, err));
    }
  }
  if (!file_) throw DataError("cannot write " + path + ": no unused temporary name");
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
    throw DataError(CannotMessage("write", path_, errno));
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
    throw DataError(CannotMessage("finish writing", path_, err));
  }
  SyncDir(ParentDir(path_));
}

void CheckCanWriteFile(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw DataError(flag + " " + path + " is a folder; name a file");
  fs::path folder = fs::absolute(path, ec).parent_path();
  if (!fs::is_directory(folder, ec)) {
    throw DataError(flag + " " + path + ": its folder " + folder.string() +
                    " does not exist (create it first)");
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    throw DataError(flag + " " + path + ": its folder " + folder.string() + " is not writable (" +
                    std::strerror(errno) + ")");
  }
}

void WriteFileAtomic(const std::string& path, const std::string& text) {
  AtomicFile f(path);
  f.Write(text.data(), text.size());
  f.Commit();
}

std::string ReadFile(const std::string& path) {
  FilePtr f = OpenForRead(path);
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f.get())) > 0) text.append(buf, n);
  if (std::ferror(f.get())) throw DataError(CannotMessage("read", path, errno));
  return text;
}

bool PathExists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

std::string FileSignature(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    throw DataError(CannotMessage("open", path, errno));
  }
  long long mtime_ns =
      static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  return std::to_string(static_cast<long long>(st.st_size)) + ":" + std::to_string(mtime_ns);
}

void RemoveAllQuietly(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

void MakeDirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw DataError(CannotMessage("create directory", path, ec));
}

}  // namespace gnn
