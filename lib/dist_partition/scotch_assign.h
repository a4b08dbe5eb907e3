// The distributed engine: PT-Scotch's k-way partitioning (64-bit build,
// SCOTCH_Num = int64_t) of a graph spread over the MPI ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "dist_partition/mpi_comm.h"

namespace gnn {

// This rank's slice of the symmetric adjacency: rows are the global ids
// [first, first + indptr.size() - 1), entries global ids (sorted, no
// duplicates, no self-loops; the whole graph symmetric). `weights` holds one
// positive weight per row (PT-Scotch balances one weight). Returns the part
// of each row, in [0, num_parts). Deterministic for a given input, seed and
// rank count. Error with PT-Scotch's own message when it fails.
std::vector<int32_t> ScotchAssign(MpiComm& comm, std::vector<int64_t>& indptr,
                                  std::vector<int64_t>& indices, std::vector<int64_t>& weights,
                                  int num_parts, double imbalance, uint64_t seed);

// "PT-Scotch 7.0.3 (int64)", for reports.
const char* ScotchVersion();

}  // namespace gnn
