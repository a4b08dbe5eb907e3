// Replays a libFuzzer target without libFuzzer, so that every compiler
// builds it and ctest runs it (fuzz_replay_<target>, tests/fuzz/
// CMakeLists.txt). The target's LLVMFuzzerTestOneInput runs on every file
// of a corpus folder; on valid inputs built here with the project's own
// encoders (current whatever the format's version); on every change of one
// field of those (a header int, an array element, a number of the text)
// by one either way or to an edge value, where decoders' off-by-ones show;
// and on inputs a fixed-seed PRNG derives: random bytes, and bit flips,
// truncations, insertions, edge-value integers, replaced numbers and
// splices of the valid ones. The same inputs every run. A target reports a
// bug by crashing (abort, an uncaught exception, a sanitizer report); the
// input that did is written to <binary>-crash.bin in the working folder,
// for the libFuzzer target to rerun (gnn-<target>-fuzz <file>).
//
//   gnn-<target>-replay [CORPUS_DIR] [--field-changes N] [--mutations N]
//                       [--write-seeds DIR]
//
// --field-changes N replays a fixed sample of N of the one-field changes
// (default: all); --mutations N, N PRNG mutations (default 4000).
// --write-seeds DIR writes the built inputs into DIR and exits: that is how
// tests/fuzz/corpus/<target>/ was made (rerun it when a format changes).
// Compiled once per target with one of GNN_REPLAY_PROTOCOL, _REPLY, _NPY,
// _CONFIG defined, which picks the valid inputs below.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#if defined(GNN_REPLAY_SANITIZE)
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(GNN_REPLAY_PROTOCOL) || defined(GNN_REPLAY_REPLY)
#include "net/batch_codec.h"
#include "net/messages.h"
#include "net/protocol.h"
#include "net/typed_messages.h"
#elif defined(GNN_REPLAY_CONFIG)
#include "partition/config.h"
#elif !defined(GNN_REPLAY_NPY)
#error "define one of GNN_REPLAY_PROTOCOL, GNN_REPLAY_REPLY, GNN_REPLAY_NPY, GNN_REPLAY_CONFIG"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Input = std::string;

// ------------------------------------------------------------ valid inputs

#if defined(GNN_REPLAY_PROTOCOL) || defined(GNN_REPLAY_REPLY)

using namespace gnn::net;

// A valid message of a wire target: its header and array frames, after
// `prefix` (reply_fuzz.cc's request bytes).
struct Wire {
  Input prefix;
  Header header;
  std::vector<Input> frames;
};

Wire Of(const Message& m, Input prefix = {}) {
  Wire w{std::move(prefix), m.header, {}};
  for (const zmq::message_t& f : m.frames) w.frames.emplace_back(f.data<char>(), f.size());
  return w;
}

// `w` in the wire fuzzers' input layout (fuzz_frames.h), after its prefix:
// the number of frames, then every frame but the last behind its 2-byte
// little-endian length, then the last.
Input Pack(const Wire& w, size_t max_frames) {
  std::vector<Input> parts;
  const zmq::message_t header = EncodeHeader(w.header);
  parts.emplace_back(header.data<char>(), header.size());
  parts.insert(parts.end(), w.frames.begin(), w.frames.end());
  if (parts.size() >= max_frames) throw std::logic_error("replay: too many frames to pack");
  Input out = w.prefix;
  out += static_cast<char>(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i + 1 < parts.size()) {
      if (parts[i].size() > 0xffff) throw std::logic_error("replay: frame too long to pack");
      out += static_cast<char>(parts[i].size() & 0xff);
      out += static_cast<char>(parts[i].size() >> 8);
    }
    out += parts[i];
  }
  return out;
}

// `width` little-endian bytes at `p`.
uint64_t GetLE(const char* p, size_t width) {
  uint64_t v = 0;
  for (size_t b = 0; b < width; ++b) v |= uint64_t{static_cast<uint8_t>(p[b])} << (8 * b);
  return v;
}
void SetLE(char* p, size_t width, uint64_t v) {
  for (size_t b = 0; b < width; ++b) p[b] = static_cast<char>((v >> (8 * b)) & 0xff);
}

// Every change of one field of `w`: each header int, frame size and
// request byte, and each element of an array frame (8 bytes where the
// frame is whole int64s, else each byte), moved by one either way or set
// to an edge value; `what` names it. Decoders' off-by-ones are found here,
// which random bytes seldom hit.
void AddFieldChanges(const Wire& w, size_t max_frames, const std::string& what,
                     std::vector<std::pair<Input, std::string>>* out) {
  // Calls `emit` with each other value of a field of `width` bytes.
  auto vary = [](uint64_t v, size_t width, auto emit) {
    const uint64_t mask = width == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * width)) - 1;
    const uint64_t values[] = {
        v + 1, v - 1, 0, ~uint64_t{0}, mask >> 1, (mask >> 1) + 1, uint64_t{1} << 32};
    std::vector<uint64_t> seen = {v & mask};
    for (uint64_t x : values) {
      x &= mask;
      if (std::find(seen.begin(), seen.end(), x) != seen.end()) continue;
      seen.push_back(x);
      emit(x);
    }
  };
  auto add = [&](const Wire& c, const std::string& field, uint64_t x) {
    out->emplace_back(Pack(c, max_frames),
                      what + ", " + field + " = " + std::to_string(static_cast<int64_t>(x)));
  };
  for (size_t i = 0; i < w.header.fields.size(); ++i) {
    const std::string name = KeyName(w.header.fields[i].key);
    vary(static_cast<uint64_t>(w.header.fields[i].value), 8, [&](uint64_t x) {
      Wire c = w;
      c.header.fields[i].value = static_cast<int64_t>(x);
      add(c, name, x);
    });
    // The field's key as another (a neighbour's, one no side knows), and
    // the field left out.
    vary(static_cast<uint64_t>(w.header.fields[i].key), 2, [&](uint64_t x) {
      Wire c = w;
      c.header.fields[i].key = static_cast<Key>(x);
      add(c, name + "'s key", x);
    });
    Wire c = w;
    c.header.fields.erase(c.header.fields.begin() + static_cast<std::ptrdiff_t>(i));
    add(c, name + " left out", 0);
  }
  for (size_t i = 0; i < w.header.frame_bytes.size(); ++i) {
    for (uint64_t x : {w.header.frame_bytes[i] + 1, w.header.frame_bytes[i] - 1}) {
      Wire c = w;
      c.header.frame_bytes[i] = x;
      add(c, "frame_bytes " + std::to_string(i), x);
    }
  }
  for (size_t i = 0; i < w.prefix.size(); ++i) {
    vary(static_cast<uint8_t>(w.prefix[i]), 1, [&](uint64_t x) {
      Wire c = w;
      c.prefix[i] = static_cast<char>(x);
      add(c, "request byte " + std::to_string(i), x);
    });
  }
  for (size_t f = 0; f < w.frames.size(); ++f) {
    const size_t width = w.frames[f].size() % 8 == 0 ? 8 : 1;
    for (size_t at = 0; at + width <= w.frames[f].size(); at += width) {
      vary(GetLE(&w.frames[f][at], width), width, [&](uint64_t x) {
        Wire c = w;
        SetLE(&c.frames[f][at], width, x);
        add(c, "frame " + std::to_string(f) + " element " + std::to_string(at / width), x);
      });
    }
  }
}

std::vector<float> Ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.25f * static_cast<float>(i) - 1.0f;
  return v;
}

PullFeaturesReply Rows(int64_t dim, size_t rows, RowFormat format) {
  PullFeaturesReply r(dim, rows, format);
  const std::vector<float> values = Ramp(static_cast<size_t>(dim));
  for (size_t i = 0; i < rows; ++i) r.SetRow(i, values.data());
  return r;
}

SampleAggregateReply Aggregate(int64_t dim, int64_t own_rows, std::vector<int64_t> counts,
                               std::vector<int64_t> remote_indptr,
                               std::vector<int64_t> remote_ids) {
  SampleAggregateReply r(dim, counts.size(), RowFormat::kFloat32, IdCoding::kInt64, own_rows);
  r.counts = std::move(counts);
  r.remote_indptr = std::move(remote_indptr);
  r.remote_ids = std::move(remote_ids);
  r.SetRows(Ramp(r.rows.size() / sizeof(float)).data());
  return r;
}

#endif

#if defined(GNN_REPLAY_PROTOCOL)

constexpr const char* kSeedSuffix = ".bin";
constexpr size_t kMaxFrames = 36;  // protocol_fuzz.cc's

// Two layers over ids < 64 (type 0, 2 features), < 128 (type 1, none) and
// the rest (type 2, 3 features), relation ids up to `rels` - 1: what
// protocol_fuzz.cc's FuzzSchema accepts for rels <= 300.
gnn::HeteroBatch TypedBatch(int64_t rels) {
  gnn::HeteroBatch b;
  b.index = 4;
  b.seeds = {10, 11};
  b.labels = {1, 0};
  gnn::Block top;  // seeds <- {10, 11, 100, 250}
  top.num_dst = 2;
  top.src_nodes = {10, 11, 100, 250};
  top.indptr = {0, 2, 3};
  top.indices = {2, 3, 0};
  top.etypes = {0, rels - 1, rels / 2};
  gnn::Block bottom;  // {10, 11, 100, 250} <- + {12}
  bottom.num_dst = 4;
  bottom.src_nodes = {10, 11, 100, 250, 12};
  bottom.indptr = {0, 1, 1, 2, 2};
  bottom.indices = {4, 0};
  bottom.etypes = {rels - 1, 0};
  b.blocks = {bottom, top};
  b.GroupInputsByType(3, [](int64_t v) { return v < 64 ? 0 : v < 128 ? 1 : 2; });
  b.features[0] = {0.5f, -1.25f, 2.0f, 3.5f, 1e-7f, -0.0f};  // nodes 10, 11, 12
  b.features[2] = {7.0f, 8.0f, 9.0f};                        // node 250
  return b;
}

gnn::MiniBatch HomogeneousBatch() {
  gnn::MiniBatch b;
  b.index = 2;
  b.seeds = {10, 11};
  b.labels = {1, 0};
  gnn::Block top;
  top.num_dst = 2;
  top.src_nodes = {10, 11, 150};
  top.indptr = {0, 2, 3};
  top.indices = {2, 1, 0};
  gnn::Block bottom;
  bottom.num_dst = 3;
  bottom.src_nodes = {10, 11, 150, 12};
  bottom.indptr = {0, 1, 1, 2};
  bottom.indices = {3, 0};
  b.blocks = {bottom, top};
  b.feature_dim = 2;
  const std::vector<float> rows = Ramp(8);
  b.features.assign(rows.begin(), rows.end());
  return b;
}

std::vector<Wire> BuiltMessages() {
  const std::string sha(64, 'c');
  const Hello hello{"graph", sha, "job"};
  const EmbSpec spec{2, 4, 1, 0.06, 99};
  SampleRequest varint_sample{{1, 5, 9}, 10, true, 42};
  varint_sample.coding = IdCoding::kVarint;
  SampleReply varint_reply{{0, 2, 2, 3}, {4, 7, 1}};
  varint_reply.coding = IdCoding::kVarint;
  PullFeatures narrow_pull{{1, 2, 3}};
  narrow_pull.format = RowFormat::kBfloat16;
  narrow_pull.coding = IdCoding::kVarint;
  SampleAggregateRequest aggregate{{3, 4}, 5, true, 9};
  aggregate.format = RowFormat::kBfloat16;
  aggregate.coding = IdCoding::kVarint;
  aggregate.own_rows = 1;
  PullSums sums;
  sums.ids = {1, 2, 2};
  sums.group_ptr = {0, 2, 3};
  PullTypedSums typed_sums;
  typed_sums.ntype = spec.ntype;
  typed_sums.embedding = true;
  typed_sums.spec = spec;
  typed_sums.ids = {5, 6};
  typed_sums.group_ptr = {0, 1, 2};
  SeedBatch seeds;
  seeds.epoch = 1;
  seeds.index = 2;
  seeds.rng_seed = 3;
  seeds.fanouts = {5, 10};
  seeds.seeds = {4, 8};
  seeds.exclude = {4, 9};
  TypedSeedBatch typed_seeds;
  typed_seeds.epoch = 3;
  typed_seeds.index = 9;
  typed_seeds.rng_seed = 0xfeedfacecafebeefULL;
  typed_seeds.replace = true;
  typed_seeds.fanouts = {{5, -1, 0}, {10, 10, 2}};
  typed_seeds.seeds = {4, 8, 15};

  const std::vector<Message> messages = [&] {
    std::vector<Message> v;
    v.push_back(hello.Encode(1));
    v.push_back(HelloReply{0, 1, 0, 100, 4, 3}.Encode(2));
    v.push_back(SamplerHello{hello, 2, 3}.Encode(3));
    v.push_back(Ping{}.Encode(4));
    v.push_back(Pong{1, 2}.Encode(5));
    v.push_back(SampleRequest{{1, 5, 9}, 10, false, 42}.Encode(6));
    v.push_back(varint_sample.Encode(7));
    v.push_back(SampleReply{{0, 2, 2, 3}, {4, 7, 1}}.Encode(8));
    v.push_back(varint_reply.Encode(9));
    v.push_back(aggregate.Encode(10));
    v.push_back(Aggregate(2, -1, {2, 1}, {0, 1, 1}, {77}).Encode(11));
    v.push_back(PullFeatures{{1, 2, 3}}.Encode(12));
    v.push_back(narrow_pull.Encode(13));
    v.push_back(sums.Encode(14));
    v.push_back(Rows(3, 2, RowFormat::kFloat32).Encode(15));
    v.push_back(Rows(3, 2, RowFormat::kBfloat16).Encode(16));
    v.push_back(PullLabels{{1, 2}}.Encode(17));
    v.push_back(PullLabelsReply{{0, 2}}.Encode(18));
    v.push_back(SplitNodes{1, 0, 3}.Encode(19));
    v.push_back(SplitNodesReply{{3, 4, 8}}.Encode(20));
    v.push_back(Metadata{}.Encode(21));
    v.push_back(MetadataReply{"{\"graph_name\": \"graph\", \"num_nodes\": 100}"}.Encode(22));
    v.push_back(Shutdown{"job"}.Encode(23));
    v.push_back(ShutdownReply{}.Encode(24));
    v.push_back(Stop{}.Encode(25));
    v.push_back(ErrorReply{kErrBusy, "busy"}.Encode(26));
    v.push_back(EncodeSeedBatch(seeds, 27));
    v.push_back(EncodeMiniBatch(HomogeneousBatch(), 28));
    v.push_back(EncodeTypedSeedBatch(typed_seeds, 29));
    v.push_back(EncodeTypedMiniBatch(TypedBatch(3), 30));    // 1-byte relation ids
    v.push_back(EncodeTypedMiniBatch(TypedBatch(300), 31));  // 2-byte relation ids
    v.push_back(TypedSampleRequest{{5, 9, 11}, {10, -1, 0}, true, 123}.Encode(32));
    v.push_back(TypedSampleReply{{0, 2, 2, 3}, {1, 4, 8}, {0, 1, 1}}.Encode(33));
    v.push_back(PullTyped{1, {4, 5}}.Encode(34));
    v.push_back(typed_sums.Encode(35));
    v.push_back(EmbPull{spec, {1, 2}}.Encode(36));
    v.push_back(EmbPush{spec, {3, 4}, Ramp(8)}.Encode(37));
    v.push_back(EmbSave{spec, 3, 9}.Encode(38));
    v.push_back(EmbRestore{spec, 5, "abc"}.Encode(39));
    v.push_back(EmbBlob{"blob"}.Encode(40));
    v.push_back(EmbAck{2}.Encode(41));
    PullLabels targets{{1, 2}};
    targets.targets = true;
    v.push_back(targets.Encode(42));
    gnn::MiniBatch rows = HomogeneousBatch();
    rows.labels.clear();
    rows.label_width = 2;
    rows.targets = {0, 1, 0.5f, -3};
    v.push_back(EncodeMiniBatch(rows, 43));
    SampleRequest edge_sample{{1, 5, 9}, 10, false, 42};
    edge_sample.edge_data = true;
    v.push_back(edge_sample.Encode(44));
    SampleReply edge_reply{{0, 2, 2, 3}, {4, 7, 1}};
    edge_reply.edge_dim = 2;
    edge_reply.edge_data = Ramp(6);
    v.push_back(edge_reply.Encode(45));
    gnn::MiniBatch weighted = HomogeneousBatch();
    for (gnn::Block& blk : weighted.blocks) {
      blk.edge_dim = 1;
      blk.edge_data = Ramp(blk.indices.size());
    }
    v.push_back(EncodeMiniBatch(weighted, 46));
    return v;
  }();
  std::vector<Wire> out;
  for (const Message& m : messages) out.push_back(Of(m));
  return out;
}

#elif defined(GNN_REPLAY_REPLY)

constexpr const char* kSeedSuffix = ".bin";
constexpr size_t kMaxFrames = 6;  // reply_fuzz.cc's

// reply_fuzz.cc's input: the request's 8 bytes `q`, then the reply.
Wire Reply(std::vector<uint8_t> q, const Message& m) { return Of(m, Input(q.begin(), q.end())); }

std::vector<Wire> BuiltMessages() {
  return {
      // 3 seeds, fanout 2, 100 nodes.
      Reply({3, 3, 99, 0, 0, 0, 0, 0}, SampleReply{{0, 2, 2, 3}, {5, 7, 99}}.Encode(1)),
      // 4 ids or groups, rows of 3 values: float32 (q[5] even), bfloat16 (odd).
      Reply({0, 0, 0, 4, 3, 0, 0, 0}, Rows(3, 4, RowFormat::kFloat32).Encode(2)),
      Reply({0, 0, 0, 4, 3, 1, 0, 0}, Rows(3, 4, RowFormat::kBfloat16).Encode(3)),
      // 5 labels.
      Reply({0, 0, 0, 0, 0, 5, 0, 0}, PullLabelsReply{{1, 0, 2, 1, 0}}.Encode(4)),
      // 3 ids of [4, 14), increasing.
      Reply({0, 0, 0, 0, 0, 3, 4, 10}, SplitNodesReply{{4, 9, 13}}.Encode(5)),
      // 2 destinations, fanout 3, 100 nodes, rows of 2, a server of [10, 20):
      // every own row, then only the first's (q[5] = 0x82: 130 % 3 = 1).
      Reply({2, 4, 99, 0, 2, 0, 10, 10}, Aggregate(2, -1, {3, 1}, {0, 2, 2}, {5, 30}).Encode(6)),
      Reply({2, 4, 99, 0, 2, 0x82, 10, 10}, Aggregate(2, 1, {3, 1}, {0, 2, 2}, {5, 30}).Encode(7)),
      // 2 seeds, fanout 2 per relation, 50 nodes: 3 relations, then 300.
      Reply({2, 3, 49, 0, 0, 0, 2, 0},
            TypedSampleReply{{0, 3, 4}, {1, 2, 40, 7}, {0, 0, 2, 1}}.Encode(8)),
      Reply({2, 3, 49, 0, 0, 0, 43, 1},
            TypedSampleReply{{0, 2, 3}, {1, 2, 7}, {0, 299, 150}}.Encode(9)),
  };
}

#elif defined(GNN_REPLAY_NPY)

constexpr const char* kSeedSuffix = ".npy";

// A .npy file of format `major`: header `dict` padded with spaces to a
// multiple of 64 bytes as numpy pads it, then `data_bytes` of data.
Input NpyFile(uint8_t major, std::string dict, size_t data_bytes) {
  const size_t preamble = major == 1 ? 10 : 12;
  dict.append((64 - (preamble + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  Input f("\x93NUMPY", 6);
  f += static_cast<char>(major);
  f += '\0';
  for (size_t i = 0; i < preamble - 8; ++i) f += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  f += dict;
  for (size_t i = 0; i < data_bytes; ++i) f += static_cast<char>(i * 37);
  return f;
}

std::vector<Input> BuiltInputs() {
  return {
      NpyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 24),
      NpyFile(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }", 40),
      NpyFile(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }", 1),
      NpyFile(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (0, 7), }", 0),
      NpyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1), }",
              4),
      NpyFile(2, "{\"shape\": (2L, 3L, 1L), \"descr\": \"|b1\", \"fortran_order\": False}", 6),
      NpyFile(3, "{'fortran_order': False, 'descr': '<u1', 'shape': (4,1,), }", 4),
  };
}

#elif defined(GNN_REPLAY_CONFIG)

constexpr const char* kSeedSuffix = ".json";

// A config of `parts` partitions of 10 nodes and 30 in-edges each (held-out
// edges too with `val_edges`), or of two node types and three relations.
gnn::PartitionConfig Config(int parts, bool val_edges, bool hetero) {
  gnn::PartitionConfig c;
  c.graph_name = "fuzz";
  c.dataset = "synthetic:tiny";
  c.num_nodes = 10 * parts;
  c.num_edges = 30 * parts;
  c.part_method = "metis";
  c.num_parts = parts;
  c.feature_dim = 4;
  c.num_classes = 3;
  c.seed = 7;
  if (val_edges) {
    c.val_edges_fraction = 0.1;
    c.num_val_edges = 2 * parts;
    c.val_negatives = 100;
    c.report = {{"edge_cut", 12}, {"balance", {1.0, 1.02}}};
  }
  if (hetero) {
    c.ntypes = {"author", "paper"};
    c.etypes = {"author:writes:paper", "paper:cites:paper", "paper:written-by:author"};
    c.target_ntype = "paper";
    c.ntype_feature_dims = {0, 4};
  }
  for (int i = 0; i < parts; ++i) {
    gnn::PartInfo p;
    p.dir = "part" + std::to_string(i);
    p.node_start = 10 * i;
    p.node_end = p.node_start + 10;
    p.edge_start = 30 * i;
    p.edge_end = p.edge_start + 30;
    if (hetero) {
      p.ntype_ranges = {{p.node_start, p.node_start + 4}, {p.node_start + 4, p.node_end}};
      p.etype_edges = {12, 10, 8};
    }
    p.num_train = 5;
    p.num_valid = 2;
    p.num_test = 1;
    p.num_val_edges = val_edges ? 2 : 0;
    std::vector<std::string> files = c.PartFileNames();
    if (val_edges) files.insert(files.end(), gnn::kValEdgeFiles.begin(), gnn::kValEdgeFiles.end());
    for (size_t f = 0; f < files.size(); ++f)
      p.files[files[f]] = {128 + f, std::string(64, "0123456789abcdef"[f % 16])};
    c.parts.push_back(std::move(p));
  }
  return c;
}

std::vector<Input> BuiltInputs() {
  return {gnn::PartitionConfigText(Config(1, false, false)),
          gnn::PartitionConfigText(Config(2, true, false)),
          gnn::PartitionConfigText(Config(2, false, true))};
}

#endif

#if defined(GNN_REPLAY_PROTOCOL) || defined(GNN_REPLAY_REPLY)

std::vector<Input> BuiltInputs() {
  std::vector<Input> out;
  for (const Wire& w : BuiltMessages()) out.push_back(Pack(w, kMaxFrames));
  return out;
}

std::vector<std::pair<Input, std::string>> AllFieldChanges() {
  std::vector<std::pair<Input, std::string>> out;
  const std::vector<Wire> built = BuiltMessages();
  for (size_t i = 0; i < built.size(); ++i)
    AddFieldChanges(built[i], kMaxFrames, "built input " + std::to_string(i), &out);
  return out;
}

#else

// Every change of one number of the built files' text (the config's JSON,
// the .npy header's dict), moved by one either way or set to an edge
// value, and of each byte of the .npy preamble (version, header length)
// moved by one: what byte mutations seldom hit.
std::vector<std::pair<Input, std::string>> AllFieldChanges() {
  const char* const kValues[] = {"0", "-1", "4611686018427387904", "9223372036854775807",
                                 "9223372036854775808"};
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::vector<std::pair<Input, std::string>> out;
  const std::vector<Input> built = BuiltInputs();
  for (size_t i = 0; i < built.size(); ++i) {
    const Input& in = built[i];
    const std::string what = "built input " + std::to_string(i) + ", ";
    for (size_t b = 0; b < in.size();) {
      if (!is_digit(in[b])) {
        ++b;
        continue;
      }
      size_t e = b;
      while (e < in.size() && is_digit(in[e])) ++e;
      const std::string number = in.substr(b, e - b);
      std::vector<std::string> values(std::begin(kValues), std::end(kValues));
      if (number.size() < 18) {
        const long long v = std::stoll(number);
        values.push_back(std::to_string(v + 1));
        values.push_back(std::to_string(v - 1));
      }
      for (const std::string& x : values) {
        if (x == number) continue;
        out.emplace_back(in.substr(0, b) + x + in.substr(e),
                         what + "number at byte " + std::to_string(b) + " = " + x);
      }
      b = e;
    }
#if defined(GNN_REPLAY_NPY)
    for (size_t at = 6; at < 12 && at < in.size(); ++at) {
      for (int d : {1, -1}) {
        Input c = in;
        c[at] = static_cast<char>(static_cast<uint8_t>(c[at]) + d);
        out.emplace_back(std::move(c),
                         what + "preamble byte " + std::to_string(at) + (d > 0 ? " + 1" : " - 1"));
      }
    }
#endif
  }
  return out;
}

#endif

// ------------------------------------------------------------ the replay

// splitmix64: the same sequence from every compiler and standard library
// (std::'s distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform enough in [0, n); 0 when n is 0.
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

Input RandomBytes(size_t n, Rng& rng) {
  Input s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng.Next());
  return s;
}

// Values at the edges of what decoders check: sizes, counts, widths.
constexpr int64_t kEdgeInts[] = {0,          1,          -1,        2,         0x7f,
                                 0x80,       0xff,       0x100,     0xffff,    0x10000,
                                 0x7fffffff, 0x80000000, INT64_MAX, INT64_MIN, int64_t{1} << 62};
// Text that replaces a number of a JSON or .npy header.
constexpr const char* kEdgeTexts[] = {"0",
                                      "1",
                                      "-1",
                                      "2",
                                      "65536",
                                      "4294967296",
                                      "4611686018427387904",
                                      "9223372036854775807",
                                      "9223372036854775808",
                                      "-9223372036854775808",
                                      "1e308",
                                      "0.5",
                                      "true",
                                      "null",
                                      "\"\"",
                                      "[]",
                                      "{}"};

// 1 to 4 random edits of `s`; `pool` gives splice partners.
Input Mutate(Input s, const std::vector<Input>& pool, Rng& rng) {
  const size_t edits = 1 + rng.Below(4);
  for (size_t e = 0; e < edits; ++e) {
    const size_t at = rng.Below(s.size() + 1);  // a position, s.size() included
    switch (rng.Below(9)) {
      case 0:  // flip a bit
        if (!s.empty()) s[at % s.size()] ^= static_cast<char>(1u << rng.Below(8));
        break;
      case 1:  // a random byte
        if (!s.empty()) s[at % s.size()] = static_cast<char>(rng.Next());
        break;
      case 2:  // cut short
        s.resize(at);
        break;
      case 3:  // insert random bytes
        s.insert(at, RandomBytes(1 + rng.Below(16), rng));
        break;
      case 4:  // erase a run
        s.erase(at, 1 + rng.Below(16));
        break;
      case 5: {  // an edge value as a 1, 2, 4 or 8-byte little-endian integer
        const size_t width = size_t{1} << rng.Below(4);
        const int64_t v = kEdgeInts[rng.Below(std::size(kEdgeInts))];
        for (size_t b = 0; b < width && at + b < s.size(); ++b)
          s[at + b] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * b)) & 0xff);
        break;
      }
      case 6: {  // a 1, 2, 4 or 8-byte little-endian integer moved by -4 to 4 (off by ones)
        const size_t width = size_t{1} << rng.Below(4);
        if (at + width > s.size()) break;
        uint64_t v = 0;
        for (size_t b = 0; b < width; ++b)
          v |= uint64_t{static_cast<uint8_t>(s[at + b])} << (8 * b);
        v += static_cast<uint64_t>(static_cast<int64_t>(rng.Below(9)) - 4);
        for (size_t b = 0; b < width; ++b) s[at + b] = static_cast<char>((v >> (8 * b)) & 0xff);
        break;
      }
      case 7: {  // the first number at or after `at` (wrapping) replaced by an edge text
        if (s.empty()) break;
        size_t b = s.size();
        for (size_t k = 0; k < s.size() && b == s.size(); ++k) {
          const size_t i = (at + k) % s.size();
          if (s[i] >= '0' && s[i] <= '9') b = i;
        }
        if (b == s.size()) break;
        while (b > 0 && ((s[b - 1] >= '0' && s[b - 1] <= '9') || s[b - 1] == '-')) --b;
        size_t end = b;
        while (end < s.size() && ((s[end] >= '0' && s[end] <= '9') || s[end] == '-')) ++end;
        s.replace(b, end - b, kEdgeTexts[rng.Below(std::size(kEdgeTexts))]);
        break;
      }
      default: {  // splice: this one's head, another's tail
        const Input& other = pool[rng.Below(pool.size())];
        s = s.substr(0, at) + other.substr(rng.Below(other.size() + 1));
        break;
      }
    }
  }
  return s;
}

// What a crash report names: the input being replayed (read by the signal
// handler, so plain memory set before each call).
const Input* g_input = nullptr;
char g_what[256] = "";
char g_crash_path[4096] = "";

void WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Async-signal-safe: open, write and close only.
void SaveCrashingInput() {
  if (!g_input) return;
  const int fd = ::open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    WriteAll(fd, g_input->data(), g_input->size());
    ::close(fd);
  }
  const char* parts[] = {"replay: crashed on ", g_what, "; the input is in ", g_crash_path, "\n"};
  for (const char* p : parts) WriteAll(STDERR_FILENO, p, std::strlen(p));
}

void OnFatalSignal(int sig) {
  SaveCrashingInput();
  std::raise(sig);  // SA_RESETHAND: the default action now ends the process
}

void InstallCrashReport() {
  std::vector<int> signals = {SIGABRT, SIGILL};
#if defined(GNN_REPLAY_SANITIZE)
  // The sanitizers report memory errors themselves (a handler here would
  // hide their report); they call back before they exit.
  __sanitizer_set_death_callback(SaveCrashingInput);
#else
  signals.insert(signals.end(), {SIGSEGV, SIGBUS, SIGFPE});
#endif
  struct sigaction sa {};
  sa.sa_handler = OnFatalSignal;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int sig : signals) sigaction(sig, &sa, nullptr);
}

// One call of the target, on a heap copy of exactly the input's bytes (as
// libFuzzer passes it: a read past the end is outside the allocation).
void Run(const Input& input, const std::string& what) {
  std::snprintf(g_what, sizeof(g_what), "%s (%zu bytes)", what.c_str(), input.size());
  g_input = &input;
  const std::unique_ptr<uint8_t[]> copy(new uint8_t[input.size()]);
  if (!input.empty()) std::memcpy(copy.get(), input.data(), input.size());
  LLVMFuzzerTestOneInput(copy.get(), input.size());
  g_input = nullptr;
}

int WriteSeeds(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::vector<Input> seeds = BuiltInputs();
  for (size_t i = 0; i < seeds.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "built-%02zu%s", i, kSeedSuffix);
    std::ofstream out(std::filesystem::path(dir) / name, std::ios::binary);
    out.write(seeds[i].data(), static_cast<std::streamsize>(seeds[i].size()));
    if (!out) {
      std::fprintf(stderr, "replay: cannot write %s/%s\n", dir.c_str(), name);
      return 2;
    }
  }
  std::printf("%zu seeds written to %s\n", seeds.size(), dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string corpus_dir, seeds_dir;
  size_t max_changes = SIZE_MAX, mutations = 4000, randoms = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--write-seeds" && i + 1 < argc) {
      seeds_dir = argv[++i];
    } else if (arg == "--field-changes" && i + 1 < argc) {
      max_changes = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--mutations" && i + 1 < argc) {
      mutations = std::strtoull(argv[++i], nullptr, 10);
    } else if (!arg.empty() && arg[0] != '-' && corpus_dir.empty()) {
      corpus_dir = arg;
    } else {
      std::fprintf(stderr,
                   "usage: %s [CORPUS_DIR] [--field-changes N] [--mutations N] "
                   "[--write-seeds DIR]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!seeds_dir.empty()) return WriteSeeds(seeds_dir);
  std::snprintf(g_crash_path, sizeof(g_crash_path), "%s-crash.bin",
                std::filesystem::path(argv[0]).filename().c_str());
  InstallCrashReport();
  const auto start = std::chrono::steady_clock::now();

  // Valid inputs, each replayed once, then the bases of the mutations.
  std::vector<Input> pool;
  std::vector<std::string> names;
  if (!corpus_dir.empty()) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(corpus_dir, ec)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    if (ec || files.empty()) {
      std::fprintf(stderr, "replay: no corpus files in %s%s%s\n", corpus_dir.c_str(),
                   ec ? ": " : "", ec ? ec.message().c_str() : "");
      return 2;
    }
    std::sort(files.begin(), files.end());
    for (const auto& path : files) {
      std::ifstream in(path, std::ios::binary);
      pool.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) {
        std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
        return 2;
      }
      names.push_back("corpus file " + path.filename().string());
      Run(pool.back(), names.back());
    }
  }
  const size_t corpus = pool.size();
  const std::vector<Input> built = BuiltInputs();
  for (size_t i = 0; i < built.size(); ++i) {
    if (std::find(pool.begin(), pool.begin() + corpus, built[i]) != pool.begin() + corpus)
      continue;  // the corpus has it (the corpus was written from these)
    pool.push_back(built[i]);
    names.push_back("built input " + std::to_string(i));
    Run(pool.back(), names.back());
  }

  // One-field changes: all, or a fixed sample of `max_changes`.
  std::vector<std::pair<Input, std::string>> changes = AllFieldChanges();
  const size_t all_changes = changes.size();
  if (changes.size() > max_changes) {
    Rng pick(0x6669656c64ULL);  // "field"
    for (size_t i = 0; i < max_changes; ++i)
      std::swap(changes[i], changes[i + pick.Below(changes.size() - i)]);
    changes.resize(max_changes);
  }
  for (const auto& [input, what] : changes) Run(input, "field change: " + what);

  Rng rng(0x676e6e2d7265706cULL);  // "gnn-repl"
  for (size_t i = 0; i < randoms; ++i) {
    const size_t size = rng.Below(8) == 0 ? rng.Below(4096) : rng.Below(64);
    Run(RandomBytes(size, rng), "random input " + std::to_string(i));
  }
  for (size_t i = 0; i < mutations; ++i) {
    const size_t base = rng.Below(pool.size());
    Run(Mutate(pool[base], pool, rng), "mutation " + std::to_string(i) + " of " + names[base]);
  }

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%zu inputs replayed (%zu corpus files, %zu new built inputs, %zu of %zu field changes, "
      "%zu random, %zu mutated) in %.2f s\n",
      pool.size() + changes.size() + randoms + mutations, corpus, pool.size() - corpus,
      changes.size(), all_changes, randoms, mutations, seconds);
  return 0;
}
