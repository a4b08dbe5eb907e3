#include "net/typed_messages.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/bfloat16.h"
#include "common/error.h"
#include "net/codec_util.h"

namespace gnn::net {

using namespace codec;

namespace {

// An embedding spec is five fields, all required: emb_type, emb_dim,
// emb_optimizer, emb_lr_bits (the double's bits) and emb_seed.
void PutSpec(const EmbSpec& s, Message* m) {
  int64_t lr_bits = 0;
  std::memcpy(&lr_bits, &s.lr, sizeof lr_bits);
  m->header.Add(Key::kEmbType, s.ntype);
  m->header.Add(Key::kEmbDim, s.dim);
  m->header.Add(Key::kEmbOptimizer, s.optimizer);
  m->header.Add(Key::kEmbLrBits, lr_bits);
  m->header.Add(Key::kEmbSeed, static_cast<int64_t>(s.seed));
}

EmbSpec GetSpec(const FieldReader& f, MsgType type) {
  EmbSpec s{f.Get(Key::kEmbType), f.Get(Key::kEmbDim), f.Get(Key::kEmbOptimizer), 0,
            static_cast<uint64_t>(f.Get(Key::kEmbSeed))};
  const int64_t lr_bits = f.Get(Key::kEmbLrBits);
  std::memcpy(&s.lr, &lr_bits, sizeof s.lr);
  if (s.ntype < 0 || s.dim < 1 || s.dim > (1 << 20) || s.optimizer < 0 || s.optimizer > 1) {
    Malformed(type, "bad embedding spec " + s.DebugString());
  }
  return s;
}

std::string Bytes(const Message& m, size_t frame) {
  size_t n = 0;
  const uint8_t* p = m.Array<uint8_t>(frame, &n);
  return std::string(reinterpret_cast<const char*>(p), n);
}

template <typename T>
void PutNarrow(const std::vector<int64_t>& v, Message* m) {
  std::vector<T> narrow(v.begin(), v.end());
  AddArray(m, narrow);
}

template <typename T>
std::vector<int64_t> GetNarrow(const Message& m, size_t frame) {
  size_t n = 0;
  const T* p = m.Array<T>(frame, &n);
  return std::vector<int64_t>(p, p + n);
}

}  // namespace

int RelationWidth(const std::vector<int64_t>& etypes) {
  int64_t most = 0;
  for (int64_t e : etypes) {
    if (e < 0 || e > INT32_MAX)
      throw DataError("relation id " + std::to_string(e) + " out of range");
    most = std::max(most, e);
  }
  return most <= UINT8_MAX ? 1 : most <= UINT16_MAX ? 2 : 4;
}

int AddRelations(Message* m, const std::vector<int64_t>& etypes) {
  const int width = RelationWidth(etypes);
  if (width == 1) {
    PutNarrow<uint8_t>(etypes, m);
  } else if (width == 2) {
    PutNarrow<uint16_t>(etypes, m);
  } else {
    PutNarrow<int32_t>(etypes, m);
  }
  return width;
}

std::vector<int64_t> ReadRelations(const Message& m, size_t frame, int64_t width,
                                   int64_t num_rels) {
  std::vector<int64_t> out;
  if (width == 1) {
    out = GetNarrow<uint8_t>(m, frame);
  } else if (width == 2) {
    out = GetNarrow<uint16_t>(m, frame);
  } else if (width == 4) {
    out = GetNarrow<int32_t>(m, frame);
  } else {
    Malformed(m.header.msg_type(), "relation ids " + std::to_string(width) + " bytes wide");
  }
  for (int64_t e : out) {
    if (e < 0 || e >= num_rels) {
      Malformed(m.header.msg_type(), "relation " + std::to_string(e) + " of a graph of " +
                                         std::to_string(num_rels) + " relations");
    }
  }
  return out;
}

bool EmbSpec::operator==(const EmbSpec& o) const {
  return ntype == o.ntype && dim == o.dim && optimizer == o.optimizer && lr == o.lr &&
         seed == o.seed;
}

std::string EmbSpec::DebugString() const {
  return "{ntype=" + std::to_string(ntype) + ", dim=" + std::to_string(dim) +
         ", optimizer=" + std::to_string(optimizer) + ", lr=" + std::to_string(lr) +
         ", seed=" + std::to_string(seed) + "}";
}

std::string TypedSampleRequest::DebugString() const {
  return "TypedSample{seeds=" + std::to_string(seeds.size()) +
         ", relations=" + std::to_string(fanouts.size()) + "}";
}

Message TypedSampleRequest::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kTypedSample, request_id,
                          {{Key::kReplace, replace ? 1 : 0},
                           {Key::kRngSeed, static_cast<int64_t>(rng_seed)},
                           {Key::kRelations, static_cast<int64_t>(fanouts.size())}});
  for (int64_t f : fanouts) m.header.Add(Key::kFanout, f);
  PutCoding(&m, coding);
  if (edge_data) m.header.Add(Key::kEdgeData, 1);
  AddInts(&m, seeds, coding);
  return m;
}

TypedSampleRequest TypedSampleRequest::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kTypedSample;
  const FieldReader f(
      m, kType,
      {Key::kReplace, Key::kRngSeed, Key::kRelations, Key::kFanout, Key::kCoding, Key::kEdgeData},
      {Key::kFanout});
  const int64_t relations = f.Get(Key::kRelations);
  if (relations < 1 || relations > kMaxRelations) {
    Malformed(kType, "bad relation count in " + m.header.DebugString());
  }
  f.Frames(1);
  TypedSampleRequest r;
  r.replace = f.Get(Key::kReplace) != 0;
  r.rng_seed = static_cast<uint64_t>(f.Get(Key::kRngSeed));
  r.fanouts = f.List(Key::kFanout, static_cast<size_t>(relations));
  if (r.fanouts.size() != static_cast<size_t>(relations)) {
    Malformed(kType,
              N(r.fanouts.size()) + " fanouts for " + std::to_string(relations) + " relations");
  }
  r.coding = CodingOf(f, kType);
  r.edge_data = f.Flag(Key::kEdgeData);
  r.seeds = ReadInts(m, 0, r.coding, kMaxRequestValues);
  return r;
}

Message TypedSampleReply::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kTypedSampleReply, request_id);
  AddInts(&m, indptr, coding);
  AddInts(&m, indices, coding);
  m.header.Add(Key::kRelationWidth, AddRelations(&m, etypes));
  PutCoding(&m, coding);
  if (edge_dim > 0) {
    m.header.Add(Key::kEdgeDim, edge_dim);
    AddArray(&m, edge_data);
  }
  return m;
}

TypedSampleReply TypedSampleReply::Decode(const Message& m) {
  const FieldReader f(m, MsgType::kTypedSampleReply,
                      {Key::kRelationWidth, Key::kCoding, Key::kEdgeDim});
  const bool edges = f.Has(Key::kEdgeDim);
  f.Frames(edges ? 4 : 3);
  const int64_t width = f.Get(Key::kRelationWidth);
  const IdCoding c = CodingOf(f, MsgType::kTypedSampleReply);
  TypedSampleReply r{ReadInts(m, 0, c, kMaxReplyValues), ReadInts(m, 1, c, kMaxReplyValues),
                     ReadRelations(m, 2, width, kMaxRelations), c};
  if (r.indptr.empty() || r.indptr[0] != 0 ||
      r.indptr.back() != static_cast<int64_t>(r.indices.size()) ||
      r.etypes.size() != r.indices.size()) {
    Malformed(MsgType::kTypedSampleReply, "offsets do not span the indices and relations");
  }
  for (size_t k = 0; k + 1 < r.indptr.size(); ++k) {
    if (r.indptr[k + 1] < r.indptr[k]) Malformed(MsgType::kTypedSampleReply, "offsets decrease");
  }
  if (edges) {
    r.edge_dim = f.Get(Key::kEdgeDim);
    if (r.edge_dim < 1 || r.edge_dim > kMaxEdgeDataWidth) {
      Malformed(MsgType::kTypedSampleReply, "edge data width " + std::to_string(r.edge_dim));
    }
    size_t floats = 0;
    const float* rows = m.Array<float>(3, &floats);
    if (floats % static_cast<size_t>(r.edge_dim) != 0 ||
        floats / static_cast<size_t>(r.edge_dim) != r.indices.size()) {
      Malformed(MsgType::kTypedSampleReply, std::to_string(floats) + " edge data values for " +
                                                std::to_string(r.indices.size()) +
                                                " edges of width " + std::to_string(r.edge_dim));
    }
    r.edge_data.assign(rows, rows + floats);
  }
  return r;
}

TypedSampleReply TypedSampleReply::Decode(const Message& m, const TypedSampleRequest& asked,
                                          int64_t num_nodes, const std::string& peer,
                                          int64_t edge_dim) {
  TypedSampleReply r;
  try {
    r = Decode(m);
  } catch (const ProtocolError& e) {
    Bad(peer, std::string("a ") + e.what());
  }
  const int64_t want = asked.edge_data ? edge_dim : 0;
  if (r.edge_dim != want) {
    Bad(peer, "a TypedSampleReply with edge data " + std::to_string(r.edge_dim) + " wide where " +
                  std::to_string(want) + " was asked");
  }
  const size_t n = asked.seeds.size();
  const int64_t R = static_cast<int64_t>(asked.fanouts.size());
  if (r.indptr.size() != n + 1) {
    Bad(peer, "a TypedSampleReply with " + std::to_string(r.indptr.size()) + " offsets for " +
                  std::to_string(n) + " seeds");
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t run = 0;
    for (int64_t k = r.indptr[i]; k < r.indptr[i + 1]; ++k) {
      const int64_t e = r.etypes[static_cast<size_t>(k)];
      const int64_t v = r.indices[static_cast<size_t>(k)];
      if (e < 0 || e >= R || (k > r.indptr[i] && e < r.etypes[static_cast<size_t>(k - 1)])) {
        Bad(peer, "a TypedSampleReply with relation " + std::to_string(e) + " out of order/range");
      }
      run = (k > r.indptr[i] && e == r.etypes[static_cast<size_t>(k - 1)]) ? run + 1 : 1;
      const int64_t f = asked.fanouts[static_cast<size_t>(e)];
      if (f >= 0 && run > f) {
        Bad(peer, "a TypedSampleReply with more than " + std::to_string(f) +
                      " neighbours of relation " + std::to_string(e));
      }
      if (v < 0 || v >= num_nodes) {
        Bad(peer, "a TypedSampleReply with node id " + std::to_string(v) + " outside the graph");
      }
    }
  }
  return r;
}

Message PullTyped::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kPullTyped, request_id, {{Key::kNtype, ntype}});
  PutFormat(&m, format);
  PutCoding(&m, coding);
  AddInts(&m, ids, coding);
  return m;
}

PullTyped PullTyped::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kPullTyped;
  const FieldReader f(m, kType, {Key::kNtype, Key::kFormat, Key::kCoding});
  f.Frames(1);
  const int64_t ntype = f.Get(Key::kNtype);
  if (ntype < 0) Malformed(kType, "negative node type");
  const RowFormat format = FormatOf(f, kType);
  const IdCoding c = CodingOf(f, kType);
  return {ntype, ReadInts(m, 0, c, kMaxRequestValues), format, c};
}

Message PullTypedSums::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kPullTypedSums, request_id, {{Key::kNtype, ntype}});
  PutFormat(&m, format);
  PutCoding(&m, coding);
  if (embedding) {
    m.header.Add(Key::kEmbedding, 1);
    PutSpec(spec, &m);
  }
  AddInts(&m, ids, coding);
  AddInts(&m, group_ptr, coding);
  return m;
}

PullTypedSums PullTypedSums::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kPullTypedSums;
  const FieldReader f(m, kType,
                      {Key::kNtype, Key::kFormat, Key::kCoding, Key::kEmbedding, Key::kEmbType,
                       Key::kEmbDim, Key::kEmbOptimizer, Key::kEmbLrBits, Key::kEmbSeed});
  f.Frames(2);
  PullTypedSums r;
  r.format = FormatOf(f, kType);
  r.coding = CodingOf(f, kType);
  r.embedding = f.Flag(Key::kEmbedding);
  r.ntype = f.Get(Key::kNtype);
  if (r.ntype < 0) Malformed(kType, "negative node type");
  if (!r.embedding) {
    for (Key k :
         {Key::kEmbType, Key::kEmbDim, Key::kEmbOptimizer, Key::kEmbLrBits, Key::kEmbSeed}) {
      if (f.Has(k)) Malformed(kType, "field " + KeyName(k) + " without the embedding flag");
    }
  } else {
    r.spec = GetSpec(f, kType);
    if (r.spec.ntype != r.ntype) {
      Malformed(kType, "node type " + std::to_string(r.ntype) + " and a table of node type " +
                           std::to_string(r.spec.ntype));
    }
  }
  r.ids = ReadInts(m, 0, r.coding, kMaxRequestValues);
  r.group_ptr = ReadInts(m, 1, r.coding, kMaxRequestValues);
  CheckGroups(kType, r.ids.size(), r.group_ptr);
  return r;
}

namespace {

// An embedding request's spec and its optional coding and format fields.
Message MakeEmbRequest(MsgType type, uint64_t request_id, const EmbSpec& spec, IdCoding coding,
                       RowFormat format) {
  Message m = MakeMessage(type, request_id);
  PutSpec(spec, &m);
  PutCoding(&m, coding);
  PutFormat(&m, format);
  return m;
}

struct EmbRequestFields {
  EmbSpec spec;
  IdCoding coding;
  RowFormat format;
};

EmbRequestFields ReadEmbRequest(const Message& m, MsgType type, size_t frames) {
  const FieldReader f(m, type,
                      {Key::kEmbType, Key::kEmbDim, Key::kEmbOptimizer, Key::kEmbLrBits,
                       Key::kEmbSeed, Key::kCoding, Key::kFormat});
  f.Frames(frames);
  return {GetSpec(f, type), CodingOf(f, type), FormatOf(f, type)};
}

}  // namespace

Message EmbPull::Encode(uint64_t request_id) const {
  Message m = MakeEmbRequest(MsgType::kEmbPull, request_id, spec, coding, format);
  AddInts(&m, ids, coding);
  return m;
}

EmbPull EmbPull::Decode(const Message& m) {
  const EmbRequestFields e = ReadEmbRequest(m, MsgType::kEmbPull, 1);
  return {e.spec, ReadInts(m, 0, e.coding, kMaxRequestValues), e.coding, e.format};
}

Message EmbPush::Encode(uint64_t request_id) const {
  Message m = MakeEmbRequest(MsgType::kEmbPush, request_id, spec, coding, format);
  AddInts(&m, ids, coding);
  if (format == RowFormat::kBfloat16) {
    std::vector<uint16_t> narrow(grads.size());
    ToBfloat16(grads.data(), grads.size(), narrow.data());
    AddArray(&m, narrow);
  } else {
    AddArray(&m, grads);
  }
  return m;
}

EmbPush EmbPush::Decode(const Message& m) {
  const EmbRequestFields e = ReadEmbRequest(m, MsgType::kEmbPush, 2);
  EmbPush p{e.spec, ReadInts(m, 0, e.coding, kMaxRequestValues), {}, e.coding, e.format};
  if (p.format == RowFormat::kBfloat16) {
    size_t n = 0;
    const uint16_t* narrow = m.Array<uint16_t>(1, &n);
    p.grads.resize(n);
    FromBfloat16(narrow, n, p.grads.data());
  } else {
    p.grads = m.CopyArray<float>(1);
  }
  if (p.grads.size() != p.ids.size() * static_cast<size_t>(p.spec.dim)) {
    Malformed(MsgType::kEmbPush, std::to_string(p.grads.size()) + " gradient values for " +
                                     std::to_string(p.ids.size()) + " rows of " +
                                     std::to_string(p.spec.dim));
  }
  return p;
}

Message EmbSave::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kEmbSave, request_id);
  PutSpec(spec, &m);
  m.header.Add(Key::kBegin, begin);
  m.header.Add(Key::kEnd, end);
  return m;
}

EmbSave EmbSave::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kEmbSave;
  const FieldReader f(m, kType,
                      {Key::kEmbType, Key::kEmbDim, Key::kEmbOptimizer, Key::kEmbLrBits,
                       Key::kEmbSeed, Key::kBegin, Key::kEnd});
  f.Frames(0);
  EmbSave s{GetSpec(f, kType), f.Get(Key::kBegin), f.Get(Key::kEnd)};
  if (s.begin < 0 || s.end < s.begin) Malformed(kType, "bad row range");
  return s;
}

Message EmbRestore::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kEmbRestore, request_id);
  PutSpec(spec, &m);
  m.header.Add(Key::kBegin, begin);
  AddArray(&m, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return m;
}

EmbRestore EmbRestore::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kEmbRestore;
  const FieldReader f(m, kType,
                      {Key::kEmbType, Key::kEmbDim, Key::kEmbOptimizer, Key::kEmbLrBits,
                       Key::kEmbSeed, Key::kBegin});
  f.Frames(1);
  EmbRestore r{GetSpec(f, kType), f.Get(Key::kBegin), Bytes(m, 0)};
  if (r.begin < 0) Malformed(kType, "negative first row");
  return r;
}

Message EmbBlob::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kEmbBlob, request_id);
  AddArray(&m, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return m;
}

EmbBlob EmbBlob::Decode(const Message& m, const std::string& peer) {
  try {
    Expect(m, MsgType::kEmbBlob, 1);
  } catch (const ProtocolError& e) {
    Bad(peer, std::string("a ") + e.what());
  }
  return {Bytes(m, 0)};
}

Message EmbAck::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kEmbAck, request_id, {{Key::kRows, rows}});
}

EmbAck EmbAck::Decode(const Message& m, int64_t expected_rows, const std::string& peer) {
  const int64_t rows = FromPeer(peer, [&] {
    const FieldReader f(m, MsgType::kEmbAck, {Key::kRows});
    f.Frames(0);
    return f.Get(Key::kRows);
  });
  if (rows != expected_rows) {
    Bad(peer, "an EmbAck for " + std::to_string(rows) + " rows, expected " +
                  std::to_string(expected_rows));
  }
  return {rows};
}

std::vector<std::pair<size_t, size_t>> GroupPieces(const std::vector<int64_t>& group_ptr,
                                                   size_t max_ids, size_t max_groups) {
  std::vector<std::pair<size_t, size_t>> pieces;
  const size_t groups = group_ptr.empty() ? 0 : group_ptr.size() - 1;
  max_groups = std::max<size_t>(max_groups, 1);
  for (size_t g = 0; g < groups;) {
    const size_t first = g;
    size_t ids = 0;
    for (; g < groups && g - first < max_groups; ++g) {
      const size_t n = static_cast<size_t>(group_ptr[g + 1] - group_ptr[g]);
      if (ids + n > max_ids && g > first) break;
      ids += n;
    }
    pieces.push_back({first, g});
  }
  return pieces;
}

}  // namespace gnn::net
