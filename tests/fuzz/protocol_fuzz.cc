// libFuzzer target for the wire protocol's decoders: net::Decode (header
// frame + array frames), the typed messages (net/messages.h) and the
// SeedBatch / MiniBatch codecs with their typed forms (TypedSeedBatch and
// the HeteroBatch codec, relation ids of 1, 2 or 4 bytes). The only
// acceptable failure is a ProtocolError; anything else (another exception,
// a sanitizer report, a decoded message that breaks a documented invariant)
// is a crash.
//
// Input layout: byte 0 = number of frames (mod 36); then every frame but
// the last is a 2-byte little-endian length followed by that many bytes
// (cut short at the end of the input); the last frame is the rest.
//
//   cmake -S . -B build-fuzz -DGNN_FUZZ=ON -DGNN_WITH_TORCH=OFF -DGNN_BUILD_TESTS=OFF
//   (with CXX=clang++) ; build-fuzz/tests/fuzz/gnn-protocol-fuzz -max_total_time=60
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "fuzz_frames.h"
#include "net/batch_codec.h"
#include "net/messages.h"
#include "net/protocol.h"

namespace {

using gnn::Block;
using gnn::HeteroBatch;
using gnn::MiniBatch;
using gnn::ProtocolError;
using namespace gnn::net;

[[noreturn]] void Broken(const std::string& what) {
  std::fprintf(stderr, "invariant broken: %s\n", what.c_str());
  std::abort();
}

std::vector<zmq::message_t> Split(const uint8_t* data, size_t size) {
  return gnn::fuzz::SplitFrames(data, size, 36);
}

void CheckHeaderRoundTrip(const Header& h) {
  zmq::message_t again = EncodeHeader(h);
  Header back = DecodeHeader(again);
  if (back.magic != h.magic || back.version != h.version || back.type != h.type ||
      back.request_id != h.request_id || back.frame_bytes != h.frame_bytes ||
      back.fields != h.fields || back.text != h.text) {
    Broken("header does not round-trip: " + h.DebugString());
  }
}

void CheckSeedBatch(const Message& m, const SeedBatch& b) {
  for (int f : b.fanouts) {
    if (f < -1 || f > (1 << 20)) Broken("SeedBatch fanout out of range");
  }
  if (b.seeds.size() * sizeof(int64_t) != m.frames[0].size()) Broken("SeedBatch seed count");
}

void CheckMiniBatch(const MiniBatch& b) {
  if (b.label_width > 0) {
    if (!b.labels.empty() || b.label_width > (1 << 16) ||
        b.targets.size() != b.seeds.size() * static_cast<size_t>(b.label_width)) {
      Broken("MiniBatch label rows vs seeds");
    }
  } else if (b.labels.size() != b.seeds.size() || !b.targets.empty()) {
    Broken("MiniBatch labels vs seeds");
  }
  if (b.feature_dim < 0) Broken("MiniBatch negative feature_dim");
  for (size_t l = 0; l < b.blocks.size(); ++l) {
    const Block& blk = b.blocks[l];
    const std::vector<int64_t>& dst = l + 1 < b.blocks.size() ? b.blocks[l + 1].src_nodes : b.seeds;
    if (blk.num_dst != static_cast<int64_t>(dst.size())) Broken("MiniBatch num_dst");
    if (blk.indptr.size() != dst.size() + 1) Broken("MiniBatch indptr size");
    if (blk.indptr.front() != 0 || blk.indptr.back() != blk.num_edges()) {
      Broken("MiniBatch indptr ends");
    }
    for (size_t i = 0; i + 1 < blk.indptr.size(); ++i) {
      if (blk.indptr[i + 1] < blk.indptr[i]) Broken("MiniBatch indptr decreases");
    }
    for (int64_t x : blk.indices) {
      if (x < 0 || x >= blk.num_src()) Broken("MiniBatch index out of range");
    }
    if (blk.src_nodes.size() < dst.size()) Broken("MiniBatch fewer src than dst");
    for (size_t i = 0; i < dst.size(); ++i) {
      if (blk.src_nodes[i] != dst[i]) Broken("MiniBatch dst not first");
    }
  }
  // features = [inputs, feature_dim], checked without overflow: a trainer
  // wraps exactly that shape around the buffer.
  const size_t inputs = b.blocks.empty() ? b.seeds.size() : b.blocks.front().src_nodes.size();
  const unsigned __int128 want =
      static_cast<unsigned __int128>(inputs) * static_cast<unsigned __int128>(b.feature_dim);
  if (want != b.features.size()) {
    Broken("MiniBatch features (" + std::to_string(b.features.size()) + " floats) != inputs (" +
           std::to_string(inputs) + ") x feature_dim (" + std::to_string(b.feature_dim) + ")");
  }
}

// A typed message that decoded must survive Encode -> Decode unchanged.
template <typename T>
void TypedRoundTrip(const Message& m, const char* name) {
  try {
    const T x = T::Decode(m);
    if (!(T::Decode(x.Encode(m.header.request_id)) == x))
      Broken(std::string(name) + " does not round-trip");
  } catch (const ProtocolError&) {
  }
}

void ExerciseTyped(const Message& m) {
  TypedRoundTrip<Hello>(m, "Hello");
  TypedRoundTrip<HelloReply>(m, "HelloReply");
  TypedRoundTrip<SamplerHello>(m, "SamplerHello");
  TypedRoundTrip<Ping>(m, "Ping");
  TypedRoundTrip<Pong>(m, "Pong");
  TypedRoundTrip<SampleRequest>(m, "SampleRequest");
  TypedRoundTrip<SampleReply>(m, "SampleReply");
  TypedRoundTrip<SampleAggregateRequest>(m, "SampleAggregateRequest");
  TypedRoundTrip<SampleAggregateReply>(m, "SampleAggregateReply");
  TypedRoundTrip<PullFeatures>(m, "PullFeatures");
  TypedRoundTrip<PullFeaturesReply>(m, "PullFeaturesReply");
  TypedRoundTrip<PullSums>(m, "PullSums");
  TypedRoundTrip<PullSparseRows>(m, "PullSparseRows");
  TypedRoundTrip<SparseRowsReply>(m, "SparseRowsReply");
  try {
    // The offsets a server sums over are inside the ids, never decreasing.
    const PullSums s = PullSums::Decode(m);
    if (s.group_ptr.empty() || s.group_ptr.front() != 0 ||
        s.group_ptr.back() != static_cast<int64_t>(s.ids.size()))
      Broken("PullSums offsets");
    for (size_t k = 0; k + 1 < s.group_ptr.size(); ++k) {
      if (s.group_ptr[k + 1] < s.group_ptr[k]) Broken("PullSums offsets decrease");
    }
  } catch (const ProtocolError&) {
  }
  TypedRoundTrip<PullLabels>(m, "PullLabels");
  TypedRoundTrip<PullLabelsReply>(m, "PullLabelsReply");
  TypedRoundTrip<SplitNodes>(m, "SplitNodes");
  TypedRoundTrip<SplitNodesReply>(m, "SplitNodesReply");
  TypedRoundTrip<Metadata>(m, "Metadata");
  TypedRoundTrip<MetadataReply>(m, "MetadataReply");
  TypedRoundTrip<Shutdown>(m, "Shutdown");
  TypedRoundTrip<ShutdownReply>(m, "ShutdownReply");
  TypedRoundTrip<Stop>(m, "Stop");
  TypedRoundTrip<ErrorReply>(m, "ErrorReply");
}

// Bit for bit: a NaN feature travels unchanged but is unequal to itself.
bool SameBits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t t = 0; t < a.size(); ++t) {
    if (a[t].size() != b[t].size() ||
        (!a[t].empty() && std::memcmp(a[t].data(), b[t].data(), a[t].size() * sizeof(float)) != 0))
      return false;
  }
  return true;
}

// A receiver's view of a small typed graph: 300 relations (past a byte's
// range), ids < 64 of type 0 (2 features), < 128 type 1 (none), then type
// 2 (3 features).
TypedBatchSchema FuzzSchema() {
  return {300, {2, 0, 3}, [](int64_t v) { return v < 0 ? -1 : v < 64 ? 0 : v < 128 ? 1 : 2; }, {}};
}

void CheckTypedBatches(const Message& m) {
  try {
    const TypedSeedBatch b = DecodeTypedSeedBatch(m);
    if (b.fanouts.empty()) Broken("TypedSeedBatch without layers");
    for (const std::vector<int>& f : b.fanouts) {
      if (f.size() != b.fanouts[0].size()) Broken("TypedSeedBatch ragged fan-outs");
      for (int x : f) {
        if (x < -1 || x > (1 << 20)) Broken("TypedSeedBatch fan-out out of range");
      }
    }
    const TypedSeedBatch again = DecodeTypedSeedBatch(EncodeTypedSeedBatch(b, 1));
    if (again.seeds != b.seeds || again.fanouts != b.fanouts) Broken("TypedSeedBatch round trip");
  } catch (const ProtocolError&) {
  }
  try {
    const TypedBatchSchema schema = FuzzSchema();
    const HeteroBatch b = DecodeTypedMiniBatch(m, schema);
    if (b.blocks.empty() || b.labels.size() != b.seeds.size()) Broken("TypedMiniBatch shape");
    for (const Block& blk : b.blocks) {
      if (blk.etypes.size() != blk.indices.size()) Broken("TypedMiniBatch relations per edge");
      for (int64_t e : blk.etypes) {
        if (e < 0 || e >= schema.num_rels) Broken("TypedMiniBatch relation out of range");
      }
      for (int64_t x : blk.indices) {
        if (x < 0 || x >= blk.num_src()) Broken("TypedMiniBatch index out of range");
      }
    }
    for (size_t t = 0; t < 3; ++t) {
      if (b.features[t].size() != b.ids[t].size() * static_cast<size_t>(schema.feature_dims[t]))
        Broken("TypedMiniBatch rows of type " + std::to_string(t));
    }
    const HeteroBatch again = DecodeTypedMiniBatch(EncodeTypedMiniBatch(b, 1), schema);
    if (!SameBits(again.features, b.features) ||
        again.blocks.back().etypes != b.blocks.back().etypes)
      Broken("TypedMiniBatch round trip");
  } catch (const ProtocolError&) {
  }
}

void Exercise(Message& m) {
  CheckHeaderRoundTrip(m.header);
  (void)m.header.DebugString();
  if (m.frames.size() != m.header.frame_bytes.size()) Broken("frame count vs header");
  for (size_t i = 0; i < m.frames.size(); ++i) {
    if (m.frames[i].size() != m.header.frame_bytes[i]) Broken("frame size vs header");
    try {
      size_t n = 0;
      m.Array<int64_t>(i, &n);
      if (n * sizeof(int64_t) != m.frames[i].size()) Broken("Array count");
    } catch (const ProtocolError&) {
    }
  }
  try {
    FieldReader f(m, m.header.msg_type(), {Key::kFanout, Key::kReplace, Key::kRngSeed});
    f.Frames(1);
    (void)f.Get(Key::kFanout);
    (void)f.List(Key::kFanout, 16);
  } catch (const ProtocolError&) {
  }
  // Each codec on the message as it is, then with the type forced, so the
  // deeper checks see every input that decoded.
  const uint16_t type = m.header.type;
  for (MsgType t : {static_cast<MsgType>(type), MsgType::kSeedBatch, MsgType::kMiniBatch}) {
    m.header.type = static_cast<uint16_t>(t);
    try {
      SeedBatch b = DecodeSeedBatch(m);
      CheckSeedBatch(m, b);
      Message again = EncodeSeedBatch(b, m.header.request_id);
      if (DecodeSeedBatch(again).seeds != b.seeds) Broken("SeedBatch does not round-trip");
    } catch (const ProtocolError&) {
    }
    try {
      MiniBatch b = DecodeMiniBatch(m);
      CheckMiniBatch(b);
    } catch (const ProtocolError&) {
    }
  }
  for (MsgType t : {MsgType::kTypedSeedBatch, MsgType::kTypedMiniBatch}) {
    m.header.type = static_cast<uint16_t>(t);
    CheckTypedBatches(m);
  }
  // Every typed decoder, with the message forced to each type in turn.
  for (uint16_t t = 1; t <= kMaxMsgType; ++t) {
    m.header.type = t;
    ExerciseTyped(m);
  }
  m.header.type = type;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<zmq::message_t> parts = Split(data, size);
  uint64_t rid = 0;
  try {
    Message m = Decode(std::move(parts), &rid);
    Exercise(m);
  } catch (const ProtocolError&) {
  }
  return 0;
}
