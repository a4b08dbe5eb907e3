// One partition's arrays (homogeneous or heterogeneous) in POSIX shared
// memory. Server 0 of a machine
// creates the segment from the partition files; backup servers and local
// sampler clients attach to it read-only, so they add throughput without
// adding memory.
//
// Lifetime: every handle (creator or attacher) holds a shared lock on a lock
// file beside the segment (ShmLockPath). A handle's destructor drops it and
// tries the exclusive lock without blocking: if that succeeds nobody else is
// attached, so it removes the segment and the lock file. The kernel drops
// the locks of a crashed (SIGKILLed) process, so the last survivor still
// cleans up, and Create recognises a segment nobody holds as stale and
// replaces it. Only if every attached process crashes does a segment stay
// behind, until the next Create of the same name (or a reboot).
//
// Segment layout (format version kShmFormatVersion), all little-endian:
//   bytes 0..7   magic "GNNSHMP1"
//   bytes 8..11  uint32 format version
//   bytes 12..15 uint32 ready flag, kShmReadyValue once complete (written last)
//   ...          counts, names, array offsets (kShmHeaderBytes in all)
//   then the arrays, each at a 64-byte aligned offset: a homogeneous
//   partition's in kPartFiles order (a sparse-feature partition's feature
//   slot empty), its edge data, then a sparse-feature partition's CSR
//   (feat_indptr, feat_indices, feat_values unless binary); a heterogeneous one's indptr, indices,
//   etype, orig_nids, the target type's label and three masks, the sampling
//   keys (computed by the creator: input id of each node), then the feature
//   rows of each node type that has them, in type order.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/sparse_rows.h"
#include "partition/config.h"
#include "partition/hetero_local.h"
#include "sampling/sampler.h"
#include "store/shm_names.h"

namespace gnn {

// How long a process attaching to a partition's shared memory (a backup
// server, a trainer, a gnn-sampler) waits for server 0 to finish creating it.
constexpr int kDefaultAttachTimeoutMs = 60000;

// 3: float32 label rows; 4: edge data; 5: sparse feature rows (CSR slots)
constexpr uint32_t kShmFormatVersion = 6;
constexpr uint32_t kShmReadyValue = 0x59444552;  // "REDY"
constexpr size_t kShmHeaderBytes = 4096;

// Read-only view of one partition's arrays. The pointers point into a
// ShmPartition's mapping and are valid while it lives; the memory is
// read-only (writing through a const_cast faults).
struct PartitionView {
  int part_id = 0;
  int64_t node_start = 0;  // first owned global id
  int64_t num_nodes = 0;   // owned nodes
  int64_t num_edges = 0;   // in-edges stored (indices length)
  int64_t feature_dim = 0;
  int64_t num_classes = 0;
  const int64_t* indptr = nullptr;   // [num_nodes + 1]
  const int64_t* indices = nullptr;  // [num_edges] global ids
  const float* features = nullptr;   // [num_nodes, feature_dim] row-major; null when sparse
  // A sparse-feature partition (config feature_format "sparse"): its rows
  // as stored, CSR [num_nodes, feature_dim] (values null: every value is
  // 1); indptr null otherwise.
  SparseView sparse_features;
  bool sparse() const { return sparse_features.indptr != nullptr; }
  const int64_t* labels = nullptr;  // [num_nodes], -1 = unlabelled (class ids only)
  // Multi-label / regression graphs: [num_nodes, label_width] (labels null).
  int64_t label_width = 0;
  const float* targets = nullptr;
  const uint8_t* train_mask = nullptr;  // [num_nodes]
  const uint8_t* valid_mask = nullptr;
  const uint8_t* test_mask = nullptr;
  const int64_t* orig_nids = nullptr;  // [num_nodes] new id -> input id
  // The stored in-edges' data (edge_feat.npy): [num_edges, edge_dim], row
  // k that of indices[k]; null, 0 without.
  int64_t edge_dim = 0;
  const float* edge_data = nullptr;

  // {indptr, indices, node_start, num_nodes, rng_keys = orig_nids,
  // edge_data}: samples exactly what the standalone path samples from the
  // same partition.
  CscView csc() const;
};

// A mapped partition segment. Not copyable. The view is immutable, so any
// number of threads may read it concurrently.
class ShmPartition {
 public:
  // Server 0: creates segment `name` holding partition `part` of `config`,
  // reading every .npy file straight into the mapping (no heap copy) and
  // validating it as LoadLocalPartition does (dtypes, shapes, offsets, id and
  // label ranges; with verify_checksums the sha256 of every file, computed
  // while reading). A segment of that name nobody is attached to is stale
  // and replaced. Blocking (reads the whole partition).
  // Throws ConfigError (bad name or part; the segment is in use by another
  // process, e.g. another server 0 or backups still attached to a previous
  // one; no permission), DataError (bad files; the error names the file),
  // Error (out of shared memory). On error nothing is left behind.
  static std::unique_ptr<ShmPartition> Create(const std::string& name,
                                              const PartitionConfig& config, int part,
                                              bool verify_checksums);

  // Backups and local clients: polls until segment `name` exists and is
  // complete, then maps it read-only (MAP_SHARED, PROT_READ; only the header
  // page is touched). Throws TimeoutError naming the segment when `timeout`
  // passes first (timeout 0 = try once), DataError if the segment's magic,
  // format version or header is wrong, ConfigError on a bad name or no
  // permission. The array contents are trusted (the creator validated them).
  static std::unique_ptr<ShmPartition> Attach(const std::string& name,
                                              std::chrono::milliseconds timeout);
  // As above, and checks that the segment holds partition `part` of exactly
  // `config` (graph name, config digest, counts); DataError otherwise.
  static std::unique_ptr<ShmPartition> Attach(const std::string& name,
                                              const PartitionConfig& config, int part,
                                              std::chrono::milliseconds timeout);

  // Unmaps; removes the segment and lock file if no other process (or
  // handle) is attached, waiting up to the remove wait (SetRemoveWait) for
  // the others to leave. Never throws.
  ~ShmPartition();
  // How long the destructor waits for other holders to let go before it
  // leaves removal to them (default 0: it does not wait). Server 0 waits a
  // few seconds: a trainer or sampler killed by a signal (the usual way a
  // job is torn down) runs no destructor, so if it held the segment longer
  // than server 0 nobody would remove it.
  void SetRemoveWait(std::chrono::milliseconds wait) { remove_wait_ = wait; }
  ShmPartition(const ShmPartition&) = delete;
  ShmPartition& operator=(const ShmPartition&) = delete;

  // The partition's counts and, for a homogeneous one, its arrays (a typed
  // one's view has counts, indptr and indices only).
  const PartitionView& view() const { return view_; }
  // A heterogeneous partition's arrays; null for a homogeneous one.
  const HeteroPartitionView* hetero_view() const { return hetero_view_ ? &*hetero_view_ : nullptr; }
  size_t mapped_bytes() const { return size_; }
  const std::string& name() const { return name_; }
  const std::string& graph_name() const { return graph_name_; }
  const std::string& config_digest() const { return config_digest_; }
  // Pid of the process that created the segment (it may have exited).
  pid_t creator_pid() const { return creator_pid_; }
  bool is_creator() const { return is_creator_; }

 private:
  ShmPartition() = default;
  // One attempt of Attach: nullptr (with *state saying why) if the segment
  // is absent, locked by its creator or a remover, or incomplete.
  static std::unique_ptr<ShmPartition> TryAttach(const std::string& name, std::string* state);
  // Fills view_ and the names from the mapped header; DataError if the
  // header is inconsistent with the mapping.
  void ReadHeader();

  std::string name_;
  std::string lock_path_;
  int lock_fd_ = -1;
  void* base_ = nullptr;
  size_t size_ = 0;
  bool is_creator_ = false;
  std::chrono::milliseconds remove_wait_{0};
  pid_t creator_pid_ = 0;
  std::string graph_name_;
  std::string config_digest_;
  PartitionView view_;
  std::optional<HeteroPartitionView> hetero_view_;
};

}  // namespace gnn
