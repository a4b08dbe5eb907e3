#include "graph/ogb_reader.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>

#include "common/error.h"
#include "common/fs.h"
#include "common/npy.h"
#include "graph/dataset.h"
#include "test_util.h"

namespace gnn {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::WriteGz;

// The hand-written folder: 6 nodes, 5 edges, 3 features, split "s1".
std::map<std::string, std::string> TinyFiles() {
  return {
      {"raw/num-node-list.csv.gz", "6\n"},
      {"raw/num-edge-list.csv.gz", "5\n"},
      {"raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,4\n4,5\n"},
      {"raw/node-feat.csv.gz", "0.5,-1,2e3\n0.0,0.0,1.0\n-0.25,3.5,1e-3\n1,2,3\n4,5,6\n7,8,9.75\n"},
      {"raw/node-label.csv.gz", "0\n1\n2.0\nnan\n1\n0\n"},
      {"split/s1/train.csv.gz", "1\n0\n"},
      {"split/s1/valid.csv.gz", "2\n"},
      {"split/s1/test.csv.gz", "5\n4\n"},
  };
}

void WriteFolder(const std::string& dir, const std::map<std::string, std::string>& files) {
  for (const auto& [rel, text] : files) WriteGz(dir + "/" + rel, text);
}

DatasetOptions NoCache(const std::string& folder) {
  DatasetOptions o;
  o.dataset = folder;
  o.use_cache = false;
  return o;
}

DatasetOptions WithCache(const std::string& folder, const std::string& cache_dir) {
  DatasetOptions o;
  o.dataset = folder;
  o.cache_dir = cache_dir;
  o.use_cache = true;
  return o;
}

// Runs `f`, requires it to throw E, returns the message.
template <typename E = DataError, typename F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected an exception");
  return "";
}

void RequireSame(const Dataset& a, const Dataset& b) {
  REQUIRE(a.name == b.name);
  REQUIRE(a.num_nodes == b.num_nodes);
  REQUIRE(a.src == b.src);
  REQUIRE(a.dst == b.dst);
  REQUIRE(a.feature_dim == b.feature_dim);
  REQUIRE(a.features.size() == b.features.size());
  // Bit-exact, so -0.0 vs 0.0 and NaN payloads would show.
  REQUIRE(std::memcmp(a.features.data(), b.features.data(), a.features.size() * sizeof(float)) ==
          0);
  REQUIRE(a.labels == b.labels);
  REQUIRE(a.num_classes == b.num_classes);
  REQUIRE(a.train_idx == b.train_idx);
  REQUIRE(a.valid_idx == b.valid_idx);
  REQUIRE(a.test_idx == b.test_idx);
  REQUIRE(a.undirected_reason == b.undirected_reason);
}

void BumpMtime(const std::string& path) {
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
}

TEST_CASE("ogb reader parses a hand-written folder exactly", "[unit]") {
  TempDir tmp;
  std::string folder = tmp / "ogbn_tiny";
  auto files = TinyFiles();
  SECTION("LF line endings") {}
  SECTION("CRLF line endings and no final newline") {
    for (auto& [rel, text] : files) {
      std::string crlf;
      for (char ch : text) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
      text = crlf.substr(0, crlf.size() - 2);
    }
  }
  WriteFolder(folder, files);

  Dataset d = LoadDataset(NoCache(folder));
  CHECK(d.name == "ogbn-tiny");
  CHECK_FALSE(d.known_undirected());
  CHECK(d.num_nodes == 6);
  CHECK(d.src == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(d.dst == std::vector<int64_t>{1, 2, 3, 4, 5});
  CHECK(d.feature_dim == 3);
  CHECK(d.features == std::vector<float>{0.5f, -1, 2000, 0, 0, 1, -0.25f, 3.5f, 1e-3f, 1, 2, 3, 4,
                                         5, 6, 7, 8, 9.75f});
  CHECK(d.labels == std::vector<int64_t>{0, 1, 2, -1, 1, 0});
  CHECK(d.num_classes == 3);
  CHECK(d.train_idx == std::vector<int64_t>{0, 1});  // sorted
  CHECK(d.valid_idx == std::vector<int64_t>{2});
  CHECK(d.test_idx == std::vector<int64_t>{4, 5});
  CHECK_FALSE(fs::exists(folder + "/processed"));  // use_cache = false writes nothing
}

TEST_CASE("ogb reader: name from folder, trailing slash, empty split files", "[unit]") {
  TempDir tmp;
  std::string folder = tmp / "cora";
  auto files = TinyFiles();
  files["split/s1/valid.csv.gz"] = "";
  WriteFolder(folder, files);
  Dataset d = ReadOgbFolder(folder + "/", NoCache(folder));
  CHECK(d.name == "cora");
  CHECK(d.known_undirected());
  CHECK(d.valid_idx.empty());
}

Dataset TrickyDataset(int64_t n, int64_t f, int64_t e) {
  Dataset d;
  d.name = "round-trip";
  d.num_nodes = n;
  d.feature_dim = f;
  d.features.resize(static_cast<size_t>(n * f));
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f,
                            -1.5f,
                            0.1f,
                            -0.3f,
                            3.14159274f,
                            1e-38f,
                            std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            1.0e-40f,
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            16777217.0f,
                            123456789.0f,
                            -7.006492e-45f,
                            1e30f};
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < d.features.size(); ++i) {
    if (i < sizeof(specials) / sizeof(specials[0])) {
      d.features[i] = specials[i];
    } else {
      // Random finite bit patterns: every exponent, both signs.
      float v;
      do {
        uint32_t bits = static_cast<uint32_t>(rng());
        std::memcpy(&v, &bits, sizeof(v));
      } while (!std::isfinite(v));
      d.features[i] = v;
    }
  }
  d.labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) d.labels[i] = (i % 7 == 3) ? -1 : static_cast<int64_t>(i % 5);
  d.num_classes = 5;
  for (int64_t i = 0; i < e; ++i) {
    d.src.push_back(static_cast<int64_t>(rng() % n));
    d.dst.push_back(static_cast<int64_t>(rng() % n));
  }
  for (int64_t i = 0; i < n; ++i) {
    (i % 10 < 6 ? d.train_idx : i % 10 < 8 ? d.valid_idx : d.test_idx).push_back(i);
  }
  return d;
}

TEST_CASE("ogb writer and reader round-trip bit-exactly", "[unit]") {
  TempDir tmp;
  std::string folder = tmp / "round_trip";
  // Big enough for several write blocks and several 4 MiB read chunks.
  Dataset d = TrickyDataset(100000, 7, 600000);
  WriteOgbFolder(d, folder, "random");
  CHECK(PathExists(folder + "/raw/node-feat.csv.gz"));
  CHECK(PathExists(folder + "/split/random/test.csv.gz"));

  Dataset back = LoadDataset(NoCache(folder));
  RequireSame(d, back);
  // The split was the only one, so it was picked without --split.
  DatasetOptions o = NoCache(folder);
  o.split = "random";
  o.num_threads = 1;  // the sequential path gives the same arrays
  RequireSame(d, ReadOgbFolder(folder, o));
}

TEST_CASE("ogb writer rejects bad input", "[unit]") {
  TempDir tmp;
  Dataset d = TrickyDataset(10, 2, 5);
  CHECK_THROWS_AS(WriteOgbFolder(d, tmp / "x", ""), DataError);
  CHECK_THROWS_AS(WriteOgbFolder(d, tmp / "x", "a/b"), DataError);
  d.src[0] = 10;  // out of range: Validate() refuses it
  CHECK_THROWS_AS(WriteOgbFolder(d, tmp / "x", "s"), DataError);
}

TEST_CASE("ogb reader caches parsed arrays and notices raw changes", "[unit]") {
  TempDir tmp;
  std::string folder = tmp / "tiny";
  std::string cache = tmp / "cache";
  WriteFolder(folder, TinyFiles());
  DatasetOptions o = WithCache(folder, cache);

  Dataset first = LoadDataset(o);
  REQUIRE(PathExists(cache + "/meta.json"));
  REQUIRE(PathExists(cache + "/feat.npy"));
  CHECK_FALSE(fs::exists(folder + "/processed"));
  RequireSame(first, LoadDataset(o));

  // Poison the cached labels (still valid): a load that returns them was
  // served from the cache, not from the raw files.
  std::vector<int64_t> poisoned = {2, 2, 2, 2, 2, 2};
  WriteNpy(cache + "/label.npy", poisoned);
  CHECK(LoadDataset(o).labels == poisoned);

  SECTION("use_cache = false ignores the cache") {
    o.use_cache = false;
    CHECK(LoadDataset(o).labels == first.labels);
  }
  SECTION("new content with another size") {
    WriteGz(folder + "/raw/node-label.csv.gz", "1\n1\n1\n1\n1\n4\n");
    Dataset d = LoadDataset(o);
    CHECK(d.labels == std::vector<int64_t>{1, 1, 1, 1, 1, 4});
    CHECK(d.num_classes == 5);
    // ... and the rebuilt cache serves it next time.
    CHECK(ReadNpy<int64_t>(cache + "/label.npy") == d.labels);
    RequireSame(d, LoadDataset(o));
  }
  SECTION("only the mtime changes") {
    BumpMtime(folder + "/raw/node-label.csv.gz");
    CHECK(LoadDataset(o).labels == first.labels);
  }
  SECTION("a split file changes") {
    WriteGz(folder + "/split/s1/test.csv.gz", "3\n");
    BumpMtime(folder + "/split/s1/test.csv.gz");
    CHECK(LoadDataset(o).test_idx == std::vector<int64_t>{3});
  }
  SECTION("another split is asked for") {
    WriteGz(folder + "/split/s2/train.csv.gz", "5\n");
    WriteGz(folder + "/split/s2/valid.csv.gz", "4\n");
    WriteGz(folder + "/split/s2/test.csv.gz", "3\n");
    o.split = "s2";
    Dataset d = LoadDataset(o);
    CHECK(d.train_idx == std::vector<int64_t>{5});
    CHECK(d.labels == first.labels);
    o.split = "s1";
    CHECK(LoadDataset(o).train_idx == first.train_idx);
  }
  SECTION("a truncated cache file is ignored") {
    std::string feat = cache + "/feat.npy";
    fs::resize_file(feat, fs::file_size(feat) - 4);
    RequireSame(first, LoadDataset(o));
  }
  SECTION("a corrupt meta.json is ignored") {
    WriteFileAtomic(cache + "/meta.json", "{\"format_version\": 1,");
    RequireSame(first, LoadDataset(o));
  }
  SECTION("a cache with out-of-range ids is ignored") {
    WriteNpy(cache + "/src.npy", std::vector<int64_t>{0, 1, 2, 3, 99});
    RequireSame(first, LoadDataset(o));
  }
}

TEST_CASE("ogb reader: default cache dir, unwritable and read-only cache dirs", "[unit]") {
  TempDir tmp;
  std::string folder = tmp / "tiny";
  WriteFolder(folder, TinyFiles());
  Dataset expected = LoadDataset(NoCache(folder));

  SECTION("default is <folder>/processed") {
    DatasetOptions o = WithCache(folder, "");
    RequireSame(expected, LoadDataset(o));
    CHECK(PathExists(folder + "/processed/meta.json"));
    RequireSame(expected, LoadDataset(o));
  }
  SECTION("a cache dir that cannot be created only warns") {
    WriteFileAtomic(tmp / "file", "x");
    RequireSame(expected, LoadDataset(WithCache(folder, tmp / "file/cache")));
  }
  SECTION("a read-only dataset folder is not written into, even by root") {
    REQUIRE(::chmod(folder.c_str(), 0555) == 0);
    struct Restore {
      std::string path;
      ~Restore() { ::chmod(path.c_str(), 0755); }  // so TempDir can clean up
    } restore{folder};
    RequireSame(expected, LoadDataset(WithCache(folder, "")));
    CHECK_FALSE(fs::exists(folder + "/processed"));
  }
}

TEST_CASE("ogb reader: missing dataset folder", "[unit]") {
  TempDir tmp;
  DatasetOptions o = NoCache(tmp / "nope");
  o.root = tmp.path();
  std::string msg = ErrorOf([&] { LoadDataset(o); });
  CHECK_THAT(msg, Catch::Contains("not found"));
  CHECK_THAT(msg, Catch::Contains("nope"));
}

TEST_CASE("ogb reader: each missing file is named", "[unit]") {
  for (const auto& [rel, text] : TinyFiles()) {
    (void)text;
    DYNAMIC_SECTION(rel) {
      TempDir tmp;
      std::string folder = tmp / "tiny";
      WriteFolder(folder, TinyFiles());
      fs::remove(folder + "/" + rel);
      std::string msg = ErrorOf([&] { LoadDataset(NoCache(folder)); });
      CHECK_THAT(msg, Catch::Contains("cannot open " + folder + "/" + rel +
                                      ": No such file or directory"));
    }
  }
}

// Writes the tiny folder with `rel` replaced by `text` and returns the
// DataError message of loading it.
std::string LoadError(const std::string& rel, const std::string& text) {
  TempDir tmp;
  std::string folder = tmp / "tiny";
  auto files = TinyFiles();
  files[rel] = text;
  WriteFolder(folder, files);
  return ErrorOf([&] { LoadDataset(NoCache(folder)); });
}

TEST_CASE("ogb reader: corrupt and truncated gzip", "[unit]") {
  TempDir tmp;
  std::string folder = tmp / "tiny";
  auto files = TinyFiles();
  std::string many;
  for (int i = 0; i < 20000; ++i)
    many += std::to_string(i % 6) + "," + std::to_string(i % 5) + "\n";
  files["raw/edge.csv.gz"] = many;
  files["raw/num-edge-list.csv.gz"] = "20000\n";
  WriteFolder(folder, files);
  REQUIRE(LoadDataset(NoCache(folder)).num_edges() == 20000);
  std::string edge = folder + "/raw/edge.csv.gz";

  SECTION("garbage bytes") {
    std::ofstream(edge, std::ios::binary | std::ios::trunc) << "this is not gzip at all\n";
    std::string msg = ErrorOf([&] { LoadDataset(NoCache(folder)); });
    CHECK_THAT(msg, Catch::Contains(edge));
  }
  SECTION("corrupt bytes inside a valid header") {
    std::string bytes = ReadFile(edge);
    for (size_t i = 20; i < bytes.size() - 8; i += 7) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
    std::ofstream(edge, std::ios::binary | std::ios::trunc) << bytes;
    std::string msg = ErrorOf([&] { LoadDataset(NoCache(folder)); });
    CHECK_THAT(msg, Catch::Contains("edge.csv.gz"));
  }
  SECTION("cut in half") {
    fs::resize_file(edge, fs::file_size(edge) / 2);
    std::string msg = ErrorOf([&] { LoadDataset(NoCache(folder)); });
    CHECK_THAT(msg, Catch::Contains(edge));
    CHECK_THAT(msg, Catch::Contains("truncated"));
  }
  SECTION("empty file") {
    fs::resize_file(edge, 0);
    CHECK_THAT(ErrorOf([&] { LoadDataset(NoCache(folder)); }), Catch::Contains(edge));
  }
}

TEST_CASE("ogb reader: malformed CSV names file and line", "[unit]") {
  SECTION("non-integer edge field") {
    std::string msg = LoadError("raw/edge.csv.gz", "0,1\n1,2\n1,x\n3,4\n4,5\n");
    CHECK_THAT(msg, Catch::Contains("edge.csv.gz:3:"));
  }
  SECTION("missing edge field") {
    CHECK_THAT(LoadError("raw/edge.csv.gz", "0,1\n1\n2,3\n3,4\n4,5\n"),
               Catch::Contains("edge.csv.gz:2:"));
  }
  SECTION("three edge fields") {
    CHECK_THAT(LoadError("raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,4,5\n4,5\n"),
               Catch::Contains("edge.csv.gz:4:"));
  }
  SECTION("empty line in the middle") {
    CHECK_THAT(LoadError("raw/edge.csv.gz", "0,1\n1,2\n\n2,3\n3,4\n4,5\n"),
               Catch::Contains("edge.csv.gz:3: empty line"));
  }
  SECTION("integer overflow") {
    CHECK_THAT(LoadError("raw/edge.csv.gz", "0,1\n1,18446744073709551619\n2,3\n3,4\n4,5\n"),
               Catch::Contains("edge.csv.gz:2: integer too large"));
  }
  SECTION("bad float") {
    std::string msg =
        LoadError("raw/node-feat.csv.gz", "1,2,3\n1,2,3\n1,2,3\n1,2,3\n1,abc,3\n1,2,3\n");
    CHECK_THAT(msg, Catch::Contains("node-feat.csv.gz:5:"));
    CHECK_THAT(msg, Catch::Contains("abc"));
  }
  SECTION("bad label") {
    // (A fraction is no error: the labels are then regression values.)
    CHECK_THAT(LoadError("raw/node-label.csv.gz", "0\n1\nx\n0\n1\n0\n"),
               Catch::Contains("node-label.csv.gz:3:"));
    CHECK_THAT(LoadError("raw/node-label.csv.gz", "0\n1\n-2\n0\n1\n0\n"),
               Catch::Contains("node-label.csv.gz:3:"));
  }
  SECTION("bad split id") {
    CHECK_THAT(LoadError("split/s1/valid.csv.gz", "2\nthree\n"),
               Catch::Contains("valid.csv.gz:2:"));
  }
  SECTION("bad count") {
    CHECK_THAT(LoadError("raw/num-node-list.csv.gz", "six\n"),
               Catch::Contains("num-node-list.csv.gz:1:"));
    CHECK_THAT(LoadError("raw/num-node-list.csv.gz", "6\n7\n"),
               Catch::Contains("num-node-list.csv.gz:2:"));
    CHECK_THAT(LoadError("raw/num-edge-list.csv.gz", ""),
               Catch::Contains("num-edge-list.csv.gz: empty"));
  }
}

TEST_CASE("ogb reader: node id out of range", "[unit]") {
  SECTION("edge dst") {
    std::string msg = LoadError("raw/edge.csv.gz", "0,1\n1,6\n2,3\n3,4\n4,5\n");
    CHECK_THAT(msg, Catch::Contains("edge.csv.gz:2:"));
    CHECK_THAT(msg, Catch::Contains("node id 6 outside [0, 6)"));
  }
  SECTION("negative edge src") {
    CHECK_THAT(LoadError("raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,4\n-1,5\n"),
               Catch::Contains("edge.csv.gz:5: node id -1"));
  }
  SECTION("split id") {
    CHECK_THAT(LoadError("split/s1/test.csv.gz", "5\n40\n"),
               Catch::Contains("test.csv.gz:2: node id 40"));
  }
  SECTION("duplicate split id") {
    CHECK_THAT(LoadError("split/s1/train.csv.gz", "1\n0\n1\n"),
               Catch::Contains("node id 1 is listed more than once"));
  }
}

TEST_CASE("ogb reader: counts that disagree", "[unit]") {
  SECTION("fewer labels than nodes") {
    CHECK_THAT(LoadError("raw/node-label.csv.gz", "0\n1\n2\n0\n1\n"),
               Catch::Contains("node-label.csv.gz has 5 labels for 6 nodes"));
  }
  SECTION("more labels than nodes") {
    CHECK_THAT(LoadError("raw/node-label.csv.gz", "0\n1\n2\n0\n1\n1\n1\n"),
               Catch::Contains("node-label.csv.gz has 7 labels for 6 nodes"));
  }
  SECTION("edge count") {
    CHECK_THAT(LoadError("raw/num-edge-list.csv.gz", "7\n"),
               Catch::Contains("edge.csv.gz has 5 edges, num-edge-list.csv.gz says 7"));
  }
  SECTION("fewer feature rows") {
    CHECK_THAT(LoadError("raw/node-feat.csv.gz", "1,2,3\n1,2,3\n"),
               Catch::Contains("node-feat.csv.gz has 2 rows for 6 nodes"));
  }
  SECTION("more feature rows") {
    CHECK_THAT(LoadError("raw/node-feat.csv.gz", "1\n1\n1\n1\n1\n1\n1\n"),
               Catch::Contains("node-feat.csv.gz:7:"));
  }
  SECTION("a corrupt node count does not try to allocate it") {
    CHECK_THAT(LoadError("raw/num-node-list.csv.gz", "1000000000000000\n"),
               Catch::Contains("node-feat.csv.gz is too small"));
  }
  SECTION("no nodes") {
    CHECK_THAT(LoadError("raw/num-node-list.csv.gz", "0\n"), Catch::Contains("no nodes"));
  }
}

TEST_CASE("ogb reader: feature row with the wrong field count", "[unit]") {
  SECTION("short row") {
    std::string msg = LoadError("raw/node-feat.csv.gz", "1,2,3\n1,2,3\n1,2,3\n1,2\n1,2,3\n1,2,3\n");
    CHECK_THAT(msg, Catch::Contains("node-feat.csv.gz:4: row has 2 values, expected 3"));
  }
  SECTION("long row") {
    std::string msg =
        LoadError("raw/node-feat.csv.gz", "1,2,3\n1,2,3,4\n1,2,3\n1,2,3\n1,2,3\n1,2,3\n");
    CHECK_THAT(msg, Catch::Contains("node-feat.csv.gz:2: row has 4 values, expected 3"));
  }
  SECTION("trailing comma") {
    std::string msg =
        LoadError("raw/node-feat.csv.gz", "1,2,3\n1,2,3\n1,2,3,\n1,2,3\n1,2,3\n1,2,3\n");
    CHECK_THAT(msg, Catch::Contains("node-feat.csv.gz:3: row has 4 values, expected 3"));
  }
}

TEST_CASE("ogb reader: split folder choice", "[unit]") {
  TempDir tmp;
  std::string folder = tmp / "tiny";
  auto files = TinyFiles();
  files["split/s2/train.csv.gz"] = "3\n";
  files["split/s2/valid.csv.gz"] = "4\n";
  files["split/s2/test.csv.gz"] = "5\n";
  WriteFolder(folder, files);

  SECTION("several splits and no --split") {
    std::string msg = ErrorOf<ConfigError>([&] { LoadDataset(NoCache(folder)); });
    CHECK_THAT(msg, Catch::Contains("s1, s2"));
    CHECK_THAT(msg, Catch::Contains("--split"));
  }
  SECTION("--split picks one") {
    DatasetOptions o = NoCache(folder);
    o.split = "s2";
    CHECK(LoadDataset(o).train_idx == std::vector<int64_t>{3});
  }
  SECTION("--split names a missing folder") {
    DatasetOptions o = NoCache(folder);
    o.split = "nope";
    std::string msg = ErrorOf([&] { LoadDataset(o); });
    CHECK_THAT(msg, Catch::Contains("missing split folder " + folder + "/split/nope"));
    CHECK_THAT(msg, Catch::Contains("s1, s2"));
  }
  SECTION("no split folder at all") {
    fs::remove_all(folder + "/split");
    CHECK_THAT(ErrorOf([&] { LoadDataset(NoCache(folder)); }),
               Catch::Contains("cannot open " + folder + "/split: No such file or directory"));
  }
}

struct PlanetoidCounts {
  const char* name;
  int64_t nodes, edges, dim, classes, train, valid, test, nonzeros;
  std::vector<int64_t> label_counts;
};

void CheckPlanetoid(const PlanetoidCounts& want) {
  std::string folder = test::SharedDataset(want.name);
  if (folder.empty()) GNN_SKIP("../shared/datasets/" << want.name << " not found");
  TempDir tmp;
  // Cache in the temp dir: never write into the shared folder.
  const std::string shared_before = test::TreeState(folder);
  DatasetOptions o = WithCache(folder, tmp / "cache");
  Dataset d = LoadDataset(o);
  CHECK(d.name == want.name);
  CHECK(d.known_undirected());
  CHECK(d.num_nodes == want.nodes);
  CHECK(d.num_edges() == want.edges);
  CHECK(d.feature_dim == want.dim);
  CHECK(d.num_classes == want.classes);
  CHECK(d.train_idx.size() == static_cast<size_t>(want.train));
  CHECK(d.valid_idx.size() == static_cast<size_t>(want.valid));
  CHECK(d.test_idx.size() == static_cast<size_t>(want.test));
  int64_t nonzeros = 0;
  bool binary = true;
  for (float v : d.features) {
    nonzeros += v != 0;
    binary = binary && (v == 0 || v == 1);
  }
  CHECK(nonzeros == want.nonzeros);
  CHECK(binary);
  std::vector<int64_t> counts(static_cast<size_t>(d.num_classes));
  for (int64_t l : d.labels) counts.at(static_cast<size_t>(l))++;
  CHECK(counts == want.label_counts);
  for (size_t i = 0; i < d.src.size(); ++i) REQUIRE(d.src[i] < d.dst[i]);  // listed once
  // Planetoid split: train = 0..T-1, valid = the next V ids.
  CHECK(d.train_idx.front() == 0);
  CHECK(d.train_idx.back() == want.train - 1);
  CHECK(d.valid_idx.front() == want.train);
  CHECK(d.valid_idx.back() == want.train + want.valid - 1);

  RequireSame(d, LoadDataset(o));  // from the cache
  CHECK(test::TreeState(folder) == shared_before);

  // Found by name under --root too.
  DatasetOptions by_name = NoCache(want.name);
  by_name.root = fs::path(folder).parent_path().string();
  CHECK(LoadDataset(by_name).num_edges() == want.edges);
}

TEST_CASE("ogb reader: Cora matches its README", "[unit]") {
  CheckPlanetoid(
      {"cora", 2708, 5278, 1433, 7, 140, 500, 1000, 49216, {351, 217, 418, 818, 426, 298, 180}});
}

TEST_CASE("ogb reader: CiteSeer matches its README", "[unit]") {
  CheckPlanetoid(
      {"citeseer", 3327, 4552, 3703, 6, 120, 500, 1000, 105165, {264, 590, 668, 701, 596, 508}});
}

}  // namespace
}  // namespace gnn
