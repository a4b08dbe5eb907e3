#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include "common/bfloat16.h"
#include "common/cli.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/gzip.h"
#include "common/log.h"
#include "common/memory.h"
#include "common/npy.h"
#include "common/parse.h"
#include "common/progress.h"
#include "common/sha256.h"
#include "process_util.h"
#include "test_util.h"

using namespace gnn;

TEST_CASE("KeepFreedMemoryForReuse keeps even 64 MB buffers on the heap", "[unit]") {
#if defined(__GLIBC__)
  gnn::KeepFreedMemoryForReuse();
  const size_t mapped_before = mallinfo2().hblkhd;
  for (int i = 0; i < 3; ++i) {  // a step's buffer, freed and made again
    std::vector<char> buffer(size_t{64} << 20, 1);
    CHECK(mallinfo2().hblkhd == mapped_before);  // not an mmap of its own
  }
#else
  GNN_SKIP("not glibc: KeepFreedMemoryForReuse is a no-op");
#endif
}

// The AnonHugePages of /proc/self/smaps's mapping that holds address p, in kB.
long AnonHugeKbAt(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::strtol(line.c_str() + 14, nullptr, 10);
    }
  }
  return -1;
}

TEST_CASE("CollapseToHugePages puts a buffer on 2 MiB pages and keeps its contents", "[unit]") {
  constexpr size_t kHuge = size_t{2} << 20;
  std::vector<int64_t> v(5 * kHuge / sizeof(int64_t));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i * 7919);
  CHECK_FALSE(CollapseToHugePages(v.data(), kHuge / 2));  // no whole 2 MiB page inside
  if (!CollapseToHugePages(v.data(), v.size() * sizeof(int64_t))) {
    GNN_SKIP("this kernel does not collapse memory into huge pages (MADV_COLLAPSE: Linux 6.1)");
  }
  // At least the 4 whole 2 MiB pages inside the 10 MiB.
  CHECK(AnonHugeKbAt(v.data() + v.size() / 2) >= 4 * 2048);
  bool same = true;
  for (size_t i = 0; i < v.size(); ++i) same = same && v[i] == static_cast<int64_t>(i * 7919);
  CHECK(same);
}

TEST_CASE("sha256 matches FIPS 180-4 test vectors", "[unit]") {
  auto hex = [](const std::string& s) {
    Sha256 h;
    h.Update(s.data(), s.size());
    return h.HexDigest();
  };
  CHECK(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Incremental updates in odd pieces give the same digest as one update.
  std::string million(1000000, 'a');
  Sha256 h;
  for (size_t i = 0; i < million.size(); i += 997)
    h.Update(million.data() + i, std::min<size_t>(997, million.size() - i));
  CHECK(h.HexDigest() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("npy round trip and header validation", "[unit]") {
  test::TempDir dir;
  std::vector<float> f = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, 7.0f};
  WrittenFile w = WriteNpy(dir / "f.npy", f.data(), {2, 3});
  CHECK(w.sha256 == Sha256File(dir / "f.npy"));
  std::vector<int64_t> shape;
  CHECK(ReadNpy<float>(dir / "f.npy", {2, -1}, &shape) == f);
  CHECK(shape == std::vector<int64_t>{2, 3});
  NpyHeader h = ReadNpyHeader(dir / "f.npy");
  CHECK(h.data_offset % 64 == 0);

  std::vector<int64_t> empty;
  WriteNpy(dir / "e.npy", empty);
  CHECK(ReadNpy<int64_t>(dir / "e.npy").empty());

  SECTION("wrong dtype names the file") {
    CHECK_THROWS_WITH(ReadNpy<int64_t>(dir / "f.npy"),
                      Catch::Contains("f.npy") && Catch::Contains("dtype <f4"));
  }
  SECTION("wrong shape") { CHECK_THROWS_AS(ReadNpy<float>(dir / "f.npy", {3, 2}), DataError); }
  SECTION("truncated file") {
    std::string bytes = ReadFile(dir / "f.npy");
    std::ofstream(dir / "t.npy", std::ios::binary) << bytes.substr(0, bytes.size() - 4);
    CHECK_THROWS_WITH(ReadNpy<float>(dir / "t.npy"), Catch::Contains("truncated"));
  }
  SECTION("not npy") {
    std::ofstream(dir / "x.npy") << "hello world, not numpy";
    CHECK_THROWS_WITH(ReadNpyHeader(dir / "x.npy"), Catch::Contains("bad magic"));
  }
  SECTION("missing: the path and errno's words") {
    CHECK_THROWS_WITH(
        ReadNpyHeader(dir / "nope.npy"),
        Catch::Contains("cannot open " + (dir / "nope.npy") + ": No such file or directory"));
  }
  SECTION("a folder: Is a directory") {
    MakeDirs(dir / "d.npy");
    CHECK_THROWS_WITH(ReadNpy<float>(dir / "d.npy"),
                      Catch::Contains("cannot open " + (dir / "d.npy") + ": Is a directory"));
  }
}

TEST_CASE("a file that cannot be opened or written is named with errno's words", "[unit]") {
  test::TempDir dir;
  CHECK(CannotMessage("open", "/x/y", ENOENT) == "cannot open /x/y: No such file or directory");
  CHECK(CannotMessage("write", "/x", std::make_error_code(std::errc::read_only_file_system)) ==
        "cannot write /x: Read-only file system");
  WriteFileAtomic(dir / "f", "text");
  CHECK(ReadFile(dir / "f") == "text");
  CHECK(DirectoryErrno(dir.path()) == 0);
  CHECK(DirectoryErrno(dir / "f") == ENOTDIR);
  CHECK(DirectoryErrno(dir / "none") == ENOENT);
  CHECK_THROWS_AS(ReadFile(dir / "none"), DataError);
  CHECK_THROWS_WITH(ReadFile(dir / "none"),
                    "cannot open " + (dir / "none") + ": No such file or directory");
  CHECK_THROWS_WITH(ReadFile(dir.path()), "cannot open " + dir.path() + ": Is a directory");
  CHECK_THROWS_WITH(ReadFile(dir / "f/sub"),
                    "cannot open " + (dir / "f/sub") + ": Not a directory");
  CHECK_THROWS_WITH(Sha256File(dir.path()), "cannot open " + dir.path() + ": Is a directory");
  CHECK_THROWS_WITH(WriteFileAtomic(dir / "none/out.json", "x"),
                    "cannot write " + (dir / "none/out.json") + ": No such file or directory");
  CHECK_THROWS_WITH(MakeDirs(dir / "f/sub"),
                    "cannot create directory " + (dir / "f/sub") + ": Not a directory");
  CHECK_THROWS_WITH(FileSignature(dir / "none"),
                    "cannot open " + (dir / "none") + ": No such file or directory");
}

TEST_CASE("AtomicFile leaves nothing behind when not committed", "[unit]") {
  test::TempDir dir;
  {
    AtomicFile f(dir / "a.bin");
    f.Write("xyz", 3);
  }
  CHECK_FALSE(PathExists(dir / "a.bin"));
  CHECK_FALSE(PathExists(dir / "a.bin.tmp"));
  WriteFileAtomic(dir / "b.txt", "hello");
  CHECK(ReadFile(dir / "b.txt") == "hello");
  CHECK_THROWS_AS(AtomicFile(dir / "no/such/dir/c"), DataError);
}

namespace {
std::string ReadAllGz(const std::string& path, std::vector<int64_t>* first_lines = nullptr) {
  std::string all;
  ForEachGzipChunk(path, [&](const char* b, const char* e, int64_t line) {
    all.append(b, e);
    if (first_lines) first_lines->push_back(line);
  });
  return all;
}
}  // namespace

TEST_CASE("gzip chunks are line-aligned and numbered", "[unit]") {
  test::TempDir dir;
  std::string text;
  for (int i = 0; i < 2000000; ++i) text += std::to_string(i) + "," + std::to_string(i * 7) + "\n";
  test::WriteGz(dir / "big.csv.gz", text);
  std::vector<int64_t> firsts;
  int64_t lines_seen = 0;
  bool aligned = true;
  ForEachGzipChunk(dir / "big.csv.gz", [&](const char* b, const char* e, int64_t line) {
    aligned = aligned && (line == lines_seen + 1) && e[-1] == '\n';
    lines_seen += std::count(b, e, '\n');
    firsts.push_back(line);
  });
  CHECK(aligned);
  CHECK(lines_seen == 2000000);
  CHECK(firsts.size() > 1);  // more than one chunk, so boundaries were exercised
  CHECK(ReadAllGz(dir / "big.csv.gz") == text);
}

TEST_CASE("gzip errors name the file", "[unit]") {
  test::TempDir dir;
  std::string text;
  for (int i = 0; i < 100000; ++i) text += std::to_string(i) + "\n";
  test::WriteGz(dir / "ok.gz", text);
  std::string gz = ReadFile(dir / "ok.gz");

  SECTION("missing") {
    CHECK_THROWS_WITH(
        ReadAllGz(dir / "none.gz"),
        Catch::Contains("cannot open " + (dir / "none.gz") + ": No such file or directory"));
  }
  SECTION("truncated") {
    std::ofstream(dir / "cut.gz", std::ios::binary) << gz.substr(0, gz.size() / 2);
    CHECK_THROWS_WITH(ReadAllGz(dir / "cut.gz"),
                      Catch::Contains("cut.gz") && Catch::Contains("truncated"));
  }
  SECTION("corrupt") {
    std::string bad = gz;
    for (size_t i = 20; i < 60; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    std::ofstream(dir / "bad.gz", std::ios::binary) << bad;
    CHECK_THROWS_WITH(ReadAllGz(dir / "bad.gz"), Catch::Contains("bad.gz"));
  }
  SECTION("not gzip") {
    std::ofstream(dir / "plain.gz") << "1,2\n3,4\n";
    CHECK_THROWS_WITH(ReadAllGz(dir / "plain.gz"),
                      Catch::Contains("plain.gz") && Catch::Contains("corrupt"));
  }
  SECTION("empty") {
    std::ofstream(dir / "empty.gz").close();
    CHECK_THROWS_WITH(ReadAllGz(dir / "empty.gz"), Catch::Contains("empty"));
  }
}

TEST_CASE("CsvCursor parses fields and names file:line on errors", "[unit]") {
  std::string file = "edge.csv.gz";
  std::string text = "1,2\n-3,40\n5,6";
  CsvCursor c(text.data(), text.data() + text.size(), file, 10);
  std::vector<int64_t> got;
  while (c.NextLine()) {
    got.push_back(c.Int64());
    got.push_back(c.Int64());
    c.EndLine();
  }
  CHECK(got == std::vector<int64_t>{1, 2, -3, 40, 5, 6});

  auto parse_ints = [&](const std::string& t) {
    CsvCursor k(t.data(), t.data() + t.size(), file, 1);
    while (k.NextLine()) {
      k.Int64();
      k.Int64();
      k.EndLine();
    }
  };
  CHECK_THROWS_WITH(parse_ints("1,2\n3,x\n"),
                    Catch::Contains("edge.csv.gz:2:") && Catch::Contains("'x'"));
  CHECK_THROWS_WITH(parse_ints("1,2\n3\n"), Catch::Contains("edge.csv.gz:2:"));
  CHECK_THROWS_WITH(parse_ints("1,2,3\n"),
                    Catch::Contains("edge.csv.gz:1:") && Catch::Contains("extra"));
  CHECK_THROWS_WITH(parse_ints("1,2\n\n3,4\n"), Catch::Contains("empty line"));
  CHECK_THROWS_WITH(parse_ints("99999999999999999999,1\n"), Catch::Contains("too large"));

  std::string floats = "0.5,-1e-3,3.4028235e38,1\r\n";
  CsvCursor f(floats.data(), floats.data() + floats.size(), file, 1);
  REQUIRE(f.NextLine());
  CHECK(f.CountFields() == 4);
  CHECK(f.Float() == 0.5f);
  CHECK(f.Float() == -1e-3f);
  CHECK(f.Float() == 3.4028235e38f);
  CHECK(f.Float() == 1.0f);
  f.EndLine();

  std::string labels = "3\n4.0\nnan\n";
  CsvCursor l(labels.data(), labels.data() + labels.size(), file, 1);
  std::vector<int64_t> ls;
  while (l.NextLine()) {
    ls.push_back(l.Label());
    l.EndLine();
  }
  CHECK(ls == std::vector<int64_t>{3, 4, -1});
}

namespace {

// Runs `body` with this process's stderr sent to a file; returns what it wrote.
std::string CaptureStderr(const std::function<void()>& body) {
  test::TempDir dir;
  const std::string path = dir / "stderr";
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(fd, 2);
  ::close(fd);
  body();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  return test::ReadFileOrEmpty(path);
}

}  // namespace

TEST_CASE("Progress describes done/total, rate and ETA, or elapsed time without a total",
          "[unit]") {
  CHECK(Progress::Describe("epoch 3", 25, 100, "batches", 5.0) ==
        "epoch 3: 25/100 batches (25%), 5.00/s, ETA 15 s");
  CHECK(Progress::Describe("epoch 3", 100, 100, "batches", 4.0) ==
        "epoch 3: 100/100 batches (100%), 25.0/s");
  CHECK(Progress::Describe("metis", 0, 0, "", 125.0) == "metis: 2.1 min");
  CHECK(Progress::Describe("write", 0, 10, "files", 1.0) == "write: 0/10 files (0%)");
}

TEST_CASE(
    "Progress stays silent for short stages, writes periodic lines to a log, one live line to a "
    "terminal",
    "[unit]") {
  ProgressOptions quick;
  quick.quiet_for = std::chrono::milliseconds(200);
  quick.log_every = std::chrono::milliseconds(100);
  quick.redraw_every = std::chrono::milliseconds(20);
  auto run = [&](int terminal, int ms) {
    return CaptureStderr([&] {
      ProgressOptions o = quick;
      o.terminal = terminal;
      Progress p("work", 10, "items", o);
      p.Add(4);
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    });
  };
  CHECK(run(0, 10).empty());  // ended before quiet_for
  const std::string log = run(0, 700);
  INFO(log);
  CHECK(log.find("work: 4/10 items (40%)") != std::string::npos);
  CHECK(log.find("\r") == std::string::npos);  // plain lines in a log
  const std::string tty = run(1, 500);
  INFO(tty);
  CHECK(tty.find("\rwork: 4/10 items") == std::string::npos);  // drawn, then erased
  CHECK(tty.find("work: 4/10 items (40%)") != std::string::npos);
  CHECK(tty.find("\r\x1b[K") != std::string::npos);
  CHECK(tty.find('\n') == std::string::npos);  // one line, redrawn in place
  // --quiet: nothing at all.
  const LogLevel before = GetLogLevel();
  SetLogLevel(LogLevel::kWarn);
  CHECK(run(0, 500).empty());
  SetLogLevel(before);
}

TEST_CASE("ClosestName suggests a slip of a few letters and nothing far", "[unit]") {
  const std::vector<std::string> flags = {"--num_epochs", "--fan_out", "--batch_size", "--lr"};
  CHECK(ClosestName("--num_epoch", flags) == "--num_epochs");
  CHECK(ClosestName("--fanout", flags) == "--fan_out");
  CHECK(ClosestName("--batchsize", flags) == "--batch_size");
  CHECK(ClosestName("--epochs", flags) == "--num_epochs");
  CHECK(ClosestName("--graph_format", flags).empty());
  CHECK(ClosestName("--x", {}).empty());
}

TEST_CASE("bfloat16 rounds to nearest even, keeps float32's range and NaN", "[unit]") {
  CHECK(Bfloat16ToFloat(FloatToBfloat16(1.0f)) == 1.0f);
  CHECK(Bfloat16ToFloat(FloatToBfloat16(-2.5f)) == -2.5f);
  CHECK(Bfloat16ToFloat(FloatToBfloat16(0.0f)) == 0.0f);
  CHECK(Bfloat16ToFloat(FloatToBfloat16(3.0e38f)) > 2.9e38f);  // float32's range
  CHECK(std::isinf(Bfloat16ToFloat(FloatToBfloat16(std::numeric_limits<float>::infinity()))));
  CHECK(std::isnan(Bfloat16ToFloat(FloatToBfloat16(std::nanf("")))));
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even one (1).
  CHECK(Bfloat16ToFloat(FloatToBfloat16(1.0f + 1.0f / 256)) == 1.0f);
  CHECK(Bfloat16ToFloat(FloatToBfloat16(1.0f + 3.0f / 256)) == 1.0f + 4.0f / 256);
  // Relative error at most 2^-8 (half a unit in the 8th bit) over many magnitudes.
  uint64_t state = 1;
  for (int i = 0; i < 100000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float x = std::ldexp(static_cast<float>(state >> 40) / (1 << 24) - 0.5f,
                               static_cast<int>(state % 60) - 30);
    const float y = Bfloat16ToFloat(FloatToBfloat16(x));
    CHECK(std::abs(y - x) <= std::abs(x) / 256);
  }
  std::vector<float> rows = {0.25f, -0.125f, 7.0f};
  std::vector<uint16_t> wire(3);
  std::vector<float> back(3);
  ToBfloat16(rows.data(), 3, wire.data());
  FromBfloat16(wire.data(), 3, back.data());
  CHECK(back == rows);  // exactly representable
}
