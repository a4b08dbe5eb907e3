#include "net/protocol.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

#include "client/sampler_service.h"
#include "common/error.h"
#include "net/channel.h"
#include "net/messages.h"

using namespace gnn;
using namespace gnn::net;

namespace {

std::vector<zmq::message_t> Parts(Message& m) {
  std::vector<zmq::message_t> parts;
  parts.push_back(EncodeHeader(m.header));
  for (auto& f : m.frames) parts.emplace_back(f.data(), f.size());
  return parts;
}

}  // namespace

TEST_CASE("every message type round-trips through the header codec", "[unit]") {
  for (uint16_t t = 1; t <= kMaxMsgType; ++t) {
    Message m =
        MakeMessage(static_cast<MsgType>(t), 1000 + t,
                    {{Key::kFanout, t}, {Key::kCount, -t}, {Key::kOffset, int64_t{1} << 40}},
                    "text for " + std::string(MsgTypeName(static_cast<MsgType>(t))));
    std::vector<int64_t> ids = {1, 2, 3, t};
    std::vector<float> rows = {0.5f, -1.0f};
    AddArray(&m, ids);
    AddArray(&m, rows);
    auto parts = Parts(m);
    uint64_t rid = 0;
    Message back = Decode(std::move(parts), &rid);
    CHECK(rid == 1000u + t);
    CHECK(back.header.type == t);
    CHECK(back.header.fields == m.header.fields);
    CHECK(back.header.text == m.header.text);
    CHECK(back.header.frame_bytes == m.header.frame_bytes);
    CHECK(back.CopyArray<int64_t>(0) == ids);
    CHECK(back.CopyArray<float>(1) == rows);
    CHECK(back.header.DebugString().find(MsgTypeName(static_cast<MsgType>(t))) !=
          std::string::npos);
    CHECK(back.header.DebugString().find("fanout=" + std::to_string(t)) != std::string::npos);
    FieldReader f(back, static_cast<MsgType>(t), {Key::kFanout, Key::kCount, Key::kOffset});
    CHECK_NOTHROW(f.Frames(2));
    CHECK_THROWS_AS(f.Frames(1), ProtocolError);
    CHECK(f.Get(Key::kCount) == -t);
    CHECK(f.Get(Key::kOffset) == int64_t{1} << 40);
  }
}

TEST_CASE("FieldReader reads fields by name and refuses what a type does not take", "[unit]") {
  Message m = MakeMessage(MsgType::kSample, 1, {{Key::kFanout, 10}, {Key::kEdgeData, 1}});
  const std::initializer_list<Key> sample = {Key::kFanout, Key::kReplace, Key::kEdgeData};
  FieldReader f(m, MsgType::kSample, sample);
  CHECK(f.Get(Key::kFanout) == 10);
  CHECK(f.Get(Key::kReplace, 7) == 7);  // left out: the default
  CHECK_THROWS_WITH(f.Get(Key::kReplace), "malformed Sample: no field replace");
  CHECK(f.Flag(Key::kEdgeData));
  CHECK(!f.Has(Key::kCoding));
  // Another type, a field the type does not take, one given twice, a bad flag.
  CHECK_THROWS_WITH(FieldReader(m, MsgType::kPing, {}), Catch::Contains("malformed Ping: got"));
  CHECK_THROWS_WITH(FieldReader(m, MsgType::kSample, {Key::kFanout}),
                    "malformed Sample: it takes no field edge_data");
  Message twice = MakeMessage(MsgType::kSample, 1,
                              {{Key::kFanout, 10}, {Key::kEdgeData, 1}, {Key::kFanout, 11}});
  CHECK_THROWS_WITH(FieldReader(twice, MsgType::kSample, sample),
                    "malformed Sample: field fanout given twice");
  // A list repeats its key; its length is bounded.
  FieldReader list(twice, MsgType::kSample, sample, {Key::kFanout});
  CHECK(list.List(Key::kFanout, 2) == std::vector<int64_t>{10, 11});
  CHECK_THROWS_WITH(list.List(Key::kFanout, 1), "malformed Sample: more than 1 fanout");
  *m.header.Find(Key::kEdgeData) = 2;
  CHECK_THROWS_WITH(FieldReader(m, MsgType::kSample, sample).Flag(Key::kEdgeData),
                    "malformed Sample: flag edge_data = 2");
  // A key this side does not know is named by number.
  Message future = MakeMessage(MsgType::kSample, 1, {{static_cast<Key>(999), 1}});
  CHECK_THROWS_WITH(FieldReader(future, MsgType::kSample, sample),
                    "malformed Sample: it takes no field key999");
}

TEST_CASE("a peer of protocol 8 (positional ints) is refused by its version", "[unit]") {
  // Protocol 8's header: magic, version, type, request id, taken bytes,
  // frame sizes, ints, text (cereal portable binary, little-endian).
  auto put = [](std::string* out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  std::string h;
  h.push_back(1);  // portable binary's endianness byte: little
  put(&h, kMagic, 4);
  put(&h, 8, 2);
  put(&h, static_cast<uint64_t>(MsgType::kSample), 2);
  put(&h, 42, 8);  // request id
  put(&h, 0, 8);   // taken bytes
  put(&h, 1, 8);   // one frame ...
  put(&h, 8, 8);   // ... of 8 bytes
  put(&h, 3, 8);   // three ints: fanout, replace, rng_seed
  put(&h, 10, 8);
  put(&h, 0, 8);
  put(&h, 7, 8);
  put(&h, 0, 8);  // no text
  zmq::message_t frame(h.data(), h.size());
  uint64_t rid = 0;
  CHECK_THROWS_AS(DecodeHeader(frame, &rid), VersionMismatchError);
  CHECK_THROWS_WITH(DecodeHeader(frame), "protocol version 8 (this side speaks " +
                                             std::to_string(kProtocolVersion) + ")");
  CHECK(rid == 42);
}

TEST_CASE("malformed messages are ProtocolErrors that say what is wrong", "[unit]") {
  Message m = MakeMessage(MsgType::kSample, 7,
                          {{Key::kFanout, 10}, {Key::kReplace, 0}, {Key::kRngSeed, 42}});
  std::vector<int64_t> seeds = {1, 2, 3};
  AddArray(&m, seeds);

  SECTION("wrong magic") {
    Message bad = MakeMessage(MsgType::kPing, 1);
    bad.header.magic = 0xdeadbeef;
    auto parts = Parts(bad);
    CHECK_THROWS_WITH(Decode(std::move(parts)), Catch::Contains("magic"));
  }
  SECTION("wrong version keeps the request id") {
    Message bad = MakeMessage(MsgType::kPing, 99);
    bad.header.version = kProtocolVersion + 1;
    auto parts = Parts(bad);
    uint64_t rid = 0;
    CHECK_THROWS_WITH(Decode(std::move(parts), &rid),
                      Catch::Contains("version " + std::to_string(kProtocolVersion + 1)));
    CHECK(rid == 99);
  }
  SECTION("unknown type") {
    Message bad = MakeMessage(MsgType::kPing, 1);
    bad.header.type = 999;
    auto parts = Parts(bad);
    CHECK_THROWS_WITH(Decode(std::move(parts)), Catch::Contains("unknown message type 999"));
  }
  SECTION("missing array frame") {
    auto parts = Parts(m);
    parts.pop_back();
    CHECK_THROWS_WITH(Decode(std::move(parts)), Catch::Contains("announces 1 array frames, got 0"));
  }
  SECTION("frame size differs from header") {
    auto parts = Parts(m);
    parts[1] = zmq::message_t(parts[1].data(), 20);
    CHECK_THROWS_WITH(Decode(std::move(parts)), Catch::Contains("has 20 bytes, header says 24"));
  }
  SECTION("truncated header") {
    auto parts = Parts(m);
    parts[0] = zmq::message_t(parts[0].data(), parts[0].size() - 3);
    CHECK_THROWS_AS(Decode(std::move(parts)), ProtocolError);
  }
  SECTION("trailing bytes") {
    auto parts = Parts(m);
    std::string h(static_cast<const char*>(parts[0].data()), parts[0].size());
    h += "xx";
    parts[0] = zmq::message_t(h.data(), h.size());
    CHECK_THROWS_WITH(Decode(std::move(parts)), Catch::Contains("trailing"));
  }
  SECTION("oversized header frame") {
    std::vector<zmq::message_t> parts;
    std::string big(kMaxHeaderBytes + 1, 'x');
    parts.emplace_back(big.data(), big.size());
    CHECK_THROWS_WITH(Decode(std::move(parts)), Catch::Contains("exceeds"));
  }
  SECTION("element size") {
    auto parts = Parts(m);
    Message ok = Decode(std::move(parts));
    size_t n = 0;
    CHECK_THROWS_AS(ok.Array<int64_t>(1, &n), ProtocolError);
    Message odd = MakeMessage(MsgType::kPullFeatures, 1);
    std::vector<uint8_t> bytes = {1, 2, 3};
    AddArray(&odd, bytes);
    auto p2 = Parts(odd);
    Message d = Decode(std::move(p2));
    CHECK_THROWS_AS(d.Array<int64_t>(0, &n), ProtocolError);
  }
}

TEST_CASE("random and mutated header frames never crash the decoder", "[unit]") {
  std::mt19937_64 rng(1);
  Message m = MakeMessage(MsgType::kSample, 5,
                          {{Key::kFanout, 10}, {Key::kReplace, 1}, {Key::kRngSeed, 3}}, "abc");
  std::vector<int64_t> seeds = {4, 5};
  AddArray(&m, seeds);
  zmq::message_t good = EncodeHeader(m.header);
  std::string base(static_cast<const char*>(good.data()), good.size());
  int decoded = 0, rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string h = base;
    int kind = i % 4;
    if (kind == 0) {  // random bytes
      h.resize(rng() % 96);
      for (auto& c : h) c = static_cast<char>(rng());
    } else if (kind == 1) {  // flip some bytes
      for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k)
        h[rng() % h.size()] ^= static_cast<char>(1 + rng() % 255);
    } else if (kind == 2) {  // truncate
      h.resize(rng() % h.size());
    } else {  // extend with junk
      for (int k = 0; k < 1 + static_cast<int>(rng() % 16); ++k)
        h.push_back(static_cast<char>(rng()));
    }
    std::vector<zmq::message_t> parts;
    parts.emplace_back(h.data(), h.size());
    parts.emplace_back(seeds.data(), seeds.size() * sizeof(int64_t));
    try {
      Decode(std::move(parts));
      ++decoded;
    } catch (const ProtocolError&) {
      ++rejected;
    }
  }
  CHECK(decoded + rejected == 20000);
  CHECK(rejected > 15000);
}

TEST_CASE("Connection times out naming the peer", "[unit]") {
  zmq::context_t ctx;
  // Nothing listens on this inproc endpoint's peer side after bind: a ROUTER
  // that never answers.
  zmq::socket_t silent(ctx, zmq::socket_type::router);
  silent.set(zmq::sockopt::linger, 0);
  silent.bind("inproc://silent");
  Connection c(ctx, "inproc://silent", "machine 3 server 1 at inproc://silent",
               JobKeys::Insecure());
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(c.Call(MakeMessage(MsgType::kPing, 0), Millis(200)),
                    Catch::Contains("machine 3 server 1") && Catch::Contains("Ping"));
  auto took = std::chrono::steady_clock::now() - start;
  INFO("took " << std::chrono::duration_cast<Millis>(took).count() << " ms");
  CHECK(took >= Millis(190));  // zmq_poll rounds to the millisecond
  CHECK(took < Millis(2000));
}

TEST_CASE("Connection matches out-of-order replies to their requests", "[unit]") {
  zmq::context_t ctx;
  zmq::socket_t server(ctx, zmq::socket_type::router);
  server.set(zmq::sockopt::linger, 0);
  server.bind("inproc://reorder");
  Connection c(ctx, "inproc://reorder", "reordering server", JobKeys::Insecure());
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(c.Start(MakeMessage(MsgType::kPing, 0, {{Key::kIndex, i}})));
  // Receive all three, answer them in reverse order.
  std::vector<std::vector<zmq::message_t>> reqs(3);
  for (auto& r : reqs) REQUIRE(RecvParts(server, &r, Millis(1000)));
  for (int i = 2; i >= 0; --i) {
    std::vector<zmq::message_t> route;
    route.push_back(std::move(reqs[i][0]));
    reqs[i].erase(reqs[i].begin());
    Message req = Decode(std::move(reqs[i]));
    Message rep = MakeMessage(MsgType::kPong, req.header.request_id,
                              {{Key::kIndex, *req.header.Find(Key::kIndex) * 10}});
    Send(server, rep, &route);
  }
  auto deadline = std::chrono::steady_clock::now() + Millis(2000);
  for (int i = 0; i < 3; ++i) {
    Message r = c.Finish(ids[i], deadline, "Ping");
    CHECK(*r.header.Find(Key::kIndex) == i * 10);
  }
}

namespace {

Message SampleReplyOf(const std::vector<int64_t>& ptr, const std::vector<int64_t>& idx) {
  return SampleReply{ptr, idx}.Encode(1);
}

}  // namespace

TEST_CASE("a client refuses Sample replies whose offsets or ids do not fit the request", "[unit]") {
  // 2 seeds, fanout 2, a graph of 10 nodes.
  const SampleRequest asked{{3, 7}, 2, false, 1};
  SampleReply r = SampleReply::Decode(SampleReplyOf({0, 2, 3}, {4, 5, 9}), asked, 10, "server 1");
  CHECK(r.indptr == std::vector<int64_t>{0, 2, 3});
  CHECK(r.indices == std::vector<int64_t>{4, 5, 9});
  auto refused = [&](const Message& m, const char* why) {
    INFO(why);
    CHECK_THROWS_AS(SampleReply::Decode(m, asked, 10, "server 1"), ProtocolError);
    CHECK_THROWS_WITH(SampleReply::Decode(m, asked, 10, "server 1"), Catch::Contains("server 1"));
  };
  refused(SampleReplyOf({0, 3, 1}, {4, 5, 9}),
          "decreasing offsets (the out-of-range copy of issue 12)");
  refused(SampleReplyOf({1, 2, 3}, {4, 5, 9}), "not starting at 0");
  refused(SampleReplyOf({0, 2, 4}, {4, 5, 9}), "past the neighbours");
  refused(SampleReplyOf({0, 2}, {4, 5}), "too few offsets");
  refused(SampleReplyOf({0, 3, 3}, {4, 5, 9}), "more than fanout in a row");
  refused(SampleReplyOf({0, 2, 3}, {4, -1, 9}), "negative id");
  refused(SampleReplyOf({0, 2, 3}, {4, 5, 10}), "id past the graph");
  refused(Pong{1, 2}.Encode(1), "another type");
  // fanout -1 (all neighbours): any row length.
  const SampleRequest all{{3, 7}, -1, false, 1};
  CHECK_NOTHROW(SampleReply::Decode(SampleReplyOf({0, 3, 3}, {1, 2, 3}), all, 10, "s"));
}

TEST_CASE("a client refuses feature, label and split replies of the wrong size or range",
          "[unit]") {
  PullFeaturesReply rows(3, 2);
  std::fill(rows.data(), rows.data() + 6, 1.0f);
  const Message f = rows.Encode(1);
  CHECK(PullFeaturesReply::Decode(f, PullFeatures{{1, 2}}, 3, "s").data() != nullptr);
  CHECK_THROWS_AS(PullFeaturesReply::Decode(f, PullFeatures{{1, 2, 3}}, 3, "s"), ProtocolError);
  CHECK_THROWS_AS(PullFeaturesReply::Decode(f, PullFeatures{{1, 2, 3}}, 2, "s"), ProtocolError);
  const Message l = PullLabelsReply{{1, 2}}.Encode(1);
  CHECK(PullLabelsReply::Decode(l, PullLabels{{5, 6}}, "s").labels.size() == 2);
  CHECK_THROWS_AS(PullLabelsReply::Decode(l, PullLabels{{5, 6, 7}}, "s"), ProtocolError);
  const Message s = SplitNodesReply{{10, 12, 13}}.Encode(1);
  CHECK(SplitNodesReply::Decode(s, SplitNodes{0, 0, 3}, 10, 20, "s").ids.size() == 3);
  CHECK_THROWS_AS(SplitNodesReply::Decode(s, SplitNodes{0, 0, 3}, 11, 20, "s"),
                  ProtocolError);  // outside
  CHECK_THROWS_AS(SplitNodesReply::Decode(s, SplitNodes{0, 0, 2}, 10, 20, "s"),
                  ProtocolError);  // count
  const Message unordered = SplitNodesReply{{12, 10}}.Encode(1);
  CHECK_THROWS_AS(SplitNodesReply::Decode(unordered, SplitNodes{0, 0, 2}, 10, 20, "s"),
                  ProtocolError);
}

TEST_CASE("gnn-sampler's argv is written and read by one contract", "[unit]") {
  gnn::SamplerLaunch a;
  a.ip_config = "ip config.txt";  // a space survives: argv, not a shell line
  a.part_config = "data/g.json";
  a.machine_id = 3;
  a.num_servers = 2;
  a.trainer_endpoint = "tcp://127.0.0.1:4242";
  a.trainer_id = 5;
  a.sampler_id = 1;
  a.job_id = "job-7";
  a.timeout = std::chrono::milliseconds(1234);
  a.idle_timeout = std::chrono::seconds(77);
  a.secret_file = "/tmp/secret";
  a.aggregate_at_owner = false;
  a.remote_sums = false;
  a.input_means = false;
  a.wire.row_format = net::RowFormat::kFloat32;  // not the defaults: they must travel
  a.wire.id_coding = net::IdCoding::kInt64;
  for (bool insecure : {false, true}) {
    a.insecure = insecure;
    std::vector<std::string> argv = a.ToArgv("gnn-sampler");
    CLI::App app;
    gnn::SamplerLaunch b;
    gnn::AddSamplerFlags(app, &b);
    std::vector<char*> ptrs;
    for (auto& w : argv) ptrs.push_back(w.data());
    app.parse(static_cast<int>(ptrs.size()), ptrs.data());
    if (insecure) b.secret_file = a.secret_file;  // not sent: plaintext needs none
    CHECK(b == a);
  }
  // --no_local: every partition over the network.
  CLI::App app;
  gnn::SamplerLaunch c;
  gnn::AddSamplerFlags(app, &c);
  app.parse("--no_local --machine_id 2", false);
  CHECK(c.machine_id == -1);
}
