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
#include "common/memory.h"
#include "common/npy.h"
#include "common/parallel.h"
#include "common/sha256.h"
#include "common/timer.h"
#include "partition/local_partition.h"
#include "store/row_cache.h"
#include "store/shm_layout.h"
#include "store/shm_segment.h"

namespace gnn {

using shm::CheckName;
using shm::Errno;
using shm::Fd;
using shm::MiB;
using shm::Sanitize;
using shm::StillLinked;
using shm::TryLock;
using namespace segment;  // the segment's layout (store/shm_layout.h)

namespace {

// The segment's arrays on 2 MiB pages (CollapseToHugePages), in the
// creator's mapping and so in the segment, or mapped as such in an
// attacher's; true when the neighbour lists are. Edge data wider than 2
// floats stays as it is: those are edge features (ogbn-proteins' 8 are most
// of its bytes, and collapsing them would double the segment's start-up),
// which only edge-feature models read; edge weights go with the lists.
bool OnHugePages(const ShmHeader& h, const char* base) {
  const std::vector<Slot> slots = SlotsOf(h, {}, "");
  bool indices = false;
  for (size_t i = 0; i < slots.size(); ++i) {
    const bool edge_features =
        slots[i].file == kEdgeFeatFile && slots[i].shape.size() == 2 && slots[i].shape[1] > 2;
    if (edge_features || h.bytes[i] == 0) continue;
    const bool done = CollapseToHugePages(base + h.offset[i], h.bytes[i]);
    if (i == 1) indices = done;  // indices.npy, plain and typed
  }
  return indices;
}

// How long Create retries the exclusive lock: other handles hold it only for
// microseconds (a remover, an attacher looking at a stale segment), while a
// live owner holds its shared lock for good.
constexpr auto kCreateGrace = std::chrono::milliseconds(500);

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
  bool huge = false;
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

    // Sampling reads the neighbour lists a few entries per node, at random
    // over hundreds of MB: on 4 KiB pages nearly every read also misses the
    // TLB. Their pages, and those of the other arrays (OnHugePages), become
    // 2 MiB ones before anyone attaches (attachers map them so too:
    // Attach).
    huge = OnHugePages(*h, bytes);
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
                 << name << " (" << MiB(total) << (huge ? " on 2 MiB pages" : "") << ", "
                 << watch.Seconds() << " s" << (verify_checksums ? ", checksums verified" : "")
                 << ")";
  if (!huge && total >= (size_t{256} << 20)) {
    GNN_LOG(kInfo) << "shared memory segment " << name
                   << " is on 4 KiB pages: /dev/shm mounted with huge=advise (mount -o "
                      "remount,huge=advise /dev/shm) lets it take 2 MiB pages, on which "
                      "sampling's random reads miss the TLB less";
  }
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
  // The creator's huge pages mapped as such here too (Create).
  OnHugePages(*h, static_cast<const char*>(base));
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
      (config.hetero() ? p->hetero_view_->edge_dim : v.edge_dim) != config.edge_feature_dim) {
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
      h->feature_dim < 0 || h->num_classes < 0 || h->label_width < 0 ||
      h->label_width > kMaxLabelWidth || (h->typed && h->label_width != 0) || h->edge_dim < 0 ||
      h->edge_dim > kMaxLabelWidth || h->feat_nnz < 0 ||
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
