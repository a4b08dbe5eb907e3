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

constexpr size_t kSpecInts = 5;

void PutSpec(const EmbSpec& s, std::vector<int64_t>* ints) {
  int64_t lr_bits = 0;
  std::memcpy(&lr_bits, &s.lr, sizeof lr_bits);
  ints->insert(ints->end(), {s.ntype, s.dim, s.optimizer, lr_bits, static_cast<int64_t>(s.seed)});
}

// The spec in ints [at, at + kSpecInts).
EmbSpec GetSpec(const Message& m, size_t at = 0) {
  const int64_t* i = m.header.ints.data() + at;
  EmbSpec s{i[0], i[1], i[2], 0, static_cast<uint64_t>(i[4])};
  std::memcpy(&s.lr, &i[3], sizeof s.lr);
  if (s.ntype < 0 || s.dim < 1 || s.dim > (1 << 20) || s.optimizer < 0 || s.optimizer > 1) {
    Malformed(m.header.msg_type(), "bad embedding spec " + s.DebugString());
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
  std::vector<int64_t> ints = {replace ? 1 : 0, static_cast<int64_t>(rng_seed),
                               static_cast<int64_t>(fanouts.size())};
  ints.insert(ints.end(), fanouts.begin(), fanouts.end());
  if (coding != IdCoding::kInt64) ints.push_back(static_cast<int64_t>(coding));
  Message m = MakeMessage(MsgType::kTypedSample, request_id, ints);
  AddInts(&m, seeds, coding);
  return m;
}

TypedSampleRequest TypedSampleRequest::Decode(const Message& m) {
  const auto& i = m.header.ints;
  if (i.size() < 3 || i[2] < 1 || i[2] > kMaxRelations) {
    Malformed(MsgType::kTypedSample, "bad relation count in " + m.header.DebugString());
  }
  const size_t base = 3 + static_cast<size_t>(i[2]);
  Expect(m, MsgType::kTypedSample, i.size() == base + 1 ? base + 1 : base, 1);
  TypedSampleRequest r;
  r.replace = i[0] != 0;
  r.rng_seed = static_cast<uint64_t>(i[1]);
  r.fanouts.assign(i.begin() + 3, i.begin() + static_cast<std::ptrdiff_t>(base));
  if (i.size() > base) r.coding = IdCodingOf(i[base], MsgType::kTypedSample);
  r.seeds = ReadInts(m, 0, r.coding, kMaxRequestValues);
  return r;
}

Message TypedSampleReply::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kTypedSampleReply, request_id);
  AddInts(&m, indptr, coding);
  AddInts(&m, indices, coding);
  m.header.ints = {AddRelations(&m, etypes)};
  if (coding != IdCoding::kInt64) m.header.ints.push_back(static_cast<int64_t>(coding));
  return m;
}

TypedSampleReply TypedSampleReply::Decode(const Message& m) {
  const bool coded = m.header.ints.size() == 2;
  Expect(m, MsgType::kTypedSampleReply, coded ? 2 : 1, 3);
  const IdCoding c =
      coded ? IdCodingOf(m.header.ints[1], MsgType::kTypedSampleReply) : IdCoding::kInt64;
  TypedSampleReply r{ReadInts(m, 0, c, kMaxReplyValues), ReadInts(m, 1, c, kMaxReplyValues),
                     ReadRelations(m, 2, m.header.ints[0], kMaxRelations), c};
  if (r.indptr.empty() || r.indptr[0] != 0 ||
      r.indptr.back() != static_cast<int64_t>(r.indices.size()) ||
      r.etypes.size() != r.indices.size()) {
    Malformed(MsgType::kTypedSampleReply, "offsets do not span the indices and relations");
  }
  for (size_t k = 0; k + 1 < r.indptr.size(); ++k) {
    if (r.indptr[k + 1] < r.indptr[k]) Malformed(MsgType::kTypedSampleReply, "offsets decrease");
  }
  return r;
}

TypedSampleReply TypedSampleReply::Decode(const Message& m, const TypedSampleRequest& asked,
                                          int64_t num_nodes, const std::string& peer) {
  TypedSampleReply r;
  try {
    r = Decode(m);
  } catch (const ProtocolError& e) {
    Bad(peer, std::string("a ") + e.what());
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
  std::vector<int64_t> ints = {ntype};
  if (format != RowFormat::kFloat32 || coding != IdCoding::kInt64) {
    ints.push_back(static_cast<int64_t>(format));
  }
  if (coding != IdCoding::kInt64) ints.push_back(static_cast<int64_t>(coding));
  Message m = MakeMessage(MsgType::kPullTyped, request_id, std::move(ints));
  AddInts(&m, ids, coding);
  return m;
}

PullTyped PullTyped::Decode(const Message& m) {
  const size_t ints =
      m.header.ints.size() == 2 || m.header.ints.size() == 3 ? m.header.ints.size() : 1;
  Expect(m, MsgType::kPullTyped, ints, 1);
  if (m.header.ints[0] < 0) Malformed(MsgType::kPullTyped, "negative node type");
  RowFormat format = RowFormat::kFloat32;
  if (ints >= 2) {
    const int64_t f = m.header.ints[1];
    if (f != 0 && f != 1) Malformed(MsgType::kPullTyped, "row format " + std::to_string(f));
    format = static_cast<RowFormat>(f);
  }
  const IdCoding c =
      ints == 3 ? IdCodingOf(m.header.ints[2], MsgType::kPullTyped) : IdCoding::kInt64;
  return {m.header.ints[0], ReadInts(m, 0, c, kMaxRequestValues), format, c};
}

Message PullTypedSums::Encode(uint64_t request_id) const {
  std::vector<int64_t> ints = {static_cast<int64_t>(format), static_cast<int64_t>(coding), ntype,
                               embedding ? 1 : 0};
  if (embedding) PutSpec(spec, &ints);
  Message m = MakeMessage(MsgType::kPullTypedSums, request_id, ints);
  AddInts(&m, ids, coding);
  AddInts(&m, group_ptr, coding);
  return m;
}

PullTypedSums PullTypedSums::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kPullTypedSums;
  const bool emb = m.header.ints.size() == 4 + kSpecInts;
  Expect(m, kType, emb ? 4 + kSpecInts : 4, 2);
  const auto& i = m.header.ints;
  if (i[0] != 0 && i[0] != 1) Malformed(kType, "row format " + std::to_string(i[0]));
  if (i[3] != (emb ? 1 : 0)) Malformed(kType, "embedding flag " + std::to_string(i[3]));
  if (i[2] < 0) Malformed(kType, "negative node type");
  PullTypedSums r;
  r.format = static_cast<RowFormat>(i[0]);
  r.coding = IdCodingOf(i[1], kType);
  r.ntype = i[2];
  r.embedding = emb;
  if (emb) {
    r.spec = GetSpec(m, 4);
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

// The optional ints after an embedding spec: {}, {coding} or {coding,
// format} (a narrow format always sends the coding).
void PutCodingFormat(IdCoding coding, RowFormat format, std::vector<int64_t>* ints) {
  if (coding == IdCoding::kInt64 && format == RowFormat::kFloat32) return;
  ints->push_back(static_cast<int64_t>(coding));
  if (format != RowFormat::kFloat32) ints->push_back(static_cast<int64_t>(format));
}

std::pair<IdCoding, RowFormat> GetCodingFormat(const Message& m, MsgType type, size_t frames) {
  const size_t n = m.header.ints.size();
  Expect(m, type, n >= kSpecInts && n <= kSpecInts + 2 ? n : kSpecInts, frames);
  const IdCoding c = n > kSpecInts ? IdCodingOf(m.header.ints[kSpecInts], type) : IdCoding::kInt64;
  RowFormat f = RowFormat::kFloat32;
  if (n == kSpecInts + 2) {
    const int64_t v = m.header.ints[kSpecInts + 1];
    if (v != 0 && v != 1) Malformed(type, "row format " + std::to_string(v));
    f = static_cast<RowFormat>(v);
  }
  return {c, f};
}

}  // namespace

Message EmbPull::Encode(uint64_t request_id) const {
  std::vector<int64_t> ints;
  PutSpec(spec, &ints);
  PutCodingFormat(coding, format, &ints);
  Message m = MakeMessage(MsgType::kEmbPull, request_id, ints);
  AddInts(&m, ids, coding);
  return m;
}

EmbPull EmbPull::Decode(const Message& m) {
  const auto [c, f] = GetCodingFormat(m, MsgType::kEmbPull, 1);
  return {GetSpec(m), ReadInts(m, 0, c, kMaxRequestValues), c, f};
}

Message EmbPush::Encode(uint64_t request_id) const {
  std::vector<int64_t> ints;
  PutSpec(spec, &ints);
  PutCodingFormat(coding, format, &ints);
  Message m = MakeMessage(MsgType::kEmbPush, request_id, ints);
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
  const auto [c, f] = GetCodingFormat(m, MsgType::kEmbPush, 2);
  EmbPush p{GetSpec(m), ReadInts(m, 0, c, kMaxRequestValues), {}, c, f};
  if (f == RowFormat::kBfloat16) {
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
  std::vector<int64_t> ints;
  PutSpec(spec, &ints);
  ints.push_back(begin);
  ints.push_back(end);
  return MakeMessage(MsgType::kEmbSave, request_id, ints);
}

EmbSave EmbSave::Decode(const Message& m) {
  Expect(m, MsgType::kEmbSave, kSpecInts + 2, 0);
  EmbSave s{GetSpec(m), m.header.ints[kSpecInts], m.header.ints[kSpecInts + 1]};
  if (s.begin < 0 || s.end < s.begin) Malformed(MsgType::kEmbSave, "bad row range");
  return s;
}

Message EmbRestore::Encode(uint64_t request_id) const {
  std::vector<int64_t> ints;
  PutSpec(spec, &ints);
  ints.push_back(begin);
  Message m = MakeMessage(MsgType::kEmbRestore, request_id, ints);
  AddArray(&m, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return m;
}

EmbRestore EmbRestore::Decode(const Message& m) {
  Expect(m, MsgType::kEmbRestore, kSpecInts + 1, 1);
  EmbRestore r{GetSpec(m), m.header.ints[kSpecInts], Bytes(m, 0)};
  if (r.begin < 0) Malformed(MsgType::kEmbRestore, "negative first row");
  return r;
}

Message EmbBlob::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kEmbBlob, request_id);
  AddArray(&m, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return m;
}

EmbBlob EmbBlob::Decode(const Message& m, const std::string& peer) {
  try {
    Expect(m, MsgType::kEmbBlob, 0, 1);
  } catch (const ProtocolError& e) {
    Bad(peer, std::string("a ") + e.what());
  }
  return {Bytes(m, 0)};
}

Message EmbAck::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kEmbAck, request_id, {rows});
}

EmbAck EmbAck::Decode(const Message& m, int64_t expected_rows, const std::string& peer) {
  try {
    Expect(m, MsgType::kEmbAck, 1, 0);
  } catch (const ProtocolError& e) {
    Bad(peer, std::string("a ") + e.what());
  }
  if (m.header.ints[0] != expected_rows) {
    Bad(peer, "an EmbAck for " + std::to_string(m.header.ints[0]) + " rows, expected " +
                  std::to_string(expected_rows));
  }
  return {m.header.ints[0]};
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
