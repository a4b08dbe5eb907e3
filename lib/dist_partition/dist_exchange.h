// What the plain and the typed distributed partitioning share between
// their ranks: which rank holds which ids, questions to the owners of ids,
// the adjacency PT-Scotch sees, feature rows moved in slices, and each
// machine's line of the report.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/timer.h"
#include "dist_partition/mpi_comm.h"
#include "graph/chunked.h"
#include "graph/csr.h"

namespace gnn {

// PT-Scotch's allowed imbalance (METIS's default ufactor is 1.03 too).
constexpr double kScotchImbalance = 0.03;

// Which rank holds which ids: rank r holds [start[r], start[r + 1]).
struct Ranges {
  std::vector<int64_t> start;
  int Owner(int64_t v) const {
    return static_cast<int>(std::upper_bound(start.begin(), start.end(), v) - start.begin()) - 1;
  }
};

// Counts per destination -> offsets into one send buffer ([size + 1]).
std::vector<int64_t> Offsets(const std::vector<int64_t>& counts);

// For each id of `ids` (held by other ranks, grouped by owner: sorted
// ids are), its owner's answer(id - owner's first id), in the same order.
// Collective: every rank calls it with its own ids.
std::vector<int64_t> AskOwners(MpiComm& comm, const Ranges& ranges, const std::vector<int64_t>& ids,
                               const std::function<int64_t(int64_t)>& answer,
                               const std::string& what);

// Labels and split masks (bit m: train, valid, test) of node type `type`'s
// chunks [c0, c1), appended to *labels and *masks. Returns the largest
// label (-1: none). DataError naming the dataset and chunk for a label
// outside [-1, 2^31) or data that is not one value per node. With
// `labels` null, the masks only.
int64_t ReadLabelsAndMasks(const ChunkedMeta& m, size_t type, int c0, int c1,
                           std::vector<int64_t>* labels, std::vector<uint8_t>* masks);

// Sorts each row of `csr`; with `dedup` also drops repeated entries.
void SortRows(Csr* csr, bool dedup, int threads);
// Sorts each row of `csr` by (entry, tag), `tags` aligned with its entries
// (the single-machine order of a graph with edge data: source, then input
// edge id). Returns the entries that repeat the one before them.
int64_t SortRowsWithTags(Csr* csr, std::vector<int64_t>* tags, int threads);

// The adjacency PT-Scotch partitions from this rank's rows of the
// symmetric adjacency `sym` (rows [lo, lo + rows), global ids, sorted and
// unique; `remote`: the sorted neighbours other ranks hold): each edge
// {u, v} kept with probability min(1, cap / max(deg u, deg v)), a seeded
// draw both ends compute alike, so the result stays symmetric. Collective.
Csr Sparsify(MpiComm& comm, const Ranges& ranges, int64_t lo, const Csr& sym,
             const std::vector<int64_t>& remote, int64_t cap, uint64_t seed);

// Largest piece of a feature chunk sent in one exchange: 256 MiB
// (GNN_FEATURE_SLICE_BYTES lowers it, so tests cross slices on small graphs).
int64_t FeatureSliceBytes();

// Sends `count` rows of `dim` floats (row i to rank dest(i)) in slices of
// at most FeatureSliceBytes(); every rank takes part in as many slices as
// the largest count of any rank needs. A row arriving from rank q goes to
// out + (*cursor)[q] * dim, and (*cursor)[q] advances. Collective.
void ExchangeFeatureRows(MpiComm& comm, const float* rows, int64_t count, int64_t dim,
                         const std::function<int(int64_t)>& dest, float* out,
                         std::vector<int64_t>* cursor);

// Every machine's host, peak memory, time and bytes sent, in rank order,
// as the report's "machines" (and "peak_rss_bytes", the largest). Collective.
void AddMachinesReport(MpiComm& comm, const StageTimer& timer, nlohmann::json* report);

}  // namespace gnn
