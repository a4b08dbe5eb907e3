#include "common/tensorboard.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/crc32c.h"
#include "common/error.h"
#include "common/fs.h"

namespace gnn {
namespace {

// Protobuf wire types and the field numbers we write (event.proto,
// summary.proto).
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };
constexpr uint32_t kEventWallTime = 1;     // double
constexpr uint32_t kEventStep = 2;         // int64
constexpr uint32_t kEventFileVersion = 3;  // string
constexpr uint32_t kEventSummary = 5;      // Summary
constexpr uint32_t kEventSessionLog = 7;   // SessionLog (6 is the deprecated LogMessage)
constexpr uint32_t kSessionLogStatus = 1;  // enum SessionStatus
constexpr uint64_t kSessionStart = 1;      // SessionLog.START
constexpr uint32_t kSummaryValue = 1;      // repeated Summary.Value
constexpr uint32_t kValueTag = 1;          // string
constexpr uint32_t kValueSimpleValue = 2;  // float

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutLittleEndian(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutKey(std::string* out, uint32_t field, WireType type) { PutVarint(out, field << 3 | type); }

void PutBytes(std::string* out, uint32_t field, const std::string& bytes) {
  PutKey(out, field, kBytes);
  PutVarint(out, bytes.size());
  *out += bytes;
}

void PutDouble(std::string* out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  PutKey(out, field, kFixed64);
  PutLittleEndian(out, bits, 8);
}

void PutFloat(std::string* out, uint32_t field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  PutKey(out, field, kFixed32);
  PutLittleEndian(out, bits, 4);
}

double WallTime() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string FileVersionEvent() {
  std::string event;
  PutDouble(&event, kEventWallTime, WallTime());
  PutBytes(&event, kEventFileVersion, "brain.Event:2");
  return event;
}

std::string ScalarEvent(const std::string& tag, float value, int64_t step) {
  std::string value_msg;
  PutBytes(&value_msg, kValueTag, tag);
  PutFloat(&value_msg, kValueSimpleValue, value);
  std::string summary;
  PutBytes(&summary, kSummaryValue, value_msg);
  std::string event;
  PutDouble(&event, kEventWallTime, WallTime());
  PutKey(&event, kEventStep, kVarint);
  PutVarint(&event, static_cast<uint64_t>(step));  // int64: negatives take 10 bytes
  PutBytes(&event, kEventSummary, summary);
  return event;
}

std::string SessionStartEvent(int64_t step) {
  std::string log;
  PutKey(&log, kSessionLogStatus, kVarint);
  PutVarint(&log, kSessionStart);
  std::string event;
  PutDouble(&event, kEventWallTime, WallTime());
  PutKey(&event, kEventStep, kVarint);
  PutVarint(&event, static_cast<uint64_t>(step));
  PutBytes(&event, kEventSessionLog, log);
  return event;
}

// TensorFlow's name plus pid and a per-process count, so writers started in
// the same second (other processes, or this one) never share a file. The
// second is later than any event file already in `dir`: TensorBoard reads
// a folder's files in name order, and a resumed run's session start must
// come after what the interrupted run wrote.
std::string EventFileName(const std::string& dir) {
  static std::atomic<int> count{0};
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "localhost");
  int64_t secs = static_cast<int64_t>(WallTime());
  const std::string prefix = "events.out.tfevents.";
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const int64_t other = std::atoll(name.c_str() + prefix.size());
    if (other >= secs) secs = other + 1;
  }
  return prefix + std::to_string(secs) + "." + host + "." + std::to_string(getpid()) + "." +
         std::to_string(count++);
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  MakeDirs(dir);
  path_ = dir + "/" + EventFileName(dir);
  file_ = std::fopen(path_.c_str(), "wbx");  // x: never append to another writer's file
  if (!file_) {
    throw DataError("cannot create TensorBoard event file " + path_ + ": " + std::strerror(errno));
  }
  try {
    WriteRecord(FileVersionEvent());
  } catch (...) {
    std::fclose(file_);
    throw;
  }
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::AddScalar(const std::string& tag, double value, int64_t step) {
  WriteRecord(ScalarEvent(tag, static_cast<float>(value), step));
}

void TensorBoardWriter::AddSessionStart(int64_t step) { WriteRecord(SessionStartEvent(step)); }

void TensorBoardWriter::Flush() {
  if (std::fflush(file_) != 0) {
    throw DataError("cannot write TensorBoard event file " + path_ + ": " + std::strerror(errno));
  }
}

// TFRecord framing: length, masked CRC of the length's 8 bytes, data,
// masked CRC of the data (all little-endian).
void TensorBoardWriter::WriteRecord(const std::string& data) {
  std::string record;
  PutLittleEndian(&record, data.size(), 8);
  PutLittleEndian(&record, MaskCrc32c(Crc32c(record.data(), 8)), 4);
  record += data;
  PutLittleEndian(&record, MaskCrc32c(Crc32c(data.data(), data.size())), 4);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size()) {
    throw DataError("cannot write TensorBoard event file " + path_ + ": " + std::strerror(errno));
  }
}

}  // namespace gnn
