#include "net/batch_codec.h"

#include <algorithm>
#include <cstring>

#include "common/label_kind.h"
#include "net/typed_messages.h"
#include "sampling/relation_block.h"

namespace gnn::net {

namespace {

// Sets each block's num_dst from the next block's sources (the seeds for
// the last) and checks the chain: offsets over the destinations, monotone,
// spanning the edges; destinations first among the sources; edge indices
// inside the sources. `fail(what)` throws.
template <typename Fail>
void CheckBlocks(const std::vector<int64_t>& seeds, std::vector<Block>* blocks, Fail fail) {
  const size_t num_blocks = blocks->size();
  for (size_t l = 0; l < num_blocks; ++l) {
    Block& blk = (*blocks)[l];
    const std::vector<int64_t>& dst = l + 1 < num_blocks ? (*blocks)[l + 1].src_nodes : seeds;
    blk.num_dst = static_cast<int64_t>(dst.size());
    if (blk.indptr.size() != dst.size() + 1 || blk.indptr.front() != 0 ||
        blk.indptr.back() != blk.num_edges()) {
      fail("block " + std::to_string(l) + " offsets do not match its edges");
    }
    if (blk.num_src() < blk.num_dst || !std::equal(dst.begin(), dst.end(), blk.src_nodes.begin())) {
      fail("block " + std::to_string(l) + " does not list its dst nodes first");
    }
    for (size_t i = 0; i + 1 < blk.indptr.size(); ++i) {
      if (blk.indptr[i + 1] < blk.indptr[i]) fail("block offsets decrease");
    }
    for (int64_t x : blk.indices) {
      if (x < 0 || x >= blk.num_src())
        fail("block " + std::to_string(l) + " edge index out of range");
    }
  }
}

// One frame per block and array: what a message can hold.
constexpr size_t kMaxTypedBlocks = (kMaxArrayFrames - 3) / 4;

// Fan-outs a SeedBatch carries at most.
constexpr size_t kMaxSeedBatchFanouts = 16;

}  // namespace

Message EncodeSeedBatch(const SeedBatch& b, uint64_t request_id) {
  Message m = MakeMessage(MsgType::kSeedBatch, request_id,
                          {{Key::kEpoch, b.epoch},
                           {Key::kIndex, b.index},
                           {Key::kRngSeed, static_cast<int64_t>(b.rng_seed)},
                           {Key::kReplace, b.replace ? 1 : 0}});
  for (int f : b.fanouts) m.header.Add(Key::kFanout, f);
  AddArray(&m, b.seeds);
  if (!b.exclude.empty()) AddArray(&m, b.exclude);
  return m;
}

SeedBatch DecodeSeedBatch(const Message& m) {
  const FieldReader r(m, MsgType::kSeedBatch,
                      {Key::kEpoch, Key::kIndex, Key::kRngSeed, Key::kReplace, Key::kFanout},
                      {Key::kFanout});
  if (m.frames.empty() || m.frames.size() > 2) r.Malformed(m.header.DebugString());
  SeedBatch b;
  b.epoch = r.Get(Key::kEpoch);
  b.index = r.Get(Key::kIndex);
  b.rng_seed = static_cast<uint64_t>(r.Get(Key::kRngSeed));
  b.replace = r.Get(Key::kReplace) != 0;
  for (int64_t f : r.List(Key::kFanout, kMaxSeedBatchFanouts)) {
    if (f < -1 || f > (1 << 20))
      throw ProtocolError("SeedBatch fanout " + std::to_string(f) + " out of range");
    b.fanouts.push_back(static_cast<int>(f));
  }
  b.seeds = m.CopyArray<int64_t>(0);
  if (m.frames.size() == 2) {
    b.exclude = m.CopyArray<int64_t>(1);
    if (b.exclude.size() % 2 != 0) throw ProtocolError("SeedBatch excluded edges: odd id count");
  }
  return b;
}

Message EncodeMiniBatch(const MiniBatch& b, uint64_t request_id) {
  // Label rows: the labels frame holds float32 [seeds, label_width].
  const bool rows = b.label_width > 0;
  // Edge data: edge_dim, and a 4th frame per block.
  const int64_t edge_dim = b.blocks.empty() ? 0 : b.blocks.front().edge_dim;
  const bool edges = edge_dim > 0;
  // Sparse input rows: the sparse flag, and three CSR frames last.
  const bool sparse = b.sparse;
  Message m = MakeMessage(MsgType::kMiniBatch, request_id,
                          {{Key::kIndex, b.index},
                           {Key::kBlocks, static_cast<int64_t>(b.blocks.size())},
                           {Key::kFeatureDim, b.feature_dim}});
  // The optional fields: written only when not their default (0, unset).
  Header& h = m.header;
  if (b.input_means) h.Add(Key::kInputMeans, 1);
  if (b.wire_bytes > 0) h.Add(Key::kWireBytes, static_cast<int64_t>(b.wire_bytes));
  if (b.cache_lookups > 0) h.Add(Key::kCacheLookups, static_cast<int64_t>(b.cache_lookups));
  if (b.cache_hits > 0) h.Add(Key::kCacheHits, static_cast<int64_t>(b.cache_hits));
  if (rows) h.Add(Key::kLabelWidth, b.label_width);
  if (edges) h.Add(Key::kEdgeDim, edge_dim);
  if (sparse) h.Add(Key::kSparse, 1);
  AddArray(&m, b.seeds);
  if (rows) {
    AddArray(&m, b.targets);
  } else {
    AddArray(&m, b.labels);
  }
  AddArray(&m, b.features);
  for (const Block& blk : b.blocks) {
    AddArray(&m, blk.src_nodes);
    AddArray(&m, blk.indptr);
    AddArray(&m, blk.indices);
    if (edges) {
      if (blk.edge_dim != edge_dim ||
          blk.edge_data.size() != blk.indices.size() * static_cast<size_t>(edge_dim)) {
        throw DataError("MiniBatch: a block's edge data does not match its edges");
      }
      AddArray(&m, blk.edge_data);
    }
  }
  if (sparse) {
    const SparseRows& x = b.sparse_features;
    const size_t inputs = b.blocks.empty() ? b.seeds.size() : b.blocks.front().src_nodes.size();
    if (b.input_means || !b.features.empty() || x.indptr.size() != inputs + 1 ||
        x.cols != b.feature_dim || x.indices.size() != static_cast<size_t>(x.nnz()) ||
        !(x.values.empty() || x.values.size() == x.indices.size())) {
      throw DataError(
          "MiniBatch: its sparse rows do not match its input nodes, width or entries (or come "
          "with dense ones)");
    }
    AddArray(&m, x.indptr);
    AddArray(&m, x.indices);
    AddArray(&m, x.values);
  }
  return m;
}

MiniBatch DecodeMiniBatch(const Message& m) {
  auto fail = [&](const std::string& what) {
    throw ProtocolError("malformed MiniBatch (" + m.header.DebugString() + "): " + what);
  };
  const FieldReader r(
      m, MsgType::kMiniBatch,
      {Key::kIndex, Key::kBlocks, Key::kFeatureDim, Key::kInputMeans, Key::kWireBytes,
       Key::kCacheLookups, Key::kCacheHits, Key::kLabelWidth, Key::kEdgeDim, Key::kSparse});
  MiniBatch b;
  b.index = r.Get(Key::kIndex);
  b.sparse = r.Flag(Key::kSparse);
  b.input_means = r.Flag(Key::kInputMeans);
  // Widths are written only when set (absent: 0, no edge data; class ids),
  // so one present is at least 1.
  const int64_t edge_dim = r.Get(Key::kEdgeDim, 0);
  if (r.Has(Key::kEdgeDim) && (edge_dim < 1 || edge_dim > kMaxEdgeDataWidth)) {
    fail("edge data width");
  }
  b.label_width = r.Get(Key::kLabelWidth, 0);
  if (r.Has(Key::kLabelWidth) && (b.label_width < 1 || b.label_width > kMaxLabelWidth)) {
    fail("label width");
  }
  const int64_t wire_bytes = r.Get(Key::kWireBytes, 0);
  if (wire_bytes < 0) fail("wire bytes");
  b.wire_bytes = static_cast<uint64_t>(wire_bytes);
  const int64_t lookups = r.Get(Key::kCacheLookups, 0), hits = r.Get(Key::kCacheHits, 0);
  if (lookups < 0 || hits < 0 || hits > lookups) fail("cache counts");
  b.cache_lookups = static_cast<uint64_t>(lookups);
  b.cache_hits = static_cast<uint64_t>(hits);
  const int64_t num_blocks = r.Get(Key::kBlocks);
  b.feature_dim = r.Get(Key::kFeatureDim);
  if (num_blocks < 0 || num_blocks > 16 || b.feature_dim < 0) fail("counts");
  const int64_t per_block = edge_dim > 0 ? 4 : 3;
  const size_t block_frames = static_cast<size_t>(3 + per_block * num_blocks);
  if (m.frames.size() != block_frames + (b.sparse ? 3 : 0)) fail("frame count");
  b.seeds = m.CopyArray<int64_t>(0);
  if (b.label_width > 0) {
    b.targets = m.CopyArray<float>(1);
    if (b.targets.size() / static_cast<size_t>(b.label_width) != b.seeds.size() ||
        b.targets.size() % static_cast<size_t>(b.label_width) != 0)
      fail("label rows do not match seeds");
  } else {
    b.labels = m.CopyArray<int64_t>(1);
    if (b.labels.size() != b.seeds.size()) fail("labels do not match seeds");
  }
  {
    size_t n = 0;
    const float* rows = m.Array<float>(2, &n);
    b.features.assign(rows, rows + n);
  }
  b.blocks.resize(num_blocks);
  for (int64_t l = 0; l < num_blocks; ++l) {
    Block& blk = b.blocks[l];
    blk.src_nodes = m.CopyArray<int64_t>(3 + per_block * l);
    blk.indptr = m.CopyArray<int64_t>(4 + per_block * l);
    blk.indices = m.CopyArray<int64_t>(5 + per_block * l);
    if (edge_dim > 0) {
      blk.edge_dim = edge_dim;
      blk.edge_data = m.CopyArray<float>(6 + per_block * l);
      const size_t w = static_cast<size_t>(edge_dim);
      if (blk.edge_data.size() % w != 0 || blk.edge_data.size() / w != blk.indices.size())
        fail("edge data does not match block " + std::to_string(l) + "'s edges");
    }
  }
  CheckBlocks(b.seeds, &b.blocks, fail);
  const size_t inputs = !num_blocks     ? b.seeds.size()
                        : b.input_means ? 2 * static_cast<size_t>(b.blocks[0].num_dst)
                                        : b.blocks[0].src_nodes.size();
  if (b.sparse) {
    if (b.input_means || !b.features.empty()) fail("sparse rows with dense ones");
    SparseRows& x = b.sparse_features;
    x.cols = b.feature_dim;
    x.indptr = m.CopyArray<int64_t>(block_frames);
    x.indices = m.CopyArray<int32_t>(block_frames + 1);
    x.values = m.CopyArray<float>(block_frames + 2);
    if (x.indptr.size() != inputs + 1 || b.feature_dim > INT32_MAX) {
      fail("sparse rows do not match the input nodes");
    }
    try {
      CheckSparse(x.view(), static_cast<int64_t>(x.indices.size()),
                  static_cast<int64_t>(x.values.size()), "sparse rows");
    } catch (const DataError& e) {
      fail(e.what());
    }
    return b;
  }
  // Divide, not multiply: inputs * feature_dim can overflow and wrap to
  // the frame's size (found by tests/fuzz/protocol_fuzz.cc).
  const size_t dim = static_cast<size_t>(b.feature_dim);
  if (dim == 0 ? !b.features.empty()
               : b.features.size() % dim != 0 || b.features.size() / dim != inputs) {
    fail("features do not match the input nodes");
  }
  return b;
}

Message EncodeTypedSeedBatch(const TypedSeedBatch& b, uint64_t request_id) {
  const size_t layers = b.fanouts.size();
  const size_t rels = layers ? b.fanouts[0].size() : 0;
  std::vector<int32_t> flat;
  for (const std::vector<int>& f : b.fanouts) {
    if (f.size() != rels) throw DataError("TypedSeedBatch: layers of different relation counts");
    flat.insert(flat.end(), f.begin(), f.end());
  }
  Message m = MakeMessage(MsgType::kTypedSeedBatch, request_id,
                          {{Key::kEpoch, b.epoch},
                           {Key::kIndex, b.index},
                           {Key::kRngSeed, static_cast<int64_t>(b.rng_seed)},
                           {Key::kReplace, b.replace ? 1 : 0},
                           {Key::kLayers, static_cast<int64_t>(layers)},
                           {Key::kRelations, static_cast<int64_t>(rels)}});
  AddArray(&m, b.seeds);
  AddArray(&m, flat);
  if (!b.exclude.empty()) AddArray(&m, b.exclude);
  return m;
}

TypedSeedBatch DecodeTypedSeedBatch(const Message& m) {
  auto fail = [&](const std::string& what) {
    throw ProtocolError("malformed TypedSeedBatch (" + m.header.DebugString() + "): " + what);
  };
  const FieldReader r(
      m, MsgType::kTypedSeedBatch,
      {Key::kEpoch, Key::kIndex, Key::kRngSeed, Key::kReplace, Key::kLayers, Key::kRelations});
  if (m.frames.size() != 2 && m.frames.size() != 3) fail("shape");
  const int64_t layers = r.Get(Key::kLayers), rels = r.Get(Key::kRelations);
  if (layers < 1 || layers > static_cast<int64_t>(kMaxTypedBlocks) || rels < 1 ||
      rels > kMaxRelations) {
    fail("layer or relation count");
  }
  TypedSeedBatch b;
  b.epoch = r.Get(Key::kEpoch);
  b.index = r.Get(Key::kIndex);
  b.rng_seed = static_cast<uint64_t>(r.Get(Key::kRngSeed));
  b.replace = r.Get(Key::kReplace) != 0;
  b.seeds = m.CopyArray<int64_t>(0);
  const std::vector<int32_t> flat = m.CopyArray<int32_t>(1);
  if (flat.size() != static_cast<size_t>(layers * rels)) fail("fan-outs of another shape");
  for (int64_t l = 0; l < layers; ++l) {
    std::vector<int>& f = b.fanouts.emplace_back();
    for (int64_t r = 0; r < rels; ++r) {
      const int32_t x = flat[static_cast<size_t>(l * rels + r)];
      if (x < -1 || x > (1 << 20)) fail("fan-out " + std::to_string(x) + " out of range");
      f.push_back(x);
    }
  }
  if (m.frames.size() == 3) {
    b.exclude = m.CopyArray<int64_t>(2);
    if (b.exclude.empty() || b.exclude.size() % 2 != 0) fail("excluded edges: odd id count");
  }
  return b;
}

Message EncodeTypedMiniBatch(const HeteroBatch& b, uint64_t request_id) {
  if (b.blocks.empty() || b.blocks.size() > kMaxTypedBlocks) {
    throw DataError("a typed mini-batch of " + std::to_string(b.blocks.size()) + " blocks (1 to " +
                    std::to_string(kMaxTypedBlocks) + " travel)");
  }
  // One relation width for every block: the widest any needs.
  int width = 1;
  for (const Block& blk : b.blocks) width = std::max(width, RelationWidth(blk.etypes));
  Message m = MakeMessage(MsgType::kTypedMiniBatch, request_id,
                          {{Key::kIndex, b.index},
                           {Key::kBlocks, static_cast<int64_t>(b.blocks.size())},
                           {Key::kTypes, static_cast<int64_t>(b.features.size())},
                           {Key::kRelationWidth, width}});
  // The optional fields: written only when not their default (0, unset).
  Header& h = m.header;
  if (b.wire_bytes > 0) h.Add(Key::kWireBytes, static_cast<int64_t>(b.wire_bytes));
  if (b.cache_lookups > 0) h.Add(Key::kCacheLookups, static_cast<int64_t>(b.cache_lookups));
  if (b.cache_hits > 0) h.Add(Key::kCacheHits, static_cast<int64_t>(b.cache_hits));
  if (b.input_means) h.Add(Key::kInputMeans, 1);
  // Edge rows (RGCN with edge features; never with input means): every
  // block's, in block order, one last frame.
  const int64_t edge_dim = b.blocks.front().edge_dim;
  if (edge_dim > 0) {
    if (b.input_means) throw DataError("a typed mini-batch of means carries no edge rows");
    h.Add(Key::kEdgeDim, edge_dim);
  }
  AddArray(&m, b.seeds);
  AddArray(&m, b.labels);
  size_t floats = 0;
  for (const std::vector<float>& f : b.features) floats += f.size();
  zmq::message_t rows(floats * sizeof(float));
  size_t at = 0;
  for (const std::vector<float>& f : b.features) {
    if (!f.empty())
      std::memcpy(static_cast<char*>(rows.data()) + at, f.data(), f.size() * sizeof(float));
    at += f.size() * sizeof(float);
  }
  AddFrame(&m, std::move(rows));
  for (const Block& blk : b.blocks) {
    AddArray(&m, blk.src_nodes);
    AddArray(&m, blk.indptr);
    AddArray(&m, blk.indices);
    // The block's ids in the message's width (AddRelations would pick each
    // block's own).
    if (width == 1) {
      AddArray(&m, std::vector<uint8_t>(blk.etypes.begin(), blk.etypes.end()));
    } else if (width == 2) {
      AddArray(&m, std::vector<uint16_t>(blk.etypes.begin(), blk.etypes.end()));
    } else {
      AddArray(&m, std::vector<int32_t>(blk.etypes.begin(), blk.etypes.end()));
    }
  }
  if (b.input_means) {
    std::vector<float> means;
    for (const std::vector<float>& r : b.means) means.insert(means.end(), r.begin(), r.end());
    AddArray(&m, means);
  }
  if (edge_dim > 0) {
    std::vector<float> rows;
    for (const Block& blk : b.blocks) {
      if (blk.edge_dim != edge_dim ||
          blk.edge_data.size() != blk.indices.size() * static_cast<size_t>(edge_dim)) {
        throw DataError("a typed mini-batch's blocks carry edge rows of different widths");
      }
      rows.insert(rows.end(), blk.edge_data.begin(), blk.edge_data.end());
    }
    AddArray(&m, rows);
  }
  return m;
}

namespace {

// An input_means batch's means (frame `frame`): each featured relation's,
// one row per non-empty (relation, destination) group of block 0.
template <typename Fail>
void ReadMeans(const Message& m, size_t frame, const TypedBatchSchema& schema, HeteroBatch* b,
               Fail fail) {
  const int64_t num_types = static_cast<int64_t>(schema.feature_dims.size());
  // Each featured relation's means: one row per non-empty (relation,
  // destination) group of block 0, in its source type's width.
  b->input_means = true;
  const RelationBlock rb = ToRelationBlock(b->blocks.front(), schema.num_rels);
  size_t n = 0;
  const float* all = m.Array<float>(frame, &n);
  size_t at = 0;
  b->means.assign(static_cast<size_t>(schema.num_rels), {});
  for (int64_t r = 0; r < schema.num_rels; ++r) {
    const int t = static_cast<size_t>(r) < schema.rel_src_type.size()
                      ? schema.rel_src_type[static_cast<size_t>(r)]
                      : -1;
    const int64_t dim =
        t >= 0 && t < num_types ? schema.feature_dims[static_cast<size_t>(t)] : int64_t{0};
    if (dim <= 0) continue;
    size_t groups = 0;
    for (int64_t d = 0; d < rb.num_dst; ++d) {
      const size_t row = static_cast<size_t>(r * rb.num_dst + d);
      groups += rb.indptr[row + 1] > rb.indptr[row];
    }
    const size_t want = groups * static_cast<size_t>(dim);
    if (want > n - at) fail("means do not cover relation " + std::to_string(r) + "'s groups");
    b->means[static_cast<size_t>(r)].assign(all + at, all + at + want);
    at += want;
  }
  if (at != n) fail("means beyond the featured relations' groups");
}

// Every block's edge rows (frame `frame`), in block order.
template <typename Fail>
void ReadEdgeRows(const Message& m, size_t frame, int64_t edge_dim, std::vector<Block>* blocks,
                  Fail fail) {
  size_t n = 0;
  const float* rows = m.Array<float>(frame, &n);
  size_t at = 0;
  const size_t w = static_cast<size_t>(edge_dim);
  for (Block& blk : *blocks) {
    const size_t want = blk.indices.size() * w;
    if (want > n - at) fail("edge rows do not cover the blocks' edges");
    blk.edge_dim = edge_dim;
    blk.edge_data.assign(rows + at, rows + at + want);
    at += want;
  }
  if (at != n) fail("edge rows beyond the blocks' edges");
}

}  // namespace

HeteroBatch DecodeTypedMiniBatch(const Message& m, const TypedBatchSchema& schema) {
  auto fail = [&](const std::string& what) {
    throw ProtocolError("malformed TypedMiniBatch (" + m.header.DebugString() + "): " + what);
  };
  const FieldReader r(m, MsgType::kTypedMiniBatch,
                      {Key::kIndex, Key::kBlocks, Key::kTypes, Key::kRelationWidth, Key::kWireBytes,
                       Key::kCacheLookups, Key::kCacheHits, Key::kInputMeans, Key::kEdgeDim});
  const bool means = r.Flag(Key::kInputMeans);
  const int64_t edge_dim = r.Get(Key::kEdgeDim, 0);
  if (r.Has(Key::kEdgeDim) && (edge_dim < 1 || edge_dim > kMaxEdgeDataWidth || means)) {
    fail("edge data width " + std::to_string(edge_dim));
  }
  if (edge_dim != schema.edge_dim) {
    fail("edge rows " + std::to_string(edge_dim) + " wide where " +
         std::to_string(schema.edge_dim) + " were asked");
  }
  const int64_t num_blocks = r.Get(Key::kBlocks), num_types = r.Get(Key::kTypes);
  const int64_t relation_width = r.Get(Key::kRelationWidth);
  const int64_t wire_bytes = r.Get(Key::kWireBytes, 0);
  if (num_blocks < 1 || num_blocks > static_cast<int64_t>(kMaxTypedBlocks) || wire_bytes < 0) {
    fail("counts");
  }
  const int64_t lookups = r.Get(Key::kCacheLookups, 0), hits = r.Get(Key::kCacheHits, 0);
  if (lookups < 0 || hits < 0 || hits > lookups) fail("cache counters");
  if (num_types != static_cast<int64_t>(schema.feature_dims.size())) {
    fail(std::to_string(num_types) + " node types, the graph has " +
         std::to_string(schema.feature_dims.size()));
  }
  if (m.frames.size() !=
      static_cast<size_t>(3 + 4 * num_blocks + (means ? 1 : 0) + (edge_dim > 0 ? 1 : 0))) {
    fail("frame count");
  }
  HeteroBatch b;
  b.index = r.Get(Key::kIndex);
  b.wire_bytes = static_cast<uint64_t>(wire_bytes);
  b.cache_lookups = static_cast<uint64_t>(lookups);
  b.cache_hits = static_cast<uint64_t>(hits);
  b.seeds = m.CopyArray<int64_t>(0);
  b.labels = m.CopyArray<int64_t>(1);
  if (b.labels.size() != b.seeds.size()) fail("labels do not match seeds");
  b.blocks.resize(static_cast<size_t>(num_blocks));
  for (int64_t l = 0; l < num_blocks; ++l) {
    Block& blk = b.blocks[static_cast<size_t>(l)];
    const size_t f = static_cast<size_t>(3 + 4 * l);
    blk.src_nodes = m.CopyArray<int64_t>(f);
    blk.indptr = m.CopyArray<int64_t>(f + 1);
    blk.indices = m.CopyArray<int64_t>(f + 2);
    blk.etypes = ReadRelations(m, f + 3, relation_width, schema.num_rels);
    if (blk.etypes.size() != blk.indices.size()) {
      fail("block " + std::to_string(l) + " has no relation for every edge");
    }
  }
  CheckBlocks(b.seeds, &b.blocks, fail);
  if (edge_dim > 0) {
    ReadEdgeRows(m, static_cast<size_t>(3 + 4 * num_blocks), edge_dim, &b.blocks, fail);
  }
  try {
    b.GroupInputsByType(static_cast<size_t>(num_types), schema.type_of,
                        means ? b.blocks.front().num_dst : -1);
  } catch (const DataError& e) {
    fail(e.what());
  }
  if (means) ReadMeans(m, static_cast<size_t>(3 + 4 * num_blocks), schema, &b, fail);
  // Every featured type's rows, in type order, one frame.
  size_t n = 0;
  const float* rows = m.Array<float>(2, &n);
  size_t at = 0;
  for (size_t t = 0; t < static_cast<size_t>(num_types); ++t) {
    const size_t dim = static_cast<size_t>(std::max<int64_t>(0, schema.feature_dims[t]));
    const size_t want = b.ids[t].size() * dim;
    if (want > n - at) fail("features do not cover the input nodes");
    b.features[t].assign(rows + at, rows + at + want);
    at += want;
  }
  if (at != n) fail("features beyond the input nodes");
  return b;
}

}  // namespace gnn::net
