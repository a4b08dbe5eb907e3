// Replays of hostile files (issue #12): .npy headers whose counts overflow,
// partition configs with bad numbers or escaping paths, corrupt partition
// arrays, and atomic writes interrupted half-way. Every rejection must be a
// gnn::Error subclass whose message is one line naming the file.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "common/npy.h"
#include "common/parse.h"
#include "graph/dataset.h"
#include "partition/config.h"
#include "partition/local_partition.h"
#include "test_util.h"

using namespace gnn;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A format-1.0 .npy file with the given header dict (padded to 64 bytes
// with '\n' at the end, as numpy writes it) and `data_bytes` zero bytes.
std::string NpyBytes(const std::string& dict, size_t data_bytes = 0) {
  std::string d = dict;
  while ((10 + d.size() + 1) % 64 != 0) d += ' ';
  d += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(d.size() & 0xff));
  out.push_back(static_cast<char>(d.size() >> 8));
  return out + d + std::string(data_bytes, '\0');
}

std::string ShapeDict(const std::string& shape, const std::string& descr = "<f4") {
  return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The attack of issue #12: 128 bytes claiming 4 x 2^62 float32 values; the
// unchecked product wrapped to 0 elements, so the size check passed.
std::string OverflowFeatNpy() {
  std::string b = NpyBytes(ShapeDict("(4, 4611686018427387904)"));
  REQUIRE(b.size() == 128);
  return b;
}

// The error `fn` throws, which must be a gnn::Error of one line.
template <typename Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    return what;
  }
  FAIL("no gnn::Error thrown");
  return "";
}

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("npy: headers whose counts overflow or lie are rejected naming the file", "[unit]") {
  test::TempDir dir;
  const std::string path = dir / "feat.npy";
  auto expect = [&](const std::string& bytes, const std::string& problem) {
    WriteBytes(path, bytes);
    std::string msg = ErrorOf([&] { ReadNpyHeader(path); });
    CHECK_THAT(msg, Catch::StartsWith(path) && Catch::Contains(problem));
    // The from-memory parser says the same.
    CHECK(ErrorOf([&] { ParseNpyHeader(bytes.data(), bytes.size(), bytes.size(), path); }) == msg);
    CHECK_THROWS_AS(ReadNpy<float>(path), DataError);
  };
  // A good file first, so the helpers themselves are known to work.
  WriteBytes(path, NpyBytes(ShapeDict("(2, 3)"), 24));
  NpyHeader ok = ReadNpyHeader(path);
  CHECK(ok.shape == std::vector<int64_t>{2, 3});
  CHECK(ok.NumElements() == 6);
  CHECK(ok.data_bytes == 24);
  CHECK(ReadNpy<float>(path, {2, 3}).size() == 6);

  SECTION("4 x 2^62 elements in 128 bytes") {
    expect(OverflowFeatNpy(), "more than 2^63 elements");
  }
  SECTION("elements fit, bytes do not") {
    expect(NpyBytes(ShapeDict("(2305843009213693952, 2)")), "more than 2^63 bytes");
  }
  SECTION("large shape, small file") {
    expect(NpyBytes(ShapeDict("(1099511627776,)")), "file has 128 bytes");
  }
  SECTION("data_offset + bytes would wrap") {
    // 2^60 - 1 int64s: the bytes fit int64, offset + bytes does not (it
    // is checked by subtraction).
    expect(NpyBytes(ShapeDict("(1152921504606846975,)", "<i8")), "file has 128 bytes");
  }
  SECTION("negative extent") { expect(NpyBytes(ShapeDict("(-1, 4)")), "negative extent"); }
  SECTION("extent beyond int64") {
    expect(NpyBytes(ShapeDict("(99999999999999999999,)")), "does not fit int64");
  }
  SECTION("more than 64 dimensions") {
    std::string shape = "(";
    for (int i = 0; i < 65; ++i) shape += "1,";
    expect(NpyBytes(ShapeDict(shape + ")"), 4), "more than 64 dimensions");
  }
  SECTION("junk in the shape") { expect(NpyBytes(ShapeDict("(2x, 3)")), "malformed .npy shape"); }
  SECTION("junk after the dict") {
    expect(NpyBytes(ShapeDict("(0,)") + "xyz"), "junk after the .npy header dict");
  }
  SECTION("missing key") {
    expect(NpyBytes("{'descr': '<f4', 'fortran_order': False, }"), "lacks 'shape'");
  }
  SECTION("repeated key") {
    expect(NpyBytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (0,), }"),
           "repeated key 'descr'");
  }
  SECTION("fortran order") {
    expect(NpyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (0,), }"), "Fortran");
  }
  SECTION("header length 0") {
    std::string b = NpyBytes(ShapeDict("(0,)"));
    b[8] = b[9] = 0;
    expect(b, "header length 0");
  }
  SECTION("header length past the end of the file") {
    std::string b = NpyBytes(ShapeDict("(0,)"));
    b[8] = 0;
    b[9] = 0x7f;  // 32512 bytes of header in a 128-byte file
    expect(b, "truncated .npy header");
  }
  SECTION("format 2.0 header length of 2 GiB") {
    std::string b("\x93NUMPY\x02\x00\x00\x00\x00\x80", 12);
    expect(b + std::string(116, ' '), "header length 2147483648");
  }
  SECTION("unknown version") {
    std::string b = NpyBytes(ShapeDict("(0,)"));
    b[6] = 9;
    expect(b, "unsupported .npy version 9.0");
  }
  SECTION("cut inside the preamble") { expect(std::string("\x93NUMPY\x01", 7), "bad magic"); }
}

TEST_CASE("npy: the from-memory parser agrees with the file reader", "[unit]") {
  test::TempDir dir;
  std::vector<int64_t> v = {1, 2, 3, 4, 5, 6};
  WriteNpy(dir / "v.npy", v.data(), {3, 2});
  const std::string bytes = ReadFile(dir / "v.npy");
  NpyHeader a = ReadNpyHeader(dir / "v.npy");
  NpyHeader b = ParseNpyHeader(bytes.data(), bytes.size(), bytes.size(), "v");
  CHECK(a.shape == b.shape);
  CHECK(a.data_offset == b.data_offset);
  CHECK(a.data_bytes == 48);
  CHECK(b.dtype == DType::kInt64);
  // Only the header is needed in memory; the file size is what is checked.
  CHECK_NOTHROW(ParseNpyHeader(bytes.data(), b.data_offset, bytes.size(), "v"));
  CHECK_THAT(ErrorOf([&] { ParseNpyHeader(bytes.data(), bytes.size(), bytes.size() + 1, "v"); }),
             Catch::Contains("file has 177 bytes"));
}

TEST_CASE("npy: writers refuse shapes that overflow and leave no file", "[unit]") {
  test::TempDir dir;
  std::vector<float> data(4);
  CHECK_THAT(ErrorOf([&] {
               WriteNpy(dir / "w.npy", data.data(), {4, int64_t{1} << 62});
             }),
             Catch::Contains("w.npy") && Catch::Contains("more than 2^63 elements"));
  CHECK_THAT(ErrorOf([&] {
               NpyWriter(dir / "n.npy", DType::kFloat32, {-2, 2});
             }),
             Catch::Contains("negative extent"));
  {
    NpyWriter w(dir / "x.npy", DType::kFloat32, {2});
    CHECK_THROWS_AS(w.Append(data.data(), 3), DataError);  // more than the shape holds
    CHECK_THROWS_AS(w.Append(data.data(), -1), DataError);
  }
  CHECK(Listing(dir.path()).empty());
}

TEST_CASE("AtomicFile: unique temporaries, nothing left when a write fails", "[unit]") {
  test::TempDir dir;
  const std::string target = dir / "out.bin";

  SECTION("an exception mid-write removes the temporary") {
    try {
      AtomicFile f(target);
      f.Write("half", 4);
      REQUIRE(Listing(dir.path()).size() == 1);  // the temporary exists while writing
      throw std::runtime_error("disk on fire");
    } catch (const std::runtime_error&) {
    }
    CHECK(Listing(dir.path()).empty());
  }
  SECTION("an NpyWriter that never commits leaves nothing") {
    {
      NpyWriter w(target, DType::kInt64, {3});
      int64_t one = 1;
      w.Append(&one, 1);
    }
    CHECK(Listing(dir.path()).empty());
  }
  SECTION("temporary names are random, never just <path>.tmp") {
    AtomicFile a(target), b(target);
    std::vector<std::string> names = Listing(dir.path());
    REQUIRE(names.size() == 2);
    CHECK(names[0] != names[1]);
    for (const std::string& n : names) {
      CHECK(n.rfind("out.bin.tmp.", 0) == 0);
      CHECK(n.size() == std::string("out.bin.tmp.").size() + 12);
    }
    a.Write("first", 5);
    b.Write("second", 6);
    a.Commit();
    b.Commit();
    CHECK(ReadFile(target) == "second");
    CHECK(Listing(dir.path()) == std::vector<std::string>{"out.bin"});
  }
  SECTION("writers on several threads never share a temporary") {
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 50; ++i)
          WriteFileAtomic(target, std::string(100, static_cast<char>('a' + t)));
      });
    }
    for (auto& th : threads) th.join();
    std::string got = ReadFile(target);
    CHECK(got.size() == 100);
    CHECK(std::count(got.begin(), got.end(), got[0]) == 100);  // one writer's whole content
    CHECK(Listing(dir.path()) == std::vector<std::string>{"out.bin"});
  }
  SECTION("MakeUniqueDir never returns the same folder") {
    std::set<std::string> made;
    for (int i = 0; i < 20; ++i) made.insert(MakeUniqueDir(dir / "x.tmp."));
    CHECK(made.size() == 20);
    for (const std::string& d : made) CHECK(fs::is_directory(d));
  }
}

TEST_CASE("csv: label fields beyond a class index are errors, not undefined casts", "[unit]") {
  for (std::string text : {"1e30\n", "3.0e38\n", "2147483648.0\n", "-0.5\n", "inf\n"}) {
    CsvCursor c(text.data(), text.data() + text.size(), "node-label.csv.gz", 1);
    REQUIRE(c.NextLine());
    CHECK_THAT(ErrorOf([&] { c.Label(); }), Catch::StartsWith("node-label.csv.gz:1: "));
  }
  std::string ok = "7.0\n";
  CsvCursor c(ok.data(), ok.data() + ok.size(), "node-label.csv.gz", 1);
  REQUIRE(c.NextLine());
  CHECK(c.Label() == 7);
}

TEST_CASE("ogb reader: counts beyond 2^62 are rejected naming the file", "[unit]") {
  test::TempDir dir;
  const std::string g = dir / "g";
  test::WriteGz(g + "/raw/edge.csv.gz", "0,1\n");
  test::WriteGz(g + "/raw/num-node-list.csv.gz", "4611686018427387905\n");
  test::WriteGz(g + "/raw/num-edge-list.csv.gz", "1\n");
  test::WriteGz(g + "/raw/node-feat.csv.gz", "1\n2\n");
  test::WriteGz(g + "/raw/node-label.csv.gz", "0\n1\n");
  test::WriteGz(g + "/split/s/train.csv.gz", "0\n");
  test::WriteGz(g + "/split/s/valid.csv.gz", "1\n");
  test::WriteGz(g + "/split/s/test.csv.gz", "1\n");
  DatasetOptions o;
  o.dataset = g;
  o.use_cache = false;
  CHECK_THAT(ErrorOf([&] { LoadDataset(o); }),
             Catch::Contains("num-node-list.csv.gz:1: count 4611686018427387905 is beyond 2^62"));
  test::WriteGz(g + "/raw/num-node-list.csv.gz", "2\n");
  CHECK(LoadDataset(o).num_nodes == 2);  // the same folder with a sane count loads
}

TEST_CASE("Dataset::Validate checks num_nodes x feature_dim without overflow", "[unit]") {
  Dataset d;
  d.name = "poisoned";
  d.num_nodes = 4;
  d.feature_dim = int64_t{1} << 62;  // 4 x 2^62 wraps to 0 = features.size()
  d.labels = {0, 0, 0, 0};
  d.num_classes = 1;
  CHECK_THAT(ErrorOf([&] { d.Validate(); }), Catch::Contains("poisoned: feature matrix"));
  d.feature_dim = 0;
  CHECK_NOTHROW(d.Validate());
}

// ---- partition config -------------------------------------------------------

namespace {

std::string Hex64(char c) { return std::string(64, c); }

// A consistent two-partition config: 5 nodes (3 + 2), 7 edges (4 + 3).
PartitionConfig TwoParts() {
  PartitionConfig c;
  c.graph_name = "g";
  c.num_nodes = 5;
  c.num_edges = 7;
  c.part_method = "metis";
  c.num_parts = 2;
  c.feature_dim = 2;
  c.num_classes = 3;
  const int64_t nodes[3] = {0, 3, 5}, edges[3] = {0, 4, 7};
  for (int i = 0; i < 2; ++i) {
    PartInfo p;
    p.dir = "part" + std::to_string(i);
    p.node_start = nodes[i];
    p.node_end = nodes[i + 1];
    p.edge_start = edges[i];
    p.edge_end = edges[i + 1];
    p.num_train = 1;
    for (const std::string& f : kPartFiles) p.files[f] = PartFile{128, Hex64('a')};
    c.parts.push_back(p);
  }
  return c;
}

struct ConfigCase {
  const char* what;
  json::json_pointer key;
  json value;
  const char* message;  // expected in the error, after the file name
};

}  // namespace

TEST_CASE("partition config: every number is range-checked, errors name file and key", "[unit]") {
  test::TempDir dir;
  const std::string source = dir / "g.json";
  const json good = ToJson(TwoParts());
  REQUIRE(ParsePartitionConfig(good, dir.path(), source).num_parts == 2);

  const std::vector<ConfigCase> cases = {
      {"num_parts -1", json::json_pointer("/num_parts"), -1,
       "key 'num_parts': expected an integer in [1, 1048576], got -1"},
      {"num_parts 1e30", json::json_pointer("/num_parts"), 1e30,
       "key 'num_parts': expected an integer in [1, 1048576], got 1e+30"},
      {"num_parts a string", json::json_pointer("/num_parts"), "2",
       "key 'num_parts': expected an integer in [1, 1048576], got \"2\""},
      {"num_parts 2.0", json::json_pointer("/num_parts"), 2.0,
       "key 'num_parts': expected an integer"},
      {"num_parts above 2^20", json::json_pointer("/num_parts"), (1 << 20) + 1,
       "key 'num_parts': expected an integer in [1, 1048576]"},
      {"num_parts not matching node_map", json::json_pointer("/num_parts"), 3,
       "key 'node_map._N': has 2 ranges for num_parts 3"},
      {"negative num_nodes", json::json_pointer("/num_nodes"), -5, "key 'num_nodes'"},
      {"num_nodes beyond 2^62", json::json_pointer("/num_nodes"), uint64_t{1} << 63,
       "key 'num_nodes': expected an integer in [0, 4611686018427387904]"},
      {"num_nodes not covered", json::json_pointer("/num_nodes"), 6,
       "key 'node_map._N': ranges cover 5 of 6 nodes"},
      {"seed negative", json::json_pointer("/seed"), -1, "key 'seed'"},
      {"graph_name a number", json::json_pointer("/graph_name"), 5,
       "key 'graph_name': expected a string, got 5"},
      {"balance_train a string", json::json_pointer("/balance_train"), "yes",
       "key 'balance_train': expected true or false"},
      {"node range gap", json::json_pointer("/node_map/_N/1/0"), 4,
       "key 'node_map._N[1]': range [4, 5) is not contiguous"},
      {"node range reversed", json::json_pointer("/node_map/_N/0/1"), -1,
       "key 'node_map._N[0][1]'"},
      {"edge range not a pair", json::json_pointer("/edge_map/_N:_E:_N/0"), json::array({0}),
       "key 'edge_map._N:_E:_N[0]': expected [start, end]"},
      {"num_train above the part's nodes", json::json_pointer("/part-1/num_train"), 3,
       "key 'part-1.num_train': expected an integer in [0, 2]"},
      {"file bytes a string", json::json_pointer("/part-0/files/feat.npy/bytes"), "x",
       "key 'part-0.files.feat.npy.bytes'"},
      {"sha256 not hex", json::json_pointer("/part-0/files/feat.npy/sha256"), "zz",
       "key 'part-0.files.feat.npy.sha256': expected 64 lowercase hex digits"},
      {"missing part", json::json_pointer("/part-1"), nullptr, "key 'part-1': expected an object"},
      {"feature_dim overflowing with num_nodes", json::json_pointer("/feature_dim"),
       int64_t{1} << 61, "key 'feature_dim': num_nodes x feature_dim"},
      {"format_version", json::json_pointer("/format_version"), 2,
       "key 'format_version': 2 is not supported"},
  };
  for (const ConfigCase& c : cases) {
    SECTION(c.what) {
      json j = good;
      j[c.key] = c.value;
      std::string msg = ErrorOf([&] { ParsePartitionConfig(j, dir.path(), source); });
      CHECK_THAT(msg, Catch::StartsWith(source + ": ") && Catch::Contains(c.message));
    }
  }
  SECTION("a missing key") {
    json j = good;
    j.erase("num_edges");
    CHECK_THAT(ErrorOf([&] { ParsePartitionConfig(j, dir.path(), source); }),
               Catch::Contains(source + ": key 'num_edges': missing"));
  }
  SECTION("text that is not JSON") {
    CHECK_THAT(ErrorOf([&] { ParsePartitionConfigText("{\"num_parts\": ", dir.path(), source); }),
               Catch::StartsWith(source + ": not valid JSON"));
  }
  SECTION("held-out edge counts must add up") {
    PartitionConfig pc = TwoParts();
    pc.val_edges_fraction = 0.1;
    pc.num_val_edges = 3;
    pc.val_negatives = 100;
    for (PartInfo& p : pc.parts) {
      p.num_val_edges = 1;
      for (const std::string& f : kValEdgeFiles) p.files[f] = PartFile{128, Hex64('b')};
    }
    CHECK_THAT(ErrorOf([&] { ParsePartitionConfig(ToJson(pc), dir.path(), source); }),
               Catch::Contains("partitions hold 2 held-out edges, not 3"));
    pc.parts[1].num_val_edges = 2;
    CHECK(ParsePartitionConfig(ToJson(pc), dir.path(), source).num_val_edges == 3);
  }
}

TEST_CASE("partition config: part_dir must stay inside the config's folder", "[unit]") {
  test::TempDir dir;
  const std::string base = dir / "data";
  MakeDirs(base + "/real");
  MakeDirs(dir / "outside");
  const std::string source = base + "/g.json";
  const json good = ToJson(TwoParts());
  auto reject = [&](const json& part_dir, const std::string& problem) {
    json j = good;
    j["part-1"]["part_dir"] = part_dir;
    std::string msg = ErrorOf([&] { ParsePartitionConfig(j, base, source); });
    CHECK_THAT(msg,
               Catch::StartsWith(source + ": key 'part-1.part_dir': ") && Catch::Contains(problem));
  };
  auto accept = [&](const std::string& part_dir) {
    json j = good;
    j["part-1"]["part_dir"] = part_dir;
    CHECK(ParsePartitionConfig(j, base, source).parts[1].dir == part_dir);
  };
  accept("part1");
  accept("nested/part1");
  reject("../../etc", "'..' component");
  reject("part1/../../x", "'..' component");
  reject("/etc", "absolute path '/etc'");
  reject("", "expected a folder name");
  reject(".", "outside");
  reject("part0", "used by another partition");
  reject(42, "expected a string");

  SECTION("a symlink leading out is rejected, one staying inside is not") {
    fs::create_directory_symlink(dir / "outside", base + "/escape");
    fs::create_directory_symlink("/etc", base + "/etc_link");
    fs::create_directory_symlink(base + "/real", base + "/inner");
    reject("escape", "outside " + fs::canonical(base).string());
    reject("etc_link/ssl", "resolves to /etc/ssl");
    accept("inner");
  }
}

// ---- LoadLocalPartition --------------------------------------------------------

namespace {

// Writes a one-partition graph of 3 nodes and 4 in-edges into `base` and
// returns its config (checksums of the files as written).
PartitionConfig WriteOnePart(const std::string& base) {
  PartitionConfig c;
  c.graph_name = "g";
  c.num_nodes = 3;
  c.num_edges = 4;
  c.num_parts = 1;
  c.feature_dim = 2;
  c.num_classes = 2;
  c.base_dir = base;
  PartInfo p;
  p.dir = "part0";
  p.node_end = 3;
  p.edge_end = 4;
  p.num_train = 2;
  p.num_valid = 1;
  const std::string d = base + "/part0/";
  MakeDirs(d);
  auto rec = [&](const std::string& name, WrittenFile f) { p.files[name] = {f.bytes, f.sha256}; };
  std::vector<float> feat = {1, 2, 3, 4, 5, 6};
  rec("indptr.npy", WriteNpy(d + "indptr.npy", std::vector<int64_t>{0, 1, 3, 4}));
  rec("indices.npy", WriteNpy(d + "indices.npy", std::vector<int64_t>{1, 0, 2, 1}));
  rec("feat.npy", WriteNpy(d + "feat.npy", feat.data(), {3, 2}));
  rec("label.npy", WriteNpy(d + "label.npy", std::vector<int64_t>{0, 1, -1}));
  rec("train_mask.npy", WriteNpy(d + "train_mask.npy", std::vector<uint8_t>{1, 1, 0}));
  rec("valid_mask.npy", WriteNpy(d + "valid_mask.npy", std::vector<uint8_t>{0, 0, 1}));
  rec("test_mask.npy", WriteNpy(d + "test_mask.npy", std::vector<uint8_t>{0, 0, 0}));
  rec("orig_nids.npy", WriteNpy(d + "orig_nids.npy", std::vector<int64_t>{2, 0, 1}));
  c.parts.push_back(p);
  // Through JSON, so the loader sees what a reader of the file would.
  return ParsePartitionConfig(ToJson(c), base, base + "/g.json");
}

}  // namespace

TEST_CASE("LoadLocalPartition rejects arrays inconsistent with each other or the config",
          "[unit]") {
  test::TempDir dir;
  const PartitionConfig c = WriteOnePart(dir.path());
  const std::string d = dir / "part0/";
  REQUIRE(LoadLocalPartition(c, 0, true).indices.size() == 4);
  auto expect = [&](const std::string& file, const std::string& problem) {
    std::string msg = ErrorOf([&] { LoadLocalPartition(c, 0, false); });
    CHECK_THAT(msg, Catch::StartsWith(d + file) && Catch::Contains(problem));
  };

  SECTION("the 128-byte feat.npy claiming shape (4, 2^62)") {
    WriteBytes(d + "feat.npy", OverflowFeatNpy());
    expect("feat.npy", "more than 2^63 elements");
  }
  SECTION("feature rows differ from owned nodes") {
    std::vector<float> f(4);
    WriteNpy(d + "feat.npy", f.data(), {2, 2});
    expect("feat.npy", "shape (2, 2), expected (3, 2)");
  }
  SECTION("indptr length differs from nodes + 1") {
    WriteNpy(d + "indptr.npy", std::vector<int64_t>{0, 4});
    expect("indptr.npy", "expected (4,)");
  }
  SECTION("indptr does not end at the indices' length") {
    WriteNpy(d + "indptr.npy", std::vector<int64_t>{0, 1, 3, 3});
    expect("indptr.npy", "not from 0 to the 4 entries");
  }
  SECTION("indptr decreases") {
    WriteNpy(d + "indptr.npy", std::vector<int64_t>{0, 3, 1, 4});
    expect("indptr.npy", "offsets decrease at entry 2");
  }
  SECTION("indices out of range") {
    WriteNpy(d + "indices.npy", std::vector<int64_t>{1, 0, 3, 1});
    expect("indices.npy", "entry 2 is node id 3, outside [0, 3)");
  }
  SECTION("labels of the wrong length") {
    WriteNpy(d + "label.npy", std::vector<int64_t>{0, 1});
    expect("label.npy", "expected (3,)");
  }
  SECTION("label beyond num_classes") {
    WriteNpy(d + "label.npy", std::vector<int64_t>{0, 2, 1});
    expect("label.npy", "label 2 outside [0, 2)");
  }
  SECTION("mask value other than 0/1") {
    WriteNpy(d + "train_mask.npy", std::vector<uint8_t>{1, 2, 0});
    expect("train_mask.npy", "entry 1 is 2");
  }
  SECTION("mask count differs from the config's num_train") {
    WriteNpy(d + "train_mask.npy", std::vector<uint8_t>{1, 1, 1});
    expect("train_mask.npy", "3 nodes are set, the partition config says 2");
  }
  SECTION("orig_nids out of range") {
    WriteNpy(d + "orig_nids.npy", std::vector<int64_t>{2, 0, 7});
    expect("orig_nids.npy", "node id 7");
  }
  SECTION("checksums catch any edit first") {
    WriteNpy(d + "label.npy", std::vector<int64_t>{1, 1, -1});
    CHECK_THAT(ErrorOf([&] { LoadLocalPartition(c, 0, true); }),
               Catch::Contains("label.npy: checksum mismatch"));
  }
}
