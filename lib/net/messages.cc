#include "net/messages.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "net/codec_util.h"

namespace gnn::net {

using namespace codec;

namespace {

Message WithIds(MsgType type, uint64_t request_id, const std::vector<int64_t>& ids) {
  Message m = MakeMessage(type, request_id);
  AddArray(&m, ids);
  return m;
}

// The one-frame id messages (SplitNodesReply).
std::vector<int64_t> IdsOf(const Message& m, MsgType type) {
  Expect(m, type, 1);
  return m.CopyArray<int64_t>(0);
}

// The one-frame id messages with an optional coding int (PullLabels, its
// reply): fields {[coding]}.
Message WithCodedIds(MsgType type, uint64_t request_id, const std::vector<int64_t>& ids,
                     IdCoding coding) {
  Message m = MakeMessage(type, request_id);
  PutCoding(&m, coding);
  AddInts(&m, ids, coding);
  return m;
}
std::vector<int64_t> CodedIdsOf(const Message& m, MsgType type, size_t max_values,
                                IdCoding* coding) {
  FieldReader f(m, type, {Key::kCoding});
  f.Frames(1);
  *coding = CodingOf(f, type);
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
  Expect(m, MsgType::kHello, 0);
  return Parse(m.header.text);
}

bool Hello::operator==(const Hello& o) const {
  return graph_name == o.graph_name && config_sha256 == o.config_sha256 && job_id == o.job_id;
}

Message HelloReply::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kHelloReply, request_id,
                     {{Key::kMachine, machine_id},
                      {Key::kServer, server_id},
                      {Key::kNodeStart, node_start},
                      {Key::kNodeEnd, node_end},
                      {Key::kFeatureDim, feature_dim},
                      {Key::kClasses, num_classes}});
}

HelloReply HelloReply::Decode(const Message& m) {
  FieldReader f(m, MsgType::kHelloReply,
                {Key::kMachine, Key::kServer, Key::kNodeStart, Key::kNodeEnd, Key::kFeatureDim,
                 Key::kClasses});
  f.Frames(0);
  return {f.Get(Key::kMachine), f.Get(Key::kServer),     f.Get(Key::kNodeStart),
          f.Get(Key::kNodeEnd), f.Get(Key::kFeatureDim), f.Get(Key::kClasses)};
}

bool HelloReply::operator==(const HelloReply& o) const {
  return machine_id == o.machine_id && server_id == o.server_id && node_start == o.node_start &&
         node_end == o.node_end && feature_dim == o.feature_dim && num_classes == o.num_classes;
}

Message SamplerHello::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kHello, request_id,
                     {{Key::kTrainer, trainer_id}, {Key::kSampler, sampler_id}}, hello.Text());
}

SamplerHello SamplerHello::Decode(const Message& m) {
  FieldReader f(m, MsgType::kHello, {Key::kTrainer, Key::kSampler});
  f.Frames(0);
  return {Hello::Parse(m.header.text), f.Get(Key::kTrainer), f.Get(Key::kSampler)};
}

bool SamplerHello::operator==(const SamplerHello& o) const {
  return hello == o.hello && trainer_id == o.trainer_id && sampler_id == o.sampler_id;
}

// ------------------------------------------------------------ Ping, Pong

Message Ping::Encode(uint64_t request_id) const { return MakeMessage(MsgType::kPing, request_id); }

Ping Ping::Decode(const Message& m) {
  Expect(m, MsgType::kPing, 0);
  return {};
}

Message Pong::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kPong, request_id,
                     {{Key::kMachine, machine_id}, {Key::kServer, server_id}});
}

Pong Pong::Decode(const Message& m) {
  FieldReader f(m, MsgType::kPong, {Key::kMachine, Key::kServer});
  f.Frames(0);
  return {f.Get(Key::kMachine), f.Get(Key::kServer)};
}

bool Pong::operator==(const Pong& o) const {
  return machine_id == o.machine_id && server_id == o.server_id;
}

// ---------------------------------------------------------------- Sample

Message SampleRequest::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kSample, request_id,
                          {{Key::kFanout, fanout},
                           {Key::kReplace, replace ? 1 : 0},
                           {Key::kRngSeed, static_cast<int64_t>(rng_seed)}});
  PutCoding(&m, coding);
  if (edge_data) m.header.Add(Key::kEdgeData, 1);
  AddInts(&m, seeds, coding);
  return m;
}

SampleRequest SampleRequest::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kSample;
  FieldReader f(m, kType,
                {Key::kFanout, Key::kReplace, Key::kRngSeed, Key::kCoding, Key::kEdgeData});
  f.Frames(1);
  const IdCoding c = CodingOf(f, kType);
  SampleRequest r{ReadInts(m, 0, c, kMaxRequestValues), f.Get(Key::kFanout),
                  f.Get(Key::kReplace) != 0, static_cast<uint64_t>(f.Get(Key::kRngSeed)), c};
  r.edge_data = f.Flag(Key::kEdgeData);
  return r;
}

bool SampleRequest::operator==(const SampleRequest& o) const {
  return seeds == o.seeds && fanout == o.fanout && replace == o.replace && rng_seed == o.rng_seed &&
         coding == o.coding && edge_data == o.edge_data;
}

Message SampleReply::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kSampleReply, request_id);
  PutCoding(&m, coding);
  if (edge_dim > 0) m.header.Add(Key::kEdgeDim, edge_dim);
  AddInts(&m, indptr, coding);
  AddInts(&m, indices, coding);
  if (edge_dim > 0) AddArray(&m, edge_data);
  return m;
}

SampleReply SampleReply::Decode(const Message& m) {
  FieldReader f(m, MsgType::kSampleReply, {Key::kCoding, Key::kEdgeDim});
  const bool edges = f.Has(Key::kEdgeDim);
  f.Frames(edges ? 3 : 2);
  const IdCoding c = CodingOf(f, MsgType::kSampleReply);
  SampleReply r{ReadInts(m, 0, c, kMaxReplyValues), ReadInts(m, 1, c, kMaxReplyValues), c};
  const std::vector<int64_t>& p = r.indptr;
  if (p.empty() || p.front() != 0 || p.back() != static_cast<int64_t>(r.indices.size())) {
    Malformed(MsgType::kSampleReply,
              "offsets do not span its " + N(r.indices.size()) + " neighbours");
  }
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    if (p[i + 1] < p[i]) Malformed(MsgType::kSampleReply, "offsets decrease at seed " + N(i));
  }
  if (edges) {
    r.edge_dim = f.Get(Key::kEdgeDim);
    if (r.edge_dim < 1 || r.edge_dim > kMaxEdgeDataWidth) {
      Malformed(MsgType::kSampleReply, "edge data width " + std::to_string(r.edge_dim));
    }
    size_t floats = 0;
    const float* rows = m.Array<float>(2, &floats);
    if (floats / static_cast<size_t>(r.edge_dim) != r.indices.size() ||
        floats % static_cast<size_t>(r.edge_dim) != 0) {
      Malformed(MsgType::kSampleReply, N(floats) + " edge data values for " + N(r.indices.size()) +
                                           " neighbours of width " + std::to_string(r.edge_dim));
    }
    r.edge_data.assign(rows, rows + floats);
  }
  return r;
}

SampleReply SampleReply::Decode(const Message& m, const SampleRequest& asked, int64_t num_nodes,
                                const std::string& peer, int64_t edge_dim) {
  SampleReply r = FromPeer(peer, [&] { return Decode(m); });
  const int64_t want = asked.edge_data ? edge_dim : 0;
  if (r.edge_dim != want) {
    Bad(peer, "a SampleReply with edge data " + std::to_string(r.edge_dim) + " wide where " +
                  std::to_string(want) + " was asked");
  }
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
  // The rows bit for bit (a NaN equals itself: what travelled is what came).
  return indptr == o.indptr && indices == o.indices && coding == o.coding &&
         edge_dim == o.edge_dim && edge_data.size() == o.edge_data.size() &&
         (edge_data.empty() ||
          std::memcmp(edge_data.data(), o.edge_data.data(), edge_data.size() * sizeof(float)) == 0);
}

// ------------------------------------------------------------ PullLabels

namespace {

MsgType PullLabelsType(const PullLabels& r) {
  return r.targets    ? MsgType::kPullTargets
         : r.orig_ids ? MsgType::kPullOrigIds
                      : MsgType::kPullLabels;
}

}  // namespace

Message PullLabels::Encode(uint64_t request_id) const {
  return WithCodedIds(PullLabelsType(*this), request_id, ids, coding);
}

PullLabels PullLabels::Decode(const Message& m) {
  PullLabels r;
  r.orig_ids = m.header.msg_type() == MsgType::kPullOrigIds;
  r.targets = m.header.msg_type() == MsgType::kPullTargets;
  r.ids = CodedIdsOf(m, PullLabelsType(r), kMaxRequestValues, &r.coding);
  return r;
}

bool PullLabels::operator==(const PullLabels& o) const {
  return ids == o.ids && coding == o.coding && orig_ids == o.orig_ids && targets == o.targets;
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
  return MakeMessage(MsgType::kSplitNodes, request_id,
                     {{Key::kMask, mask}, {Key::kOffset, offset}, {Key::kCount, count}});
}

SplitNodes SplitNodes::Decode(const Message& m) {
  FieldReader f(m, MsgType::kSplitNodes, {Key::kMask, Key::kOffset, Key::kCount});
  f.Frames(0);
  return {f.Get(Key::kMask), f.Get(Key::kOffset), f.Get(Key::kCount)};
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
  Expect(m, MsgType::kMetadata, 0);
  return {};
}

Message MetadataReply::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kMetadataReply, request_id, {}, json);
}

MetadataReply MetadataReply::Decode(const Message& m) {
  Expect(m, MsgType::kMetadataReply, 0);
  return {m.header.text};
}

Message Shutdown::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kShutdown, request_id, {}, job_id);
}

Shutdown Shutdown::Decode(const Message& m) {
  Expect(m, MsgType::kShutdown, 0);
  return {m.header.text};
}

Message ShutdownReply::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kShutdownReply, request_id);
}

ShutdownReply ShutdownReply::Decode(const Message& m) {
  Expect(m, MsgType::kShutdownReply, 0);
  return {};
}

Message Stop::Encode(uint64_t request_id) const { return MakeMessage(MsgType::kStop, request_id); }

Stop Stop::Decode(const Message& m) {
  Expect(m, MsgType::kStop, 0);
  return {};
}

Message ErrorReply::Encode(uint64_t request_id) const {
  return MakeMessage(MsgType::kError, request_id, {{Key::kCode, code}}, message);
}

ErrorReply ErrorReply::Decode(const Message& m) {
  FieldReader f(m, MsgType::kError, {Key::kCode});
  f.Frames(0);
  return {f.Get(Key::kCode), m.header.text};
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
std::string PullSparseRows::DebugString() const {
  return "PullSparseRows{ids=" + S(ids.size()) + "}";
}
std::string SparseRowsReply::DebugString() const {
  return "SparseRowsReply{rows=" + S(counts.size()) + ", cols=" + S(cols) + ", nnz=" + S(nnz()) +
         "}";
}
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
