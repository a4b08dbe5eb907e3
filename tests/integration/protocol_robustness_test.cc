// A live server (thread, loopback, ephemeral port) under a stream of
// random, mutated and hostile multipart messages from a raw DEALER socket:
// every message gets exactly one well-formed reply, an Error whenever the
// request is invalid (with the request id when the header carried one, and
// the error code where it is unambiguous), and the server keeps serving.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "client/dist_graph.h"
#include "cluster_util.h"
#include "common/error.h"
#include "net/batch_codec.h"
#include "net/channel.h"
#include "net/messages.h"
#include "net/protocol.h"
#include "partition/config.h"
#include "sampling/sampler.h"

using namespace gnn;
using net::Header;
using net::Key;
using net::Millis;
using net::MsgType;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kMaxIterations = 3000;
constexpr auto kTimeBudget = std::chrono::seconds(10);

// What one probe expects back.
struct Probe {
  const char* kind = "";
  std::vector<std::string> frames;  // header first
  // Reply's request id: nullopt = not checked (a mutation may have hit it).
  std::optional<uint64_t> rid;
  // MsgType the reply must have (0 = any well-formed reply).
  uint16_t reply_type = 0;
  // If non-empty and the reply is an Error: its code must be one of these.
  std::set<int64_t> codes;
};

std::string Bytes(const zmq::message_t& m) {
  return std::string(static_cast<const char*>(m.data()), m.size());
}

std::string HeaderBytes(const Header& h) { return Bytes(net::EncodeHeader(h)); }

template <typename T>
std::string ArrayBytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Header + array frames as they would be sent by a correct client.
std::vector<std::string> Frames(MsgType type, uint64_t rid, std::vector<net::Field> fields,
                                const std::vector<std::string>& arrays, std::string text = {}) {
  Header h;
  h.type = static_cast<uint16_t>(type);
  h.request_id = rid;
  h.fields = std::move(fields);
  h.text = std::move(text);
  for (const auto& a : arrays) h.frame_bytes.push_back(a.size());
  std::vector<std::string> out = {HeaderBytes(h)};
  out.insert(out.end(), arrays.begin(), arrays.end());
  return out;
}

class ProbeMaker {
 public:
  ProbeMaker(uint64_t seed, int64_t own_start, int64_t own_end, int64_t num_nodes,
             int64_t feature_dim)
      : rng_(seed),
        own_start_(own_start),
        own_end_(own_end),
        num_nodes_(num_nodes),
        feature_dim_(feature_dim) {}

  Probe Make(uint64_t rid) {
    switch (Below(25)) {
      case 0:
        return RandomHeader();
      case 1:
      case 2:
        return Mutated(rid);
      case 3:
        return WrongFrameCount(rid);
      case 4:
        return WrongFrameSize(rid);
      case 5:
        return UnknownType(rid);
      case 6:
        return NotARequest(rid);
      case 7:
        return WrongVersion(rid);
      case 8:
        return OversizedDeclared(rid);
      case 9:
        return TooManyFrames(rid);
      case 10:
        return OversizedHeader();
      case 11:
        return Empty();
      case 12:
        return SeedsOutOfRange(rid);
      case 13:
        return BadFanout(rid);
      case 14:
        return WrongFields(rid);
      case 15:
        return PullNotOwned(rid);
      case 16:
        return PullRaggedFrame(rid);
      case 17:
        return BadHello(rid);
      case 18:
        return ForeignShutdown(rid);
      case 19:
        return ExtraParts(rid);
      case 20:
        return TrailingBytes(rid);
      case 21:
        return Truncated(rid);
      case 22:
        return ValidPing(rid);
      case 23:
        return PullSumsProbe(rid);
      default:
        return ValidSample(rid);
    }
  }

 private:
  uint64_t Below(uint64_t n) { return rng_() % n; }
  std::string RandomBytes(size_t n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng_());
    return s;
  }
  std::vector<int64_t> OwnedIds(size_t n) {
    std::vector<int64_t> v;
    for (size_t i = 0; i < n; ++i) v.push_back(own_start_ + Below(own_end_ - own_start_));
    return v;
  }
  std::vector<int64_t> UniqueOwnedIds(size_t n) {
    std::set<int64_t> s;
    while (s.size() < n) s.insert(own_start_ + Below(own_end_ - own_start_));
    return {s.begin(), s.end()};
  }
  // A correct request of a random server type.
  std::vector<std::string> ValidRequest(uint64_t rid) {
    switch (Below(5)) {
      case 0:
        return Frames(MsgType::kPing, rid, {}, {});
      case 1:
        return Frames(MsgType::kMetadata, rid, {}, {});
      case 2:
        return Frames(MsgType::kPullFeatures, rid, {}, {ArrayBytes(OwnedIds(1 + Below(16)))});
      case 3:
        return Frames(MsgType::kPullLabels, rid, {}, {ArrayBytes(OwnedIds(1 + Below(16)))});
      default:
        return Frames(MsgType::kSample, rid,
                      {{Key::kFanout, static_cast<int64_t>(Below(12)) - 1},
                       {Key::kReplace, 0},
                       {Key::kRngSeed, static_cast<int64_t>(rng_())}},
                      {ArrayBytes(UniqueOwnedIds(1 + Below(32)))});
    }
  }
  Probe Expect(const char* kind, std::vector<std::string> frames, std::optional<uint64_t> rid,
               MsgType type, std::set<int64_t> codes = {}) {
    Probe p;
    p.kind = kind;
    p.frames = std::move(frames);
    p.rid = rid;
    p.reply_type = static_cast<uint16_t>(type);
    p.codes = std::move(codes);
    return p;
  }

  Probe RandomHeader() {
    std::vector<std::string> f = {RandomBytes(Below(300))};
    for (uint64_t i = Below(4); i > 0; --i) f.push_back(RandomBytes(Below(64)));
    // Random bytes carry the magic with probability 2^-32: no request id.
    return Expect("random header", f, 0, MsgType::kError, {net::kErrMalformed});
  }
  Probe Mutated(uint64_t rid) {
    std::vector<std::string> f = ValidRequest(rid);
    for (uint64_t n = 1 + Below(3); n > 0; --n) {
      std::string& s = f[Below(f.size())];
      switch (Below(5)) {
        case 0:
          if (!s.empty()) s[Below(s.size())] ^= static_cast<char>(1 + Below(255));
          break;
        case 1:
          s.insert(s.begin() + Below(s.size() + 1), static_cast<char>(rng_()));
          break;
        case 2:
          if (!s.empty()) s.erase(s.begin() + Below(s.size()));
          break;
        case 3:
          s.resize(Below(s.size() + 1));
          break;
        default:
          s += RandomBytes(1 + Below(16));
      }
    }
    // Anything may come back (a mutation can leave a valid request), but it
    // must be one well-formed reply with a known error code if it is one.
    Probe p =
        Expect("mutated", f, std::nullopt, static_cast<MsgType>(0),
               {net::kErrMalformed, net::kErrVersion, net::kErrUnknownType, net::kErrBadRequest,
                net::kErrMismatch, net::kErrInternal, net::kErrNotAllowed});
    return p;
  }
  Probe WrongFrameCount(uint64_t rid) {
    std::vector<std::string> f = Frames(MsgType::kPullFeatures, rid, {}, {ArrayBytes(OwnedIds(4))});
    if (Below(2)) {
      f.pop_back();  // announces 1 array frame, sends none
    } else {
      for (uint64_t i = 1 + Below(3); i > 0; --i) f.push_back(ArrayBytes(OwnedIds(4)));
    }
    return Expect("wrong frame count", f, rid, MsgType::kError, {net::kErrMalformed});
  }
  Probe WrongFrameSize(uint64_t rid) {
    std::vector<std::string> f =
        Frames(MsgType::kSample, rid, {{Key::kFanout, 5}, {Key::kReplace, 0}, {Key::kRngSeed, 1}},
               {ArrayBytes(OwnedIds(8))});
    f[1].resize(Below(2) ? 8 * Below(8) : 64 + 1 + Below(100));  // != 64 declared
    return Expect("wrong frame size", f, rid, MsgType::kError, {net::kErrMalformed});
  }
  Probe UnknownType(uint64_t rid) {
    Header h;
    h.type = Below(4) == 0
                 ? 0
                 : static_cast<uint16_t>(net::kMaxMsgType + 1 + Below(65535 - net::kMaxMsgType));
    h.request_id = rid;
    return Expect("unknown type", {HeaderBytes(h)}, rid, MsgType::kError, {net::kErrUnknownType});
  }
  Probe NotARequest(uint64_t rid) {
    static const MsgType kNot[] = {MsgType::kError,
                                   MsgType::kHelloReply,
                                   MsgType::kPong,
                                   MsgType::kSampleReply,
                                   MsgType::kPullFeaturesReply,
                                   MsgType::kPullLabelsReply,
                                   MsgType::kMetadataReply,
                                   MsgType::kShutdownReply,
                                   MsgType::kSeedBatch,
                                   MsgType::kMiniBatch,
                                   MsgType::kStop};
    MsgType t = kNot[Below(sizeof(kNot) / sizeof(kNot[0]))];
    return Expect("not a server request", Frames(t, rid, {{Key::kIndex, 1}, {Key::kBlocks, 2}}, {}),
                  rid, MsgType::kError, {net::kErrUnknownType});
  }
  Probe WrongVersion(uint64_t rid) {
    Header h;
    h.type = static_cast<uint16_t>(MsgType::kPing);
    h.request_id = rid;
    do {
      h.version = static_cast<uint16_t>(rng_());
    } while (h.version == net::kProtocolVersion);
    return Expect("wrong version", {HeaderBytes(h)}, rid, MsgType::kError, {net::kErrVersion});
  }
  Probe OversizedDeclared(uint64_t rid) {
    Header h;
    h.type = static_cast<uint16_t>(MsgType::kPullFeatures);
    h.request_id = rid;
    const uint64_t sizes[] = {net::kMaxFrameBytes + 1, uint64_t{1} << 30,
                              std::numeric_limits<uint64_t>::max(), uint64_t{1} << 63};
    h.frame_bytes = {sizes[Below(4)]};
    return Expect("oversized declared frame", {HeaderBytes(h), ArrayBytes(OwnedIds(2))}, rid,
                  MsgType::kError, {net::kErrMalformed});
  }
  Probe TooManyFrames(uint64_t rid) {
    const size_t n = net::kMaxArrayFrames + 1 + Below(8);
    std::vector<std::string> arrays(n, ArrayBytes(OwnedIds(1)));
    return Expect("too many frames", Frames(MsgType::kPullLabels, rid, {}, arrays), rid,
                  MsgType::kError, {net::kErrMalformed});
  }
  Probe OversizedHeader() {
    Header h;
    h.type = static_cast<uint16_t>(MsgType::kPing);
    h.request_id = 1;
    h.text.assign(net::kMaxHeaderBytes + Below(1000), 'x');
    return Expect("oversized header", {HeaderBytes(h)}, 0, MsgType::kError, {net::kErrMalformed});
  }
  Probe Empty() {
    return Expect("empty message", {std::string()}, 0, MsgType::kError, {net::kErrMalformed});
  }
  // The two requests that sample (the same required fields and frames): either one.
  MsgType SampleType() { return Below(2) ? MsgType::kSample : MsgType::kSampleAggregate; }
  Probe SeedsOutOfRange(uint64_t rid) {
    std::vector<int64_t> seeds;
    if (Below(8) == 0) {
      // Many seeds: all random 64-bit values (a huge "element count").
      seeds.resize(100000 + Below(100000));
      for (auto& s : seeds) s = static_cast<int64_t>(rng_());
    } else {
      seeds = UniqueOwnedIds(1 + Below(32));
      const int64_t bad[] = {-1,
                             own_end_,
                             num_nodes_,
                             std::numeric_limits<int64_t>::max(),
                             std::numeric_limits<int64_t>::min(),
                             own_start_ - 1};
      seeds[Below(seeds.size())] = bad[Below(6)];
    }
    return Expect(
        "seeds not owned",
        Frames(SampleType(), rid, {{Key::kFanout, 5}, {Key::kReplace, 0}, {Key::kRngSeed, 1}},
               {ArrayBytes(seeds)}),
        rid, MsgType::kError, {net::kErrBadRequest});
  }
  Probe BadFanout(uint64_t rid) {
    const int64_t bad[] = {-2,
                           -1000,
                           std::numeric_limits<int64_t>::min(),
                           (1 << 20) + 1,
                           std::numeric_limits<int64_t>::max(),
                           int64_t{1} << 31,
                           -(int64_t{1} << 31),
                           int64_t{1} << 32};
    return Expect("bad fanout",
                  Frames(SampleType(), rid,
                         {{Key::kFanout, bad[Below(8)]},
                          {Key::kReplace, static_cast<int64_t>(Below(2))},
                          {Key::kRngSeed, 1}},
                         {ArrayBytes(UniqueOwnedIds(4))}),
                  rid, MsgType::kError, {net::kErrBadRequest});
  }
  Probe WrongFields(uint64_t rid) {
    // A required field left out, one given twice, one the type does not
    // take, or a format of 7 (SampleAggregate takes a format; 7 is none).
    std::vector<net::Field> fields = {{Key::kFanout, 5}, {Key::kReplace, 0}, {Key::kRngSeed, 1}};
    switch (Below(4)) {
      case 0:
        fields.erase(fields.begin() + static_cast<std::ptrdiff_t>(Below(3)));
        break;
      case 1:
        fields.push_back(fields[Below(3)]);
        break;
      case 2:
        fields.push_back({Below(2) ? Key::kMask : static_cast<Key>(1000 + Below(1000)), 7});
        break;
      default:
        fields.push_back({Key::kFormat, 7});
    }
    return Expect("wrong fields",
                  Frames(SampleType(), rid, fields, {ArrayBytes(UniqueOwnedIds(4))}), rid,
                  MsgType::kError, {net::kErrMalformed});
  }
  Probe PullNotOwned(uint64_t rid) {
    std::vector<int64_t> ids = OwnedIds(1 + Below(16));
    const int64_t bad[] = {-1,
                           own_end_,
                           num_nodes_ - 1,
                           num_nodes_,
                           std::numeric_limits<int64_t>::max(),
                           std::numeric_limits<int64_t>::min()};
    ids[Below(ids.size())] = bad[Below(6)];
    MsgType t = Below(2) ? MsgType::kPullFeatures : MsgType::kPullLabels;
    return Expect("pull not owned", Frames(t, rid, {}, {ArrayBytes(ids)}), rid, MsgType::kError,
                  {net::kErrBadRequest});
  }
  Probe PullRaggedFrame(uint64_t rid) {
    std::string ids = ArrayBytes(OwnedIds(2));
    ids.resize(ids.size() - 1 - Below(7));  // not a whole number of int64
    MsgType t = Below(2) ? MsgType::kPullFeatures : MsgType::kPullLabels;
    return Expect("ragged id frame", Frames(t, rid, {}, {ids}), rid, MsgType::kError,
                  {net::kErrMalformed});
  }
  Probe BadHello(uint64_t rid) {
    std::string text = Below(2) ? RandomBytes(Below(100)) : "other-graph\nabc\njob";
    return Expect("hello mismatch", Frames(MsgType::kHello, rid, {}, {}, text), rid,
                  MsgType::kError, {net::kErrMismatch});
  }
  Probe ForeignShutdown(uint64_t rid) {
    std::string text = Below(2) ? "" : "some-other-job-" + std::to_string(Below(1000));
    return Expect("foreign shutdown", Frames(MsgType::kShutdown, rid, {}, {}, text), rid,
                  MsgType::kError, {net::kErrNotAllowed});
  }
  Probe ExtraParts(uint64_t rid) {
    // Right framing, wrong shape for the type: its decoder refuses.
    MsgType t = Below(2) ? MsgType::kPing : MsgType::kMetadata;
    std::vector<std::string> f = Below(2) ? Frames(t, rid, {{Key::kFanout, 1}}, {})
                                          : Frames(t, rid, {}, {ArrayBytes(OwnedIds(1))});
    return Expect("wrong shape", f, rid, MsgType::kError, {net::kErrMalformed});
  }
  Probe TrailingBytes(uint64_t rid) {
    std::vector<std::string> f = Frames(MsgType::kPing, rid, {}, {});
    f[0] += RandomBytes(1 + Below(8));
    return Expect("trailing header bytes", f, rid, MsgType::kError, {net::kErrMalformed});
  }
  Probe Truncated(uint64_t rid) {
    std::vector<std::string> f = ValidRequest(rid);
    // Portable binary: 1 endianness byte, magic 4, version 2, type 2, id 8.
    constexpr size_t kIdEnd = 17;
    const size_t full = f[0].size();
    size_t cut = Below(full);
    f[0].resize(cut);
    std::optional<uint64_t> want =
        cut >= kIdEnd ? std::optional<uint64_t>(rid) : std::optional<uint64_t>(0);
    return Expect("truncated header", f, want, MsgType::kError, {net::kErrMalformed});
  }
  Probe ValidPing(uint64_t rid) {
    return Expect("ping", Frames(MsgType::kPing, rid, {}, {}), rid, MsgType::kPong);
  }
  Probe ValidSample(uint64_t rid) {
    std::vector<int64_t> seeds = Below(10) ? UniqueOwnedIds(1 + Below(64)) : std::vector<int64_t>{};
    return Expect("sample",
                  Frames(MsgType::kSample, rid,
                         {{Key::kFanout, static_cast<int64_t>(Below(12)) - 1},
                          {Key::kReplace, static_cast<int64_t>(Below(2))},
                          {Key::kRngSeed, 7}},
                         {ArrayBytes(seeds)}),
                  rid, MsgType::kSampleReply);
  }

  // PullSums: valid, or with an id not owned, offsets that do not fit its
  // ids, or more groups than one reply may hold.
  Probe PullSumsProbe(uint64_t rid) {
    std::vector<int64_t> ids = OwnedIds(1 + Below(16)), ptr = {0};
    for (size_t k = 1; k <= ids.size(); ++k) {
      if (Below(3) == 0 || k == ids.size()) ptr.push_back(static_cast<int64_t>(k));
    }
    const int64_t format = static_cast<int64_t>(Below(2));
    switch (Below(4)) {
      case 0:
        return Expect("pull sums",
                      Frames(MsgType::kPullSums, rid, {{Key::kFormat, format}},
                             {ArrayBytes(ids), ArrayBytes(ptr)}),
                      rid, MsgType::kPullFeaturesReply);
      case 1: {
        const int64_t bad[] = {-1, own_end_, num_nodes_, std::numeric_limits<int64_t>::max()};
        ids[Below(ids.size())] = bad[Below(4)];
        return Expect("pull sums not owned",
                      Frames(MsgType::kPullSums, rid, {{Key::kFormat, format}},
                             {ArrayBytes(ids), ArrayBytes(ptr)}),
                      rid, MsgType::kError, {net::kErrBadRequest});
      }
      case 2: {
        const uint64_t how = Below(3);
        if (how == 0) ptr.back() += 1 + static_cast<int64_t>(Below(5));  // past the ids
        if (how == 1) ptr.front() = 1;
        if (how == 2) ptr.insert(ptr.begin() + 1, static_cast<int64_t>(ids.size()) + 1);
        return Expect("pull sums bad offsets",
                      Frames(MsgType::kPullSums, rid, {{Key::kFormat, format}},
                             {ArrayBytes(ids), ArrayBytes(ptr)}),
                      rid, MsgType::kError, {net::kErrMalformed});
      }
      default: {
        // Empty groups, one more than a reply of float32 rows may hold.
        const int64_t groups = net::kMaxPullReplyBytes / (4 * std::max<int64_t>(feature_dim_, 1));
        ptr.assign(static_cast<size_t>(groups) + 2, 0);
        return Expect("pull sums oversized",
                      Frames(MsgType::kPullSums, rid, {{Key::kFormat, 0}},
                             {ArrayBytes(std::vector<int64_t>{}), ArrayBytes(ptr)}),
                      rid, MsgType::kError, {net::kErrBadRequest});
      }
    }
  }

  std::mt19937_64 rng_;
  int64_t own_start_, own_end_, num_nodes_, feature_dim_;
};

void SendFrames(zmq::socket_t& sock, const std::vector<std::string>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    zmq::message_t m(frames[i].data(), frames[i].size());
    sock.send(m, i + 1 == frames.size() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  }
}

}  // namespace

TEST_CASE("a server answers every random, mutated or hostile message and keeps serving",
          "[integration]") {
  test::TempDir dir;
  const std::string job = "robust-" + std::to_string(::getpid());
  std::string cfg = test::MakePartitions(dir, "synthetic:tiny", 2, "data");
  std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  PartitionConfig config = LoadPartitionConfig(cfg);
  test::ServerThreads servers(ip, cfg, 2, 1, job);
  const std::string endpoint = servers.endpoints()[0][0];

  zmq::context_t ctx;
  zmq::socket_t sock(ctx, zmq::socket_type::dealer);
  sock.set(zmq::sockopt::linger, 0);
  test::Keys(job).MakeClient(sock);  // a hostile member of the job: it holds the key
  sock.connect(endpoint);

  ProbeMaker maker(20240611, config.parts[0].node_start, config.parts[0].node_end, config.num_nodes,
                   config.feature_dim);
  std::map<std::string, int> sent, errors;
  std::map<int64_t, int> codes;
  const auto start = Clock::now();
  int i = 0;
  for (; i < kMaxIterations && Clock::now() - start < kTimeBudget; ++i) {
    const uint64_t rid = 1000 + static_cast<uint64_t>(i);
    Probe p = maker.Make(rid);
    ++sent[p.kind];
    SendFrames(sock, p.frames);
    std::vector<zmq::message_t> parts;
    INFO("iteration " << i << ": " << p.kind << ", " << p.frames.size() << " frames, header "
                      << p.frames[0].size() << " bytes");
    REQUIRE(net::RecvParts(sock, &parts, Millis(5000)));  // one reply, always
    net::Message r = net::Decode(std::move(parts));       // and well-formed
    INFO("reply " << r.header.DebugString() << ": " << r.header.text);
    if (p.rid) REQUIRE(r.header.request_id == *p.rid);
    if (p.reply_type) REQUIRE(r.header.type == p.reply_type);
    if (r.header.msg_type() == MsgType::kError) {
      ++errors[p.kind];
      const int64_t code = net::ErrorReply::Decode(r).code;  // one code field
      ++codes[code];
      if (!p.codes.empty()) REQUIRE(p.codes.count(code) == 1);
    }
    if (r.header.msg_type() == MsgType::kSampleReply) {
      REQUIRE(r.frames.size() == 2);
      size_t n = 0;
      r.Array<int64_t>(0, &n);
      REQUIRE(n * sizeof(int64_t) == p.frames[1].size() + sizeof(int64_t));
    }
  }
  std::string summary = "ran " + std::to_string(i) + " probes:";
  for (const auto& [kind, n] : sent) {
    summary += "\n  " + kind + ": " + std::to_string(n) + " sent, " + std::to_string(errors[kind]) +
               " errors";
  }
  INFO(summary);
  CHECK(i >= 500);
  CHECK(sent.size() >= 20);
  // No reply leaked from one probe into the next.
  std::vector<zmq::message_t> extra;
  CHECK_FALSE(net::RecvParts(sock, &extra, Millis(50)));

  // A normal client still works: Ping, Sample and features over both
  // machines, and a Shutdown from another job is still refused.
  net::Connection c(ctx, endpoint, "machine 0 server 0", test::Keys(job));
  CHECK(net::Pong::Decode(c.Call(net::Ping{}.Encode(0), Millis(5000))) == net::Pong{0, 0});
  CHECK_THROWS_WITH(c.Call(net::Shutdown{job + "x"}.Encode(0), Millis(5000)),
                    Catch::Contains("only obeys Shutdown"));
  DistGraphOptions o;
  o.part_config = cfg;
  o.ip_config = ip;
  o.endpoints = servers.endpoints();
  o.job_id = job;
  o.keys = test::Keys(job);
  o.timeout = std::chrono::milliseconds(5000);
  DistGraph g(o);
  std::vector<int64_t> seeds = {0, 1, config.num_nodes - 1};
  MiniBatch mb = g.MakeBatch(seeds, {5, 10}, false, 3);
  CHECK(mb.blocks.size() == 2);
  // The first layer aggregated at the owners: each destination's row and mean.
  CHECK(mb.input_means);
  CHECK(mb.features.size() == 2 * static_cast<size_t>(mb.blocks.front().num_dst) *
                                  static_cast<size_t>(config.feature_dim));
}

TEST_CASE("a server refuses a PullSums naming ids it does not own, bad offsets, too many groups",
          "[integration]") {
  test::TempDir dir;
  const std::string job = "sums-" + std::to_string(::getpid());
  std::string cfg = test::MakePartitions(dir, "synthetic:tiny", 2, "data");
  std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  PartitionConfig config = LoadPartitionConfig(cfg);
  test::ServerThreads servers(ip, cfg, 2, 1, job);
  zmq::context_t ctx;
  net::Connection c(ctx, servers.endpoints()[1][0], "machine 1 server 0", test::Keys(job));
  const PartInfo& p = config.parts[1];
  const int64_t dim = config.feature_dim;
  auto call = [&](const net::PullSums& asked) { return c.Call(asked.Encode(0), Millis(5000)); };
  // Good: two groups (one empty), a repeated id, in float32.
  const net::PullSums good{{p.node_start, p.node_start + 1, p.node_start}, {0, 3, 3}};
  const net::PullFeaturesReply r = net::PullFeaturesReply::Decode(call(good), good, dim, c.peer());
  NoInitVector<float> rows;
  DistGraphOptions o;
  o.part_config = cfg;
  o.ip_config = ip;
  o.endpoints = servers.endpoints();
  o.job_id = job;
  o.keys = test::Keys(job);
  DistGraph g(o);
  g.PullFeatures({p.node_start, p.node_start + 1}, &rows);
  for (int64_t j = 0; j < dim; ++j) {
    CHECK(r.data()[j] == Approx(2 * rows[j] + rows[dim + j]));
    CHECK(r.data()[dim + j] == 0.0f);
  }
  CHECK_THROWS_WITH(call({{p.node_start, p.node_start - 1}, {0, 2}}),
                    Catch::Contains("node " + std::to_string(p.node_start - 1) +
                                    " is not owned by machine 1 server 0"));
  CHECK_THROWS_WITH(call({{p.node_start, p.node_start}, {0, 3}}),
                    Catch::Contains("malformed PullSums: group offsets do not span its 2 ids"));
  CHECK_THROWS_WITH(call({{p.node_start, p.node_start}, {0, 2, 1, 2}}),
                    Catch::Contains("malformed PullSums: group offsets decrease at group 1"));
  net::PullSums huge;
  huge.group_ptr.assign(static_cast<size_t>(net::kMaxPullReplyBytes / (4 * dim)) + 2, 0);
  CHECK_THROWS_WITH(call(huge),
                    Catch::Contains("passes the reply limit") && Catch::Contains("PullSums of"));
  // The server keeps serving.
  CHECK(net::PullFeaturesReply::Decode(call(good), good, dim, c.peer()) == r);
}

// Regression for the first find of tests/fuzz/protocol_fuzz.cc: 4 inputs x
// feature_dim 2^62 + 1 wraps to 4 in 64 bits, and the decoder accepted a
// 4-float buffer as a [4, 2^62 + 1] matrix.
TEST_CASE("DecodeMiniBatch refuses a feature_dim whose product with the inputs overflows",
          "[integration]") {
  MiniBatch b;
  b.seeds = {10, 11};
  b.labels = {0, 1};
  Block blk;
  blk.num_dst = 2;
  blk.src_nodes = {10, 11, 12, 13};
  blk.indptr = {0, 1, 2};
  blk.indices = {2, 3};
  b.blocks = {blk};
  b.feature_dim = (int64_t{1} << 62) + 1;
  b.features.assign(4, 0.f);
  net::Message m = net::EncodeMiniBatch(b, 1);
  CHECK_THROWS_AS(net::DecodeMiniBatch(m), ProtocolError);
  b.feature_dim = 1;  // the honest shape decodes
  net::Message ok = net::EncodeMiniBatch(b, 1);
  CHECK(net::DecodeMiniBatch(ok).features.size() == 4);
}

TEST_CASE("MiniBatch with sampler-side means round-trips, and its shape is checked",
          "[integration]") {
  MiniBatch b;
  b.seeds = {10, 11};
  b.labels = {0, 1};
  Block blk;
  blk.num_dst = 2;
  blk.src_nodes = {10, 11, 12, 13, 14};
  blk.indptr = {0, 1, 3};
  blk.indices = {2, 3, 4};
  b.blocks = {blk};
  b.feature_dim = 3;
  b.features.assign(5 * 3, 1.f);  // one row per input node
  PackInputMeans(&b, 1);
  REQUIRE(b.input_means);
  REQUIRE(b.features.size() == 2 * 2 * 3);  // [dst rows | means]
  MiniBatch back = net::DecodeMiniBatch(net::EncodeMiniBatch(b, 7));
  CHECK(back.input_means);
  CHECK(back.features == b.features);
  // A plain batch carries no input_means field.
  MiniBatch plain = b;
  plain.input_means = false;
  plain.features.assign(5 * 3, 1.f);
  net::Message pm = net::EncodeMiniBatch(plain, 8);
  CHECK(pm.header.fields.size() == 3);
  CHECK(pm.header.Find(Key::kInputMeans) == nullptr);
  CHECK_FALSE(net::DecodeMiniBatch(pm).input_means);
  // Means with the row count of a plain batch, or a flag that is not 0/1: refused.
  b.features.assign(5 * 3, 1.f);
  CHECK_THROWS_WITH(net::DecodeMiniBatch(net::EncodeMiniBatch(b, 9)),
                    Catch::Contains("features do not match"));
  net::Message bad = net::EncodeMiniBatch(plain, 10);
  bad.header.Add(Key::kInputMeans, 2);
  CHECK_THROWS_WITH(net::DecodeMiniBatch(bad), Catch::Contains("flag input_means = 2"));
  // The hot-row cache's counts travel too; more hits than lookups is refused.
  plain.wire_bytes = 1234;
  plain.cache_lookups = 50;
  plain.cache_hits = 20;
  MiniBatch counted = net::DecodeMiniBatch(net::EncodeMiniBatch(plain, 11));
  CHECK(counted.wire_bytes == 1234);
  CHECK(counted.cache_lookups == 50);
  CHECK(counted.cache_hits == 20);
  CHECK_FALSE(counted.input_means);
  net::Message liar = net::EncodeMiniBatch(plain, 12);
  *liar.header.Find(Key::kCacheHits) = 51;
  CHECK_THROWS_WITH(net::DecodeMiniBatch(liar), Catch::Contains("cache counts"));
  liar.header.fields.erase(liar.header.fields.begin());  // no index
  CHECK_THROWS_WITH(net::DecodeMiniBatch(liar), Catch::Contains("no field index"));
}

TEST_CASE(
    "a MiniBatch carries its input_means form and its wire bytes, fields a plain batch leaves out",
    "[integration]") {
  MiniBatch b;
  b.seeds = {10, 11};
  b.labels = {0, 1};
  Block blk;
  blk.num_dst = 2;
  blk.src_nodes = {10, 11};
  blk.indptr = {0, 0, 0};
  b.blocks = {blk};
  b.feature_dim = 1;
  b.features.assign(4, 0.5f);
  b.input_means = true;
  b.wire_bytes = 123456789;
  net::Message m = net::EncodeMiniBatch(b, 1);
  CHECK(m.header.fields.size() == 5);
  MiniBatch got = net::DecodeMiniBatch(m);
  CHECK(got.input_means);
  CHECK(got.wire_bytes == 123456789u);
  CHECK(got.features == b.features);
  b.input_means = false;  // rows of block 0's sources: 2 of them
  b.wire_bytes = 0;
  b.features.assign(2, 0.5f);
  m = net::EncodeMiniBatch(b, 1);
  CHECK(m.header.fields.size() == 3);
  got = net::DecodeMiniBatch(m);
  CHECK((!got.input_means && got.wire_bytes == 0));
  m.header.Add(Key::kWireBytes, -5);
  CHECK_THROWS_WITH(net::DecodeMiniBatch(m), Catch::Contains("wire bytes"));
}

TEST_CASE("MiniBatch with label rows round-trips, and their count is checked", "[integration]") {
  MiniBatch b;
  b.seeds = {10, 11};
  b.label_width = 3;
  b.targets = {0, 1, 1, 0.5f, -2, 7};
  Block blk;
  blk.num_dst = 2;
  blk.src_nodes = {10, 11, 12};
  blk.indptr = {0, 1, 1};
  blk.indices = {2};
  b.blocks = {blk};
  b.feature_dim = 2;
  b.features.assign(3 * 2, 1.f);
  net::Message m = net::EncodeMiniBatch(b, 3);
  CHECK(*m.header.Find(Key::kLabelWidth) == 3);
  MiniBatch back = net::DecodeMiniBatch(m);
  CHECK(back.label_width == 3);
  CHECK(back.targets == b.targets);
  CHECK(back.labels.empty());
  // Rows that do not cover the seeds, and widths out of range: refused.
  b.targets.pop_back();
  CHECK_THROWS_WITH(net::DecodeMiniBatch(net::EncodeMiniBatch(b, 4)),
                    Catch::Contains("label rows do not match seeds"));
  b.targets.push_back(1);
  for (int64_t width : {int64_t{0}, int64_t{-1}, (int64_t{1} << 16) + 1}) {
    net::Message bad = net::EncodeMiniBatch(b, 5);
    *bad.header.Find(Key::kLabelWidth) = width;
    CHECK_THROWS_WITH(net::DecodeMiniBatch(bad), Catch::Contains("label width"));
  }
  // PullTargets is its own message type, answered by float32 rows.
  net::PullLabels asked;
  asked.ids = {10, 11};
  asked.targets = true;
  const net::Message req = asked.Encode(9);
  CHECK(req.header.msg_type() == net::MsgType::kPullTargets);
  const net::PullLabels decoded = net::PullLabels::Decode(req);
  CHECK(decoded.targets);
  CHECK_FALSE(decoded.orig_ids);
  CHECK(decoded == asked);
}
