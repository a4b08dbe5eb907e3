#include <catch2/catch.hpp>
#include <random>

#include "common/error.h"
#include "net/channel.h"
#include "net/protocol.h"
#include "net/replies.h"

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
    Message m = MakeMessage(static_cast<MsgType>(t), 1000 + t, {t, -t, int64_t{1} << 40},
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
    CHECK(back.header.ints == m.header.ints);
    CHECK(back.header.text == m.header.text);
    CHECK(back.header.frame_bytes == m.header.frame_bytes);
    CHECK(back.CopyArray<int64_t>(0) == ids);
    CHECK(back.CopyArray<float>(1) == rows);
    CHECK(back.header.DebugString().find(MsgTypeName(static_cast<MsgType>(t))) != std::string::npos);
    CHECK_NOTHROW(CheckShape(back, 3, 2));
    CHECK_THROWS_AS(CheckShape(back, 2, 2), ProtocolError);
  }
}

TEST_CASE("malformed messages are ProtocolErrors that say what is wrong", "[unit]") {
  Message m = MakeMessage(MsgType::kSample, 7, {10, 0, 42});
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
    bad.header.version = 7;
    auto parts = Parts(bad);
    uint64_t rid = 0;
    CHECK_THROWS_WITH(Decode(std::move(parts), &rid), Catch::Contains("version 7"));
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
  Message m = MakeMessage(MsgType::kSample, 5, {10, 1, 3}, "abc");
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
      for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) h[rng() % h.size()] ^= static_cast<char>(1 + rng() % 255);
    } else if (kind == 2) {  // truncate
      h.resize(rng() % h.size());
    } else {  // extend with junk
      for (int k = 0; k < 1 + static_cast<int>(rng() % 16); ++k) h.push_back(static_cast<char>(rng()));
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
  Connection c(ctx, "inproc://silent", "machine 3 server 1 at inproc://silent", JobKeys::Insecure());
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
  for (int i = 0; i < 3; ++i) ids.push_back(c.Start(MakeMessage(MsgType::kPing, 0, {i})));
  // Receive all three, answer them in reverse order.
  std::vector<std::vector<zmq::message_t>> reqs(3);
  for (auto& r : reqs) REQUIRE(RecvParts(server, &r, Millis(1000)));
  for (int i = 2; i >= 0; --i) {
    std::vector<zmq::message_t> route;
    route.push_back(std::move(reqs[i][0]));
    reqs[i].erase(reqs[i].begin());
    Message req = Decode(std::move(reqs[i]));
    Message rep = MakeMessage(MsgType::kPong, req.header.request_id, {req.header.ints[0] * 10});
    Send(server, rep, &route);
  }
  auto deadline = std::chrono::steady_clock::now() + Millis(2000);
  for (int i = 0; i < 3; ++i) {
    Message r = c.Finish(ids[i], deadline, "Ping");
    CHECK(r.header.ints[0] == i * 10);
  }
}

namespace {

Message SampleReply(const std::vector<int64_t>& ptr, const std::vector<int64_t>& idx) {
  Message m = MakeMessage(MsgType::kSampleReply, 1);
  AddArray(&m, ptr);
  AddArray(&m, idx);
  return m;
}

}  // namespace

TEST_CASE("a client refuses Sample replies whose offsets or ids do not fit the request", "[unit]") {
  std::vector<int64_t> ptr, idx;
  // 2 seeds, fanout 2, a graph of 10 nodes.
  DecodeSampleReply(SampleReply({0, 2, 3}, {4, 5, 9}), 2, 2, 10, "server 1", &ptr, &idx);
  CHECK(ptr == std::vector<int64_t>{0, 2, 3});
  CHECK(idx == std::vector<int64_t>{4, 5, 9});
  auto refused = [&](const Message& m, const char* why) {
    INFO(why);
    CHECK_THROWS_AS(DecodeSampleReply(m, 2, 2, 10, "server 1", &ptr, &idx), ProtocolError);
    CHECK_THROWS_WITH(DecodeSampleReply(m, 2, 2, 10, "server 1", &ptr, &idx), Catch::Contains("server 1"));
  };
  refused(SampleReply({0, 3, 1}, {4, 5, 9}), "decreasing offsets (the out-of-range copy of issue 12)");
  refused(SampleReply({1, 2, 3}, {4, 5, 9}), "not starting at 0");
  refused(SampleReply({0, 2, 4}, {4, 5, 9}), "past the neighbours");
  refused(SampleReply({0, 2}, {4, 5}), "too few offsets");
  refused(SampleReply({0, 3, 3}, {4, 5, 9}), "more than fanout in a row");
  refused(SampleReply({0, 2, 3}, {4, -1, 9}), "negative id");
  refused(SampleReply({0, 2, 3}, {4, 5, 10}), "id past the graph");
  // fanout -1 (all neighbours): any row length.
  CHECK_NOTHROW(DecodeSampleReply(SampleReply({0, 3, 3}, {1, 2, 3}), 2, -1, 10, "s", &ptr, &idx));
}

TEST_CASE("a client refuses feature, label and split replies of the wrong size or range", "[unit]") {
  Message f = MakeMessage(MsgType::kPullFeaturesReply, 1, {3});
  AddArray(&f, std::vector<float>(6, 1.0f));
  CHECK(DecodeFeaturesReply(f, 2, 3, "s") != nullptr);
  CHECK_THROWS_AS(DecodeFeaturesReply(f, 3, 3, "s"), ProtocolError);
  CHECK_THROWS_AS(DecodeFeaturesReply(f, 3, 2, "s"), ProtocolError);
  Message l = MakeMessage(MsgType::kPullLabelsReply, 1);
  AddArray(&l, std::vector<int64_t>{1, 2});
  CHECK(DecodeLabelsReply(l, 2, "s").size() == 2);
  CHECK_THROWS_AS(DecodeLabelsReply(l, 3, "s"), ProtocolError);
  Message s = MakeMessage(MsgType::kSplitNodesReply, 1);
  AddArray(&s, std::vector<int64_t>{10, 12, 13});
  CHECK(DecodeSplitNodesReply(s, 3, 10, 20, "s").size() == 3);
  CHECK_THROWS_AS(DecodeSplitNodesReply(s, 3, 11, 20, "s"), ProtocolError);  // outside the partition
  CHECK_THROWS_AS(DecodeSplitNodesReply(s, 2, 10, 20, "s"), ProtocolError);  // wrong count
  Message unordered = MakeMessage(MsgType::kSplitNodesReply, 1);
  AddArray(&unordered, std::vector<int64_t>{12, 10});
  CHECK_THROWS_AS(DecodeSplitNodesReply(unordered, 2, 10, 20, "s"), ProtocolError);
}
