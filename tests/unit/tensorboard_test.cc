// TensorBoard event files: CRC-32C, the TFRecord framing and Event messages
// read back by a small decoder here, and the file as the `tensorboard`
// Python package reads it.
#include "common/tensorboard.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

#include "common/crc32c.h"
#include "common/error.h"
#include "common/fs.h"
#include "tensorboard_util.h"
#include "test_util.h"

using namespace gnn;
namespace fs = std::filesystem;

namespace {

uint64_t LittleEndian(const std::string& s, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(s[pos + i])} << (8 * i);
  return v;
}

// The records of a TFRecord file, each length and CRC checked.
std::vector<std::string> ReadRecords(const std::string& path) {
  const std::string file = ReadFile(path);
  std::vector<std::string> records;
  size_t pos = 0;
  while (pos < file.size()) {
    REQUIRE(pos + 12 <= file.size());
    const uint64_t len = LittleEndian(file, pos, 8);
    REQUIRE(UnmaskCrc32c(LittleEndian(file, pos + 8, 4)) == Crc32c(file.data() + pos, 8));
    REQUIRE(pos + 12 + len + 4 <= file.size());
    std::string data = file.substr(pos + 12, len);
    REQUIRE(UnmaskCrc32c(LittleEndian(file, pos + 12 + len, 4)) ==
            Crc32c(data.data(), data.size()));
    records.push_back(std::move(data));
    pos += 12 + len + 4;
  }
  return records;
}

// One protobuf field: its number and either an integer (varint, fixed32,
// fixed64 bits) or bytes.
struct Field {
  uint32_t number = 0;
  uint32_t wire_type = 0;
  uint64_t bits = 0;
  std::string bytes;
};

uint64_t ReadVarint(const std::string& s, size_t* pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    REQUIRE(*pos < s.size());
    const auto b = static_cast<unsigned char>(s[(*pos)++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return v;
  }
  FAIL("varint longer than 10 bytes");
  return 0;
}

std::vector<Field> ParseMessage(const std::string& s) {
  std::vector<Field> fields;
  size_t pos = 0;
  while (pos < s.size()) {
    Field f;
    const uint64_t key = ReadVarint(s, &pos);
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire_type = key & 7;
    if (f.wire_type == 0) {
      f.bits = ReadVarint(s, &pos);
    } else if (f.wire_type == 1 || f.wire_type == 5) {
      const int n = f.wire_type == 1 ? 8 : 4;
      REQUIRE(pos + n <= s.size());
      f.bits = LittleEndian(s, pos, n);
      pos += n;
    } else {
      REQUIRE(f.wire_type == 2);
      const uint64_t len = ReadVarint(s, &pos);
      REQUIRE(pos + len <= s.size());
      f.bytes = s.substr(pos, len);
      pos += len;
    }
    fields.push_back(f);
  }
  return fields;
}

struct Scalar {
  std::string tag;
  float value = 0;
};

struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<Scalar> scalars;
};

Scalar DecodeValue(const std::string& s) {
  Scalar v;
  for (const Field& f : ParseMessage(s)) {
    if (f.number == 1 && f.wire_type == 2) v.tag = f.bytes;
    if (f.number == 2 && f.wire_type == 5) {
      const auto bits = static_cast<uint32_t>(f.bits);
      std::memcpy(&v.value, &bits, 4);
    }
  }
  return v;
}

Event DecodeEvent(const std::string& s) {
  Event e;
  for (const Field& f : ParseMessage(s)) {
    if (f.number == 1 && f.wire_type == 1) std::memcpy(&e.wall_time, &f.bits, 8);
    if (f.number == 2 && f.wire_type == 0) e.step = static_cast<int64_t>(f.bits);
    if (f.number == 3 && f.wire_type == 2) e.file_version = f.bytes;
    if (f.number == 5 && f.wire_type == 2) {
      for (const Field& v : ParseMessage(f.bytes)) {
        if (v.number == 1 && v.wire_type == 2) e.scalars.push_back(DecodeValue(v.bytes));
      }
    }
  }
  return e;
}

std::vector<std::string> EventFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path().string());
  return files;
}

}  // namespace

TEST_CASE("crc32c matches the Castagnoli test vectors", "[unit]") {
  CHECK(Crc32c("", 0) == 0u);
  CHECK(Crc32c("123456789", 9) == 0xE3069283u);
  const std::string zeros(32, '\0'), ones(32, '\xff');
  CHECK(Crc32c(zeros.data(), zeros.size()) == 0x8A9136AAu);  // RFC 3720 B.4
  CHECK(Crc32c(ones.data(), ones.size()) == 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  CHECK(Crc32c(ascending.data(), ascending.size()) == 0x46DD794Eu);
  CHECK(Crc32cExtend(Crc32c("1234", 4), "56789", 5) == 0xE3069283u);
  for (uint32_t c : {0u, 1u, 0xE3069283u, 0xffffffffu}) CHECK(UnmaskCrc32c(MaskCrc32c(c)) == c);
  CHECK(MaskCrc32c(0) == 0xa282ead8u);
}

TEST_CASE("TensorBoardWriter writes TFRecord events that decode back", "[unit]") {
  test::TempDir tmp;
  const std::string dir = tmp / "runs/a";  // parents are created
  const double before = std::time(nullptr);
  std::string path;
  {
    TensorBoardWriter w(dir);
    path = w.path();
    w.AddScalar("train/loss", 2.5, 0);
    w.AddScalar("train/loss", 1.25, 10);
    w.AddScalar("val/acc", 0.8125, 1);
    w.AddScalar("val/acc", 0.1, -3);  // negative steps are 10-byte varints
    w.Flush();
    CHECK(ReadRecords(path).size() == 5);
    w.AddScalar("after/flush", 7, 1LL << 40);
  }  // the destructor flushes the last record
  REQUIRE(EventFiles(dir) == std::vector<std::string>{path});
  CHECK(fs::path(path).filename().string().rfind("events.out.tfevents.", 0) == 0);

  const std::vector<std::string> records = ReadRecords(path);
  REQUIRE(records.size() == 6);
  const Event first = DecodeEvent(records[0]);
  CHECK(first.file_version == "brain.Event:2");
  CHECK(first.wall_time >= before - 1);
  CHECK(first.wall_time <= std::time(nullptr) + 1);
  const std::vector<std::tuple<std::string, float, int64_t>> want = {
      {"train/loss", 2.5f, 0},
      {"train/loss", 1.25f, 10},
      {"val/acc", 0.8125f, 1},
      {"val/acc", 0.1f, -3},
      {"after/flush", 7.0f, 1LL << 40}};
  for (size_t i = 0; i < want.size(); ++i) {
    const Event e = DecodeEvent(records[i + 1]);
    INFO("record " << i + 1);
    REQUIRE(e.scalars.size() == 1);
    CHECK(e.scalars[0].tag == std::get<0>(want[i]));
    CHECK(e.scalars[0].value == std::get<1>(want[i]));
    CHECK(e.step == std::get<2>(want[i]));
    CHECK(e.wall_time >= first.wall_time);
  }
}

TEST_CASE("TensorBoardWriter: distinct files per writer, DataError naming the path", "[unit]") {
  test::TempDir tmp;
  {
    TensorBoardWriter a(tmp.path());
    TensorBoardWriter b(tmp.path());
    CHECK(a.path() != b.path());
  }
  CHECK(EventFiles(tmp.path()).size() == 2);
  WriteFileAtomic(tmp / "plain", "not a folder");
  CHECK_THROWS_AS(TensorBoardWriter(tmp / "plain/runs"), DataError);
  CHECK_THROWS_WITH(TensorBoardWriter(tmp / "plain/runs"), Catch::Contains(tmp / "plain/runs"));
}

TEST_CASE("TensorBoard's own reader loads the scalars", "[unit][python]") {
  std::string why;
  const std::string python = test::TensorBoardPython(&why);
  if (python.empty()) GNN_SKIP("no Python tensorboard package: " << why);
  test::TempDir tmp;
  const std::vector<std::tuple<std::string, int64_t, double>> points = {
      {"train/loss", 1, 2.302585}, {"train/acc", 1, 0.1},     {"train/loss", 5, 1.5},
      {"train/acc", 5, 0.5},       {"eval/val_acc", 5, 0.75}, {"train/loss", 9, 0.25},
      {"train/acc", 9, 0.9375},    {"eval/val_acc", 9, 0.8}};
  {
    TensorBoardWriter w(tmp / "logs");
    for (const auto& [tag, step, value] : points) w.AddScalar(tag, value, step);
  }
  const char* script = R"(import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1])
acc.Reload()
for tag in acc.Tags()["scalars"]:
    for e in acc.Scalars(tag):
        print(tag, e.step, repr(e.value))
)";
  auto r = test::RunProcess({python, "-c", script, tmp / "logs"}, 120);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::map<std::pair<std::string, int64_t>, double> seen;
  std::istringstream lines(r.out);
  std::string tag;
  int64_t step;
  double value;
  while (lines >> tag >> step >> value) seen[{tag, step}] = value;
  INFO("EventAccumulator read:\n" << r.out);
  REQUIRE(seen.size() == points.size());
  for (const auto& [tag, step, value] : points) {
    INFO(tag << " @ " << step);
    REQUIRE(seen.count({tag, step}) == 1);
    CHECK(seen[{tag, step}] == Approx(value).epsilon(1e-6));
  }
}
