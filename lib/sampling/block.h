// Mini-batch structures: message-flow blocks as DGL builds them, and the
// buffers a trainer consumes. Plain arrays; no LibTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/memory.h"
#include "common/sparse_rows.h"

namespace gnn {

// One layer's bipartite message-flow graph. The destination nodes are the
// first num_dst entries of src_nodes (DGL's convention), so a layer can read
// h_dst as the first num_dst rows of its input.
struct Block {
  int64_t num_dst = 0;
  std::vector<int64_t> src_nodes;  // global node ids, dst nodes first, unique
  std::vector<int64_t> indptr;     // [num_dst + 1]: CSR over destinations
  std::vector<int64_t> indices;    // local indices into src_nodes
  // Heterogeneous graphs: the relation index (the config's etypes order) of
  // each edge, parallel to `indices`; empty for a homogeneous block.
  std::vector<int64_t> etypes;
  // Optional transpose (BuildTranspose): edges grouped by source, for the
  // trainer's backward pass. Empty unless built; never on the wire.
  std::vector<int64_t> t_indptr;   // [num_src + 1]
  std::vector<int64_t> t_indices;  // local dst index per edge
  std::vector<int64_t> t_eids;     // the edge (position in `indices`) per slot
  // AddSelfLoops ran: each destination is the first in-neighbour in its own
  // row (GAT's and GCN's convention, dgl.add_self_loop).
  bool self_loops = false;
  // The sampled edges' data (rows of the partitions' edge_feat.npy; gnn-train
  // reads a 1-wide one as edge weights), parallel to `indices`:
  // [num_edges, edge_dim]. Empty (edge_dim 0) when the graph has none or
  // the consumer does not use them. A self-loop AddSelfLoops inserts
  // carries 1.0 in every column (dgl.add_self_loop's fill_data).
  int64_t edge_dim = 0;
  std::vector<float> edge_data;
  int64_t num_src() const { return static_cast<int64_t>(src_nodes.size()); }
  int64_t num_edges() const { return static_cast<int64_t>(indices.size()); }
};

struct MiniBatch {
  int64_t index = 0;           // batch number within the epoch
  std::vector<int64_t> seeds;  // global ids of the output nodes
  std::vector<Block> blocks;   // blocks[0] is nearest the input, blocks.back() ends at seeds
  int64_t feature_dim = 0;
  NoInitVector<float> features;  // [blocks[0].num_src(), feature_dim], rows follow src_nodes
                                 // ([2 * blocks[0].num_dst, feature_dim] with input_means)
  // Set by a loader with LoaderOptions::input_means: `features` holds block
  // 0's destination rows, then per destination the mean of its sampled
  // sources' rows (zero without any). The mean is linear and no gradient
  // flows into raw features, so a mean-aggregating first layer needs
  // nothing else, and the sampler, not the trainer, does that memory-bound
  // pass.
  bool input_means = false;
  // A graph of sparse features (LocalGraph::sparse): the input rows as CSR
  // [blocks[0].num_src(), feature_dim] in `sparse_features`, `features`
  // then empty (never input_means nor split_rows).
  bool sparse = false;
  SparseRows sparse_features;
  // Set by a loader with LoaderOptions::cache_slot (a trainer's GPU feature
  // cache): `features` holds only the input rows the cache lacks, in input
  // order; host_rows are their positions among input_nodes(), cached_rows
  // the other positions and cached_slots those rows' places in the cache.
  bool split_rows = false;
  std::vector<int64_t> host_rows, cached_rows, cached_slots;
  std::vector<int64_t> labels;  // [seeds.size()] class ids, or
  // a multi-label or regression graph's label rows [seeds.size(),
  // label_width] (labels then empty).
  int64_t label_width = 0;
  std::vector<float> targets;
  double sample_seconds = 0;  // time spent sampling + gathering this batch
  uint64_t wire_bytes = 0;    // bytes its making sent and received over sockets
  // Rows of other partitions its making needed, and how many of them the
  // machine's hot-row cache held (DistGraph::cache_lookups/cache_hits).
  uint64_t cache_lookups = 0;
  uint64_t cache_hits = 0;
  // Link prediction (edge batches): positive and negative pairs as positions
  // into `seeds` (see EdgeBatchPlan); empty for node batches. Not on the
  // wire: the trainer keeps its plans and attaches them.
  std::vector<int64_t> pos_head, pos_tail, neg_head, neg_tail;
  // The edge tasks on a graph with edge features: each positive edge's own
  // features [pos_head.size(), edge_input_dim], for the decoder. Not on the
  // wire either.
  int64_t edge_input_dim = 0;
  std::vector<float> edge_inputs;
  // What the consumer's LoaderOptions::stage made of the batch on the
  // thread that sampled it (a GPU trainer's pinned copies); opaque here.
  std::shared_ptr<void> staged;
  const std::vector<int64_t>& input_nodes() const { return blocks.front().src_nodes; }
};

}  // namespace gnn
