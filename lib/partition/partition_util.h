// What gnn-partition's homogeneous and heterogeneous paths share: the
// output folder (checked first, written in a unique temporary folder and
// published atomically), the relabeling (partition-major new ids) and
// small report helpers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

}  // namespace gnn
