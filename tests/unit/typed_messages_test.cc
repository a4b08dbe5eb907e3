// The heterogeneous messages: through the wire and back, malformed ones
// refused, replies checked against their request.
#include "net/typed_messages.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using namespace gnn;
using namespace gnn::net;

namespace {

Message Received(const Message& m) {
  std::vector<zmq::message_t> parts;
  zmq::message_t h = EncodeHeader(m.header);
  parts.emplace_back(h.data(), h.size());
  for (const auto& f : m.frames) parts.emplace_back(f.data(), f.size());
  return Decode(std::move(parts));
}

const EmbSpec kSpec{2, 4, 1, 0.06, 99};

}  // namespace

TEST_CASE("heterogeneous messages round-trip", "[unit][messages]") {
  const TypedSampleRequest s{{5, 9, 11}, {10, -1, 0}, true, 123};
  const TypedSampleRequest s2 = TypedSampleRequest::Decode(Received(s.Encode(7)));
  CHECK(s2.seeds == s.seeds);
  CHECK(s2.fanouts == s.fanouts);
  CHECK(s2.replace);
  CHECK(s2.rng_seed == 123u);

  const TypedSampleReply r{{0, 2, 2, 3}, {1, 4, 8}, {0, 1, 1}};
  const TypedSampleReply r2 = TypedSampleReply::Decode(Received(r.Encode(7)), s, 100, "peer");
  CHECK(r2.indices == r.indices);
  CHECK(r2.etypes == r.etypes);

  const EmbPush p{kSpec, {3, 4}, std::vector<float>(8, 0.5f)};
  const EmbPush p2 = EmbPush::Decode(Received(p.Encode(1)));
  CHECK(p2.spec == kSpec);
  CHECK(p2.ids == p.ids);
  CHECK(p2.grads == p.grads);
  CHECK(EmbPull::Decode(Received(EmbPull{kSpec, {1, 2}}.Encode(1))).ids ==
        std::vector<int64_t>{1, 2});
  const EmbSave sv = EmbSave::Decode(Received(EmbSave{kSpec, 3, 9}.Encode(1)));
  CHECK((sv.begin == 3 && sv.end == 9 && sv.spec == kSpec));
  const EmbRestore rs = EmbRestore::Decode(Received(EmbRestore{kSpec, 5, "abc"}.Encode(1)));
  CHECK((rs.begin == 5 && rs.bytes == "abc"));
  CHECK(EmbBlob::Decode(Received(EmbBlob{"xyz"}.Encode(1)), "p").bytes == "xyz");
  CHECK(EmbAck::Decode(Received(EmbAck{4}.Encode(1)), 4, "p").rows == 4);
  CHECK(PullTyped::Decode(Received(PullTyped{3, {7}}.Encode(1))).ntype == 3);
}

TEST_CASE("malformed heterogeneous messages are refused", "[unit][messages]") {
  // Gradient rows that do not match the ids.
  EmbPush p{kSpec, {3, 4}, std::vector<float>(7, 0.5f)};
  CHECK_THROWS_AS(EmbPush::Decode(Received(p.Encode(1))), ProtocolError);
  // A spec with a zero width or an unknown optimizer.
  CHECK_THROWS_AS(EmbPull::Decode(Received(EmbPull{{0, 0, 0, 0.1, 0}, {1}}.Encode(1))),
                  ProtocolError);
  CHECK_THROWS_AS(EmbPull::Decode(Received(EmbPull{{0, 4, 7, 0.1, 0}, {1}}.Encode(1))),
                  ProtocolError);
  CHECK_THROWS_AS(EmbSave::Decode(Received(EmbSave{kSpec, 5, 2}.Encode(1))), ProtocolError);
  // A relation count that does not match the ints.
  Message m = TypedSampleRequest{{1}, {2, 3}, false, 0}.Encode(1);
  m.header.ints[2] = 5;
  CHECK_THROWS_AS(TypedSampleRequest::Decode(Received(m)), ProtocolError);
  m.header.ints[2] = 1 << 20;
  CHECK_THROWS_AS(TypedSampleRequest::Decode(Received(m)), ProtocolError);
  // Another type altogether.
  CHECK_THROWS_AS(EmbPull::Decode(Received(EmbAck{1}.Encode(1))), ProtocolError);
}

TEST_CASE("a typed sample reply is checked against its request", "[unit][messages]") {
  const TypedSampleRequest asked{{5, 9}, {1, 2}, false, 0};
  auto reply = [&](TypedSampleReply r) {
    return TypedSampleReply::Decode(Received(r.Encode(1)), asked, 100, "machine 1 server 0");
  };
  CHECK_NOTHROW(reply({{0, 3, 3}, {1, 2, 3}, {0, 1, 1}}));
  // Too many of relation 0, relation out of order, relation out of range,
  // a node outside the graph, a row missing.
  CHECK_THROWS_WITH(reply({{0, 2, 2}, {1, 2}, {0, 0}}), Catch::Contains("machine 1 server 0"));
  CHECK_THROWS_AS(reply({{0, 2, 2}, {1, 2}, {1, 0}}), ProtocolError);
  CHECK_THROWS_AS(reply({{0, 1, 1}, {1}, {2}}), ProtocolError);
  CHECK_THROWS_AS(reply({{0, 1, 1}, {100}, {0}}), ProtocolError);
  CHECK_THROWS_AS(reply({{0, 1}, {1}, {0}}), ProtocolError);
  // Offsets that do not span the indices; an ack for other rows.
  CHECK_THROWS_AS(reply({{0, 1, 3}, {1, 2}, {0, 1}}), ProtocolError);
  CHECK_THROWS_AS(EmbAck::Decode(Received(EmbAck{3}.Encode(1)), 4, "p"), ProtocolError);
}

TEST_CASE("relation ids travel in the narrowest width that holds them", "[unit][messages]") {
  // One seed with one edge of every relation: 1 and 256 relations fit a
  // byte per id, 257 need two.
  for (const auto& [rels, width] :
       std::vector<std::pair<int64_t, size_t>>{{1, 1}, {256, 1}, {257, 2}}) {
    INFO(rels << " relations");
    const TypedSampleRequest asked{
        {5}, std::vector<int64_t>(static_cast<size_t>(rels), -1), false, 0};
    TypedSampleReply r{{0, rels}, {}, {}};
    for (int64_t e = 0; e < rels; ++e) {
      r.indices.push_back(e);
      r.etypes.push_back(e);
    }
    const Message m = Received(r.Encode(3));
    CHECK(m.header.ints == std::vector<int64_t>{static_cast<int64_t>(width)});
    CHECK(m.frames[2].size() == static_cast<size_t>(rels) * width);
    const TypedSampleReply back = TypedSampleReply::Decode(m, asked, 1000, "peer");
    CHECK(back.etypes == r.etypes);
    CHECK(back.indices == r.indices);
    // The helpers alone, int32 included.
    CHECK(RelationWidth(r.etypes) == static_cast<int>(width));
  }
  CHECK(RelationWidth({0, 65535}) == 2);
  CHECK(RelationWidth({65536}) == 4);
  Message m = MakeMessage(MsgType::kTypedSampleReply, 1);
  CHECK(AddRelations(&m, {7, 70000, 3}) == 4);
  m.header.ints = {4};
  CHECK(ReadRelations(Received(m), 0, 4, 70001) == std::vector<int64_t>{7, 70000, 3});
  CHECK_THROWS_AS(ReadRelations(Received(m), 0, 4, 70000), ProtocolError);
  CHECK_THROWS_AS(RelationWidth({-1}), DataError);
}

TEST_CASE("a typed sample reply with a relation out of range or a bad width is refused",
          "[unit][messages]") {
  // A graph of 256 relations: relation 256 (sent as uint16) is outside it.
  const TypedSampleRequest asked{{5}, std::vector<int64_t>(256, -1), false, 0};
  const TypedSampleReply bad{{0, 2}, {1, 2}, {3, 256}};
  const Message m = Received(bad.Encode(1));
  CHECK(m.header.ints[0] == 2);
  CHECK_THROWS_WITH(TypedSampleReply::Decode(m, asked, 1000, "machine 1 server 0"),
                    Catch::Contains("machine 1 server 0") && Catch::Contains("relation 256"));
  // A width that is not 1, 2 or 4; a frame that is not whole ids of the
  // width it claims.
  const TypedSampleReply good{{0, 3}, {1, 2, 3}, {0, 1, 2}};
  Message w = good.Encode(1);
  w.header.ints[0] = 3;
  CHECK_THROWS_AS(TypedSampleReply::Decode(Received(w), asked, 1000, "p"), ProtocolError);
  w.header.ints[0] = 2;  // 3 bytes of uint8 ids read as uint16
  CHECK_THROWS_AS(TypedSampleReply::Decode(Received(w), asked, 1000, "p"), ProtocolError);
  w.header.ints.clear();
  CHECK_THROWS_AS(TypedSampleReply::Decode(Received(w), asked, 1000, "p"), ProtocolError);
}
