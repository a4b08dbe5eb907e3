// A machine's hot-row cache: feature rows of other partitions that this
// machine's trainers and gnn-samplers read most, held once per machine in
// POSIX shared memory (like the partition itself, shm_partition.h), so a
// row found here does not cross the network.
//
// The first process of a job on a machine to open the cache builds it: it
// takes the segment's lock file exclusively (shm_segment.h), chooses the
// rows, fetches them (from their owners, over the network) and publishes
// the segment; every other process waits for it and maps it read-only. The
// last process to leave removes it; a builder that dies leaves the lock
// free, and the next one to come builds it again.
//
// Segment layout (kRowCacheFormatVersion), little-endian:
//   bytes 0..7   magic "GNNSHMC1"
//   bytes 8..11  uint32 format version
//   bytes 12..15 uint32 ready flag (kShmReadyValue once complete)
//   ...          counts, names, offsets (one kShmHeaderBytes page)
//   then ids int64 [rows] (ascending) and rows float32 [rows, feature_dim],
//   each at a 64-byte aligned offset; a cache of sparse rows (version 2,
//   RowCacheKey::sparse) holds their CSR instead of the float rows: indptr
//   int64 [rows + 1], column ids int32 [nnz] and values float32 [nnz]
//   (none when every value is 1).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/sparse_rows.h"

namespace gnn {

// 2: sparse rows (CSR) as well as dense ones.
constexpr uint32_t kRowCacheFormatVersion = 2;

// What a cache holds and whose it is: a process attaching checks these
// against the segment (a mismatch is a DataError).
struct RowCacheKey {
  std::string name;  // segment name, "/gnn-...": RowCacheName
  std::string graph_name;
  std::string config_digest;  // PartitionConfigDigest of the partitioning
  int64_t feature_dim = 0;
  bool sparse = false;  // CSR rows of a sparse-feature graph (OpenSparse)
};

// The cache segment of machine `machine` in job `job_id`: JobShmName's
// partition segment name with "-c" instead of "-p" (RowCacheNameOf).
std::string RowCacheName(const std::string& graph_name, const std::string& config_sha256,
                         const std::string& job_id, int machine);
// The cache segment that goes with partition segment `partition_segment`
// ("/gnn-...-p<m>" -> "/gnn-...-c<m>"); "" for a name without "-p".
std::string RowCacheNameOf(const std::string& partition_segment);
// A typed graph's cache of node type `ntype` on the same machine: the
// cache name with "t<ntype>" appended.
std::string TypedRowCacheName(const std::string& cache_name, int ntype);
// Removes the machine caches that go with partition segment
// `partition_segment` once no process holds them: the plain one, and for a
// typed partition one per node type t with typed_feature_dims[t] > 0.
// Never throws.
void RemoveRowCachesOf(const std::string& partition_segment,
                       const std::vector<int64_t>& typed_feature_dims);

// A mapped cache. Not copyable; immutable once open, so any number of
// threads may read it.
class ShmRowCache {
 public:
  // Builder callbacks: `choose` returns the ids to cache (ascending,
  // distinct, at most what the budget holds); `fill` writes their rows
  // [ids.size(), feature_dim] into `rows`. Both run only in the builder.
  using Choose = std::function<std::vector<int64_t>()>;
  using Fill = std::function<void(const std::vector<int64_t>& ids, float* rows)>;
  // A sparse cache's builder callback: the rows of `ids` as CSR
  // [ids.size(), feature_dim].
  using FillSparse = std::function<SparseRows(const std::vector<int64_t>& ids)>;

  // Maps the cache `key.name`, building it first (choose, fill) when no
  // other process is building or holding it. Waits for another builder up
  // to `timeout`; TimeoutError naming the segment then. Throws what the
  // callbacks throw (nothing is left behind), DataError on a segment of
  // another graph, partitioning or width, ConfigError on a bad name,
  // Error when shared memory runs out. Blocking.
  static std::unique_ptr<ShmRowCache> Open(const RowCacheKey& key, const Choose& choose,
                                           const Fill& fill, std::chrono::milliseconds timeout);
  // The same for sparse rows (key.sparse): the builder asks `fill` for the
  // chosen rows as CSR, checked before they are published.
  static std::unique_ptr<ShmRowCache> OpenSparse(const RowCacheKey& key, const Choose& choose,
                                                 const FillSparse& fill,
                                                 std::chrono::milliseconds timeout);

  // Unmaps; removes the segment if no other process holds it. Never throws.
  ~ShmRowCache();
  ShmRowCache(const ShmRowCache&) = delete;
  ShmRowCache& operator=(const ShmRowCache&) = delete;

  // The cached row of node `id` [feature_dim], or nullptr. Constant time:
  // a bit per node id up to the largest cached one, and the count of cached
  // ids before each 64-bit word (built when the segment is mapped, per
  // process: 1/8 + 1/16 byte per node).
  const float* Find(int64_t id) const {
    const int64_t slot = Slot(id);
    return slot < 0 || rows_ == nullptr ? nullptr : rows_ + slot * dim_;
  }
  // The row index of node `id` in the cache (ids()[slot] == id), or -1.
  int64_t Slot(int64_t id) const {
    if (id < 0 || id >= limit_) return -1;
    const uint64_t word = bits_[static_cast<size_t>(id >> 6)];
    const uint64_t below = (uint64_t{1} << (id & 63)) - 1;
    if (!((word >> (id & 63)) & 1)) return -1;
    return rank_[static_cast<size_t>(id >> 6)] + __builtin_popcountll(word & below);
  }
  // A sparse cache's rows, CSR [num_rows, feature_dim] in slot order.
  bool sparse() const { return sparse_.indptr != nullptr; }
  const SparseView& sparse_rows() const { return sparse_; }
  int64_t num_rows() const { return num_rows_; }
  int64_t feature_dim() const { return dim_; }
  const int64_t* ids() const { return ids_; }
  size_t mapped_bytes() const { return size_; }
  // Whether this handle built the segment (its process chose and fetched).
  bool is_builder() const { return is_builder_; }

 private:
  ShmRowCache() = default;
  static std::unique_ptr<ShmRowCache> TryAttach(const RowCacheKey& key, std::string* state);
  static std::unique_ptr<ShmRowCache> OpenWith(const RowCacheKey& key, const Choose& choose,
                                               const Fill* fill, const FillSparse* fill_sparse,
                                               std::chrono::milliseconds timeout);
  static std::unique_ptr<ShmRowCache> Build(const RowCacheKey& key, int lock_fd,
                                            const Choose& choose, const Fill* fill,
                                            const FillSparse* fill_sparse);
  void ReadHeader(const RowCacheKey& key);

  std::string name_;
  std::string lock_path_;
  int lock_fd_ = -1;
  void* base_ = nullptr;
  size_t size_ = 0;
  bool is_builder_ = false;
  int64_t num_rows_ = 0;
  int64_t dim_ = 0;
  const int64_t* ids_ = nullptr;
  const float* rows_ = nullptr;  // dense caches
  SparseView sparse_;            // sparse caches
  // Find's index over ids [0, limit_): bit id of bits_ set when cached;
  // rank_[w] = cached ids below 64 w.
  int64_t limit_ = 0;
  std::vector<uint64_t> bits_;
  std::vector<uint32_t> rank_;
};

}  // namespace gnn
