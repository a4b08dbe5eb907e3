// The heterogeneous partitioner against a reference built here from the
// dataset itself: every partition's stored in-edges (in their rows' order:
// by relation, then by the source's input id), feature rows, labels and
// split masks of synthetic:mag-small, directed and --undirected, random and
// METIS over 1 and 3 partitions. The partitioner streams its files from a
// keyed CSC; this checks that what it streams is exactly the dataset.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "graph/hetero.h"
#include "partition/config.h"
#include "partition/hetero_local.h"
#include "partition/partition.h"
#include "test_util.h"

using namespace gnn;

namespace {

// (relation, source input id) of every in-edge of each node, by input id
// (type offset + type-local id), sorted.
using InEdges = std::vector<std::vector<std::pair<int64_t, int64_t>>>;

struct Reference {
  HeteroDataset d;
  std::vector<int64_t> offset;  // input id of each type's node 0
  InEdges in_edges;
};

Reference BuildReference(bool undirected) {
  DatasetOptions o;
  o.dataset = "synthetic:mag-small";
  Reference ref;
  ref.d = LoadHeteroDataset(o);
  if (undirected) AddReverseRelations(&ref.d);
  ref.offset.push_back(0);
  for (const NodeType& t : ref.d.node_types) ref.offset.push_back(ref.offset.back() + t.num_nodes);
  ref.in_edges.resize(static_cast<size_t>(ref.offset.back()));
  for (size_t e = 0; e < ref.d.relations.size(); ++e) {
    const Relation& r = ref.d.relations[e];
    const int64_t so = ref.offset[static_cast<size_t>(ref.d.TypeIndex(r.src_type))];
    const int64_t dof = ref.offset[static_cast<size_t>(ref.d.TypeIndex(r.dst_type))];
    for (int64_t i = 0; i < r.num_edges(); ++i)
      ref.in_edges[dof + r.dst[i]].push_back({static_cast<int64_t>(e), so + r.src[i]});
  }
  for (auto& row : ref.in_edges) std::sort(row.begin(), row.end());
  return ref;
}

// Counts what differs between the partitions of `c` and the reference.
int64_t Mismatches(const Reference& ref, const PartitionConfig& c) {
  std::vector<HeteroPartition> parts;
  std::vector<int64_t> input_of(static_cast<size_t>(c.num_nodes), -1);  // new id -> input id
  for (int p = 0; p < c.num_parts; ++p) {
    parts.push_back(LoadHeteroPartition(c, p, /*verify_checksums=*/true));
    const HeteroPartition& part = parts.back();
    for (int64_t i = 0; i < part.num_nodes; ++i) input_of[part.node_start + i] = part.rng_keys[i];
  }
  std::vector<int64_t> seen = input_of;
  std::sort(seen.begin(), seen.end());
  int64_t bad = 0;
  for (size_t v = 0; v < seen.size(); ++v) bad += seen[v] != static_cast<int64_t>(v);
  const HeteroDataset& d = ref.d;
  const size_t target = static_cast<size_t>(d.TypeIndex(d.target));
  for (const HeteroPartition& part : parts) {
    for (int64_t i = 0; i < part.num_nodes; ++i) {
      std::vector<std::pair<int64_t, int64_t>> row;
      for (int64_t k = part.indptr[i]; k < part.indptr[i + 1]; ++k)
        row.push_back({part.etypes[k], input_of[part.indices[k]]});
      bad += row != ref.in_edges[part.rng_keys[i]];
    }
    const NodeType& paper = d.node_types[target];
    const auto [tb, te] = part.ntype_ranges[target];
    for (int64_t v = tb; v < te; ++v) {
      const int64_t local = part.orig_nids[v - part.node_start], j = v - tb;
      const float* want = paper.features.data() + local * paper.feature_dim;
      bad += !std::equal(want, want + paper.feature_dim,
                         part.features[target].data() + j * paper.feature_dim);
      bad += part.labels[j] != d.labels[local];
      bad += part.masks[0][j] != std::binary_search(d.train_idx.begin(), d.train_idx.end(), local);
      bad += part.masks[2][j] != std::binary_search(d.test_idx.begin(), d.test_idx.end(), local);
    }
  }
  return bad;
}

}  // namespace

TEST_CASE("heterogeneous partitions hold exactly the dataset's typed in-edges, rows and splits",
          "[integration]") {
  test::TempDir dir;
  for (bool undirected : {false, true}) {
    const Reference ref = BuildReference(undirected);
    for (const char* method : {"random", "metis"}) {
      for (int parts : {1, 3}) {
        PartitionOptions o;
        o.data.dataset = "synthetic:mag-small";
        o.num_parts = parts;
        o.part_method = method;
        o.undirected = undirected;
        o.balance_train = true;
        o.num_threads = 2;
        o.output = dir / (std::string(method) + std::to_string(parts) + (undirected ? "u" : "d"));
        const PartitionConfig c = LoadPartitionConfig(RunPartition(o).config_path);
        INFO(method << " over " << parts << (undirected ? ", undirected" : ", directed"));
        CHECK(c.num_edges == ref.d.num_edges());
        CHECK(c.etypes.size() == ref.d.relations.size());
        CHECK(Mismatches(ref, c) == 0);
      }
    }
  }
}
