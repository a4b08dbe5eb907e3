#include "net/messages.h"

#include <algorithm>
#include <cstring>

#include "common/bfloat16.h"
#include "common/error.h"

namespace gnn::net {

namespace {

std::string N(size_t n) { return std::to_string(n); }

[[noreturn]] void Malformed(MsgType type, const std::string& what) {
  throw ProtocolError(std::string("malformed ") + MsgTypeName(type) + ": " + what);
}

// Throws unless `m` is a `type` message with `ints` ints and `frames` array frames.
void Expect(const Message& m, MsgType type, size_t ints, size_t frames) {
  if (m.header.msg_type() != type) Malformed(type, "got " + m.header.DebugString());
  if (m.header.ints.size() != ints || m.frames.size() != frames) {
    Malformed(type, "expected " + N(ints) + " ints and " + N(frames) + " array frames, got " +
                        m.header.DebugString());
  }
}

[[noreturn]] void Bad(const std::string& peer, const std::string& what) {
  throw ProtocolError(peer + " sent " + what);
}

// A shape error of a reply, said as the peer's.
template <typename F>
auto FromPeer(const std::string& peer, F decode) {
  try {
    return decode();
  } catch (const ProtocolError& e) {
    Bad(peer, std::string("a ") + e.what());
  }
}

// zmq_msg_copy shares a buffer by reference count (tiny messages are copied).
// It marks the source as shared but never changes its bytes, so a const
// frame may be shared.
zmq::message_t Share(const zmq::message_t& frame) {
  zmq::message_t out;
  out.copy(const_cast<zmq::message_t&>(frame));
  return out;
}

Message WithIds(MsgType type, uint64_t request_id, const std::vector<int64_t>& ids) {
  Message m = MakeMessage(type, request_id);
  AddArray(&m, ids);
  return m;
}

// The one-frame id messages (SplitNodesReply).
std::vector<int64_t> IdsOf(const Message& m, MsgType type) {
  Expect(m, type, 0, 1);
  return m.CopyArray<int64_t>(0);
}

// The one-frame id messages with an optional coding int (PullLabels, its
// reply): ints {} or {coding}.
Message WithCodedIds(MsgType type, uint64_t request_id, const std::vector<int64_t>& ids,
                     IdCoding coding) {
  Message m = MakeMessage(type, request_id);
  if (coding != IdCoding::kInt64) m.header.ints.push_back(static_cast<int64_t>(coding));
  AddInts(&m, ids, coding);
  return m;
}
std::vector<int64_t> CodedIdsOf(const Message& m, MsgType type, size_t max_values,
                                IdCoding* coding) {
  const bool coded = m.header.ints.size() == 1;
  Expect(m, type, coded ? 1 : 0, 1);
  *coding = coded ? IdCodingOf(m.header.ints[0], type) : IdCoding::kInt64;
  return ReadInts(m, 0, *coding, max_values);
}

}  // namespace

// ----------------------------------------------------------------- Hello

std::string Hello::Text() const { return graph_name + "\n" + config_sha256 + "\n" + job_id; }

Hello Hello::Parse(const std::string& text) {
  Hello h;
  const size_t a = text.find('\n');
  h.graph_name = text.substr(0, a);
  if (a == std::string::npos) return h;
  const size_t b = text.find('\n', a + 1);
  h.config_sha256 = text.substr(a + 1, b == std::string::npos ? b : b - a - 1);
  if (b != std::string::npos) h.job_id = text.substr(b + 1);
  return h;
}

Message Hello::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kHello, request_id, {}, Text());
}

Hello Hello::Decode(const Message& m) {
  Expect(m, MsgType::kHello, 0, 0);
  return Parse(m.header.text);
}

bool Hello::operator==(const Hello& o) const {
  return graph_name == o.graph_name && config_sha256 == o.config_sha256 && job_id == o.job_id;
}

Message HelloReply::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kHelloReply, request_id,
                     {machine_id, server_id, node_start, node_end, feature_dim, num_classes});
}

HelloReply HelloReply::Decode(const Message& m) {
  Expect(m, MsgType::kHelloReply, 6, 0);
  const std::vector<int64_t>& i = m.header.ints;
  return {i[0], i[1], i[2], i[3], i[4], i[5]};
}

bool HelloReply::operator==(const HelloReply& o) const {
  return machine_id == o.machine_id && server_id == o.server_id && node_start == o.node_start &&
         node_end == o.node_end && feature_dim == o.feature_dim && num_classes == o.num_classes;
}

Message SamplerHello::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kHello, request_id, {trainer_id, sampler_id}, hello.Text());
}

SamplerHello SamplerHello::Decode(const Message& m) {
  Expect(m, MsgType::kHello, 2, 0);
  return {Hello::Parse(m.header.text), m.header.ints[0], m.header.ints[1]};
}

bool SamplerHello::operator==(const SamplerHello& o) const {
  return hello == o.hello && trainer_id == o.trainer_id && sampler_id == o.sampler_id;
}

// ------------------------------------------------------------ Ping, Pong

Message Ping::Encode(uint64_t request_id) const { return MakeMessage(MsgType::kPing, request_id); }

Ping Ping::Decode(const Message& m) {
  Expect(m, MsgType::kPing, 0, 0);
  return {};
}

Message Pong::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kPong, request_id, {machine_id, server_id});
}

Pong Pong::Decode(const Message& m) {
  Expect(m, MsgType::kPong, 2, 0);
  return {m.header.ints[0], m.header.ints[1]};
}

bool Pong::operator==(const Pong& o) const {
  return machine_id == o.machine_id && server_id == o.server_id;
}

// ---------------------------------------------------------------- Sample

Message SampleRequest::Encode(uint64_t request_id) const {
  std::vector<int64_t> ints = {fanout, replace ? 1 : 0, static_cast<int64_t>(rng_seed)};
  if (coding != IdCoding::kInt64) ints.push_back(static_cast<int64_t>(coding));
  Message m = MakeMessage(MsgType::kSample, request_id, std::move(ints));
  AddInts(&m, seeds, coding);
  return m;
}

SampleRequest SampleRequest::Decode(const Message& m) {
  const bool coded = m.header.ints.size() == 4;
  Expect(m, MsgType::kSample, coded ? 4 : 3, 1);
  const std::vector<int64_t>& i = m.header.ints;
  const IdCoding c = coded ? IdCodingOf(i[3], MsgType::kSample) : IdCoding::kInt64;
  return {ReadInts(m, 0, c, kMaxRequestValues), i[0], i[1] != 0, static_cast<uint64_t>(i[2]), c};
}

bool SampleRequest::operator==(const SampleRequest& o) const {
  return seeds == o.seeds && fanout == o.fanout && replace == o.replace && rng_seed == o.rng_seed &&
         coding == o.coding;
}

Message SampleReply::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kSampleReply, request_id);
  if (coding != IdCoding::kInt64) m.header.ints.push_back(static_cast<int64_t>(coding));
  AddInts(&m, indptr, coding);
  AddInts(&m, indices, coding);
  return m;
}

SampleReply SampleReply::Decode(const Message& m) {
  const bool coded = m.header.ints.size() == 1;
  Expect(m, MsgType::kSampleReply, coded ? 1 : 0, 2);
  const IdCoding c = coded ? IdCodingOf(m.header.ints[0], MsgType::kSampleReply) : IdCoding::kInt64;
  SampleReply r{ReadInts(m, 0, c, kMaxReplyValues), ReadInts(m, 1, c, kMaxReplyValues), c};
  const std::vector<int64_t>& p = r.indptr;
  if (p.empty() || p.front() != 0 || p.back() != static_cast<int64_t>(r.indices.size())) {
    Malformed(MsgType::kSampleReply,
              "offsets do not span its " + N(r.indices.size()) + " neighbours");
  }
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    if (p[i + 1] < p[i]) Malformed(MsgType::kSampleReply, "offsets decrease at seed " + N(i));
  }
  return r;
}

SampleReply SampleReply::Decode(const Message& m, const SampleRequest& asked, int64_t num_nodes,
                                const std::string& peer) {
  SampleReply r = FromPeer(peer, [&] { return Decode(m); });
  const size_t n = asked.seeds.size();
  if (r.indptr.size() != n + 1) {
    Bad(peer, "a SampleReply with " + N(r.indptr.size()) + " offsets for " + N(n) + " seeds");
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t row = r.indptr[i + 1] - r.indptr[i];
    if (asked.fanout >= 0 && row > asked.fanout) {
      Bad(peer, "a SampleReply with " + std::to_string(row) + " neighbours for fanout " +
                    std::to_string(asked.fanout));
    }
  }
  for (int64_t v : r.indices) {
    if (v < 0 || v >= num_nodes) {
      Bad(peer, "a SampleReply with node id " + std::to_string(v) + " outside the graph");
    }
  }
  return r;
}

bool SampleReply::operator==(const SampleReply& o) const {
  return indptr == o.indptr && indices == o.indices && coding == o.coding;
}

// ------------------------------------------------------------ RowFormat

size_t RowFormatBytes(RowFormat f) { return f == RowFormat::kBfloat16 ? 2 : 4; }

RowFormat ParseRowFormat(const std::string& name, const std::string& flag) {
  if (name == "float32") return RowFormat::kFloat32;
  if (name == "bfloat16") return RowFormat::kBfloat16;
  throw ConfigError(flag + " must be float32 or bfloat16, got '" + name + "'");
}

const char* RowFormatName(RowFormat f) {
  return f == RowFormat::kBfloat16 ? "bfloat16" : "float32";
}

namespace {

// A format int off the wire: 0 or 1, else the message is malformed.
RowFormat FormatOf(int64_t v, MsgType type) {
  if (v != 0 && v != 1) Malformed(type, "row format " + std::to_string(v));
  return static_cast<RowFormat>(v);
}

void RowOut(const zmq::message_t& rows, RowFormat f, int64_t dim, size_t i, float* out) {
  const size_t d = static_cast<size_t>(dim);
  if (f == RowFormat::kBfloat16) {
    FromBfloat16(static_cast<const uint16_t*>(rows.data()) + i * d, d, out);
  } else {
    std::memcpy(out, static_cast<const float*>(rows.data()) + i * d, d * sizeof(float));
  }
}

void RowIn(zmq::message_t& rows, RowFormat f, int64_t dim, size_t i, const float* values,
           size_t count_rows = 1) {
  const size_t n = static_cast<size_t>(dim) * count_rows;
  if (f == RowFormat::kBfloat16) {
    ToBfloat16(values, n, static_cast<uint16_t*>(rows.data()) + i * static_cast<size_t>(dim));
  } else {
    std::memcpy(static_cast<float*>(rows.data()) + i * static_cast<size_t>(dim), values,
                n * sizeof(float));
  }
}

}  // namespace

// ------------------------------------------------------- SampleAggregate

namespace {

// Header ints with optional trailing ones: `tail` after `base`, without
// the trailing ones that equal their `defaults` (an older, shorter form).
std::vector<int64_t> WithTail(std::vector<int64_t> base, const std::vector<int64_t>& tail,
                              const std::vector<int64_t>& defaults) {
  size_t keep = tail.size();
  while (keep > 0 && tail[keep - 1] == defaults[keep - 1]) --keep;
  base.insert(base.end(), tail.begin(), tail.begin() + static_cast<std::ptrdiff_t>(keep));
  return base;
}

// Int i of the header, or `missing` when the header is shorter.
int64_t IntOr(const Message& m, size_t i, int64_t missing) {
  return i < m.header.ints.size() ? m.header.ints[i] : missing;
}

// The number of ints of a message whose form is `base` required ints and
// up to `optional` more: what it has, or `base` (Expect then refuses it).
size_t IntsOf(const Message& m, size_t base, size_t optional) {
  const size_t n = m.header.ints.size();
  return n >= base && n <= base + optional ? n : base;
}

}  // namespace

Message SampleAggregateRequest::Encode(uint64_t request_id) const {
  Message m = MakeMessage(
      MsgType::kSampleAggregate, request_id,
      WithTail({fanout, replace ? 1 : 0, static_cast<int64_t>(rng_seed)},
               {static_cast<int64_t>(format), static_cast<int64_t>(coding), own_rows}, {0, 0, -1}));
  AddInts(&m, dsts, coding);
  return m;
}

SampleAggregateRequest SampleAggregateRequest::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kSampleAggregate;
  Expect(m, kType, IntsOf(m, 3, 3), 1);
  const std::vector<int64_t>& i = m.header.ints;
  SampleAggregateRequest r;
  r.fanout = i[0];
  r.replace = i[1] != 0;
  r.rng_seed = static_cast<uint64_t>(i[2]);
  r.format = FormatOf(IntOr(m, 3, 0), kType);
  r.coding = IdCodingOf(IntOr(m, 4, 0), kType);
  r.own_rows = IntOr(m, 5, -1);
  r.dsts = ReadInts(m, 0, r.coding, kMaxRequestValues);
  if (r.own_rows < -1 || r.own_rows > static_cast<int64_t>(r.dsts.size())) {
    Malformed(kType, "own rows " + std::to_string(r.own_rows) + " for " + N(r.dsts.size()) +
                         " destinations");
  }
  return r;
}

bool SampleAggregateRequest::operator==(const SampleAggregateRequest& o) const {
  return dsts == o.dsts && fanout == o.fanout && replace == o.replace && rng_seed == o.rng_seed &&
         format == o.format && coding == o.coding && own_rows == o.own_rows;
}

SampleAggregateReply::SampleAggregateReply(int64_t d, size_t n, RowFormat f, IdCoding c,
                                           int64_t own)
    : dim(d),
      format(f),
      coding(c),
      own_rows(own),
      rows((n + (own < 0 ? n : static_cast<size_t>(own))) * static_cast<size_t>(d) *
           RowFormatBytes(f)) {}

size_t SampleAggregateReply::num_own_rows() const {
  return own_rows < 0 ? counts.size() : static_cast<size_t>(own_rows);
}

void SampleAggregateReply::RowTo(size_t i, float* out) const { RowOut(rows, format, dim, i, out); }

void SampleAggregateReply::SetRows(const float* values) {
  RowIn(rows, format, dim, 0, values, num_own_rows() + counts.size());
}

Message SampleAggregateReply::Encode(uint64_t request_id) const {
  Message m = MakeMessage(
      MsgType::kSampleAggregateReply, request_id,
      WithTail({dim}, {static_cast<int64_t>(format), static_cast<int64_t>(coding), own_rows},
               {0, 0, -1}));
  AddFrame(&m, Share(rows));
  AddInts(&m, counts, coding);
  AddInts(&m, remote_indptr, coding);
  AddInts(&m, remote_ids, coding);
  return m;
}

SampleAggregateReply SampleAggregateReply::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kSampleAggregateReply;
  Expect(m, kType, IntsOf(m, 1, 3), 4);
  SampleAggregateReply r;
  r.dim = m.header.ints[0];
  if (r.dim < 0) Malformed(kType, "negative width " + std::to_string(r.dim));
  r.format = FormatOf(IntOr(m, 1, 0), kType);
  r.coding = IdCodingOf(IntOr(m, 2, 0), kType);
  r.own_rows = IntOr(m, 3, -1);
  size_t floats = 0;
  if (r.format == RowFormat::kBfloat16) {
    m.Array<uint16_t>(0, &floats);
  } else {
    m.Array<float>(0, &floats);
  }
  r.counts = ReadInts(m, 1, r.coding, kMaxReplyValues);
  r.remote_indptr = ReadInts(m, 2, r.coding, kMaxReplyValues);
  r.remote_ids = ReadInts(m, 3, r.coding, kMaxReplyValues);
  const size_t n = r.counts.size();
  if (r.own_rows < -1 || r.own_rows > static_cast<int64_t>(n)) {
    Malformed(kType, "own rows " + std::to_string(r.own_rows) + " for " + N(n) + " destinations");
  }
  if (floats != (r.num_own_rows() + n) * static_cast<size_t>(r.dim)) {
    Malformed(kType,
              N(floats) + " floats are not " +
                  (r.own_rows < 0 ? std::string("2 rows")
                                  : N(r.num_own_rows()) + " own rows and " + N(n) + " sums") +
                  " of width " + std::to_string(r.dim) + " for each of " + N(n) + " destinations");
  }
  const std::vector<int64_t>& p = r.remote_indptr;
  if (p.size() != n + 1 || p.front() != 0 ||
      p.back() != static_cast<int64_t>(r.remote_ids.size())) {
    Malformed(kType, "remote offsets do not span its " + N(r.remote_ids.size()) + " remote ids");
  }
  for (size_t i = 0; i < n; ++i) {
    if (p[i + 1] < p[i]) Malformed(kType, "remote offsets decrease at destination " + N(i));
    if (r.counts[i] < p[i + 1] - p[i]) {
      Malformed(kType, "destination " + N(i) + " has more remote neighbours than sampled ones");
    }
  }
  r.rows = Share(m.frames[0]);
  return r;
}

SampleAggregateReply SampleAggregateReply::Decode(const Message& m,
                                                  const SampleAggregateRequest& asked, int64_t dim,
                                                  int64_t num_nodes, int64_t node_start,
                                                  int64_t node_end, const std::string& peer) {
  SampleAggregateReply r = FromPeer(peer, [&] { return Decode(m); });
  const size_t n = asked.dsts.size();
  if (r.format != asked.format) {
    Bad(peer, std::string("a SampleAggregateReply in ") + RowFormatName(r.format) + " to a " +
                  RowFormatName(asked.format) + " request");
  }
  const int64_t own = asked.own_rows < 0 ? static_cast<int64_t>(n) : asked.own_rows;
  if (r.counts.size() == n && static_cast<int64_t>(r.num_own_rows()) != own) {
    Bad(peer, "a SampleAggregateReply with " + N(r.num_own_rows()) + " own rows to a request for " +
                  std::to_string(own));
  }
  if (r.counts.size() != n || r.dim != dim) {
    Bad(peer, "a SampleAggregateReply for " + N(r.counts.size()) + " destinations of width " +
                  std::to_string(r.dim) + " to " + N(n) + " of width " + std::to_string(dim));
  }
  for (int64_t c : r.counts) {
    if (asked.fanout >= 0 && c > asked.fanout) {
      Bad(peer, "a SampleAggregateReply with " + std::to_string(c) + " neighbours for fanout " +
                    std::to_string(asked.fanout));
    }
  }
  for (int64_t v : r.remote_ids) {
    if (v < 0 || v >= num_nodes || (v >= node_start && v < node_end)) {
      Bad(peer, "a SampleAggregateReply with remote node id " + std::to_string(v) +
                    (v < 0 || v >= num_nodes ? " outside the graph" : " that it owns itself"));
    }
  }
  return r;
}

bool SampleAggregateReply::operator==(const SampleAggregateReply& o) const {
  return dim == o.dim && format == o.format && coding == o.coding && counts == o.counts &&
         remote_indptr == o.remote_indptr && remote_ids == o.remote_ids &&
         rows.size() == o.rows.size() &&
         (rows.size() == 0 || std::memcmp(rows.data(), o.rows.data(), rows.size()) == 0);
}

// ---------------------------------------------------------- PullFeatures

Message PullFeatures::Encode(uint64_t request_id) const {
  std::vector<int64_t> ints;
  if (format != RowFormat::kFloat32 || coding != IdCoding::kInt64) {
    ints.push_back(static_cast<int64_t>(format));
  }
  if (coding != IdCoding::kInt64) ints.push_back(static_cast<int64_t>(coding));
  Message m = MakeMessage(MsgType::kPullFeatures, request_id, std::move(ints));
  AddInts(&m, ids, coding);
  return m;
}

PullFeatures PullFeatures::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kPullFeatures;
  const size_t ints = std::min<size_t>(m.header.ints.size(), 2);
  Expect(m, kType, ints, 1);
  PullFeatures r;
  if (ints >= 1) r.format = FormatOf(m.header.ints[0], kType);
  if (ints == 2) r.coding = IdCodingOf(m.header.ints[1], kType);
  r.ids = ReadInts(m, 0, r.coding, kMaxRequestValues);
  return r;
}

bool PullFeatures::operator==(const PullFeatures& o) const {
  return ids == o.ids && format == o.format && coding == o.coding;
}

// -------------------------------------------------------------- PullSums

Message PullSums::Encode(uint64_t request_id) const {
  std::vector<int64_t> ints = {static_cast<int64_t>(format)};
  if (coding != IdCoding::kInt64) ints.push_back(static_cast<int64_t>(coding));
  Message m = MakeMessage(MsgType::kPullSums, request_id, std::move(ints));
  AddInts(&m, ids, coding);
  AddInts(&m, group_ptr, coding);
  return m;
}

PullSums PullSums::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kPullSums;
  const bool coded = m.header.ints.size() == 2;
  Expect(m, kType, coded ? 2 : 1, 2);
  const IdCoding c = coded ? IdCodingOf(m.header.ints[1], kType) : IdCoding::kInt64;
  PullSums r{ReadInts(m, 0, c, kMaxRequestValues), ReadInts(m, 1, c, kMaxRequestValues),
             FormatOf(m.header.ints[0], kType), c};
  const std::vector<int64_t>& p = r.group_ptr;
  if (p.empty() || p.front() != 0 || p.back() != static_cast<int64_t>(r.ids.size())) {
    Malformed(kType, "group offsets do not span its " + N(r.ids.size()) + " ids");
  }
  for (size_t k = 0; k + 1 < p.size(); ++k) {
    if (p[k + 1] < p[k]) Malformed(kType, "group offsets decrease at group " + N(k));
  }
  return r;
}

bool PullSums::operator==(const PullSums& o) const {
  return ids == o.ids && group_ptr == o.group_ptr && format == o.format && coding == o.coding;
}

PullFeaturesReply::PullFeaturesReply(int64_t d, size_t num_rows, RowFormat f)
    : dim(d), format(f), rows(num_rows * static_cast<size_t>(d) * RowFormatBytes(f)) {}

void PullFeaturesReply::RowTo(size_t i, float* out) const { RowOut(rows, format, dim, i, out); }

void PullFeaturesReply::SetRow(size_t i, const float* values) {
  RowIn(rows, format, dim, i, values);
}

Message PullFeaturesReply::Encode(uint64_t request_id) const {
  std::vector<int64_t> ints = {dim};
  if (format != RowFormat::kFloat32) ints.push_back(static_cast<int64_t>(format));
  Message m = MakeMessage(MsgType::kPullFeaturesReply, request_id, std::move(ints));
  AddFrame(&m, Share(rows));
  return m;
}

PullFeaturesReply PullFeaturesReply::Decode(const Message& m) {
  const bool narrow = m.header.ints.size() == 2;
  Expect(m, MsgType::kPullFeaturesReply, narrow ? 2 : 1, 1);
  PullFeaturesReply r;
  r.dim = m.header.ints[0];
  if (narrow) r.format = FormatOf(m.header.ints[1], MsgType::kPullFeaturesReply);
  size_t n = 0;
  if (r.format == RowFormat::kBfloat16) {
    m.Array<uint16_t>(0, &n);
  } else {
    m.Array<float>(0, &n);
  }
  if (r.dim < 0) Malformed(MsgType::kPullFeaturesReply, "negative width " + std::to_string(r.dim));
  if (r.dim == 0 ? n != 0 : n % static_cast<size_t>(r.dim) != 0) {
    Malformed(MsgType::kPullFeaturesReply,
              N(n) + " floats are not whole rows of width " + std::to_string(r.dim));
  }
  r.rows = Share(m.frames[0]);
  return r;
}

namespace {

// A decoded PullFeaturesReply checked against what was asked: `count` rows
// of `dim` values in `format`, answering a `what` request.
PullFeaturesReply CheckedRows(const Message& m, RowFormat format, size_t count, int64_t dim,
                              const char* what, const std::string& peer) {
  PullFeaturesReply r = FromPeer(peer, [&] { return PullFeaturesReply::Decode(m); });
  if (r.format != format) {
    Bad(peer, std::string("a PullFeaturesReply in ") + RowFormatName(r.format) + " to a " +
                  RowFormatName(format) + " " + what + " request");
  }
  if (r.dim != dim || r.num_floats() != count * static_cast<size_t>(dim)) {
    Bad(peer, "a PullFeaturesReply of " + N(r.num_floats()) + " floats of width " +
                  std::to_string(r.dim) + " for " + N(count) + " rows of " + std::to_string(dim) +
                  " (" + what + ")");
  }
  return r;
}

}  // namespace

PullFeaturesReply PullFeaturesReply::Decode(const Message& m, const PullFeatures& asked,
                                            int64_t dim, const std::string& peer) {
  return CheckedRows(m, asked.format, asked.ids.size(), dim, "PullFeatures", peer);
}

PullFeaturesReply PullFeaturesReply::Decode(const Message& m, const PullSums& asked, int64_t dim,
                                            const std::string& peer) {
  return CheckedRows(m, asked.format, asked.num_groups(), dim, "PullSums", peer);
}

bool PullFeaturesReply::operator==(const PullFeaturesReply& o) const {
  return dim == o.dim && format == o.format && rows.size() == o.rows.size() &&
         (rows.size() == 0 || std::memcmp(rows.data(), o.rows.data(), rows.size()) == 0);
}

// ------------------------------------------------------------ PullLabels

Message PullLabels::Encode(uint64_t request_id) const {
  return WithCodedIds(MsgType::kPullLabels, request_id, ids, coding);
}

PullLabels PullLabels::Decode(const Message& m) {
  PullLabels r;
  r.ids = CodedIdsOf(m, MsgType::kPullLabels, kMaxRequestValues, &r.coding);
  return r;
}

bool PullLabels::operator==(const PullLabels& o) const {
  return ids == o.ids && coding == o.coding;
}

Message PullLabelsReply::Encode(uint64_t request_id) const {
  return WithCodedIds(MsgType::kPullLabelsReply, request_id, labels, coding);
}

PullLabelsReply PullLabelsReply::Decode(const Message& m) {
  PullLabelsReply r;
  r.labels = CodedIdsOf(m, MsgType::kPullLabelsReply, kMaxReplyValues, &r.coding);
  return r;
}

PullLabelsReply PullLabelsReply::Decode(const Message& m, const PullLabels& asked,
                                        const std::string& peer) {
  PullLabelsReply r = FromPeer(peer, [&] { return Decode(m); });
  if (r.labels.size() != asked.ids.size()) {
    Bad(peer, "a PullLabelsReply of " + N(r.labels.size()) + " labels for " + N(asked.ids.size()) +
                  " nodes");
  }
  return r;
}

bool PullLabelsReply::operator==(const PullLabelsReply& o) const {
  return labels == o.labels && coding == o.coding;
}

// ------------------------------------------------------------ SplitNodes

Message SplitNodes::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kSplitNodes, request_id, {mask, offset, count});
}

SplitNodes SplitNodes::Decode(const Message& m) {
  Expect(m, MsgType::kSplitNodes, 3, 0);
  return {m.header.ints[0], m.header.ints[1], m.header.ints[2]};
}

bool SplitNodes::operator==(const SplitNodes& o) const {
  return mask == o.mask && offset == o.offset && count == o.count;
}

Message SplitNodesReply::Encode(uint64_t request_id) const {
  return WithIds(MsgType::kSplitNodesReply, request_id, ids);
}

SplitNodesReply SplitNodesReply::Decode(const Message& m) {
  SplitNodesReply r{IdsOf(m, MsgType::kSplitNodesReply)};
  for (size_t i = 1; i < r.ids.size(); ++i) {
    if (r.ids[i] <= r.ids[i - 1]) {
      Malformed(MsgType::kSplitNodesReply, "id " + std::to_string(r.ids[i]) + " out of order");
    }
  }
  return r;
}

SplitNodesReply SplitNodesReply::Decode(const Message& m, const SplitNodes& asked,
                                        int64_t node_start, int64_t node_end,
                                        const std::string& peer) {
  SplitNodesReply r = FromPeer(peer, [&] { return Decode(m); });
  if (static_cast<int64_t>(r.ids.size()) != asked.count) {
    Bad(peer, "a SplitNodesReply of " + N(r.ids.size()) + " ids, expected " +
                  std::to_string(asked.count));
  }
  for (int64_t id : r.ids) {
    if (id < node_start || id >= node_end) {
      Bad(peer, "a SplitNodesReply with id " + std::to_string(id) + " outside [" +
                    std::to_string(node_start) + ", " + std::to_string(node_end) + ")");
    }
  }
  return r;
}

bool SplitNodesReply::operator==(const SplitNodesReply& o) const { return ids == o.ids; }

// ------------------------------------- Metadata, Shutdown, Stop, Error

Message Metadata::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kMetadata, request_id);
}

Metadata Metadata::Decode(const Message& m) {
  Expect(m, MsgType::kMetadata, 0, 0);
  return {};
}

Message MetadataReply::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kMetadataReply, request_id, {}, json);
}

MetadataReply MetadataReply::Decode(const Message& m) {
  Expect(m, MsgType::kMetadataReply, 0, 0);
  return {m.header.text};
}

Message Shutdown::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kShutdown, request_id, {}, job_id);
}

Shutdown Shutdown::Decode(const Message& m) {
  Expect(m, MsgType::kShutdown, 0, 0);
  return {m.header.text};
}

Message ShutdownReply::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kShutdownReply, request_id);
}

ShutdownReply ShutdownReply::Decode(const Message& m) {
  Expect(m, MsgType::kShutdownReply, 0, 0);
  return {};
}

Message Stop::Encode(uint64_t request_id) const { return MakeMessage(MsgType::kStop, request_id); }

Stop Stop::Decode(const Message& m) {
  Expect(m, MsgType::kStop, 0, 0);
  return {};
}

Message ErrorReply::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kError, request_id, {code}, message);
}

ErrorReply ErrorReply::Decode(const Message& m) {
  Expect(m, MsgType::kError, 1, 0);
  return {m.header.ints[0], m.header.text};
}

namespace {
template <typename T>
std::string S(T v) {
  return std::to_string(v);
}
}  // namespace

std::string Hello::DebugString() const {
  return "Hello{graph=" + graph_name + ", config_sha256=" + config_sha256.substr(0, 12) +
         ", job=" + job_id + "}";
}
std::string HelloReply::DebugString() const {
  return "HelloReply{machine=" + S(machine_id) + ", server=" + S(server_id) + ", nodes=[" +
         S(node_start) + ", " + S(node_end) + "), feature_dim=" + S(feature_dim) +
         ", classes=" + S(num_classes) + "}";
}
std::string SamplerHello::DebugString() const {
  return "SamplerHello{" + hello.DebugString() + ", trainer=" + S(trainer_id) +
         ", sampler=" + S(sampler_id) + "}";
}
std::string Ping::DebugString() const { return std::string("Ping{}"); }
std::string Pong::DebugString() const {
  return "Pong{machine=" + S(machine_id) + ", server=" + S(server_id) + "}";
}
std::string SampleRequest::DebugString() const {
  return "SampleRequest{seeds=" + S(seeds.size()) + ", fanout=" + S(fanout) +
         ", replace=" + S(replace) + ", rng_seed=" + std::to_string(rng_seed) + "}";
}
std::string SampleReply::DebugString() const {
  return "SampleReply{rows=" + S(indptr.empty() ? 0 : indptr.size() - 1) +
         ", neighbours=" + S(indices.size()) + "}";
}
std::string PullFeatures::DebugString() const { return "PullFeatures{ids=" + S(ids.size()) + "}"; }
std::string SampleAggregateRequest::DebugString() const {
  return "SampleAggregateRequest{dsts=" + S(dsts.size()) + ", fanout=" + S(fanout) +
         ", replace=" + S(replace) + ", rng_seed=" + std::to_string(rng_seed) + "}";
}
std::string SampleAggregateReply::DebugString() const {
  return "SampleAggregateReply{dsts=" + S(counts.size()) + ", dim=" + S(dim) +
         ", remote=" + S(remote_ids.size()) + "}";
}
std::string PullSums::DebugString() const {
  return "PullSums{ids=" + S(ids.size()) + ", groups=" + S(num_groups()) +
         ", format=" + RowFormatName(format) + "}";
}
std::string PullFeaturesReply::DebugString() const {
  return "PullFeaturesReply{dim=" + S(dim) + ", bytes=" + S(rows.size()) + "}";
}
std::string PullLabels::DebugString() const { return "PullLabels{ids=" + S(ids.size()) + "}"; }
std::string PullLabelsReply::DebugString() const {
  return "PullLabelsReply{labels=" + S(labels.size()) + "}";
}
std::string SplitNodes::DebugString() const {
  return "SplitNodes{mask=" + S(mask) + ", offset=" + S(offset) + ", count=" + S(count) + "}";
}
std::string SplitNodesReply::DebugString() const {
  return "SplitNodesReply{ids=" + S(ids.size()) + "}";
}
std::string Metadata::DebugString() const { return std::string("Metadata{}"); }
std::string MetadataReply::DebugString() const {
  return "MetadataReply{json_bytes=" + S(json.size()) + "}";
}
std::string Shutdown::DebugString() const { return "Shutdown{job=" + job_id + "}"; }
std::string ShutdownReply::DebugString() const { return std::string("ShutdownReply{}"); }
std::string Stop::DebugString() const { return std::string("Stop{}"); }
std::string ErrorReply::DebugString() const {
  return "ErrorReply{code=" + S(code) + ", message=" + message + "}";
}

}  // namespace gnn::net
