#include "sampling/relation_block.h"

#include <string>

#include "common/error.h"

namespace gnn {

RelationBlock ToRelationBlock(const Block& block, int64_t num_rels) {
  if (num_rels < 1) {
    throw ConfigError("ToRelationBlock: num_rels is " + std::to_string(num_rels) +
                      ", must be at least 1");
  }
  const int64_t num_dst = block.num_dst, num_edges = block.num_edges();
  if (static_cast<int64_t>(block.indptr.size()) != num_dst + 1 || block.indptr[0] != 0 ||
      block.indptr[num_dst] != num_edges) {
    throw DataError("ToRelationBlock: indptr does not describe " + std::to_string(num_dst) +
                    " destinations over " + std::to_string(num_edges) + " edges");
  }
  if (static_cast<int64_t>(block.etypes.size()) != num_edges) {
    throw DataError("ToRelationBlock: the block has " + std::to_string(block.etypes.size()) +
                    " edge relations for " + std::to_string(num_edges) +
                    " edges (etypes missing from a heterogeneous batch?)");
  }
  RelationBlock rb;
  rb.num_dst = num_dst;
  rb.num_src = block.num_src();
  rb.num_rels = num_rels;
  const int64_t rows = num_rels * num_dst;
  // Counting sort: count each (relation, destination) row into indptr[row + 1],
  // take the prefix sum, then place edges with indptr[row] as the row's
  // cursor. Visiting edges in block order keeps each row's sources in their
  // block order; afterwards every cursor sits on its row's end, so one shift
  // restores the row starts without a second array.
  rb.indptr.assign(rows + 1, 0);
  for (int64_t d = 0; d < num_dst; ++d) {
    if (block.indptr[d + 1] < block.indptr[d]) {
      throw DataError("ToRelationBlock: indptr decreases at destination " + std::to_string(d));
    }
    for (int64_t e = block.indptr[d]; e < block.indptr[d + 1]; ++e) {
      const int64_t r = block.etypes[e];
      if (r < 0 || r >= num_rels) {
        throw DataError("ToRelationBlock: edge " + std::to_string(e) + " has relation " +
                        std::to_string(r) + ", outside [0, " + std::to_string(num_rels) + ")");
      }
      ++rb.indptr[r * num_dst + d + 1];
    }
  }
  for (int64_t row = 0; row < rows; ++row) rb.indptr[row + 1] += rb.indptr[row];
  rb.indices.resize(num_edges);
  const bool eids = block.edge_dim > 0;
  if (eids) rb.eids.resize(num_edges);
  for (int64_t d = 0; d < num_dst; ++d) {
    for (int64_t e = block.indptr[d]; e < block.indptr[d + 1]; ++e) {
      const int64_t slot = rb.indptr[block.etypes[e] * num_dst + d]++;
      rb.indices[slot] = block.indices[e];
      if (eids) rb.eids[slot] = e;
    }
  }
  for (int64_t row = rows; row > 0; --row) rb.indptr[row] = rb.indptr[row - 1];
  rb.indptr[0] = 0;
  return rb;
}

RelationGroups GroupSources(const RelationBlock& rb, const std::vector<int64_t>& src_nodes,
                            const std::vector<int64_t>& rels) {
  if (static_cast<int64_t>(src_nodes.size()) != rb.num_src) {
    throw DataError("GroupSources: " + std::to_string(src_nodes.size()) +
                    " source ids for a block of " + std::to_string(rb.num_src) + " sources");
  }
  RelationGroups g;
  for (int64_t r : rels) {
    if (r < 0 || r >= rb.num_rels) {
      throw DataError("GroupSources: relation " + std::to_string(r) + " of a block of " +
                      std::to_string(rb.num_rels) + " relations");
    }
    for (int64_t d = 0; d < rb.num_dst; ++d) {
      const int64_t row = r * rb.num_dst + d;
      const int64_t b = rb.indptr[static_cast<size_t>(row)];
      const int64_t e = rb.indptr[static_cast<size_t>(row + 1)];
      if (b == e) continue;
      for (int64_t k = b; k < e; ++k)
        g.ids.push_back(src_nodes[static_cast<size_t>(rb.indices[static_cast<size_t>(k)])]);
      g.ptr.push_back(static_cast<int64_t>(g.ids.size()));
      g.rows.push_back(row);
    }
  }
  return g;
}

}  // namespace gnn
