// Which rows DistGraph's first layer pulls whole and which it has summed
// where they live: the remote sums of SampleAggregate (the neighbours a
// destination's owner lacks) and the typed group sums (each owner's share
// of a group). Pure planning, no sockets and no DistGraph, so each rule is
// unit-tested on its own (tests/unit/sum_plans_test.cc); the DistGraph
// methods send what a plan says and add up what comes back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "net/messages.h"
#include "net/typed_messages.h"

namespace gnn {

// SampleAggregate's remote neighbours: destination i's are unique[row_of[k]]
// for k in [rptr[i], rptr[i + 1]) (unique sorted, distinct), owned by
// owner[u]; near[u] says this machine holds row u (its partition, the
// hot-row cache).
struct RemoteSumsPlan {
  // Rows pulled whole, each once: every near one, and each that is a
  // destination's only neighbour at its owner (a sum of one row is the row).
  std::vector<int64_t> pulled;
  // [owner]: the groups it sums, one per destination with two or more
  // neighbours there (ids increasing within a group), at most max_ids ids a
  // group (more make several).
  std::vector<net::PullSums> groups;
  // What each destination adds, as a CSR over the rows of `pulled`
  // followed by every owner's group sums, owner by owner (owner p's group g
  // is row pulled.size() + the groups of owners before p + g): destination
  // i's are add[add_ptr[i] .. add_ptr[i + 1]), its pulled rows first, then
  // its sums.
  std::vector<int64_t> add_ptr;
  std::vector<int64_t> add;
  // Distinct rows only summed, never pulled (they count as cache lookups,
  // as the rows path would have looked them up).
  int64_t summed_only = 0;
};
RemoteSumsPlan PlanRemoteSums(int64_t n, const std::vector<int64_t>& rptr,
                              const std::vector<int64_t>& unique,
                              const std::vector<int64_t>& row_of, const std::vector<int64_t>& owner,
                              const std::vector<uint8_t>& near, int parts, size_t max_ids);

// TypedGroupSums: one owner's share of one group, the rows of the group it
// holds (and this machine does not).
struct TypedShare {
  size_t group = 0;
  std::vector<int64_t> ids;
};
struct TypedSumsPlan {
  // Rows pulled whole, each once.
  std::vector<int64_t> pulled;
  // (group, row of `pulled`) for every row a group adds from `pulled`.
  std::vector<std::pair<size_t, int64_t>> add_rows;
  // [owner]: the shares it sums (ids increasing within a share), and the
  // group each of them belongs to, in order.
  std::vector<net::PullTypedSums> asked;
  std::vector<std::vector<size_t>> summed_groups;
};
// shares[p]: owner p's shares, in group order. A share of one row is that
// row; an owner whose shares of two or more rows name no more distinct
// rows than there are such shares (summing saves nothing), or every owner
// with remote_sums false, has its rows pulled instead. `asked` gets only
// ids and group offsets (the caller sets type, format and coding).
TypedSumsPlan PlanTypedSums(std::vector<std::vector<TypedShare>> shares, bool remote_sums);

}  // namespace gnn
