// What gnn-partition's homogeneous and heterogeneous paths share: the
// output folder (checked first, written in a unique temporary folder and
// published atomically), the relabeling (partition-major new ids) and
// small report helpers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/npy.h"
#include "common/timer.h"
#include "partition/config.h"
#include "partition/partition.h"

namespace gnn {

// Largest over mean of per-partition counts (1 = balanced).
double Imbalance(const std::vector<int64_t>& per_part);

// A 0/1 mask of n entries with `idx` set.
std::vector<uint8_t> MaskOf(int64_t n, const std::vector<int64_t>& idx);

// Checks that `output` may be (re)placed, before any work is done.
void CheckOutput(const PartitionOptions& o);
// Logs DirectionLine's one line (a warning when it suggests --undirected).
void LogDirection(DirectionFlag flag, const std::string& name, const std::string& undirected_reason,
                  int64_t num_edges, const EdgeOrder& order);

// `output` as an absolute, normal path without a trailing '/'.
std::string AbsoluteOutput(const std::string& output);

// A new, uniquely named "<output>.tmp.<random>" folder (never shared with
// another run, even one with the same pid on another host), removed with its
// contents unless released.
class TempOutput {
 public:
  explicit TempOutput(const std::string& prefix);
  // Adopts `path` as is (made if missing): the folder the machines of a
  // distributed run agreed on.
  struct Exact {};
  TempOutput(const std::string& path, Exact);
  ~TempOutput();
  const std::string& path() const { return path_; }
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

// Moves the finished temp folder to `output`, replacing an old one only now.
void Publish(TempOutput& tmp, const std::string& output);

// A scratch file holding `bytes` bytes of `data`, mapped back read-only;
// the file is removed when this is destroyed. DataError if it cannot be
// written or mapped (the file is then removed too). Move-only.
class ScratchMap {
 public:
  ScratchMap() = default;
  ScratchMap(const std::string& path, const void* data, size_t bytes);
  ScratchMap(ScratchMap&& other) noexcept { *this = std::move(other); }
  ScratchMap& operator=(ScratchMap&& other) noexcept;
  ScratchMap(const ScratchMap&) = delete;
  ScratchMap& operator=(const ScratchMap&) = delete;
  ~ScratchMap() { Reset(); }
  const void* data() const { return map_; }

 private:
  void Reset();
  std::string path_;
  void* map_ = nullptr;
  size_t bytes_ = 0;
};

// Holds an array while partitioning: one of 64 MiB or more is written to a
// scratch file at `path` and memory-mapped back, so it is not resident
// while METIS runs (its pages come back as they are read); a smaller one
// stays in memory. Takes the vector's contents (it is left empty); data()
// may be read from several threads.
template <typename T>
class Spilled {
 public:
  Spilled(const std::string& path, std::vector<T>* v) : size_(v->size()) {
    if (v->size() * sizeof(T) < (size_t{64} << 20)) {
      memory_.swap(*v);
      data_ = memory_.data();
      return;
    }
    map_ = ScratchMap(path, v->data(), v->size() * sizeof(T));
    std::vector<T>().swap(*v);
    data_ = static_cast<const T*>(map_.data());
  }
  const T* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::vector<T> memory_;
  ScratchMap map_;
  const T* data_ = nullptr;
  size_t size_ = 0;
};

// Writes rows ids[0..count) of the row-major float32 `table` ([*, dim]) to
// `path` as one [count, dim] .npy, gathered and streamed about 8 MiB at a
// time (the rows never all in memory at once).
WrittenFile WriteGatheredRows(const std::string& path, const float* table, int64_t dim,
                              const int64_t* ids, int64_t count);

struct Relabeling {
  std::vector<int64_t> new_id;      // old -> new
  std::vector<int64_t> orig;        // new -> old
  std::vector<int64_t> part_start;  // [num_parts + 1]
};

// Orders nodes by partition, then by original id (stable and reproducible).
Relabeling Relabel(const std::vector<int32_t>& part, int num_parts);

// The partition_report both paths write: sizes, edge cut, each part's
// nodes, edges and splits, balance (max/mean), where the time went, peak
// memory.
nlohmann::json PartitionReport(const PartitionConfig& config, int64_t input_edges,
                               int64_t undirected_edges, int64_t cut, const StageTimer& timer);

// The assignment --part_method asks for, or "stream" when it asks for METIS
// and the graph does not fit METIS's 32-bit index (`entries` adjacency
// entries above MetisMaxAdjacency(), or ids that needed 64 bits), said in
// one warning line.
std::string AssignMethod(const std::string& asked, int64_t entries, bool ids_fit_32);

// One line on a graph's edge labels (they travel with the stored edges,
// WriteEdgeLabels); ConfigError with --val_edges, which would take
// labelled edges out of the graph.
void DescribeEdgeLabels(const PartitionOptions& options, const Dataset& d);
// The same from the counts of edges in no split, train, valid and test.
void DescribeEdgeLabels(const PartitionOptions& options, const std::string& name, LabelKind kind,
                        int64_t num_classes, const int64_t count[4]);

// --edge_weight `spec`: one number per edge out of the edge features (a
// named chunked array of one column, a column, or each edge's mean); the
// dataset then keeps only it, said in one line. Empty spec: nothing.
void SelectEdgeWeight(const std::string& spec, Dataset* d);
// Its parts, for partitioners that hold the features in pieces: the column
// `spec` names among `w` features (`columns`: a chunked dataset's named
// arrays), or -1 for each edge's mean, said in one line when `say` (ConfigError for
// a spec that names none); and the weights of `rows` feature rows.
int64_t EdgeWeightColumn(const std::string& spec, const std::string& name, int64_t w,
                         const std::vector<Dataset::EdgeColumns>& columns, bool say = true);
std::vector<float> EdgeWeights(const float* features, int64_t rows, int64_t w, int64_t col);

// --node_feat_from_edges for a graph with `node_dim` node and `edge_dim`
// edge features: whether node features get each node's mean in-edge
// features (asked with mean, or auto and the graph has none of its own).
// Says in one line that edge features are stored (when `say`); ConfigError for mean
// without edge features, DataError for none with no node features.
bool NodeFeaturesFromEdgesWanted(const PartitionOptions& options, const std::string& name,
                                 int64_t node_dim, int64_t edge_dim, bool say = true);
// The line that says they were derived (`had`: node features before).
void SayNodeFeaturesFromEdges(const PartitionOptions& options, const std::string& name, int64_t had,
                              int64_t edge_dim, bool undirected);

// With edge data, stored in-edges that repeat an earlier entry's (source,
// destination) pair stay separate edges: says how many in one line (a
// warning when undirected, where a list holding both directions doubles
// every edge).
void SayRepeatedEdges(int64_t repeats, bool undirected);

}  // namespace gnn
