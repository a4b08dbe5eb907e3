#include "net/batch_codec.h"

#include <algorithm>

namespace gnn::net {

Message EncodeSeedBatch(const SeedBatch& b, uint64_t request_id) {
  std::vector<int64_t> ints = {b.epoch, b.index, static_cast<int64_t>(b.rng_seed), b.replace};
  for (int f : b.fanouts) ints.push_back(f);
  Message m = MakeMessage(MsgType::kSeedBatch, request_id, std::move(ints));
  AddArray(&m, b.seeds);
  if (!b.exclude.empty()) AddArray(&m, b.exclude);
  return m;
}

SeedBatch DecodeSeedBatch(const Message& m) {
  if (m.header.msg_type() != MsgType::kSeedBatch || m.header.ints.size() < 4 ||
      m.header.ints.size() > 4 + 16 || m.frames.empty() || m.frames.size() > 2) {
    throw ProtocolError("malformed SeedBatch: " + m.header.DebugString());
  }
  SeedBatch b;
  b.epoch = m.header.ints[0];
  b.index = m.header.ints[1];
  b.rng_seed = static_cast<uint64_t>(m.header.ints[2]);
  b.replace = m.header.ints[3] != 0;
  for (size_t i = 4; i < m.header.ints.size(); ++i) {
    int64_t f = m.header.ints[i];
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
  std::vector<int64_t> ints = {b.index, static_cast<int64_t>(b.blocks.size()), b.feature_dim};
  // Optional trailing ints (older peers read 3): input_means, wire bytes,
  // cache lookups and hits; each present when any later one is.
  const bool cache = b.cache_lookups > 0;
  const bool wire = cache || b.wire_bytes > 0;
  if (wire || b.input_means) ints.push_back(b.input_means ? 1 : 0);
  if (wire) ints.push_back(static_cast<int64_t>(b.wire_bytes));
  if (cache) {
    ints.push_back(static_cast<int64_t>(b.cache_lookups));
    ints.push_back(static_cast<int64_t>(b.cache_hits));
  }
  Message m = MakeMessage(MsgType::kMiniBatch, request_id, std::move(ints));
  AddArray(&m, b.seeds);
  AddArray(&m, b.labels);
  AddArray(&m, b.features);
  for (const Block& blk : b.blocks) {
    AddArray(&m, blk.src_nodes);
    AddArray(&m, blk.indptr);
    AddArray(&m, blk.indices);
  }
  return m;
}

MiniBatch DecodeMiniBatch(const Message& m) {
  auto fail = [&](const std::string& what) {
    throw ProtocolError("malformed MiniBatch (" + m.header.DebugString() + "): " + what);
  };
  if (m.header.msg_type() != MsgType::kMiniBatch || m.header.ints.size() < 3 ||
      m.header.ints.size() > 7 || m.header.ints.size() == 6) {
    fail("header");
  }
  MiniBatch b;
  b.index = m.header.ints[0];
  if (m.header.ints.size() >= 4) {
    if (m.header.ints[3] != 0 && m.header.ints[3] != 1) fail("input_means flag");
    b.input_means = m.header.ints[3] == 1;
  }
  if (m.header.ints.size() >= 5) {
    if (m.header.ints[4] < 0) fail("wire bytes");
    b.wire_bytes = static_cast<uint64_t>(m.header.ints[4]);
  }
  if (m.header.ints.size() == 7) {
    if (m.header.ints[5] < 0 || m.header.ints[6] < 0 || m.header.ints[6] > m.header.ints[5])
      fail("cache counts");
    b.cache_lookups = static_cast<uint64_t>(m.header.ints[5]);
    b.cache_hits = static_cast<uint64_t>(m.header.ints[6]);
  }
  const int64_t num_blocks = m.header.ints[1];
  b.feature_dim = m.header.ints[2];
  if (num_blocks < 0 || num_blocks > 16 || b.feature_dim < 0) fail("counts");
  if (m.frames.size() != static_cast<size_t>(3 + 3 * num_blocks)) fail("frame count");
  b.seeds = m.CopyArray<int64_t>(0);
  b.labels = m.CopyArray<int64_t>(1);
  b.features = m.CopyArray<float>(2);
  if (b.labels.size() != b.seeds.size()) fail("labels do not match seeds");
  b.blocks.resize(num_blocks);
  for (int64_t l = 0; l < num_blocks; ++l) {
    Block& blk = b.blocks[l];
    blk.src_nodes = m.CopyArray<int64_t>(3 + 3 * l);
    blk.indptr = m.CopyArray<int64_t>(4 + 3 * l);
    blk.indices = m.CopyArray<int64_t>(5 + 3 * l);
  }
  for (int64_t l = 0; l < num_blocks; ++l) {
    Block& blk = b.blocks[l];
    const std::vector<int64_t>& dst = l + 1 < num_blocks ? b.blocks[l + 1].src_nodes : b.seeds;
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
  const size_t inputs = !num_blocks     ? b.seeds.size()
                        : b.input_means ? 2 * static_cast<size_t>(b.blocks[0].num_dst)
                                        : b.blocks[0].src_nodes.size();
  // Divide, not multiply: inputs * feature_dim can overflow and wrap to
  // the frame's size (found by tests/fuzz/protocol_fuzz.cc).
  const size_t dim = static_cast<size_t>(b.feature_dim);
  if (dim == 0 ? !b.features.empty()
               : b.features.size() % dim != 0 || b.features.size() / dim != inputs) {
    fail("features do not match the input nodes");
  }
  return b;
}

}  // namespace gnn::net
