// Label rows in a distributed partitioning: a homogeneous chunked
// dataset's multi-label or regression targets ([nodes, width] per chunk).
// Each rank reads its chunks' rows, and the ranks agree on the width and
// on the kind SetLabelRows would choose for the whole array; the rows then
// travel to their partition's rank as feature rows do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/label_kind.h"
#include "dist_partition/agreement.h"
#include "dist_partition/mpi_comm.h"
#include "graph/chunked.h"

namespace gnn {

struct LabelRows {
  LabelKind kind = LabelKind::kClass;
  int64_t width = 0;
  std::vector<float> rows;  // [this rank's nodes, width] unless kind is kClass
};

// Chunks [c0, c1) (nodes from `first_node` on); `task`: gnn-partition
// --task. Rows that are class ids after all (one integral column, task
// auto or node) go to *labels, and *max_label is their largest. Errors as
// SetLabelRows's (a NaN names its node), agreed; rank 0 says the kind in
// one line. Collective.
LabelRows ReadLabelRows(MpiComm& comm, Agreement& agree, const ChunkedMeta& m,
                        const std::string& task, int c0, int c1, int64_t first_node,
                        std::vector<int64_t>* labels, int64_t* max_label);

// Sends this rank's rows (*rows, freed) to their nodes' partitions
// (`part` of each node), as feature rows travel; returns the `received`
// rows of this rank's partition in new-id order (`nodes`: how many nodes
// this rank sent each rank). Collective.
std::vector<float> MoveLabelRows(MpiComm& comm, const std::vector<int64_t>& nodes,
                                 const std::vector<int32_t>& part, size_t received,
                                 LabelRows* rows);

}  // namespace gnn
