#include "store/shm_partition.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "common/npy.h"
#include "common/parallel.h"
#include "common/sha256.h"
#include "common/timer.h"
#include "partition/local_partition.h"
#include "store/row_cache.h"
#include "store/shm_segment.h"

namespace gnn {

using shm::CheckName;
using shm::Errno;
using shm::Fd;
using shm::MiB;
using shm::Sanitize;
using shm::StillLinked;
using shm::TryLock;

namespace {

constexpr char kMagic[8] = {'G', 'N', 'N', 'S', 'H', 'M', 'P', '1'};
constexpr int kNumArrays = 8;  // kPartFiles order
enum ArrayIndex { kIndptr, kIndices, kFeat, kLabel, kTrain, kValid, kTest, kOrig };
constexpr uint64_t kAlign = 64;
// How long Create retries the exclusive lock: other handles hold it only for
// microseconds (a remover, an attacher looking at a stale segment), while a
// live owner holds its shared lock for good.
constexpr auto kCreateGrace = std::chrono::milliseconds(500);

// Lives at offset 0 of the segment. Only fixed-size fields, so the layout is
// the same in every process of one build; the format version guards the rest.
struct ShmHeader {
  char magic[8];
  uint32_t version;
  uint32_t ready;  // kShmReadyValue once complete; stored last, with release
  uint64_t total_bytes;
  uint64_t header_bytes;
  int64_t creator_pid;
  int32_t part_id;
  int32_t num_parts;
  int64_t node_start, num_nodes, num_edges, feature_dim, num_classes, graph_num_nodes;
  uint64_t offset[kNumArrays];
  uint64_t bytes[kNumArrays];
  char name[128];
  char graph_name[256];
  char config_digest[72];
};
static_assert(sizeof(ShmHeader) <= kShmHeaderBytes, "header must fit its page");
static_assert(offsetof(ShmHeader, version) == 8 && offsetof(ShmHeader, ready) == 12,
              "documented layout");

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

void CopyCString(char* dst, size_t cap, const std::string& s) {
  std::memset(dst, 0, cap);
  std::memcpy(dst, s.data(), std::min(s.size(), cap - 1));
}

std::string ReadCString(const char* src, size_t cap) { return std::string(src, strnlen(src, cap)); }

struct ArrayPlan {
  std::string path;
  DType dtype;
  std::vector<int64_t> shape;
  NpyHeader npy;
  uint64_t bytes = 0;
  uint64_t offset = 0;
};

// Expected bytes of array `i` for the given counts; false on overflow.
bool ArrayBytes(int i, int64_t n, int64_t e, int64_t f, uint64_t* out) {
  if (n < 0 || e < 0 || f < 0) return false;
  uint64_t un = static_cast<uint64_t>(n), ue = static_cast<uint64_t>(e),
           uf = static_cast<uint64_t>(f);
  switch (i) {
    case kIndptr:
      return !__builtin_mul_overflow(un + 1, 8, out);
    case kIndices:
      return !__builtin_mul_overflow(ue, 8, out);
    case kFeat: {
      uint64_t cells;
      return !__builtin_mul_overflow(un, uf, &cells) && !__builtin_mul_overflow(cells, 4, out);
    }
    case kLabel:
    case kOrig:
      return !__builtin_mul_overflow(un, 8, out);
    default:
      *out = un;
      return true;  // uint8 masks
  }
}

// Reads the data of one .npy file straight into `dst` (the mapping), hashing
// the whole file on the way when `want_sha` is given.
void CopyArray(const ArrayPlan& a, char* dst, const std::string* want_sha) {
  Fd fd(open(a.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw DataError("cannot open " + a.path + ": " + Errno());
  Sha256 sha;
  auto read_at = [&](char* buf, uint64_t size, uint64_t pos) {
    uint64_t done = 0;
    while (done < size) {
      size_t chunk = static_cast<size_t>(std::min<uint64_t>(size - done, 8u << 20));
      ssize_t r = pread(fd.get(), buf + done, chunk, static_cast<off_t>(pos + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw DataError("cannot read " + a.path + ": " + Errno());
      if (r == 0) throw DataError(a.path + ": file shrank while being read");
      if (want_sha) sha.Update(buf + done, static_cast<size_t>(r));
      done += static_cast<uint64_t>(r);
    }
  };
  if (want_sha) {
    std::vector<char> head(a.npy.data_offset);
    read_at(head.data(), head.size(), 0);
  }
  read_at(dst, a.bytes, a.npy.data_offset);
  if (want_sha) {
    char extra;
    if (pread(fd.get(), &extra, 1, static_cast<off_t>(a.npy.data_offset + a.bytes)) > 0) {
      throw DataError(a.path + ": file grew while being read");
    }
    std::string got = sha.HexDigest();
    if (got != *want_sha) {
      throw DataError(a.path + ": checksum mismatch (sha256 " + got + ", config says " + *want_sha +
                      ")");
    }
  }
}

}  // namespace

CscView PartitionView::csc() const {
  CscView c;
  c.indptr = indptr;
  c.indices = indices;
  c.node_start = node_start;
  c.num_nodes = num_nodes;
  c.rng_keys = orig_nids;
  return c;
}

std::string PartitionConfigDigest(const PartitionConfig& config) {
  std::string text = ToJson(config).dump();
  Sha256 sha;
  sha.Update(text.data(), text.size());
  return sha.HexDigest();
}

std::string ShmSegmentName(const std::string& graph_name, const std::string& config_sha256,
                           int part) {
  return "/gnn-" + Sanitize(graph_name, 48) + "-" + Sanitize(config_sha256, 16) + "-p" +
         std::to_string(part);
}

std::string ShmSegmentName(const PartitionConfig& config, int part) {
  return ShmSegmentName(config.graph_name, PartitionConfigDigest(config), part);
}

std::string ShmSegmentPath(const std::string& name) {
  return "/dev/shm/" + (name.empty() || name[0] != '/' ? name : name.substr(1));
}

std::string ShmLockPath(const std::string& name) { return ShmSegmentPath(name) + ".lock"; }

void RemoveShmSegment(const std::string& name) {
  shm_unlink(name.c_str());
  unlink(ShmLockPath(name).c_str());
}

StaleSweep SweepStaleSegments(const std::string& dir, double min_age_s) {
  StaleSweep out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  std::vector<std::string> locks;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.rfind("gnn-", 0) == 0 && n.size() > 5 && n.compare(n.size() - 5, 5, ".lock") == 0)
      locks.push_back(n);
  }
  closedir(d);
  for (const auto& lock : locks) {
    const std::string lock_path = dir + "/" + lock;
    const std::string segment = lock.substr(0, lock.size() - 5);
    struct stat lst;
    if (stat(lock_path.c_str(), &lst) != 0 || difftime(time(nullptr), lst.st_mtime) < min_age_s)
      continue;
    Fd fd(open(lock_path.c_str(), O_RDWR | O_CLOEXEC));
    if (fd.get() < 0) continue;
    // The protocol of Create/Attach: a segment whose lock file nobody holds
    // (not even shared) has no live user. A creator racing us retries.
    bool locked = false;
    try {
      locked = TryLock(fd.get(), F_WRLCK);
    } catch (const Error&) {
      continue;
    }
    if (!locked || !StillLinked(fd.get(), lock_path)) continue;
    struct stat st;
    const std::string seg_path = dir + "/" + segment;
    if (stat(seg_path.c_str(), &st) == 0) out.bytes += static_cast<uint64_t>(st.st_size);
    if (unlink(seg_path.c_str()) == 0) out.names.push_back(segment);
    unlink(lock_path.c_str());
  }
  return out;
}

namespace {

// The segment's layout from the .npy headers (which also checks file
// sizes): one aligned slot per array after the header; *total is the
// segment's size in whole pages.
std::vector<ArrayPlan> PlanLayout(const PartitionConfig& config, int part, uint64_t* total) {
  const PartInfo& info = config.parts[part];
  const int64_t n = info.num_nodes(), e = info.num_edges(), f = config.feature_dim;
  const DType dtypes[kNumArrays] = {DType::kInt64, DType::kInt64, DType::kFloat32, DType::kInt64,
                                    DType::kUInt8, DType::kUInt8, DType::kUInt8,   DType::kInt64};
  const std::vector<int64_t> shapes[kNumArrays] = {{n + 1}, {e}, {n, f}, {n}, {n}, {n}, {n}, {n}};
  std::vector<ArrayPlan> plan(kNumArrays);
  uint64_t offset = kShmHeaderBytes;
  for (int i = 0; i < kNumArrays; ++i) {
    ArrayPlan& a = plan[i];
    a.path = config.FilePath(part, kPartFiles[i]);
    a.dtype = dtypes[i];
    a.shape = shapes[i];
    a.npy = ReadNpyHeader(a.path);
    if (a.npy.dtype != a.dtype) {
      throw DataError(a.path + ": dtype " + DTypeDescr(a.npy.dtype) + ", expected " +
                      DTypeDescr(a.dtype));
    }
    if (a.npy.shape != a.shape) {
      throw DataError(a.path + ": shape " + ShapeString(a.npy.shape) + ", expected " +
                      ShapeString(a.shape));
    }
    if (!ArrayBytes(i, n, e, f, &a.bytes)) throw DataError(a.path + ": array too large");
    a.offset = offset;
    offset = (offset + a.bytes + kAlign - 1) / kAlign * kAlign;
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  *total = (offset + page - 1) / page * page;
  return plan;
}

// The sha256 each array must have (null: not verified).
std::vector<const std::string*> WantedChecksums(const PartInfo& info,
                                                const std::vector<ArrayPlan>& plan, bool verify) {
  std::vector<const std::string*> want(kNumArrays, nullptr);
  if (!verify) return want;
  for (int i = 0; i < kNumArrays; ++i) {
    auto it = info.files.find(kPartFiles[i]);
    if (it == info.files.end())
      throw DataError("partition config lists no checksum for " + plan[i].path);
    want[i] = &it->second.sha256;
  }
  return want;
}

// The exclusive lock on the segment's lock file: nobody is attached, and
// nobody attaches before it is downgraded to shared once the segment is
// complete. Returns its descriptor; ConfigError when others hold it past
// kCreateGrace.
int LockForCreate(const std::string& name, const std::string& lock_path) {
  const auto deadline = std::chrono::steady_clock::now() + kCreateGrace;
  for (;;) {
    const int fd = shm::TryLockForCreate(name, lock_path);
    if (fd >= 0) return fd;
    if (std::chrono::steady_clock::now() >= deadline) {
      throw ConfigError("shared memory segment " + name +
                        " is in use by another process (another server 0 of this partition, or "
                        "processes still attached to a previous one); stop them, or remove " +
                        ShmSegmentPath(name) + " and " + lock_path);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void FillHeader(ShmHeader* h, const std::string& name, const PartitionConfig& config, int part,
                uint64_t total, const std::vector<ArrayPlan>& plan) {
  const PartInfo& info = config.parts[part];
  std::memcpy(h->magic, kMagic, sizeof(kMagic));
  h->version = kShmFormatVersion;
  h->ready = 0;
  h->total_bytes = total;
  h->header_bytes = kShmHeaderBytes;
  h->creator_pid = getpid();
  h->part_id = part;
  h->num_parts = config.num_parts;
  h->node_start = info.node_start;
  h->num_nodes = info.num_nodes();
  h->num_edges = info.num_edges();
  h->feature_dim = config.feature_dim;
  h->num_classes = config.num_classes;
  h->graph_num_nodes = config.num_nodes;
  for (int i = 0; i < kNumArrays; ++i) {
    h->offset[i] = plan[i].offset;
    h->bytes[i] = plan[i].bytes;
  }
  CopyCString(h->name, sizeof(h->name), name);
  CopyCString(h->graph_name, sizeof(h->graph_name), config.graph_name);
  CopyCString(h->config_digest, sizeof(h->config_digest), PartitionConfigDigest(config));
}

PartitionArrays ArraysOf(const PartitionView& v) {
  PartitionArrays a;
  a.indptr = v.indptr;
  a.indices = v.indices;
  a.labels = v.labels;
  a.masks[0] = v.train_mask;
  a.masks[1] = v.valid_mask;
  a.masks[2] = v.test_mask;
  a.orig_nids = v.orig_nids;
  return a;
}

}  // namespace

std::unique_ptr<ShmPartition> ShmPartition::Create(const std::string& name,
                                                   const PartitionConfig& config, int part,
                                                   bool verify_checksums) {
  CheckName(name);
  config.RequireHomogeneous("gnn-server");
  if (part < 0 || part >= config.num_parts) {
    throw ConfigError("partition " + std::to_string(part) + " does not exist (config has " +
                      std::to_string(config.num_parts) + ")");
  }
  if (config.graph_name.size() >= sizeof(ShmHeader::graph_name)) {
    throw ConfigError("graph name '" + config.graph_name + "' is too long for shared memory");
  }
  Stopwatch watch;
  uint64_t total = 0;
  const std::vector<ArrayPlan> plan = PlanLayout(config, part, &total);
  const std::vector<const std::string*> want_sha =
      WantedChecksums(config.parts[part], plan, verify_checksums);

  std::unique_ptr<ShmPartition> p(new ShmPartition);
  p->name_ = name;
  p->lock_path_ = ShmLockPath(name);
  p->is_creator_ = true;
  p->lock_fd_ = LockForCreate(name, p->lock_path_);
  try {
    // Holding the exclusive lock, any segment of this name is stale.
    if (shm_unlink(name.c_str()) == 0) {
      GNN_LOG(kWarn) << "removed stale shared memory segment " << name
                     << " (left by a process that died; nobody was attached)";
    }
    Fd shm(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (shm.get() < 0) {
      throw ConfigError("cannot create shared memory segment " + name + ": " + Errno());
    }
    // Reserve the pages now: writing past what tmpfs can hold would raise
    // SIGBUS later instead of an error here.
    int rc = posix_fallocate(shm.get(), 0, static_cast<off_t>(total));
    if (rc != 0) {
      throw Error("cannot allocate " + MiB(total) + " of shared memory for segment " + name + ": " +
                  std::strerror(rc) + " (is /dev/shm large enough?)");
    }
    void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, shm.get(), 0);
    if (base == MAP_FAILED)
      throw Error("cannot map shared memory segment " + name + ": " + Errno());
    p->base_ = base;
    p->size_ = total;
    ShmHeader* h = static_cast<ShmHeader*>(base);
    FillHeader(h, name, config, part, total, plan);
    char* bytes = static_cast<char*>(base);
    ParallelFor(kNumArrays, 0, [&](int64_t b, int64_t end) {
      for (int64_t i = b; i < end; ++i) CopyArray(plan[i], bytes + plan[i].offset, want_sha[i]);
    });
    // The checks LoadLocalPartition does (one function), on the mapped data.
    p->ReadHeader();
    CheckPartitionArrays(config, part, ArraysOf(p->view_));

    __atomic_store_n(&h->ready, kShmReadyValue, __ATOMIC_RELEASE);
    if (mprotect(base, total, PROT_READ) != 0) {
      throw Error("cannot protect shared memory segment " + name + ": " + Errno());
    }
    // Atomic exclusive -> shared: attachers may come in now.
    if (!TryLock(p->lock_fd_, F_RDLCK)) {
      throw Error("cannot downgrade the lock of shared memory segment " + name);
    }
  } catch (...) {
    if (p->base_) munmap(p->base_, p->size_);
    p->base_ = nullptr;
    shm_unlink(name.c_str());
    unlink(p->lock_path_.c_str());
    close(p->lock_fd_);
    p->lock_fd_ = -1;
    throw;
  }
  GNN_LOG(kInfo) << "partition " << part << " of " << config.graph_name << " in shared memory "
                 << name << " (" << MiB(total) << ", " << watch.Seconds() << " s"
                 << (verify_checksums ? ", checksums verified" : "") << ")";
  return p;
}

std::unique_ptr<ShmPartition> ShmPartition::TryAttach(const std::string& name, std::string* state) {
  const std::string lock_path = ShmLockPath(name);
  Fd lock(open(lock_path.c_str(), O_RDWR | O_CLOEXEC));
  if (lock.get() < 0) {
    if (errno == ENOENT) {
      *state = "no such segment";
      return nullptr;
    }
    throw ConfigError("cannot open lock file " + lock_path + " of shared memory segment " + name +
                      ": " + Errno());
  }
  // Shared lock before mapping: from here the segment cannot be removed or
  // replaced under us, and a creator still filling it holds the exclusive one.
  if (!TryLock(lock.get(), F_RDLCK)) {
    *state = "segment is being created or removed";
    return nullptr;
  }
  if (!StillLinked(lock.get(), lock_path)) {
    *state = "segment was just removed";
    return nullptr;
  }
  Fd shm(shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0));
  if (shm.get() < 0) {
    if (errno == ENOENT) {
      *state = "lock file without a segment";
      return nullptr;
    }
    throw ConfigError("cannot open shared memory segment " + name + ": " + Errno());
  }
  struct stat st;
  if (fstat(shm.get(), &st) != 0) throw Error("cannot stat shared memory segment " + name);
  if (st.st_size < static_cast<off_t>(kShmHeaderBytes)) {
    *state = "segment is not initialized (its creator died while creating it)";
    return nullptr;
  }
  void* base = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, shm.get(), 0);
  if (base == MAP_FAILED) throw Error("cannot map shared memory segment " + name + ": " + Errno());
  std::unique_ptr<ShmPartition> p(new ShmPartition);  // unmaps on every return below
  p->name_ = name;
  p->lock_path_ = lock_path;
  p->base_ = base;
  p->size_ = static_cast<size_t>(st.st_size);
  const ShmHeader* h = static_cast<const ShmHeader*>(base);
  static const char kZero[8] = {};
  if (std::memcmp(h->magic, kZero, sizeof(kZero)) == 0) {
    *state = "segment is not initialized (its creator died while creating it)";
    return nullptr;
  }
  if (std::memcmp(h->magic, kMagic, sizeof(kMagic)) != 0) {
    throw DataError("shared memory segment " + name + ": bad magic (not a gnn partition segment)");
  }
  if (h->version != kShmFormatVersion) {
    throw DataError("shared memory segment " + name + ": format version " +
                    std::to_string(h->version) + ", this build reads version " +
                    std::to_string(kShmFormatVersion));
  }
  if (__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE) != kShmReadyValue) {
    *state = "segment is incomplete (its creator died while loading it)";
    return nullptr;
  }
  p->ReadHeader();
  p->lock_fd_ = lock.release();
  return p;
}

std::unique_ptr<ShmPartition> ShmPartition::Attach(const std::string& name,
                                                   std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  CheckName(name);
  const auto deadline = Clock::now() + timeout;
  std::string state;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    if (auto p = TryAttach(name, &state)) return p;
    auto now = Clock::now();
    if (now >= deadline) {
      throw TimeoutError("timed out after " + std::to_string(timeout.count()) +
                         " ms waiting for shared memory segment " + name + " (" + state +
                         "; is server 0 of this machine running?)");
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

std::unique_ptr<ShmPartition> ShmPartition::Attach(const std::string& name,
                                                   const PartitionConfig& config, int part,
                                                   std::chrono::milliseconds timeout) {
  if (part < 0 || part >= config.num_parts) {
    throw ConfigError("partition " + std::to_string(part) + " does not exist (config has " +
                      std::to_string(config.num_parts) + ")");
  }
  std::unique_ptr<ShmPartition> p = Attach(name, timeout);
  const PartInfo& info = config.parts[part];
  const PartitionView& v = p->view_;
  std::string digest = PartitionConfigDigest(config);
  if (p->graph_name_ != config.graph_name || p->config_digest_ != digest || v.part_id != part ||
      v.node_start != info.node_start || v.num_nodes != info.num_nodes() ||
      v.num_edges != info.num_edges() || v.feature_dim != config.feature_dim ||
      v.num_classes != config.num_classes) {
    throw DataError("shared memory segment " + name + " holds partition " +
                    std::to_string(v.part_id) + " of graph '" + p->graph_name_ +
                    "' (config digest " + p->config_digest_.substr(0, 16) +
                    "), expected partition " + std::to_string(part) + " of '" + config.graph_name +
                    "' (config digest " + digest.substr(0, 16) + ")");
  }
  return p;
}

void ShmPartition::ReadHeader() {
  const ShmHeader* h = static_cast<const ShmHeader*>(base_);
  auto bad = [&](const std::string& what) {
    throw DataError("shared memory segment " + name_ + ": " + what);
  };
  if (h->total_bytes != size_ || h->header_bytes != kShmHeaderBytes) {
    bad("header says " + std::to_string(h->total_bytes) + " bytes, segment has " +
        std::to_string(size_));
  }
  std::string stored = ReadCString(h->name, sizeof(h->name));
  if (stored != name_) bad("header names segment '" + stored + "'");
  if (h->part_id < 0 || h->node_start < 0 || h->num_nodes < 0 || h->num_edges < 0 ||
      h->feature_dim < 0 || h->num_classes < 0) {
    bad("negative counts in header");
  }
  for (int i = 0; i < kNumArrays; ++i) {
    uint64_t want;
    if (!ArrayBytes(i, h->num_nodes, h->num_edges, h->feature_dim, &want) || h->bytes[i] != want ||
        h->offset[i] % kAlign != 0 || h->offset[i] < kShmHeaderBytes || h->offset[i] > size_ ||
        h->bytes[i] > size_ - h->offset[i]) {
      bad("array " + kPartFiles[i] + " does not fit the header's counts or the segment");
    }
  }
  const char* b = static_cast<const char*>(base_);
  PartitionView& v = view_;
  v.part_id = h->part_id;
  v.node_start = h->node_start;
  v.num_nodes = h->num_nodes;
  v.num_edges = h->num_edges;
  v.feature_dim = h->feature_dim;
  v.num_classes = h->num_classes;
  v.indptr = reinterpret_cast<const int64_t*>(b + h->offset[kIndptr]);
  v.indices = reinterpret_cast<const int64_t*>(b + h->offset[kIndices]);
  v.features = reinterpret_cast<const float*>(b + h->offset[kFeat]);
  v.labels = reinterpret_cast<const int64_t*>(b + h->offset[kLabel]);
  v.train_mask = reinterpret_cast<const uint8_t*>(b + h->offset[kTrain]);
  v.valid_mask = reinterpret_cast<const uint8_t*>(b + h->offset[kValid]);
  v.test_mask = reinterpret_cast<const uint8_t*>(b + h->offset[kTest]);
  v.orig_nids = reinterpret_cast<const int64_t*>(b + h->offset[kOrig]);
  graph_name_ = ReadCString(h->graph_name, sizeof(h->graph_name));
  config_digest_ = ReadCString(h->config_digest, sizeof(h->config_digest));
  creator_pid_ = static_cast<pid_t>(h->creator_pid);
}

ShmPartition::~ShmPartition() {
  if (base_) munmap(base_, size_);
  if (shm::ReleaseSegment(lock_fd_, name_, lock_path_, remove_wait_)) {
    // Every holder of the machine's hot-row cache (store/row_cache.h) holds
    // this partition too, so when the partition's last holder leaves, the
    // cache has none left either (unless all of them were killed, leaving
    // it to us): it goes with the partition.
    const std::string cache = RowCacheNameOf(name_);
    if (!cache.empty()) shm::RemoveWhenFree(cache, std::chrono::milliseconds(0));
  }
}

std::string JobShmName(const std::string& graph_name, const std::string& config_sha256,
                       const std::string& job_id, int part) {
  Sha256 h;
  const std::string key = config_sha256 + "\n" + job_id;
  h.Update(key.data(), key.size());
  return ShmSegmentName(graph_name, h.HexDigest(), part);
}

}  // namespace gnn
