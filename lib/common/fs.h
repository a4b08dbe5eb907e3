// File-system helpers: atomic writes, file signatures, scoped temp dirs.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <system_error>

namespace gnn {

// "cannot <verb> <path>: <reason>", the one wording of a file or folder
// operation that failed (verb: open, read, write, create, rename, ...).
// `err` is an errno value, read at once after the failing call; the reason
// is strerror's words ("No such file or directory", "Is a directory").
std::string CannotMessage(const std::string& verb, const std::string& path, int err);
// The same for a std::filesystem error (its message is the same words).
std::string CannotMessage(const std::string& verb, const std::string& path,
                          const std::error_code& ec);

// 0 if `path` is a folder, else the errno value saying why not (ENOENT,
// ENOTDIR for a file, EACCES, ...), for CannotMessage.
int DirectoryErrno(const std::string& path);

using FilePtr = std::unique_ptr<FILE, int (*)(FILE*)>;

// Opens an existing file for reading ("rb"). A folder is refused as
// EISDIR (fopen would open it and fail at the first read). Throws DataError
// CannotMessage("open", path, ...). The caller owns the FILE.
FilePtr OpenForRead(const std::string& path);

// Writes a file through a uniquely named temporary "<path>.tmp.<random>"
// (created with O_EXCL, so concurrent writers of one path never share it),
// fsyncs it, renames it over `path` and fsyncs the folder. On any failure
// (or destruction before Commit) the temporary is removed and DataError
// names the path. One object is not thread-safe; several objects writing the
// same path are (the last Commit wins).
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

// A random suffix for temporary names (12 hex digits). Thread-safe.
std::string RandomSuffix();

// Creates a new directory "<prefix><random>" (mkdtemp-style: O_EXCL
// semantics, retried on collision, mode 0777 less the umask) and returns
// its path. Throws DataError naming the prefix. Thread-safe.
std::string MakeUniqueDir(const std::string& prefix);

// A fresh directory "<parent>/<prefix><random>" (MakeUniqueDir), removed
// with its contents on destruction. `parent` "" = $TMPDIR or /tmp.
class ScopedTempDir {
 public:
  explicit ScopedTempDir(const std::string& parent = "", const std::string& prefix = "gnn-");
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// fsyncs the directory `dir`, making renames and creations in it durable.
// Throws DataError naming the directory.
void SyncDir(const std::string& dir);

// Checks, before the work, that a file can later be written at `path`
// (AtomicFile's way: a temporary beside it, renamed over it): its folder
// exists and is writable, and `path` is not a folder. Throws DataError
// "<flag> <path>: ..." naming the reason (with errno's words); "" passes.
void CheckCanWriteFile(const std::string& flag, const std::string& path);

// Writes `text` to `path` atomically.
void WriteFileAtomic(const std::string& path, const std::string& text);

// Reads a whole (small) file. Throws DataError "cannot open|read PATH:
// REASON".
std::string ReadFile(const std::string& path);

bool PathExists(const std::string& path);

// "size:mtime_ns" of a file, used to notice that an input changed.
// Throws DataError "cannot open PATH: REASON" if the file is missing.
std::string FileSignature(const std::string& path);

// Recursively removes `path` if it exists; never throws.
void RemoveAllQuietly(const std::string& path);

// Makes `path` a fresh directory, creating parents. Throws DataError.
void MakeDirs(const std::string& path);

}  // namespace gnn
