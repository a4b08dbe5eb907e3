// Ordering and deduplicating a batch's node ids: LSD radix sorts over the
// ids' range, which on a batch's 10^4-10^5 ids take a fraction of
// std::sort's time (and of a binary search per id).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gnn {

// Sorts positions `pos` by ids[pos], every such id inside [lo, hi): a radix
// sort over (id - lo, position) pairs, 11 bits a pass (two passes for a
// range of up to 4M nodes). Stable.
void SortByIdInRange(std::vector<size_t>* pos, const std::vector<int64_t>& ids, int64_t lo,
                     int64_t hi);

// The distinct ids of `ids` (all inside [lo, hi)) in increasing order, and
// for each id its index there: unique[row_of[k]] == ids[k].
void DistinctIds(const std::vector<int64_t>& ids, int64_t lo, int64_t hi,
                 std::vector<int64_t>* unique, std::vector<int64_t>* row_of);

}  // namespace gnn
