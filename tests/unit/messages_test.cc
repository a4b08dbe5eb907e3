#include "net/messages.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "net/protocol.h"

using namespace gnn;
using namespace gnn::net;

namespace {

// What goes on the wire: the header frame's bytes, then each array frame's.
std::vector<std::string> Wire(const Message& m) {
  std::vector<std::string> out;
  zmq::message_t h = EncodeHeader(m.header);
  out.emplace_back(static_cast<const char*>(h.data()), h.size());
  for (const auto& f : m.frames) out.emplace_back(static_cast<const char*>(f.data()), f.size());
  return out;
}

// Through the wire and back: the receiver's view of `m`.
Message Received(const Message& m) {
  std::vector<zmq::message_t> parts;
  for (const std::string& p : Wire(m)) parts.emplace_back(p.data(), p.size());
  return Decode(std::move(parts));
}

template <typename T>
void RoundTrips(const T& value) {
  const Message m = value.Encode(42);
  CHECK(m.header.request_id == 42u);
  CHECK(T::Decode(Received(m)) == value);
}

// Variants of `good` with a field its type does not take, an extra frame, another type: T's
// decoder refuses each with an error that names `name`.
template <typename T>
void RefusesBadShapes(const Message& good, const std::string& name) {
  INFO(name);
  std::vector<Message> bad;
  bad.push_back(Received(good));
  bad.back().header.Add(static_cast<Key>(999), 7);  // no type takes it
  bad.push_back(Received(good));
  AddArray(&bad.back(), std::vector<int64_t>{1});
  bad.push_back(Received(good));
  bad.back().header.type = static_cast<uint16_t>(
      good.header.msg_type() == MsgType::kPing ? MsgType::kPong : MsgType::kPing);
  for (const Message& m : bad) {
    INFO(m.header.DebugString());
    CHECK_THROWS_WITH(T::Decode(m), Catch::Contains("malformed " + name + ":"));
  }
}

PullFeaturesReply Rows(int64_t dim, const std::vector<float>& values) {
  PullFeaturesReply r(dim, dim ? values.size() / dim : 0);
  std::copy(values.begin(), values.end(), r.data());
  return r;
}

}  // namespace

TEST_CASE("every typed message round-trips through the wire", "[unit]") {
  RoundTrips(Hello{"ogbn-products", std::string(64, 'a'), "job-7"});
  RoundTrips(Hello{"g", "", ""});
  RoundTrips(HelloReply{1, 2, 100, 200, 128, 47});
  RoundTrips(SamplerHello{{"g", "sha", "job"}, 3, 1});
  RoundTrips(Ping{});
  RoundTrips(Pong{4, 1});
  RoundTrips(SampleRequest{{5, 6, 7}, 10, true, ~uint64_t{0}});
  RoundTrips(SampleRequest{{}, -1, false, 0});
  RoundTrips(SampleReply{{0, 2, 2, 3}, {9, 8, 7}});
  RoundTrips(SampleReply{{0}, {}});
  {
    SampleRequest with_edges{{5, 6}, 3, false, 9};
    with_edges.edge_data = true;
    RoundTrips(with_edges);
    SampleReply rows{{0, 2, 3}, {9, 8, 7}};
    rows.edge_dim = 2;
    rows.edge_data = {0.5f, 1.f, 2.f, 3.f, -4.f, 5.f};
    RoundTrips(rows);
  }
  RoundTrips(PullFeatures{{1, 2, 3}});
  RoundTrips(Rows(2, {0.5f, -1.f, 3.f, 4.f}));
  RoundTrips(Rows(0, {}));
  RoundTrips(PullLabels{{int64_t{1} << 40}});
  RoundTrips(PullLabelsReply{{0, 46, -1}});
  RoundTrips(SplitNodes{1, 10, 20});
  RoundTrips(SplitNodesReply{{3, 4, 90}});
  RoundTrips(Metadata{});
  RoundTrips(MetadataReply{R"({"graph_name":"g"})"});
  RoundTrips(Shutdown{"job-7"});
  RoundTrips(ShutdownReply{});
  RoundTrips(Stop{});
  RoundTrips(ErrorReply{kErrMismatch, "wrong graph"});
}

TEST_CASE("typed messages are byte for byte the named fields their MsgType comments list",
          "[unit]") {
  const std::vector<int64_t> seeds = {5, 6, 7};
  Message old_sample = MakeMessage(MsgType::kSample, 9,
                                   {{Key::kFanout, 10}, {Key::kReplace, 1}, {Key::kRngSeed, -3}});
  AddArray(&old_sample, seeds);
  CHECK(Wire(SampleRequest{seeds, 10, true, static_cast<uint64_t>(-3)}.Encode(9)) ==
        Wire(old_sample));

  CHECK(Wire(Hello{"g", "abc", "job"}.Encode(0)) ==
        Wire(MakeMessage(MsgType::kHello, 0, {}, "g\nabc\njob")));
  CHECK(Wire(SamplerHello{{"g", "abc", "job"}, 2, 1}.Encode(0)) ==
        Wire(MakeMessage(MsgType::kHello, 0, {{Key::kTrainer, 2}, {Key::kSampler, 1}},
                         "g\nabc\njob")));
  CHECK(Wire(HelloReply{0, 1, 2, 3, 4, 5}.Encode(3)) == Wire(MakeMessage(MsgType::kHelloReply, 3,
                                                                         {{Key::kMachine, 0},
                                                                          {Key::kServer, 1},
                                                                          {Key::kNodeStart, 2},
                                                                          {Key::kNodeEnd, 3},
                                                                          {Key::kFeatureDim, 4},
                                                                          {Key::kClasses, 5}})));
  CHECK(Wire(Ping{}.Encode(0)) == Wire(MakeMessage(MsgType::kPing, 0)));
  CHECK(Wire(Pong{1, 0}.Encode(5)) ==
        Wire(MakeMessage(MsgType::kPong, 5, {{Key::kMachine, 1}, {Key::kServer, 0}})));
  CHECK(Wire(SplitNodes{0, 4, 8}.Encode(1)) ==
        Wire(MakeMessage(MsgType::kSplitNodes, 1,
                         {{Key::kMask, 0}, {Key::kOffset, 4}, {Key::kCount, 8}})));
  CHECK(Wire(Shutdown{"job"}.Encode(1)) == Wire(MakeMessage(MsgType::kShutdown, 1, {}, "job")));
  CHECK(Wire(ErrorReply{kErrBadRequest, "no"}.Encode(1)) ==
        Wire(MakeError(1, kErrBadRequest, "no")));
  Message old_rows = MakeMessage(MsgType::kPullFeaturesReply, 2, {{Key::kDim, 2}});
  AddArray(&old_rows, std::vector<float>{1.f, 2.f, 3.f, 4.f});
  CHECK(Wire(Rows(2, {1.f, 2.f, 3.f, 4.f}).Encode(2)) == Wire(old_rows));
}

TEST_CASE("typed decoders refuse wrong shapes and types, naming the type", "[unit]") {
  RefusesBadShapes<Hello>(Hello{"g", "s", "j"}.Encode(1), "Hello");
  RefusesBadShapes<HelloReply>(HelloReply{}.Encode(1), "HelloReply");
  RefusesBadShapes<SamplerHello>(SamplerHello{}.Encode(1), "Hello");
  RefusesBadShapes<Ping>(Ping{}.Encode(1), "Ping");
  RefusesBadShapes<Pong>(Pong{}.Encode(1), "Pong");
  RefusesBadShapes<SampleRequest>(SampleRequest{{1}, 2, false, 3}.Encode(1), "Sample");
  RefusesBadShapes<SampleReply>(SampleReply{{0, 1}, {4}}.Encode(1), "SampleReply");
  RefusesBadShapes<PullFeatures>(PullFeatures{{1}}.Encode(1), "PullFeatures");
  RefusesBadShapes<PullFeaturesReply>(Rows(1, {1.f}).Encode(1), "PullFeaturesReply");
  RefusesBadShapes<PullLabels>(PullLabels{{1}}.Encode(1), "PullLabels");
  RefusesBadShapes<PullLabelsReply>(PullLabelsReply{{1}}.Encode(1), "PullLabelsReply");
  RefusesBadShapes<SplitNodes>(SplitNodes{}.Encode(1), "SplitNodes");
  RefusesBadShapes<SplitNodesReply>(SplitNodesReply{{1}}.Encode(1), "SplitNodesReply");
  RefusesBadShapes<Metadata>(Metadata{}.Encode(1), "Metadata");
  RefusesBadShapes<MetadataReply>(MetadataReply{"{}"}.Encode(1), "MetadataReply");
  RefusesBadShapes<Shutdown>(Shutdown{"j"}.Encode(1), "Shutdown");
  RefusesBadShapes<ShutdownReply>(ShutdownReply{}.Encode(1), "ShutdownReply");
  RefusesBadShapes<Stop>(Stop{}.Encode(1), "Stop");
  RefusesBadShapes<ErrorReply>(ErrorReply{1, "x"}.Encode(1), "Error");
}

TEST_CASE("typed decoders refuse frames whose contents cannot be what the type says", "[unit]") {
  // Sample offsets that do not describe the indices.
  CHECK_THROWS_WITH(SampleReply::Decode(SampleReply{{}, {}}.Encode(1)),
                    Catch::Contains("malformed SampleReply"));
  CHECK_THROWS_WITH(SampleReply::Decode(SampleReply{{0, 2, 1}, {1}}.Encode(1)),
                    Catch::Contains("offsets decrease at seed 1"));
  CHECK_THROWS_WITH(SampleReply::Decode(SampleReply{{0, 2}, {1}}.Encode(1)),
                    Catch::Contains("do not span"));
  // Edge rows that are not one per neighbour, or not what was asked.
  {
    SampleReply r{{0, 2}, {1, 2}};
    r.edge_dim = 2;
    r.edge_data = {1.f, 2.f, 3.f};
    CHECK_THROWS_WITH(SampleReply::Decode(r.Encode(1)),
                      Catch::Contains("3 edge data values for 2 neighbours of width 2"));
    r.edge_data = {1.f, 2.f, 3.f, 4.f};
    SampleRequest asked{{7}, 2, false, 1};
    CHECK_THROWS_WITH(SampleReply::Decode(r.Encode(1), asked, 10, "machine 1 server 0"),
                      Catch::Contains("machine 1 server 0") &&
                          Catch::Contains("edge data 2 wide where 0 was asked"));
    asked.edge_data = true;
    CHECK(SampleReply::Decode(r.Encode(1), asked, 10, "m", 2).edge_data == r.edge_data);
    CHECK_THROWS_WITH(SampleReply::Decode(r.Encode(1), asked, 10, "m", 3),
                      Catch::Contains("2 wide where 3 was asked"));
  }
  // Feature rows: a negative width, a partial row, a ragged float frame.
  CHECK_THROWS_WITH(PullFeaturesReply::Decode(Rows(-1, {}).Encode(1)),
                    Catch::Contains("negative width"));
  Message partial = MakeMessage(MsgType::kPullFeaturesReply, 1, {{Key::kDim, 2}});
  AddArray(&partial, std::vector<float>{1.f, 2.f, 3.f});
  CHECK_THROWS_WITH(PullFeaturesReply::Decode(partial), Catch::Contains("not whole rows"));
  Message ragged = MakeMessage(MsgType::kPullFeaturesReply, 1, {{Key::kDim, 1}});
  AddArray(&ragged, std::vector<char>{1, 2, 3});
  CHECK_THROWS_AS(PullFeaturesReply::Decode(ragged), ProtocolError);
  // Ids not in increasing order; an id frame that is not whole int64s.
  CHECK_THROWS_WITH(SplitNodesReply::Decode(SplitNodesReply{{3, 3}}.Encode(1)),
                    Catch::Contains("out of order"));
  Message odd = MakeMessage(MsgType::kPullLabels, 1);
  AddArray(&odd, std::vector<char>(12, 0));
  CHECK_THROWS_WITH(PullLabels::Decode(odd), Catch::Contains("PullLabels"));
}

TEST_CASE("a Hello's text is parsed in one place, leniently", "[unit]") {
  CHECK(Hello::Parse("g\nsha\njob") == Hello{"g", "sha", "job"});
  CHECK(Hello::Parse("g\nsha\n") == Hello{"g", "sha", ""});
  // Missing lines read as empty: a foreign text is a mismatch, not malformed.
  CHECK(Hello::Parse("g") == Hello{"g", "", ""});
  CHECK(Hello::Parse("") == Hello{});
  CHECK(Hello::Parse("g\nsha") == Hello{"g", "sha", ""});
  CHECK(Hello::Parse(Hello{"a", "b", "c"}.Text()) == Hello{"a", "b", "c"});
  CHECK(Hello{"a", "b", "c"} != Hello{"a", "b", "d"});
}

TEST_CASE("a decoded feature reply shares the received buffer and outlives the message", "[unit]") {
  PullFeaturesReply sent = Rows(4, std::vector<float>(4 * 100, 2.5f));
  PullFeaturesReply got;
  {
    const Message m = Received(sent.Encode(1));
    got = PullFeaturesReply::Decode(m, PullFeatures{std::vector<int64_t>(100, 0)}, 4, "s");
    CHECK(got.data() == static_cast<const void*>(m.frames[0].data()));  // no copy
  }
  CHECK(got == sent);
  CHECK(got.num_floats() == 400u);
}

TEST_CASE("every message type has a one-line DebugString naming it and its sizes", "[unit]") {
  SampleRequest s;
  s.seeds = {1, 2, 3};
  s.fanout = 10;
  CHECK(s.DebugString() == "SampleRequest{seeds=3, fanout=10, replace=0, rng_seed=0}");
  SampleReply r;
  r.indptr = {0, 2, 3};
  r.indices = {4, 5, 6};
  CHECK(r.DebugString() == "SampleReply{rows=2, neighbours=3}");
  Hello h{"cora", std::string(64, 'a'), "job-1"};
  CHECK(h.DebugString() == "Hello{graph=cora, config_sha256=aaaaaaaaaaaa, job=job-1}");
  SplitNodes sn;
  sn.mask = 1;
  sn.offset = 5;
  sn.count = 7;
  CHECK(sn.DebugString() == "SplitNodes{mask=1, offset=5, count=7}");
  CHECK(Ping().DebugString() == "Ping{}");
  for (const std::string& d :
       {HelloReply().DebugString(), SamplerHello().DebugString(), Pong().DebugString(),
        PullFeatures().DebugString(), PullLabels().DebugString(), PullLabelsReply().DebugString(),
        SplitNodesReply().DebugString(), Metadata().DebugString(), MetadataReply().DebugString(),
        Shutdown().DebugString(), ShutdownReply().DebugString(), Stop().DebugString(),
        ErrorReply().DebugString()}) {
    CHECK(d.find('{') != std::string::npos);
    CHECK(d.back() == '}');
    CHECK(d.find('\n') == std::string::npos);
  }
}

namespace {

SampleAggregateReply Aggregated(int64_t dim, std::vector<int64_t> counts,
                                std::vector<int64_t> remote_indptr,
                                std::vector<int64_t> remote_ids) {
  SampleAggregateReply r(dim, counts.size());
  for (size_t i = 0; i < r.num_values(); ++i) r.data()[i] = 0.5f * static_cast<float>(i);
  r.counts = std::move(counts);
  r.remote_indptr = std::move(remote_indptr);
  r.remote_ids = std::move(remote_ids);
  return r;
}

}  // namespace

TEST_CASE("SampleAggregate round-trips, and its reply is checked against the request", "[unit]") {
  RoundTrips(SampleAggregateRequest{{5, 6, 7}, 10, true, ~uint64_t{0}});
  RoundTrips(SampleAggregateRequest{{}, -1, false, 0});
  const SampleAggregateReply good = Aggregated(2, {3, 0, 2}, {0, 1, 1, 3}, {40, 41, 42});
  RoundTrips(good);
  RoundTrips(Aggregated(0, {}, {0}, {}));
  RefusesBadShapes<SampleAggregateRequest>(SampleAggregateRequest{{1}, 2, false, 3}.Encode(1),
                                           "SampleAggregate");
  RefusesBadShapes<SampleAggregateReply>(good.Encode(1), "SampleAggregateReply");
  CHECK(good.DebugString() == "SampleAggregateReply{dsts=3, dim=2, remote=3}");

  // Structure: rows for every destination, remote offsets spanning the ids,
  // never more remote neighbours than sampled ones.
  auto malformed = [](const SampleAggregateReply& r, const std::string& what) {
    INFO(what);
    CHECK_THROWS_WITH(SampleAggregateReply::Decode(Received(r.Encode(1))),
                      Catch::Contains("malformed SampleAggregateReply") && Catch::Contains(what));
  };
  SampleAggregateReply short_rows = Aggregated(2, {3, 0}, {0, 1, 1}, {40});
  short_rows.counts.push_back(1);
  short_rows.remote_indptr.push_back(1);
  malformed(short_rows, "2 rows of width 2");
  malformed(Aggregated(2, {3, 0, 2}, {0, 1, 1}, {40}), "remote offsets");
  malformed(Aggregated(2, {3, 0, 2}, {0, 2, 1, 3}, {40, 41, 42}), "decrease");
  malformed(Aggregated(2, {0, 0, 2}, {0, 1, 1, 3}, {40, 41, 42}), "more remote neighbours");

  // Against the request: a server of [10, 20) in a graph of 50 nodes.
  const SampleAggregateRequest asked{{10, 11, 12}, 3, false, 0};
  auto bad = [&](const SampleAggregateReply& r, int64_t dim, const std::string& what) {
    INFO(what);
    CHECK_THROWS_WITH(
        SampleAggregateReply::Decode(Received(r.Encode(1)), asked, dim, 50, 10, 20, "server 1.0"),
        Catch::Contains("server 1.0") && Catch::Contains(what));
  };
  CHECK(SampleAggregateReply::Decode(Received(good.Encode(1)), asked, 2, 50, 10, 20, "s") == good);
  bad(good, 3, "of width 2 to 3 of width 3");
  bad(Aggregated(2, {3, 0}, {0, 1, 1}, {40}), 2, "for 2 destinations");
  bad(Aggregated(2, {4, 0, 2}, {0, 1, 1, 3}, {40, 41, 42}), 2, "4 neighbours for fanout 3");
  bad(Aggregated(2, {3, 0, 2}, {0, 1, 1, 3}, {40, 41, 50}), 2, "50 outside the graph");
  bad(Aggregated(2, {3, 0, 2}, {0, 1, 1, 3}, {40, 15, 42}), 2, "15 that it owns itself");
}

TEST_CASE("rows travel as bfloat16 when asked: half the bytes, float32 bytes unchanged otherwise",
          "[unit]") {
  RoundTrips(PullFeatures{{1, 2, 3}, RowFormat::kBfloat16});
  RoundTrips(SampleAggregateRequest{{5, 6}, 10, false, 9, RowFormat::kBfloat16});
  CHECK(PullFeatures{{1, 2}}.Encode(1).header.fields.empty());  // float32: no format field
  PullFeaturesReply narrow(2, 3, RowFormat::kBfloat16);
  const float row[2] = {1.5f, -0.25f};
  for (size_t i = 0; i < 3; ++i) narrow.SetRow(i, row);
  CHECK(narrow.rows.size() == 3 * 2 * 2);
  RoundTrips(narrow);
  const PullFeaturesReply got = PullFeaturesReply::Decode(
      Received(narrow.Encode(1)), PullFeatures{{7, 8, 9}, RowFormat::kBfloat16}, 2, "s");
  float back[2];
  got.RowTo(2, back);
  CHECK((back[0] == 1.5f && back[1] == -0.25f));
  CHECK_THROWS_WITH(PullFeaturesReply::Decode(Received(narrow.Encode(1)), PullFeatures{{7, 8, 9}},
                                              2, "server 0.0"),
                    Catch::Contains("server 0.0") && Catch::Contains("bfloat16 to a float32"));
  SampleAggregateReply agg(1, 2, RowFormat::kBfloat16);
  agg.counts = {1, 0};
  agg.remote_indptr = {0, 0, 0};
  const float values[4] = {1.f, 2.f, 3.f, 4.f};
  agg.SetRows(values);
  RoundTrips(agg);
  const SampleAggregateReply agg_got = SampleAggregateReply::Decode(
      Received(agg.Encode(1)), SampleAggregateRequest{{3, 4}, 2, false, 0, RowFormat::kBfloat16}, 1,
      10, 3, 5, "s");
  agg_got.RowTo(3, back);
  CHECK(back[0] == 4.f);
  Message bad = Received(PullFeatures{{1}, RowFormat::kBfloat16}.Encode(1));
  *bad.header.Find(Key::kFormat) = 2;
  CHECK_THROWS_WITH(PullFeatures::Decode(bad), Catch::Contains("row format 2"));
  CHECK(ParseRowFormat("bfloat16", "--wire_dtype") == RowFormat::kBfloat16);
  CHECK_THROWS_WITH(ParseRowFormat("fp8", "--wire_dtype"),
                    Catch::Contains("--wire_dtype must be float32 or bfloat16, got 'fp8'"));
}

TEST_CASE("PullSums round-trips, its offsets are checked, and its reply has one row per group",
          "[unit]") {
  const PullSums asked{{10, 11, 10, 12}, {0, 2, 2, 4}, RowFormat::kFloat32};
  RoundTrips(asked);
  RoundTrips(PullSums{{}, {0}, RowFormat::kBfloat16});
  CHECK(asked.num_groups() == 3);
  CHECK(asked.DebugString() == "PullSums{ids=4, groups=3, format=float32}");
  RefusesBadShapes<PullSums>(asked.Encode(1), "PullSums");
  auto malformed = [](PullSums s, const std::string& what) {
    INFO(s.DebugString());
    CHECK_THROWS_WITH(PullSums::Decode(Received(s.Encode(1))),
                      Catch::Contains("malformed PullSums") && Catch::Contains(what));
  };
  malformed({{10, 11}, {1, 2}, RowFormat::kFloat32}, "do not span its 2 ids");
  malformed({{10, 11}, {0, 1}, RowFormat::kFloat32}, "do not span its 2 ids");
  malformed({{10, 11}, {}, RowFormat::kFloat32}, "do not span");
  malformed({{10, 11}, {0, 2, 1, 2}, RowFormat::kFloat32}, "decrease at group 1");
  // The reply: a PullFeaturesReply with a row per group, in the asked format.
  const PullFeaturesReply good = Rows(2, {1, 2, 3, 4, 5, 6});
  CHECK(PullFeaturesReply::Decode(Received(good.Encode(1)), asked, 2, "s") == good);
  CHECK_THROWS_WITH(
      PullFeaturesReply::Decode(Received(Rows(2, {1, 2}).Encode(1)), asked, 2, "server 1.0"),
      Catch::Contains("server 1.0") && Catch::Contains("for 3 rows of 2 (PullSums)"));
  CHECK_THROWS_WITH(PullFeaturesReply::Decode(
                        Received(good.Encode(1)),
                        PullSums{{1, 2, 3}, {0, 1, 2, 3}, RowFormat::kBfloat16}, 2, "server 1.0"),
                    Catch::Contains("float32 to a bfloat16 PullSums request"));
}

TEST_CASE(
    "ids as varints: any int64 round-trips, sorted ids take few bytes, bad frames are refused",
    "[unit]") {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> edge = {0, -1, 1, lo, hi, lo, 0, hi, -5, 127, 128, -64, -65, 1 << 30};
  for (IdCoding c : {IdCoding::kInt64, IdCoding::kVarint}) {
    INFO(IdCodingName(c));
    Message m = MakeMessage(MsgType::kPullLabels, 1);
    AddInts(&m, edge, c);
    AddInts(&m, std::vector<int64_t>{}, c);
    const Message r = Received(m);
    CHECK(ReadInts(r, 0, c, edge.size()) == edge);
    CHECK(ReadInts(r, 1, c, 0).empty());
    CHECK_THROWS_WITH(ReadInts(r, 0, c, edge.size() - 1),
                      Catch::Contains("frame 0 of PullLabels") &&
                          Catch::Contains("more than " + std::to_string(edge.size() - 1)));
  }
  // Sorted ids of a 100,000-node range, 1 in 20: 1 byte each, not 8.
  std::vector<int64_t> sorted;
  for (int64_t v = 5000000; v < 5100000; v += 20) sorted.push_back(v);
  Message m = MakeMessage(MsgType::kPullLabels, 1);
  AddInts(&m, sorted, IdCoding::kVarint);
  CHECK(m.frames[0].size() == sorted.size() + 3);  // the first id takes 4 bytes
  // A varint cut short, one longer than 64 bits, a frame that is not there.
  auto bytes = [](std::vector<uint8_t> b) {
    Message out = MakeMessage(MsgType::kPullLabels, 1);
    AddArray(&out, b);
    return Received(out);
  };
  CHECK_THROWS_WITH(ReadInts(bytes({0x05, 0x85}), 0, IdCoding::kVarint, 10),
                    Catch::Contains("ends inside a varint"));
  std::vector<uint8_t> eleven(10, 0xff);
  eleven.push_back(0x01);
  CHECK_THROWS_WITH(ReadInts(bytes(eleven), 0, IdCoding::kVarint, 10),
                    Catch::Contains("longer than 64 bits"));
  std::vector<uint8_t> ten(9, 0xff);
  ten.push_back(0x02);
  CHECK_THROWS_WITH(ReadInts(bytes(ten), 0, IdCoding::kVarint, 10),
                    Catch::Contains("longer than 64 bits"));
  ten.back() = 0x01;  // zigzag of 2^64 - 1: the delta -2^63
  CHECK(ReadInts(bytes(ten), 0, IdCoding::kVarint, 10) == std::vector<int64_t>{lo});
  CHECK_THROWS_WITH(ReadInts(bytes({1, 2}), 1, IdCoding::kVarint, 10),
                    Catch::Contains("is missing"));
  CHECK(ParseIdCoding("varint", "--wire_ids") == IdCoding::kVarint);
  CHECK_THROWS_WITH(ParseIdCoding("int32", "--wire_ids"),
                    Catch::Contains("--wire_ids must be int64 or varint, got 'int32'"));
}

TEST_CASE("a SampleAggregate carries an edge batch's excluded pairs, an even number of ids",
          "[unit]") {
  for (IdCoding c : {IdCoding::kInt64, IdCoding::kVarint}) {
    SampleAggregateRequest r{{5, 6, 7}, 10, false, 3, RowFormat::kFloat32, c};
    r.exclude = {5, 900, 7, 2, 7, 6};
    RoundTrips(r);
    const Message m = r.Encode(1);
    CHECK(m.frames.size() == 2);
    CHECK(SampleAggregateRequest::Decode(Received(m)).exclude == r.exclude);
    r.exclude.pop_back();
    CHECK_THROWS_WITH(
        SampleAggregateRequest::Decode(Received(r.Encode(1))),
        Catch::Contains("malformed SampleAggregate: 5 excluded ids (pairs: an even number"));
  }
  // None: no field, one frame; the flag without its frame is refused.
  Message none = SampleAggregateRequest{{5}, 10, false, 3}.Encode(1);
  CHECK(none.frames.size() == 1);
  CHECK(none.header.Find(Key::kExclude) == nullptr);
  none.header.Add(Key::kExclude, 1);
  CHECK_THROWS_WITH(SampleAggregateRequest::Decode(Received(none)),
                    Catch::Contains("malformed SampleAggregate: expected 2 array frames"));
  CHECK(KeyName(Key::kExclude) == "exclude");
}

TEST_CASE("the batch messages round-trip with varint ids, and replies in varints are checked",
          "[unit]") {
  const IdCoding v = IdCoding::kVarint;
  RoundTrips(SampleRequest{{5, 6, 7, -3}, 10, true, ~uint64_t{0}, v});
  RoundTrips(SampleReply{{0, 2, 2, 3}, {9, 8, 7}, v});
  RoundTrips(SampleAggregateRequest{{5, 6, 7}, 10, true, 3, RowFormat::kFloat32, v});
  RoundTrips(SampleAggregateRequest{{5}, -1, false, 3, RowFormat::kBfloat16, v});
  SampleAggregateReply agg = Aggregated(2, {3, 0, 2}, {0, 1, 1, 3}, {40, 41, 42});
  agg.coding = v;
  RoundTrips(agg);
  // Own rows for the first destinations only.
  SampleAggregateRequest some{{5, 6, 7}, 10, true, 3, RowFormat::kFloat32, v};
  some.own_rows = 1;
  RoundTrips(some);
  some.coding = IdCoding::kInt64;
  RoundTrips(some);
  some.own_rows = 4;
  CHECK_THROWS_WITH(SampleAggregateRequest::Decode(Received(some.Encode(1))),
                    Catch::Contains("malformed SampleAggregate: own rows 4 for 3 destinations"));
  some.own_rows = 1;
  SampleAggregateReply fewer(2, 3, RowFormat::kBfloat16, v, 1);
  fewer.counts = {3, 0, 2};
  fewer.remote_indptr = {0, 1, 1, 3};
  fewer.remote_ids = {40, 41, 42};
  const std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8};  // 1 own row, 3 sums
  fewer.SetRows(values.data());
  RoundTrips(fewer);
  CHECK(fewer.num_own_rows() == 1u);
  float row[2];
  fewer.RowTo(3, row);
  CHECK(row[0] == 7.0f);
  SampleAggregateRequest asked3{{10, 11, 12}, 3, false, 0, RowFormat::kBfloat16, v};
  asked3.own_rows = 1;
  CHECK_NOTHROW(
      SampleAggregateReply::Decode(Received(fewer.Encode(1)), asked3, 2, 50, 10, 20, "server"));
  asked3.own_rows = 2;
  CHECK_THROWS_WITH(
      SampleAggregateReply::Decode(Received(fewer.Encode(1)), asked3, 2, 50, 10, 20, "server"),
      Catch::Contains("server sent a SampleAggregateReply with 1 own rows to a request for 2"));
  fewer.own_rows = 2;  // rows for 1 own row, header says 2
  CHECK_THROWS_WITH(SampleAggregateReply::Decode(Received(fewer.Encode(1))),
                    Catch::Contains("are not 2 own rows and 3 sums of width 2"));
  RoundTrips(PullFeatures{{1, 2, 3}, RowFormat::kFloat32, v});
  RoundTrips(PullFeatures{{1, 2, 3}, RowFormat::kBfloat16, v});
  RoundTrips(PullSums{{4, 4, 9}, {0, 2, 3}, RowFormat::kBfloat16, v});
  RoundTrips(PullLabels{{int64_t{1} << 40, 3}, v});
  RoundTrips(PullLabelsReply{{0, 46, 2}, v});
  RefusesBadShapes<SampleRequest>(SampleRequest{{1}, 2, false, 3, v}.Encode(1), "Sample");
  RefusesBadShapes<PullSums>(PullSums{{1}, {0, 1}, RowFormat::kFloat32, v}.Encode(1), "PullSums");
  RefusesBadShapes<PullLabels>(PullLabels{{1}, v}.Encode(1), "PullLabels");
  // A coding that is neither.
  Message bad = SampleRequest{{1}, 2, false, 3, v}.Encode(1);
  *bad.header.Find(Key::kCoding) = 2;
  CHECK_THROWS_WITH(SampleRequest::Decode(Received(bad)),
                    Catch::Contains("malformed Sample: id coding 2"));
  // A varint reply is checked against its request as an int64 one is.
  const SampleRequest asked{{10, 11}, 2, false, 0, v};
  CHECK_THROWS_WITH(SampleReply::Decode(Received(SampleReply{{0, 1, 4}, {1, 2, 3, 4}, v}.Encode(1)),
                                        asked, 50, "server"),
                    Catch::Contains("server sent a SampleReply with 3 neighbours for fanout 2"));
  CHECK_THROWS_WITH(SampleReply::Decode(Received(SampleReply{{0, 1, 2}, {1, 60}, v}.Encode(1)),
                                        asked, 50, "server"),
                    Catch::Contains("node id 60 outside the graph"));
}

TEST_CASE(
    "sparse rows round-trip as counts, column ids and values, are checked, and take a fraction "
    "of dense rows' bytes",
    "[unit]") {
  for (const IdCoding c : {IdCoding::kInt64, IdCoding::kVarint}) {
    for (const RowFormat f : {RowFormat::kFloat32, RowFormat::kBfloat16}) {
      INFO(IdCodingName(c) << " " << RowFormatName(f));
      RoundTrips(PullSparseRows{{7, 3, int64_t{1} << 40}, f, c});
      SparseRowsReply r;
      r.cols = 1000;
      r.format = f;
      r.coding = c;
      r.counts = {2, 0, 3};
      r.columns = {4, 999, 0, 500, 501};
      RoundTrips(r);                       // binary: no values frame
      r.values = {1.5f, -2, 0.25f, 8, 3};  // exact in bfloat16 too
      RoundTrips(r);
      const PullSparseRows asked{{1, 2, 3}, f, c};
      CHECK_NOTHROW(SparseRowsReply::Decode(Received(r.Encode(1)), asked, 1000, "server 1"));
      CHECK_THROWS_WITH(SparseRowsReply::Decode(Received(r.Encode(1)), asked, 999, "server 1"),
                        Catch::Contains("server 1 sent a SparseRowsReply of 3 rows of width 1000 "
                                        "for 3 rows of 999"));
      const PullSparseRows two{{1, 2}, f, c};
      CHECK_THROWS_WITH(SparseRowsReply::Decode(Received(r.Encode(1)), two, 1000, "server 1"),
                        Catch::Contains("for 2 rows"));
    }
  }
  SparseRowsReply r;
  r.cols = 10;
  r.counts = {2, 1};
  r.columns = {3, 5, 9};
  RefusesBadShapes<SparseRowsReply>(r.Encode(1), "SparseRowsReply");
  RefusesBadShapes<PullSparseRows>(PullSparseRows{{1}}.Encode(1), "PullSparseRows");
  auto refused = [](const SparseRowsReply& bad, const std::string& what) {
    INFO(what);
    CHECK_THROWS_WITH(SparseRowsReply::Decode(Received(bad.Encode(1))),
                      Catch::Contains("malformed SparseRowsReply: " + what));
  };
  SparseRowsReply b = r;
  b.columns = {5, 3, 9};  // out of order within a row
  refused(b, "row 0 has column id 3 out of range or out of order (width 10)");
  b = r;
  b.columns = {3, 5, 10};  // past the width
  refused(b, "row 1 has column id 10 out of range");
  b = r;
  b.counts = {2, 2};  // more than the column ids
  refused(b, "row 1's count 2 passes the 3 column ids");
  b = r;
  b.counts = {1, 1};  // fewer
  refused(b, "counts add up to 2, not its 3 column ids");
  b = r;
  b.values = {1, std::numeric_limits<float>::quiet_NaN(), 2};
  refused(b, "a value that is not finite");
  b = r;
  b.coding = IdCoding::kVarint;
  b.columns = {3, 5, -1};
  refused(b, "column id -1");
  // 30 words of 10,000: a fraction of a dense row's 40,000 bytes.
  SparseRowsReply bow;
  bow.cols = 10000;
  bow.coding = IdCoding::kVarint;
  bow.counts = {30};
  for (int k = 0; k < 30; ++k) bow.columns.push_back(k * 333);
  size_t bytes = 0;
  for (const auto& f : bow.Encode(1).frames) bytes += f.size();
  CHECK(bytes <= 100);
}
