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
// Plain partitions: kPartFiles in order. Typed (heterogeneous) ones: the
// slots of TypedSlot, then one feature array per node type that has them.
enum PlainSlot { kIndptr, kIndices, kFeat, kLabel, kTrain, kValid, kTest, kOrig, kNumPlain };
enum TypedSlot {
  kTIndptr,
  kTIndices,
  kTEtype,
  kTOrig,
  kTLabel,
  kTMask,
  kTRngKeys = kTMask + 3,
  kNumTypedFixed
};
constexpr int kMaxTypes = 32;
constexpr int kMaxArrays = kNumTypedFixed + kMaxTypes;
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
  int64_t label_width;  // plain: 0 for class ids, else float32 label rows [n, label_width]
  int64_t edge_dim;     // plain: width of the edge data slot after kOrig (0: none)
  int64_t feat_nnz;     // plain, sparse features: stored entries of the CSR slots
  int32_t sparse_feat;  // plain: 1 when the features are CSR slots (kFeat then empty)
  int32_t feat_values;  // sparse_feat: 1 when a values slot follows the column ids
  int32_t typed;        // 1: a heterogeneous partition
  int32_t num_types;    // typed: node types, at most kMaxTypes
  int32_t target;       // typed: the labelled type
  int32_t num_arrays;
  int64_t type_range[kMaxTypes][2];  // typed: owned ids of each type
  int64_t type_dim[kMaxTypes];       // typed: feature width of each type (0: none)
  uint64_t offset[kMaxArrays];
  uint64_t bytes[kMaxArrays];
  char name[128];
  char graph_name[256];
  char config_digest[72];
};
static_assert(sizeof(ShmHeader) <= kShmHeaderBytes, "header must fit its page");
static_assert(offsetof(ShmHeader, version) == 8 && offsetof(ShmHeader, ready) == 12,
              "documented layout");

// What one array of a segment holds: the partition file it comes from
// (empty: computed by the creator), its element type and shape.
struct Slot {
  std::string file;
  DType dtype;
  std::vector<int64_t> shape;
};

// The arrays of a segment with the header's counts, in segment order.
// `type_names` (typed; may be empty when only sizes matter) name the files.
std::vector<Slot> SlotsOf(const ShmHeader& h, const std::vector<std::string>& type_names,
                          const std::string& target_name) {
  const int64_t n = h.num_nodes, e = h.num_edges;
  if (!h.typed) {
    const int64_t f = h.feature_dim;
    const int64_t w = h.label_width;  // label.npy: class ids, or float32 rows
    const DType dtypes[kNumPlain] = {
        DType::kInt64, DType::kInt64, DType::kFloat32, w > 0 ? DType::kFloat32 : DType::kInt64,
        DType::kUInt8, DType::kUInt8, DType::kUInt8,   DType::kInt64};
    const std::vector<int64_t> label_shape =
        w > 0 ? std::vector<int64_t>{n, w} : std::vector<int64_t>{n};
    const std::vector<int64_t> shapes[kNumPlain] = {
        {n + 1}, {e}, {n, h.sparse_feat ? 0 : f}, label_shape, {n}, {n}, {n}, {n}};
    std::vector<Slot> out;
    for (int i = 0; i < kNumPlain; ++i) out.push_back({kPartFiles[i], dtypes[i], shapes[i]});
    // Sparse features: no dense rows, the CSR after the edge data.
    if (h.sparse_feat) out[kFeat].file.clear();
    if (h.edge_dim > 0) out.push_back({kEdgeFeatFile, DType::kFloat32, {e, h.edge_dim}});
    if (h.sparse_feat) {
      out.push_back({kFeatIndptrFile, DType::kInt64, {n + 1}});
      out.push_back({kFeatIndicesFile, DType::kInt32, {h.feat_nnz}});
      if (h.feat_values) out.push_back({kFeatValuesFile, DType::kFloat32, {h.feat_nnz}});
    }
    return out;
  }
  auto type_name = [&](int t) {
    return t < static_cast<int>(type_names.size()) ? type_names[t] : "type" + std::to_string(t);
  };
  const int64_t targets = h.type_range[h.target][1] - h.type_range[h.target][0];
  const std::string tn = target_name.empty() ? type_name(h.target) : target_name;
  std::vector<Slot> out = {{"indptr.npy", DType::kInt64, {n + 1}},
                           {"indices.npy", DType::kInt64, {e}},
                           {kEtypeFile, DType::kInt64, {e}},
                           {"orig_nids.npy", DType::kInt64, {n}},
                           {tn + "-label.npy", DType::kInt64, {targets}},
                           {tn + "-train_mask.npy", DType::kUInt8, {targets}},
                           {tn + "-valid_mask.npy", DType::kUInt8, {targets}},
                           {tn + "-test_mask.npy", DType::kUInt8, {targets}},
                           {"", DType::kInt64, {n}}};  // rng_keys
  for (int t = 0; t < h.num_types; ++t) {
    if (h.type_dim[t] == 0) continue;
    out.push_back({type_name(t) + "-feat.npy",
                   DType::kFloat32,
                   {h.type_range[t][1] - h.type_range[t][0], h.type_dim[t]}});
  }
  return out;
}

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
  std::string path;  // empty: computed, not read
  DType dtype;
  std::vector<int64_t> shape;
  NpyHeader npy;
  uint64_t bytes = 0;
  uint64_t offset = 0;
};

// Bytes of an array of `shape` and `dtype`; false when negative or on
// overflow.
bool ArrayBytes(DType dtype, const std::vector<int64_t>& shape, uint64_t* out) {
  uint64_t total = DTypeSize(dtype);
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(total, static_cast<uint64_t>(d), &total)) return false;
  }
  *out = total;
  return true;
}

// Reads the data of one .npy file straight into `dst` (the mapping), hashing
// the whole file on the way when `want_sha` is given.
void CopyArray(const ArrayPlan& a, char* dst, const std::string* want_sha) {
  Fd fd(open(a.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw DataError(CannotMessage("open", a.path, errno));
  Sha256 sha;
  auto read_at = [&](char* buf, uint64_t size, uint64_t pos) {
    uint64_t done = 0;
    while (done < size) {
      size_t chunk = static_cast<size_t>(std::min<uint64_t>(size - done, 8u << 20));
      ssize_t r = pread(fd.get(), buf + done, chunk, static_cast<off_t>(pos + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw DataError(CannotMessage("read", a.path, errno));
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
  c.edge_data = edge_data;
  c.edge_dim = edge_dim;
  return c;
}

namespace {

// The header of partition `part`'s segment, all but the array offsets:
// counts, and for typed partitions the node types' ranges and widths.
ShmHeader HeaderFor(const std::string& name, const PartitionConfig& config, int part) {
  const PartInfo& info = config.parts[part];
  ShmHeader h;
  std::memset(&h, 0, sizeof(h));
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kShmFormatVersion;
  h.header_bytes = kShmHeaderBytes;
  h.creator_pid = getpid();
  h.part_id = part;
  h.num_parts = config.num_parts;
  h.node_start = info.node_start;
  h.num_nodes = info.num_nodes();
  h.num_edges = info.num_edges();
  h.feature_dim = config.hetero() ? 0 : config.feature_dim;
  h.num_classes = config.num_classes;
  h.label_width = config.hetero() ? 0 : config.label_width;
  h.edge_dim = config.hetero() ? 0 : config.edge_feature_dim;
  h.graph_num_nodes = config.num_nodes;
  if (!config.hetero() && config.sparse_features) {
    const std::string indices = config.FilePath(part, kFeatIndicesFile);
    const NpyHeader npy = ReadNpyHeader(indices);
    if (npy.shape.size() != 1) throw DataError(indices + ": expected a 1-d array of column ids");
    h.sparse_feat = 1;
    h.feat_nnz = npy.shape[0];
    h.feat_values = config.feature_binary ? 0 : 1;
  }
  if (config.hetero()) {
    const HeteroPartitionView shape = HeteroShape(config, part);
    if (shape.ntype_ranges.size() > static_cast<size_t>(kMaxTypes)) {
      throw ConfigError(config.graph_name + " has " + std::to_string(shape.ntype_ranges.size()) +
                        " node types; shared memory holds at most " + std::to_string(kMaxTypes));
    }
    h.typed = 1;
    h.num_types = static_cast<int32_t>(shape.ntype_ranges.size());
    h.target = shape.target;
    for (int t = 0; t < h.num_types; ++t) {
      h.type_range[t][0] = shape.ntype_ranges[t].first;
      h.type_range[t][1] = shape.ntype_ranges[t].second;
      h.type_dim[t] = shape.feature_dims[t];
    }
  }
  CopyCString(h.name, sizeof(h.name), name);
  CopyCString(h.graph_name, sizeof(h.graph_name), config.graph_name);
  CopyCString(h.config_digest, sizeof(h.config_digest), PartitionConfigDigest(config));
  return h;
}

// The segment's layout from the .npy headers (which also checks file
// sizes): one aligned slot per array after the header, offsets and sizes
// written into `h`; h->total_bytes is the segment's size in whole pages.
std::vector<ArrayPlan> PlanLayout(const PartitionConfig& config, int part, ShmHeader* h) {
  std::vector<Slot> slots = SlotsOf(*h, config.ntypes, config.target_ntype);
  std::vector<ArrayPlan> plan(slots.size());
  h->num_arrays = static_cast<int32_t>(slots.size());
  uint64_t offset = kShmHeaderBytes;
  for (size_t i = 0; i < slots.size(); ++i) {
    ArrayPlan& a = plan[i];
    a.dtype = slots[i].dtype;
    a.shape = slots[i].shape;
    if (!slots[i].file.empty()) {
      a.path = config.FilePath(part, slots[i].file);
      a.npy = ReadNpyHeader(a.path);
      if (a.npy.dtype != a.dtype) {
        throw DataError(a.path + ": dtype " + DTypeDescr(a.npy.dtype) + ", expected " +
                        DTypeDescr(a.dtype));
      }
      if (a.npy.shape != a.shape) {
        throw DataError(a.path + ": shape " + ShapeString(a.npy.shape) + ", expected " +
                        ShapeString(a.shape));
      }
    }
    if (!ArrayBytes(a.dtype, a.shape, &a.bytes))
      throw DataError(config.FilePath(part, slots[i].file) + ": array too large");
    a.offset = offset;
    h->offset[i] = offset;
    h->bytes[i] = a.bytes;
    offset = (offset + a.bytes + kAlign - 1) / kAlign * kAlign;
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  h->total_bytes = (offset + page - 1) / page * page;
  return plan;
}

// The sha256 each array must have (null: not verified, or computed).
std::vector<const std::string*> WantedChecksums(const PartitionConfig& config, int part,
                                                const std::vector<ArrayPlan>& plan, bool verify) {
  std::vector<const std::string*> want(plan.size(), nullptr);
  if (!verify) return want;
  const PartInfo& info = config.parts[part];
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].path.empty()) continue;
    const std::string file = plan[i].path.substr(plan[i].path.find_last_of('/') + 1);
    auto it = info.files.find(file);
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

PartitionArrays ArraysOf(const PartitionView& v) {
  PartitionArrays a;
  a.indptr = v.indptr;
  a.indices = v.indices;
  a.labels = v.labels;
  a.targets = v.targets;
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
  if (part < 0 || part >= config.num_parts) {
    throw ConfigError("partition " + std::to_string(part) + " does not exist (config has " +
                      std::to_string(config.num_parts) + ")");
  }
  if (config.graph_name.size() >= sizeof(ShmHeader::graph_name)) {
    throw ConfigError("graph name '" + config.graph_name + "' is too long for shared memory");
  }
  Stopwatch watch;
  ShmHeader header = HeaderFor(name, config, part);
  const std::vector<ArrayPlan> plan = PlanLayout(config, part, &header);
  const uint64_t total = header.total_bytes;
  const std::vector<const std::string*> want_sha =
      WantedChecksums(config, part, plan, verify_checksums);

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
    std::memcpy(h, &header, sizeof(header));
    char* bytes = static_cast<char*>(base);
    ParallelFor(static_cast<int64_t>(plan.size()), 0, [&](int64_t b, int64_t end) {
      for (int64_t i = b; i < end; ++i) {
        if (!plan[i].path.empty()) CopyArray(plan[i], bytes + plan[i].offset, want_sha[i]);
      }
    });
    // The checks every loader of the partition does (one function each), on
    // the mapped data; a typed partition's sampling keys are computed here.
    p->ReadHeader();
    if (config.hetero()) {
      CheckHeteroArrays(config, *p->hetero_view_,
                        reinterpret_cast<int64_t*>(bytes + plan[kTRngKeys].offset));
    } else {
      CheckPartitionArrays(config, part, ArraysOf(p->view_));
      const SparseView& sv = p->view_.sparse_features;
      if (p->view_.sparse()) {
        CheckSparse(sv, header.feat_nnz, sv.values ? header.feat_nnz : 0,
                    config.FilePath(part, kFeatIndptrFile) + " and " + kFeatIndicesFile);
      }
    }

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
      v.num_edges != info.num_edges() ||
      v.feature_dim != (config.hetero() ? 0 : config.feature_dim) ||
      v.num_classes != config.num_classes || p->hetero_view_.has_value() != config.hetero() ||
      v.edge_dim != (config.hetero() ? 0 : config.edge_feature_dim)) {
    throw DataError("shared memory segment " + name + " holds partition " +
                    std::to_string(v.part_id) + " of graph '" + p->graph_name_ +
                    "' (config digest " + p->config_digest_.substr(0, 16) +
                    "), expected partition " + std::to_string(part) + " of '" + config.graph_name +
                    "' (config digest " + digest.substr(0, 16) + ")");
  }
  return p;
}

namespace {

// A typed header's types: count, target and ranges inside the owned ids.
bool TypesFit(const ShmHeader& h) {
  if (!h.typed) return h.num_types == 0;
  if (h.num_types < 1 || h.num_types > kMaxTypes || h.target < 0 || h.target >= h.num_types ||
      h.feature_dim != 0)
    return false;
  for (int t = 0; t < h.num_types; ++t) {
    const int64_t b = h.type_range[t][0], e = h.type_range[t][1];
    if (b < h.node_start || e < b || e - h.node_start > h.num_nodes || h.type_dim[t] < 0)
      return false;
  }
  return true;
}

// The typed arrays of a checked header `h` mapped at `b`.
HeteroPartitionView TypedView(const ShmHeader& h, const char* b) {
  auto i64 = [&](int i) { return reinterpret_cast<const int64_t*>(b + h.offset[i]); };
  auto u8 = [&](int i) { return reinterpret_cast<const uint8_t*>(b + h.offset[i]); };
  HeteroPartitionView v;
  v.part_id = h.part_id;
  v.node_start = h.node_start;
  v.num_nodes = h.num_nodes;
  v.num_edges = h.num_edges;
  v.indptr = i64(kTIndptr);
  v.indices = i64(kTIndices);
  v.etypes = i64(kTEtype);
  v.orig_nids = i64(kTOrig);
  v.rng_keys = i64(kTRngKeys);
  v.labels = i64(kTLabel);
  for (int m = 0; m < 3; ++m) v.masks[m] = u8(kTMask + m);
  v.target = h.target;
  int slot = kNumTypedFixed;
  for (int t = 0; t < h.num_types; ++t) {
    v.ntype_ranges.emplace_back(h.type_range[t][0], h.type_range[t][1]);
    v.feature_dims.push_back(h.type_dim[t]);
    v.features.push_back(h.type_dim[t] ? reinterpret_cast<const float*>(b + h.offset[slot++])
                                       : nullptr);
  }
  return v;
}

}  // namespace

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
      h->feature_dim < 0 || h->num_classes < 0 || h->label_width < 0 ||
      h->label_width > kMaxLabelWidth || (h->typed && h->label_width != 0) || h->edge_dim < 0 ||
      h->edge_dim > kMaxLabelWidth || (h->typed && h->edge_dim != 0) || h->feat_nnz < 0 ||
      (h->sparse_feat != 0 && h->sparse_feat != 1) ||
      (h->feat_values != 0 && h->feat_values != 1) || (h->typed && h->sparse_feat != 0)) {
    bad("negative counts in header");
  }
  if ((h->typed != 0 && h->typed != 1) || !TypesFit(*h)) bad("node types do not fit the header");
  const std::vector<Slot> slots = SlotsOf(*h, {}, "");
  if (h->num_arrays != static_cast<int32_t>(slots.size())) bad("wrong number of arrays");
  for (size_t i = 0; i < slots.size(); ++i) {
    uint64_t want;
    if (!ArrayBytes(slots[i].dtype, slots[i].shape, &want) || h->bytes[i] != want ||
        h->offset[i] % kAlign != 0 || h->offset[i] < kShmHeaderBytes || h->offset[i] > size_ ||
        h->bytes[i] > size_ - h->offset[i]) {
      const std::string what = !slots[i].file.empty() ? slots[i].file
                               : h->typed             ? std::string("rng_keys")
                                                      : std::string("feat.npy (sparse: empty)");
      bad("array " + what + " does not fit the header's counts or the segment");
    }
  }
  const char* b = static_cast<const char*>(base_);
  auto i64 = [&](int i) { return reinterpret_cast<const int64_t*>(b + h->offset[i]); };
  auto u8 = [&](int i) { return reinterpret_cast<const uint8_t*>(b + h->offset[i]); };
  PartitionView& v = view_;
  v.part_id = h->part_id;
  v.node_start = h->node_start;
  v.num_nodes = h->num_nodes;
  v.num_edges = h->num_edges;
  v.feature_dim = h->feature_dim;
  v.num_classes = h->num_classes;
  v.indptr = i64(kIndptr);
  v.indices = i64(kIndices);
  if (!h->typed) {
    if (h->sparse_feat) {
      // After kNumPlain: the edge data (when present), then the CSR.
      const int csr = kNumPlain + (h->edge_dim > 0 ? 1 : 0);
      SparseView& sv = v.sparse_features;
      sv.rows = h->num_nodes;
      sv.cols = h->feature_dim;
      sv.indptr = i64(csr);
      sv.indices = reinterpret_cast<const int32_t*>(b + h->offset[csr + 1]);
      if (h->feat_values) sv.values = reinterpret_cast<const float*>(b + h->offset[csr + 2]);
    } else {
      v.features = reinterpret_cast<const float*>(b + h->offset[kFeat]);
    }
    v.label_width = h->label_width;
    if (h->label_width > 0) {
      v.targets = reinterpret_cast<const float*>(b + h->offset[kLabel]);
    } else {
      v.labels = i64(kLabel);
    }
    v.train_mask = u8(kTrain);
    v.valid_mask = u8(kValid);
    v.test_mask = u8(kTest);
    v.orig_nids = i64(kOrig);
    v.edge_dim = h->edge_dim;
    if (h->edge_dim > 0) v.edge_data = reinterpret_cast<const float*>(b + h->offset[kNumPlain]);
  } else {
    hetero_view_ = TypedView(*h, b);
  }
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
    RemoveRowCachesOf(name_, hetero_view_ ? hetero_view_->feature_dims : std::vector<int64_t>{});
  }
}

}  // namespace gnn
