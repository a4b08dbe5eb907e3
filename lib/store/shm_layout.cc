#include "store/shm_layout.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "store/shm_segment.h"

namespace gnn::segment {

using shm::Fd;

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
  if (h.edge_dim > 0) out.push_back({kEdgeFeatFile, DType::kFloat32, {e, h.edge_dim}});
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
  h.edge_dim = config.edge_feature_dim;
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
  v.edge_dim = h.edge_dim;
  if (h.edge_dim > 0) v.edge_data = reinterpret_cast<const float*>(b + h.offset[slot]);
  return v;
}

}  // namespace gnn::segment
