#include "store/row_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/log.h"
#include "common/timer.h"
#include "store/shm_partition.h"
#include "store/shm_segment.h"

namespace gnn {

namespace {

constexpr char kMagic[8] = {'G', 'N', 'N', 'S', 'H', 'M', 'C', '1'};
constexpr uint64_t kAlign = 64;

struct CacheHeader {
  char magic[8];
  uint32_t version;
  uint32_t ready;  // kShmReadyValue once complete; stored last, with release
  uint64_t total_bytes;
  int64_t creator_pid;
  int64_t num_rows;
  int64_t feature_dim;
  uint64_t ids_offset;
  uint64_t rows_offset;  // dense rows, or a sparse cache's indptr
  int32_t sparse;        // 1: CSR rows (indptr at rows_offset, then indices, values)
  int32_t has_values;    // sparse: 1 when a values array follows the column ids
  int64_t nnz;           // sparse: stored entries
  uint64_t indices_offset, values_offset;
  char name[128];
  char graph_name[256];
  char config_digest[72];
};
static_assert(sizeof(CacheHeader) <= kShmHeaderBytes, "header must fit its page");
static_assert(offsetof(CacheHeader, ready) == 12, "documented layout");

void CopyCString(char* dst, size_t cap, const std::string& s) {
  std::memset(dst, 0, cap);
  std::memcpy(dst, s.data(), std::min(s.size(), cap - 1));
}

std::string ReadCString(const char* src, size_t cap) { return std::string(src, strnlen(src, cap)); }

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

std::string RowCacheName(const std::string& graph_name, const std::string& config_sha256,
                         const std::string& job_id, int machine) {
  return RowCacheNameOf(JobShmName(graph_name, config_sha256, job_id, machine));
}

std::string RowCacheNameOf(const std::string& partition_segment) {
  const size_t at = partition_segment.rfind("-p");
  if (at == std::string::npos) return "";
  return partition_segment.substr(0, at) + "-c" + partition_segment.substr(at + 2);
}

std::string TypedRowCacheName(const std::string& cache_name, int ntype) {
  return cache_name + "t" + std::to_string(ntype);
}

void RemoveRowCachesOf(const std::string& partition_segment,
                       const std::vector<int64_t>& typed_feature_dims) {
  const std::string cache = RowCacheNameOf(partition_segment);
  if (cache.empty()) return;
  shm::RemoveWhenFree(cache, std::chrono::milliseconds(0));
  for (size_t t = 0; t < typed_feature_dims.size(); ++t) {
    if (typed_feature_dims[t] > 0) {
      shm::RemoveWhenFree(TypedRowCacheName(cache, static_cast<int>(t)),
                          std::chrono::milliseconds(0));
    }
  }
}

std::unique_ptr<ShmRowCache> ShmRowCache::Open(const RowCacheKey& key, const Choose& choose,
                                               const Fill& fill,
                                               std::chrono::milliseconds timeout) {
  if (key.sparse) throw ConfigError("row cache " + key.name + ": sparse rows open with OpenSparse");
  return OpenWith(key, choose, &fill, nullptr, timeout);
}

std::unique_ptr<ShmRowCache> ShmRowCache::OpenSparse(const RowCacheKey& key, const Choose& choose,
                                                     const FillSparse& fill,
                                                     std::chrono::milliseconds timeout) {
  if (!key.sparse) throw ConfigError("row cache " + key.name + ": dense rows open with Open");
  return OpenWith(key, choose, nullptr, &fill, timeout);
}

std::unique_ptr<ShmRowCache> ShmRowCache::OpenWith(const RowCacheKey& key, const Choose& choose,
                                                   const Fill* fill, const FillSparse* fill_sparse,
                                                   std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  shm::CheckName(key.name);
  if (key.graph_name.size() >= sizeof(CacheHeader::graph_name) || key.feature_dim < 1) {
    throw ConfigError("row cache " + key.name + ": bad graph name or feature width");
  }
  const auto deadline = Clock::now() + timeout;
  std::string state;
  for (;;) {
    if (auto c = TryAttach(key, &state)) return c;
    // Nobody holds the lock file: nobody is building or attached, so what
    // is there (nothing, or a dead builder's half) is ours to replace.
    const int fd = shm::TryLockForCreate(key.name, ShmLockPath(key.name));
    if (fd >= 0) return Build(key, fd, choose, fill, fill_sparse);
    if (Clock::now() >= deadline) {
      throw TimeoutError("timed out after " + std::to_string(timeout.count()) +
                         " ms waiting for hot-row cache " + key.name + " (" + state +
                         "; another trainer or sampler of this machine is building it)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

namespace {

// A new shared memory segment `name` of `total` bytes, its pages reserved
// (writing past what tmpfs holds would be a SIGBUS), mapped read-write.
void* CreateMapped(const std::string& name, uint64_t total) {
  shm::Fd seg(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (seg.get() < 0) {
    throw ConfigError("cannot create shared memory segment " + name + ": " + shm::Errno());
  }
  // Reserve the pages now: writing past what tmpfs holds would be a SIGBUS.
  if (int rc = posix_fallocate(seg.get(), 0, static_cast<off_t>(total)); rc != 0) {
    throw Error("cannot allocate " + shm::MiB(total) + " of shared memory for the row cache " +
                name + ": " + std::strerror(rc) + " (is /dev/shm large enough? lower --cache_mb)");
  }
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, seg.get(), 0);
  if (base == MAP_FAILED) throw Error("cannot map the row cache " + name + ": " + shm::Errno());
  return base;
}

}  // namespace

std::unique_ptr<ShmRowCache> ShmRowCache::Build(const RowCacheKey& key, int lock_fd,
                                                const Choose& choose, const Fill* fill,
                                                const FillSparse* fill_sparse) {
  Stopwatch watch;
  std::unique_ptr<ShmRowCache> c(new ShmRowCache);
  c->name_ = key.name;
  c->lock_path_ = ShmLockPath(key.name);
  c->lock_fd_ = lock_fd;
  c->is_builder_ = true;
  try {
    shm_unlink(key.name.c_str());  // a dead builder's leftover, if any
    const std::vector<int64_t> ids = choose();
    for (size_t i = 1; i < ids.size(); ++i) {
      if (ids[i] <= ids[i - 1]) throw Error("row cache ids must be ascending and distinct");
    }
    const uint64_t n = ids.size(), dim = static_cast<uint64_t>(key.feature_dim);
    // Sparse rows are fetched before the segment is sized (their entries
    // decide it), and checked as any reader of sparse rows checks them.
    SparseRows csr;
    if (fill_sparse && n) {
      csr = (*fill_sparse)(ids);
      if (csr.rows() != static_cast<int64_t>(n) || csr.cols != key.feature_dim) {
        throw Error("row cache " + key.name + ": the sparse rows do not match the chosen ids");
      }
      CheckSparse(csr.view(), static_cast<int64_t>(csr.indices.size()),
                  static_cast<int64_t>(csr.values.size()), "row cache " + key.name);
    }
    const uint64_t nnz = static_cast<uint64_t>(fill_sparse && n ? csr.nnz() : 0);
    const uint64_t ids_offset = kShmHeaderBytes;
    const uint64_t rows_offset = AlignUp(ids_offset + n * sizeof(int64_t), kAlign);
    uint64_t indices_offset = 0, values_offset = 0, end = 0;
    if (fill_sparse) {
      indices_offset = AlignUp(rows_offset + (n + 1) * sizeof(int64_t), kAlign);
      values_offset = AlignUp(indices_offset + nnz * sizeof(int32_t), kAlign);
      end = values_offset + (csr.binary() ? 0 : nnz * sizeof(float));
    } else {
      end = rows_offset + n * dim * sizeof(float);
    }
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t total = AlignUp(end, page);
    void* base = CreateMapped(key.name, total);
    c->base_ = base;
    c->size_ = total;
    auto* h = static_cast<CacheHeader*>(base);
    std::memcpy(h->magic, kMagic, sizeof(kMagic));
    h->version = kRowCacheFormatVersion;
    h->total_bytes = total;
    h->creator_pid = getpid();
    h->num_rows = static_cast<int64_t>(n);
    h->feature_dim = key.feature_dim;
    h->ids_offset = ids_offset;
    h->rows_offset = rows_offset;
    h->sparse = fill_sparse ? 1 : 0;
    h->has_values = fill_sparse && !csr.binary() ? 1 : 0;
    h->nnz = static_cast<int64_t>(nnz);
    h->indices_offset = indices_offset;
    h->values_offset = values_offset;
    CopyCString(h->name, sizeof(h->name), key.name);
    CopyCString(h->graph_name, sizeof(h->graph_name), key.graph_name);
    CopyCString(h->config_digest, sizeof(h->config_digest), key.config_digest);
    char* bytes = static_cast<char*>(base);
    if (n) std::memcpy(bytes + ids_offset, ids.data(), n * sizeof(int64_t));
    if (fill_sparse) {
      const std::vector<int64_t> zero = {0};
      const std::vector<int64_t>& indptr = n ? csr.indptr : zero;
      std::memcpy(bytes + rows_offset, indptr.data(), indptr.size() * sizeof(int64_t));
      if (nnz) std::memcpy(bytes + indices_offset, csr.indices.data(), nnz * sizeof(int32_t));
      if (h->has_values) std::memcpy(bytes + values_offset, csr.values.data(), nnz * sizeof(float));
    } else if (n) {
      (*fill)(ids, reinterpret_cast<float*>(bytes + rows_offset));
    }
    __atomic_store_n(&h->ready, kShmReadyValue, __ATOMIC_RELEASE);
    if (mprotect(base, total, PROT_READ) != 0) {
      throw Error("cannot protect the row cache " + key.name + ": " + shm::Errno());
    }
    c->ReadHeader(key);
    // Atomic exclusive -> shared: the others may attach now.
    if (!shm::TryLock(c->lock_fd_, F_RDLCK)) {
      throw Error("cannot downgrade the lock of the row cache " + key.name);
    }
  } catch (...) {
    if (c->base_) munmap(c->base_, c->size_);
    c->base_ = nullptr;
    shm_unlink(key.name.c_str());
    unlink(c->lock_path_.c_str());
    close(c->lock_fd_);
    c->lock_fd_ = -1;
    throw;
  }
  GNN_LOG(kInfo) << "hot-row cache " << key.name << ": " << c->num_rows_ << " rows of other "
                 << "partitions (" << shm::MiB(c->size_) << ") built in " << watch.Seconds()
                 << " s";
  return c;
}

std::unique_ptr<ShmRowCache> ShmRowCache::TryAttach(const RowCacheKey& key, std::string* state) {
  const std::string lock_path = ShmLockPath(key.name);
  shm::Fd lock(open(lock_path.c_str(), O_RDWR | O_CLOEXEC));
  if (lock.get() < 0) {
    if (errno == ENOENT) {
      *state = "no such segment";
      return nullptr;
    }
    throw ConfigError("cannot open lock file " + lock_path + " of the row cache " + key.name +
                      ": " + shm::Errno());
  }
  // A builder holds the exclusive lock until the segment is complete.
  if (!shm::TryLock(lock.get(), F_RDLCK)) {
    *state = "segment is being built";
    return nullptr;
  }
  if (!shm::StillLinked(lock.get(), lock_path)) {
    *state = "segment was just removed";
    return nullptr;
  }
  shm::Fd seg(shm_open(key.name.c_str(), O_RDONLY | O_CLOEXEC, 0));
  if (seg.get() < 0) {
    *state = "lock file without a segment";
    return nullptr;
  }
  struct stat st;
  if (fstat(seg.get(), &st) != 0 || st.st_size < static_cast<off_t>(kShmHeaderBytes)) {
    *state = "segment is not initialized (its builder died)";
    return nullptr;
  }
  void* base = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, seg.get(), 0);
  if (base == MAP_FAILED) throw Error("cannot map the row cache " + key.name + ": " + shm::Errno());
  std::unique_ptr<ShmRowCache> c(new ShmRowCache);  // unmaps on every return below
  c->name_ = key.name;
  c->lock_path_ = lock_path;
  c->base_ = base;
  c->size_ = static_cast<size_t>(st.st_size);
  const auto* h = static_cast<const CacheHeader*>(base);
  if (__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE) != kShmReadyValue) {
    *state = "segment is incomplete (its builder died)";
    return nullptr;
  }
  c->ReadHeader(key);
  c->lock_fd_ = lock.release();
  return c;
}

void ShmRowCache::ReadHeader(const RowCacheKey& key) {
  const auto* h = static_cast<const CacheHeader*>(base_);
  auto bad = [&](const std::string& what) {
    throw DataError("hot-row cache " + name_ + ": " + what);
  };
  if (std::memcmp(h->magic, kMagic, sizeof(kMagic)) != 0) bad("bad magic (not a row cache)");
  if (h->version != kRowCacheFormatVersion) {
    bad("format version " + std::to_string(h->version) + ", this build reads version " +
        std::to_string(kRowCacheFormatVersion));
  }
  const std::string graph = ReadCString(h->graph_name, sizeof(h->graph_name));
  const std::string digest = ReadCString(h->config_digest, sizeof(h->config_digest));
  if (graph != key.graph_name || digest != key.config_digest || h->feature_dim != key.feature_dim ||
      h->sparse != (key.sparse ? 1 : 0)) {
    bad("holds rows of graph '" + graph + "' (config digest " + digest.substr(0, 16) + ", width " +
        std::to_string(h->feature_dim) + (h->sparse ? ", sparse" : "") + "), expected '" +
        key.graph_name + "' (" + key.config_digest.substr(0, 16) + ", " +
        std::to_string(key.feature_dim) + (key.sparse ? ", sparse" : "") + ")");
  }
  const uint64_t n = static_cast<uint64_t>(h->num_rows);
  const uint64_t dim = static_cast<uint64_t>(h->feature_dim);
  if (h->num_rows < 0 || h->total_bytes != size_ || h->ids_offset < kShmHeaderBytes ||
      h->ids_offset % kAlign || h->rows_offset % kAlign || n > size_ / sizeof(int64_t) ||
      h->ids_offset + n * sizeof(int64_t) > h->rows_offset || h->rows_offset > size_ ||
      (!h->sparse && dim && n > (size_ - h->rows_offset) / (dim * sizeof(float)))) {
    bad("header does not fit the segment");
  }
  const uint64_t nnz = static_cast<uint64_t>(h->nnz);
  if (h->sparse &&
      (h->nnz < 0 || (h->has_values != 0 && h->has_values != 1) || h->indices_offset % kAlign ||
       h->values_offset % kAlign || (n + 1) > (size_ - h->rows_offset) / sizeof(int64_t) ||
       h->rows_offset + (n + 1) * sizeof(int64_t) > h->indices_offset ||
       h->indices_offset > size_ || nnz > (size_ - h->indices_offset) / sizeof(int32_t) ||
       h->indices_offset + nnz * sizeof(int32_t) > h->values_offset || h->values_offset > size_ ||
       (h->has_values && nnz > (size_ - h->values_offset) / sizeof(float)))) {
    bad("header does not fit the segment");
  }
  const char* b = static_cast<const char*>(base_);
  num_rows_ = h->num_rows;
  dim_ = h->feature_dim;
  ids_ = reinterpret_cast<const int64_t*>(b + h->ids_offset);
  if (h->sparse) {
    sparse_.rows = h->num_rows;
    sparse_.cols = h->feature_dim;
    sparse_.indptr = reinterpret_cast<const int64_t*>(b + h->rows_offset);
    sparse_.indices = reinterpret_cast<const int32_t*>(b + h->indices_offset);
    sparse_.values = h->has_values ? reinterpret_cast<const float*>(b + h->values_offset) : nullptr;
    if (sparse_.indptr[0] != 0 || sparse_.indptr[num_rows_] != h->nnz) bad("bad row offsets");
    for (int64_t i = 0; i < num_rows_; ++i) {
      if (sparse_.indptr[i + 1] < sparse_.indptr[i])
        bad("row offsets decrease at row " + std::to_string(i));
    }
  } else {
    rows_ = reinterpret_cast<const float*>(b + h->rows_offset);
  }
  if (num_rows_ > int64_t{std::numeric_limits<uint32_t>::max()}) bad("more rows than 2^32");
  for (int64_t i = 0; i < num_rows_; ++i) {
    if (ids_[i] < 0 || (i > 0 && ids_[i] <= ids_[i - 1])) {
      bad("its ids are not distinct ascending node ids (id " + std::to_string(ids_[i]) +
          " at row " + std::to_string(i) + ")");
    }
  }
  limit_ = num_rows_ > 0 ? ids_[num_rows_ - 1] + 1 : 0;
  const size_t words = static_cast<size_t>((limit_ + 63) / 64);
  bits_.assign(words, 0);
  rank_.assign(words, 0);
  for (int64_t i = 0; i < num_rows_; ++i) {
    bits_[static_cast<size_t>(ids_[i] >> 6)] |= uint64_t{1} << (ids_[i] & 63);
  }
  uint32_t before = 0;
  for (size_t w = 0; w < words; ++w) {
    rank_[w] = before;
    before += static_cast<uint32_t>(__builtin_popcountll(bits_[w]));
  }
}

ShmRowCache::~ShmRowCache() {
  if (base_) munmap(base_, size_);
  shm::ReleaseSegment(lock_fd_, name_, lock_path_, std::chrono::milliseconds(0));
}

}  // namespace gnn
