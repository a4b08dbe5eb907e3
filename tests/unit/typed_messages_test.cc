// The heterogeneous messages: through the wire and back, malformed ones
// refused, replies checked against their request.
#include "net/typed_messages.h"

#include <catch2/catch.hpp>
#include <cstring>

#include "common/bfloat16.h"
#include "common/error.h"
#include "net/batch_codec.h"

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

// `m` with its header's fields replaced.
Message WithFields(const Message& m, std::vector<Field> fields) {
  Message c;
  c.header = m.header;
  c.header.fields = std::move(fields);
  for (const auto& f : m.frames) c.frames.emplace_back(f.data(), f.size());
  return c;
}

// `m` with field `key` set to `value` (added when absent).
Message WithField(const Message& m, Key key, int64_t value) {
  Message c = WithFields(m, m.header.fields);
  if (int64_t* v = c.header.Find(key)) {
    *v = value;
  } else {
    c.header.Add(key, value);
  }
  return c;
}

// `m` without field `key`.
Message Without(const Message& m, Key key) {
  std::vector<Field> fields;
  for (const Field& f : m.header.fields) {
    if (f.key != key) fields.push_back(f);
  }
  return WithFields(m, fields);
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
  CHECK(PullTyped::Decode(Received(PullTyped{3, {7}}.Encode(1))).format == RowFormat::kFloat32);
  const PullTyped narrow =
      PullTyped::Decode(Received(PullTyped{2, {7, 8}, RowFormat::kBfloat16}.Encode(1)));
  CHECK((narrow.ntype == 2 && narrow.ids == std::vector<int64_t>{7, 8} &&
         narrow.format == RowFormat::kBfloat16));
  // float32 and int64 ids: no format or coding field.
  CHECK(PullTyped{3, {7}}.Encode(1).header.fields == std::vector<Field>{{Key::kNtype, 3}});
}

TEST_CASE("heterogeneous messages round-trip with varint ids", "[unit][messages]") {
  const IdCoding v = IdCoding::kVarint;
  const TypedSampleRequest s{{5, 9, 11, -2}, {10, -1, 0}, true, 123, v};
  const TypedSampleRequest s2 = TypedSampleRequest::Decode(Received(s.Encode(7)));
  CHECK((s2.seeds == s.seeds && s2.fanouts == s.fanouts && s2.coding == v));
  const TypedSampleReply r{{0, 2, 2, 3, 3}, {1, 4, 8}, {0, 1, 1}, v};
  const TypedSampleReply r2 = TypedSampleReply::Decode(Received(r.Encode(7)), s, 100, "peer");
  CHECK((r2.indptr == r.indptr && r2.indices == r.indices && r2.etypes == r.etypes));
  CHECK(r2.coding == v);
  const PullTyped t =
      PullTyped::Decode(Received(PullTyped{2, {7, 8}, RowFormat::kFloat32, v}.Encode(1)));
  CHECK((t.ntype == 2 && t.ids == std::vector<int64_t>{7, 8} && t.coding == v &&
         t.format == RowFormat::kFloat32));
  const EmbPush p{kSpec, {3, 400}, std::vector<float>(8, 0.5f), v};
  const EmbPush p2 = EmbPush::Decode(Received(p.Encode(1)));
  CHECK((p2.spec == kSpec && p2.ids == p.ids && p2.grads == p.grads && p2.coding == v));
  const EmbPull q = EmbPull::Decode(Received(EmbPull{kSpec, {1, 2}, v}.Encode(1)));
  CHECK((q.ids == std::vector<int64_t>{1, 2} && q.coding == v));
  // A coding that is neither, after the fanouts and after the spec.
  Message bad = WithField(s.Encode(1), Key::kCoding, 3);
  CHECK_THROWS_WITH(TypedSampleRequest::Decode(Received(bad)),
                    Catch::Contains("malformed TypedSample: id coding 3"));
  bad = WithField(EmbPull{kSpec, {1}, v}.Encode(1), Key::kCoding, -1);
  CHECK_THROWS_WITH(EmbPull::Decode(Received(bad)),
                    Catch::Contains("malformed EmbPull: id coding -1"));
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
  // A relation count that does not match the fan-outs.
  Message m = TypedSampleRequest{{1}, {2, 3}, false, 0}.Encode(1);
  CHECK_THROWS_AS(TypedSampleRequest::Decode(Received(WithField(m, Key::kRelations, 5))),
                  ProtocolError);
  CHECK_THROWS_AS(TypedSampleRequest::Decode(Received(WithField(m, Key::kRelations, 1))),
                  ProtocolError);
  CHECK_THROWS_AS(TypedSampleRequest::Decode(Received(WithField(m, Key::kRelations, 1 << 20))),
                  ProtocolError);
  // A row format that does not exist.
  Message pull = WithField(PullTyped{1, {4}, RowFormat::kBfloat16}.Encode(1), Key::kFormat, 7);
  CHECK_THROWS_WITH(PullTyped::Decode(Received(pull)), Catch::Contains("row format 7"));
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
    CHECK(m.header.fields ==
          std::vector<Field>{{Key::kRelationWidth, static_cast<int64_t>(width)}});
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
  m.header.fields = {{Key::kRelationWidth, 4}};
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
  CHECK(*m.header.Find(Key::kRelationWidth) == 2);
  CHECK_THROWS_WITH(TypedSampleReply::Decode(m, asked, 1000, "machine 1 server 0"),
                    Catch::Contains("machine 1 server 0") && Catch::Contains("relation 256"));
  // A width that is not 1, 2 or 4; a frame that is not whole ids of the
  // width it claims.
  const TypedSampleReply good{{0, 3}, {1, 2, 3}, {0, 1, 2}};
  Message w = good.Encode(1);
  CHECK_THROWS_AS(
      TypedSampleReply::Decode(Received(WithField(w, Key::kRelationWidth, 3)), asked, 1000, "p"),
      ProtocolError);
  // 3 bytes of uint8 ids read as uint16.
  CHECK_THROWS_AS(
      TypedSampleReply::Decode(Received(WithField(w, Key::kRelationWidth, 2)), asked, 1000, "p"),
      ProtocolError);
  CHECK_THROWS_WITH(
      TypedSampleReply::Decode(Received(Without(w, Key::kRelationWidth)), asked, 1000, "p"),
      Catch::Contains("no field relation_width"));
}

namespace {

// A two-layer typed batch over a graph of `rels` relations and three node
// types (ids < 100: type 0 with 2 features, < 200: type 1 without, the
// rest: type 2 with 3): relation ids up to rels - 1.
HeteroBatch TypedBatch(int64_t rels) {
  HeteroBatch b;
  b.index = 4;
  b.wire_bytes = 1234;
  b.seeds = {10, 11};
  b.labels = {1, 0};
  Block top;  // seeds <- {10, 11, 150, 250}
  top.src_nodes = {10, 11, 150, 250};
  top.indptr = {0, 2, 3};
  top.indices = {2, 3, 0};
  top.etypes = {0, rels - 1, rels / 2};
  Block bottom;  // {10, 11, 150, 250} <- + {12}
  bottom.src_nodes = {10, 11, 150, 250, 12};
  bottom.indptr = {0, 1, 1, 2, 2};
  bottom.indices = {4, 0};
  bottom.etypes = {rels - 1, 0};
  b.blocks = {bottom, top};
  b.GroupInputsByType(3, [](int64_t v) { return v < 100 ? 0 : v < 200 ? 1 : 2; });
  b.features[0] = {0.5f, -1.25f, 2.0f, 3.5f, 1e-7f, -0.0f};  // nodes 10, 11, 12
  b.features[2] = {7.0f, 8.0f, 9.0f};                        // node 250
  return b;
}

TypedBatchSchema Schema(int64_t rels) {
  return {
      rels, {2, 0, 3}, [](int64_t v) { return v < 0     ? -1
                                              : v < 100 ? 0
                                              : v < 200 ? 1
                                                        : 2; }, {}};
}

}  // namespace

TEST_CASE("a typed seed batch and a typed mini-batch round-trip bit for bit", "[unit][messages]") {
  TypedSeedBatch sb;
  sb.epoch = 3;
  sb.index = 9;
  sb.rng_seed = 0xfeedfacecafebeefULL;
  sb.replace = true;
  sb.fanouts = {{5, -1, 0}, {10, 10, 2}};
  sb.seeds = {4, 8, 15};
  const TypedSeedBatch sb2 = DecodeTypedSeedBatch(Received(EncodeTypedSeedBatch(sb, 2)));
  CHECK(sb2.epoch == 3);
  CHECK(sb2.index == 9);
  CHECK(sb2.rng_seed == sb.rng_seed);
  CHECK(sb2.replace);
  CHECK(sb2.fanouts == sb.fanouts);
  CHECK(sb2.seeds == sb.seeds);
  CHECK(sb2.exclude.empty());
  // A typed edge task's batch: its pairs to keep out travel beside the seeds.
  sb.exclude = {4, 8, 15, 4};
  const TypedSeedBatch sb3 = DecodeTypedSeedBatch(Received(EncodeTypedSeedBatch(sb, 3)));
  CHECK(sb3.exclude == sb.exclude);
  CHECK(sb3.seeds == sb.seeds);
  sb.exclude = {4, 8, 15};
  CHECK_THROWS_AS(DecodeTypedSeedBatch(Received(EncodeTypedSeedBatch(sb, 3))), ProtocolError);
  sb.exclude.clear();

  for (const auto& [rels, width] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {256, 1}, {257, 2}}) {
    INFO(rels << " relations");
    HeteroBatch b = TypedBatch(rels);
    b.cache_lookups = 40;
    b.cache_hits = 9;
    const Message m = Received(EncodeTypedMiniBatch(b, 5));
    CHECK(*m.header.Find(Key::kRelationWidth) == width);
    const HeteroBatch d = DecodeTypedMiniBatch(m, Schema(rels));
    CHECK(d.index == 4);
    CHECK(d.wire_bytes == 1234u);
    CHECK(d.cache_lookups == 40u);
    CHECK(d.cache_hits == 9u);
    // A batch that made no cache lookups leaves the counters out: zeros.
    const HeteroBatch o = DecodeTypedMiniBatch(
        Without(Without(m, Key::kCacheLookups), Key::kCacheHits), Schema(rels));
    CHECK(o.cache_lookups == 0u);
    CHECK(o.cache_hits == 0u);
    CHECK(o.seeds == b.seeds);
    // More hits than lookups (or hits without lookups), or no block count.
    CHECK_THROWS_WITH(DecodeTypedMiniBatch(WithField(m, Key::kCacheHits, 41), Schema(rels)),
                      Catch::Contains("cache counters"));
    CHECK_THROWS_WITH(DecodeTypedMiniBatch(Without(m, Key::kCacheLookups), Schema(rels)),
                      Catch::Contains("cache counters"));
    CHECK_THROWS_WITH(DecodeTypedMiniBatch(Without(m, Key::kBlocks), Schema(rels)),
                      Catch::Contains("no field blocks"));
    CHECK(d.seeds == b.seeds);
    CHECK(d.labels == b.labels);
    REQUIRE(d.blocks.size() == 2);
    for (size_t l = 0; l < 2; ++l) {
      CHECK(d.blocks[l].num_dst == b.blocks[l].num_src() - (l == 0 ? 1 : 2));
      CHECK(d.blocks[l].src_nodes == b.blocks[l].src_nodes);
      CHECK(d.blocks[l].indptr == b.blocks[l].indptr);
      CHECK(d.blocks[l].indices == b.blocks[l].indices);
      CHECK(d.blocks[l].etypes == b.blocks[l].etypes);
    }
    CHECK(d.positions == b.positions);
    CHECK(d.ids == b.ids);
    REQUIRE(d.features.size() == 3);
    for (size_t t = 0; t < 3; ++t) {
      REQUIRE(d.features[t].size() == b.features[t].size());
      CHECK(std::memcmp(d.features[t].data(), b.features[t].data(),
                        b.features[t].size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("a malformed typed mini-batch is refused naming what is wrong", "[unit][messages]") {
  const HeteroBatch b = TypedBatch(8);
  // Relation 7 in a graph the receiver knows with 7 relations.
  CHECK_THROWS_WITH(DecodeTypedMiniBatch(Received(EncodeTypedMiniBatch(b, 1)), Schema(7)),
                    Catch::Contains("relation 7"));
  // Another node type count; a node of no type.
  TypedBatchSchema two = Schema(8);
  two.feature_dims = {2, 0};
  CHECK_THROWS_AS(DecodeTypedMiniBatch(Received(EncodeTypedMiniBatch(b, 1)), two), ProtocolError);
  TypedBatchSchema none = Schema(8);
  none.type_of = [](int64_t v) { return v == 250 ? -1 : 0; };
  CHECK_THROWS_WITH(DecodeTypedMiniBatch(Received(EncodeTypedMiniBatch(b, 1)), none),
                    Catch::Contains("node 250"));
  // Rows missing, rows to spare.
  HeteroBatch short_rows = b;
  short_rows.features[2].pop_back();
  CHECK_THROWS_AS(DecodeTypedMiniBatch(Received(EncodeTypedMiniBatch(short_rows, 1)), Schema(8)),
                  ProtocolError);
  HeteroBatch extra = b;
  extra.features[0].push_back(1.0f);
  CHECK_THROWS_AS(DecodeTypedMiniBatch(Received(EncodeTypedMiniBatch(extra, 1)), Schema(8)),
                  ProtocolError);
  // A relation missing beside an edge; an edge outside its block.
  HeteroBatch no_rel = b;
  no_rel.blocks[1].etypes.pop_back();
  CHECK_THROWS_AS(DecodeTypedMiniBatch(Received(EncodeTypedMiniBatch(no_rel, 1)), Schema(8)),
                  ProtocolError);
  HeteroBatch bad_edge = b;
  bad_edge.blocks[0].indices[0] = 5;
  CHECK_THROWS_AS(DecodeTypedMiniBatch(Received(EncodeTypedMiniBatch(bad_edge, 1)), Schema(8)),
                  ProtocolError);
  // A seed batch with ragged or out-of-range fan-outs.
  TypedSeedBatch sb;
  sb.fanouts = {{5, 5}, {5, 5}};
  sb.seeds = {1};
  Message m = EncodeTypedSeedBatch(sb, 1);
  // relations: 2 x 3 fan-outs claimed, 4 sent
  CHECK_THROWS_AS(DecodeTypedSeedBatch(Received(WithField(m, Key::kRelations, 3))), ProtocolError);
  sb.fanouts = {{5, -2}};
  CHECK_THROWS_AS(DecodeTypedSeedBatch(Received(EncodeTypedSeedBatch(sb, 1))), ProtocolError);
  sb.fanouts = {{5}, {5, 5}};
  CHECK_THROWS_AS(EncodeTypedSeedBatch(sb, 1), DataError);
}

TEST_CASE("a typed sums request round-trips and a malformed one is refused", "[unit][messages]") {
  PullTypedSums f;
  f.ntype = 3;
  f.ids = {40, 41, 7, 9, 12};
  f.group_ptr = {0, 2, 2, 5};
  f.format = RowFormat::kBfloat16;
  for (IdCoding c : {IdCoding::kInt64, IdCoding::kVarint}) {
    f.coding = c;
    const PullTypedSums g = PullTypedSums::Decode(Received(f.Encode(3)));
    CHECK(g.ntype == 3);
    CHECK_FALSE(g.embedding);
    CHECK(g.row_type() == 3);
    CHECK(g.ids == f.ids);
    CHECK(g.group_ptr == f.group_ptr);
    CHECK(g.num_groups() == 3);
    CHECK(g.format == RowFormat::kBfloat16);
    CHECK(g.coding == c);
  }
  PullTypedSums e = f;
  e.ntype = kSpec.ntype;
  e.embedding = true;
  e.spec = kSpec;
  e.format = RowFormat::kFloat32;
  const PullTypedSums e2 = PullTypedSums::Decode(Received(e.Encode(1)));
  CHECK(e2.embedding);
  CHECK(e2.spec == kSpec);
  CHECK(e2.row_type() == kSpec.ntype);
  // Offsets that do not span the ids, or decrease.
  PullTypedSums bad = f;
  bad.group_ptr = {0, 2, 4};
  CHECK_THROWS_WITH(PullTypedSums::Decode(Received(bad.Encode(1))),
                    Catch::Contains("do not span its 5 ids"));
  bad.group_ptr = {0, 3, 2, 5};
  CHECK_THROWS_WITH(PullTypedSums::Decode(Received(bad.Encode(1))),
                    Catch::Contains("decrease at group 1"));
  // A table of another type than the one named, a bad flag or format.
  CHECK_THROWS_WITH(PullTypedSums::Decode(Received(WithField(e.Encode(1), Key::kNtype, 1))),
                    Catch::Contains("a table of node type 2"));
  // An embedding flag without a spec, a spec field without the flag.
  CHECK_THROWS_WITH(PullTypedSums::Decode(Received(WithField(f.Encode(1), Key::kEmbedding, 1))),
                    Catch::Contains("no field emb_type"));
  CHECK_THROWS_WITH(PullTypedSums::Decode(Received(Without(e.Encode(1), Key::kEmbedding))),
                    Catch::Contains("without the embedding flag"));
  CHECK_THROWS_WITH(PullTypedSums::Decode(Received(WithField(f.Encode(1), Key::kFormat, 4))),
                    Catch::Contains("row format 4"));
  // A reply with another number of rows than groups.
  PullFeaturesReply rep(2, 2);
  rep.data()[0] = rep.data()[1] = rep.data()[2] = rep.data()[3] = 1.0f;
  CHECK_THROWS_WITH(PullFeaturesReply::DecodeRows(Received(rep.Encode(1)), RowFormat::kFloat32, 3,
                                                  2, "PullTypedSums", "server 1"),
                    Catch::Contains("server 1 sent") && Catch::Contains("PullTypedSums"));
}

TEST_CASE("sums requests are cut into pieces by groups and ids", "[unit][messages]") {
  PullTypedSums all;
  all.ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  all.group_ptr = {0, 2, 3, 8, 9, 10};  // sizes 2 1 5 1 1
  using Pieces = std::vector<std::pair<size_t, size_t>>;
  CHECK(GroupPieces(all.group_ptr, 100, 100) == Pieces{{0, 5}});
  CHECK(GroupPieces(all.group_ptr, 100, 2) == Pieces{{0, 2}, {2, 4}, {4, 5}});
  // At most 3 ids, but the group of 5 alone makes a piece.
  CHECK(GroupPieces(all.group_ptr, 3, 100) == Pieces{{0, 2}, {2, 3}, {3, 5}});
  CHECK(GroupPieces(all.group_ptr, 1, 0) == Pieces{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}});
  CHECK(GroupPieces({0}, 4, 4).empty());
  // The pieces put back together are the request.
  PullTypedSums joined;
  for (const auto& [first, end] : GroupPieces(all.group_ptr, 3, 100)) {
    PullTypedSums piece;
    TakeGroups(all, first, end, &piece);
    CHECK(piece.group_ptr.front() == 0);
    CHECK(piece.group_ptr.back() == static_cast<int64_t>(piece.ids.size()));
    TakeGroups(piece, 0, piece.num_groups(), &joined);
  }
  CHECK(joined.ids == all.ids);
  CHECK(joined.group_ptr == all.group_ptr);
}

TEST_CASE("embedding rows and gradients travel as bfloat16 when asked", "[unit][messages]") {
  const std::vector<float> g = {0.5f, -1.25f, 3.0f, 1e-3f, 7.0f, -0.0f, 2.5f, 1.0f / 3.0f};
  for (IdCoding c : {IdCoding::kInt64, IdCoding::kVarint}) {
    const EmbPush p{kSpec, {3, 4}, g, c, RowFormat::kBfloat16};
    const Message m = Received(p.Encode(1));
    CHECK(m.frames[1].size() == g.size() * 2);  // half the bytes
    const EmbPush q = EmbPush::Decode(m);
    CHECK(q.format == RowFormat::kBfloat16);
    CHECK(q.coding == c);
    REQUIRE(q.grads.size() == g.size());
    for (size_t i = 0; i < g.size(); ++i)
      CHECK(q.grads[i] == Bfloat16ToFloat(FloatToBfloat16(g[i])));
    const EmbPull r =
        EmbPull::Decode(Received(EmbPull{kSpec, {1, 2}, c, RowFormat::kBfloat16}.Encode(1)));
    CHECK(r.format == RowFormat::kBfloat16);
    CHECK(r.ids == std::vector<int64_t>{1, 2});
  }
  // Another message with the same spec fields is not taken for one.
  CHECK_THROWS_AS(EmbPull::Decode(Received(EmbRestore{kSpec, 5, "abc"}.Encode(1))), ProtocolError);
  // float32 messages with int64 ids carry the spec alone.
  CHECK(EmbPull{kSpec, {1}}.Encode(1).header.fields.size() == 5);
  CHECK(EmbPush{kSpec, {1}, std::vector<float>(4)}.Encode(1).header.fields.size() == 5);
  // A format that does not exist; bfloat16 gradients that are not whole rows.
  Message bad = WithField(EmbPull{kSpec, {1}, IdCoding::kInt64, RowFormat::kBfloat16}.Encode(1),
                          Key::kFormat, 3);
  CHECK_THROWS_WITH(EmbPull::Decode(Received(bad)), Catch::Contains("row format 3"));
  const EmbPush cut{
      kSpec, {3, 4}, std::vector<float>(7, 1.0f), IdCoding::kInt64, RowFormat::kBfloat16};
  CHECK_THROWS_WITH(EmbPush::Decode(Received(cut.Encode(1))),
                    Catch::Contains("7 gradient values for 2 rows"));
}

TEST_CASE("an input_means typed mini-batch carries its featured relations' means",
          "[unit][messages]") {
  // Relations 0 (source type 0, 2 features), 1 (source type 1, none) and 2
  // (source type 2, 3 features).
  HeteroBatch b = TypedBatch(3);
  b.input_means = true;
  b.GroupInputsByType(
      3, [](int64_t v) { return v < 100   ? 0
                                : v < 200 ? 1
                                          : 2; }, 4);
  b.features[0] = {0.5f, -1.25f, 2.0f, 3.5f};  // nodes 10, 11: the destinations of type 0
  b.features[2] = {7.0f, 8.0f, 9.0f};          // node 250
  // Block 0: destination 0 has relation 2's edge (from 12: type 0, but the
  // test's schema says relation 2's sources are type 2), destination 2
  // relation 0's.
  b.means = {{1.5f, 2.5f}, {}, {0.25f, -3.0f, 1e-7f}};
  TypedBatchSchema schema = Schema(3);
  schema.rel_src_type = {0, 1, 2};
  const Message m = Received(EncodeTypedMiniBatch(b, 5));
  const HeteroBatch d = DecodeTypedMiniBatch(m, schema);
  CHECK(d.input_means);
  CHECK(d.means == b.means);
  CHECK(d.ids == b.ids);
  CHECK(d.positions == b.positions);
  CHECK(d.features == b.features);
  // Means that do not cover the groups, or go beyond them.
  HeteroBatch short_means = b;
  short_means.means[2].pop_back();
  CHECK_THROWS_WITH(DecodeTypedMiniBatch(Received(EncodeTypedMiniBatch(short_means, 1)), schema),
                    Catch::Contains("relation 2's groups"));
  HeteroBatch long_means = b;
  long_means.means[1] = {1.0f};  // a featureless relation's travel with the trainer, not here
  CHECK_THROWS_WITH(DecodeTypedMiniBatch(Received(EncodeTypedMiniBatch(long_means, 1)), schema),
                    Catch::Contains("beyond"));
  // A flag that is not 1.
  CHECK_THROWS_WITH(DecodeTypedMiniBatch(WithField(m, Key::kInputMeans, 2), schema),
                    Catch::Contains("flag input_means = 2"));
}

TEST_CASE("TypedSample carries each sampled edge's features when asked, checked against the ask",
          "[unit][messages]") {
  TypedSampleRequest s{{5, 9}, {2, -1}, false, 1};
  s.edge_data = true;
  const TypedSampleRequest s2 = TypedSampleRequest::Decode(Received(s.Encode(3)));
  CHECK(s2.edge_data);
  CHECK_FALSE(
      TypedSampleRequest::Decode(Received(TypedSampleRequest{{5}, {1}}.Encode(3))).edge_data);
  TypedSampleReply r{{0, 2, 3}, {1, 4, 8}, {0, 1, 1}};
  r.edge_dim = 2;
  r.edge_data = {0.5f, 1, 2, 3, 4, 5};
  const TypedSampleReply r2 = TypedSampleReply::Decode(Received(r.Encode(7)), s, 100, "peer", 2);
  CHECK(r2.edge_dim == 2);
  CHECK(r2.edge_data == r.edge_data);
  // Rows of another width than asked, or none when asked: the peer is named.
  CHECK_THROWS_WITH(TypedSampleReply::Decode(Received(r.Encode(7)), s, 100, "peer", 3),
                    Catch::Contains("peer") && Catch::Contains("edge data 2 wide where 3"));
  TypedSampleReply bare{{0, 2, 3}, {1, 4, 8}, {0, 1, 1}};
  CHECK_THROWS_WITH(TypedSampleReply::Decode(Received(bare.Encode(7)), s, 100, "peer", 2),
                    Catch::Contains("edge data 0 wide where 2"));
  // Rows that do not cover the edges are malformed.
  r.edge_data.pop_back();
  CHECK_THROWS_AS(TypedSampleReply::Decode(Received(r.Encode(7))), ProtocolError);
}

TEST_CASE("a TypedMiniBatch's edge rows travel in one frame, their width as the receiver asked",
          "[unit][messages]") {
  HeteroBatch b;
  b.seeds = {0};
  b.labels = {1};
  Block blk;
  blk.num_dst = 1;
  blk.src_nodes = {0, 1, 2};
  blk.indptr = {0, 2};
  blk.indices = {1, 2};
  blk.etypes = {0, 1};
  blk.edge_dim = 2;
  blk.edge_data = {1, 2, 3, 4};
  b.blocks = {blk};
  b.features.assign(1, {});
  TypedBatchSchema schema;
  schema.num_rels = 2;
  schema.feature_dims = {0};
  schema.type_of = [](int64_t) { return 0; };
  schema.edge_dim = 2;
  const Message m = Received(EncodeTypedMiniBatch(b, 1));
  const HeteroBatch got = DecodeTypedMiniBatch(m, schema);
  REQUIRE(got.blocks.size() == 1);
  CHECK(got.blocks[0].edge_dim == 2);
  CHECK(got.blocks[0].edge_data == blk.edge_data);
  schema.edge_dim = 3;
  CHECK_THROWS_WITH(DecodeTypedMiniBatch(m, schema), Catch::Contains("2 wide where 3"));
  schema.edge_dim = 0;
  CHECK_THROWS_AS(DecodeTypedMiniBatch(m, schema), ProtocolError);
}
