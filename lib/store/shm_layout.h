// The layout of a partition's shared-memory segment (store/shm_partition.h
// documents it for readers of the bytes): the header at offset 0, the
// arrays it lists and where each comes from, and the steps that build and
// check them. Internal to lib/store: shm_partition.cc creates, attaches
// and validates segments with these; nothing else includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/npy.h"
#include "partition/config.h"
#include "partition/hetero_local.h"
#include "store/shm_partition.h"

namespace gnn::segment {

inline constexpr char kMagic[8] = {'G', 'N', 'N', 'S', 'H', 'M', 'P', '1'};
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
constexpr int kMaxArrays = kNumTypedFixed + kMaxTypes + 1;  // typed: + the edge features
constexpr uint64_t kAlign = 64;

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
  int64_t edge_dim;     // width of the edge data slot (0: none): plain after kOrig, typed
                        // after the types' features
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

// One array as the creator plans it: the file it is read from, its .npy
// header, and its place in the segment.
struct ArrayPlan {
  std::string path;  // empty: computed, not read
  DType dtype;
  std::vector<int64_t> shape;
  NpyHeader npy;
  uint64_t bytes = 0;
  uint64_t offset = 0;
};

// The arrays of a segment with the header's counts, in segment order.
// `type_names` (typed; may be empty when only sizes matter) name the files.
std::vector<Slot> SlotsOf(const ShmHeader& h, const std::vector<std::string>& type_names,
                          const std::string& target_name);
// "(3, 4)", "(5,)": a shape as NumPy prints it.
std::string ShapeString(const std::vector<int64_t>& shape);
// A string into / out of a fixed, zero-padded char field.
void CopyCString(char* dst, size_t cap, const std::string& s);
std::string ReadCString(const char* src, size_t cap);
// Bytes of an array of `shape` and `dtype`; false when negative or on
// overflow.
bool ArrayBytes(DType dtype, const std::vector<int64_t>& shape, uint64_t* out);
// Reads the data of one .npy file straight into `dst` (the mapping), hashing
// the whole file on the way when `want_sha` is given.
void CopyArray(const ArrayPlan& a, char* dst, const std::string* want_sha);
// The header of partition `part`'s segment, all but the array offsets:
// counts, and for typed partitions the node types' ranges and widths.
ShmHeader HeaderFor(const std::string& name, const PartitionConfig& config, int part);
// The segment's layout from the .npy headers (which also checks file
// sizes): one aligned slot per array after the header, offsets and sizes
// written into `h`; h->total_bytes is the segment's size in whole pages.
std::vector<ArrayPlan> PlanLayout(const PartitionConfig& config, int part, ShmHeader* h);
// The sha256 each array must have (null: not verified, or computed).
std::vector<const std::string*> WantedChecksums(const PartitionConfig& config, int part,
                                                const std::vector<ArrayPlan>& plan, bool verify);
// A typed header's types: count, target and ranges inside the owned ids.
bool TypesFit(const ShmHeader& h);
// The typed arrays of a checked header `h` mapped at `b`.
HeteroPartitionView TypedView(const ShmHeader& h, const char* b);

}  // namespace gnn::segment
