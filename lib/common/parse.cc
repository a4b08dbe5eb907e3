#include "common/parse.h"

#include <charconv>
#include <cmath>

#include "common/error.h"

namespace gnn {

namespace {

// Class indices beyond this are corrupt input (and would not fit a model).
constexpr float kMaxLabel = 2147483648.0f;  // 2^31

}  // namespace

void CsvCursor::Fail(const std::string& what) const {
  throw DataError(file_ + ":" + std::to_string(line_) + ": " + what);
}

bool CsvCursor::NextLine() {
  if (p_ >= end_) return false;
  ++line_;
  if (*p_ == '\n' || (*p_ == '\r' && p_ + 1 < end_ && p_[1] == '\n')) {
    const char* q = p_ + (*p_ == '\r' ? 2 : 1);
    if (q >= end_) {  // trailing empty line at the very end
      p_ = q;
      return false;
    }
    Fail("empty line");
  }
  return true;
}

void CsvCursor::AfterField() {
  if (p_ < end_ && *p_ == ',') ++p_;
}

int64_t CsvCursor::Int64() {
  const char* q = p_;
  bool neg = false;
  if (q < end_ && (*q == '-' || *q == '+')) {
    neg = *q == '-';
    ++q;
  }
  const char* digits = q;
  uint64_t v = 0;
  while (q < end_ && static_cast<unsigned>(*q - '0') < 10) {
    // v <= INT64_MAX / 10 keeps v * 10 + 9 below UINT64_MAX (no wrap-around);
    // the INT64_MAX check below catches the rest.
    if (v > static_cast<uint64_t>(INT64_MAX) / 10) Fail("integer too large");
    v = v * 10 + static_cast<unsigned>(*q - '0');
    ++q;
  }
  if (q == digits || (q < end_ && *q != ',' && *q != '\n' && *q != '\r')) {
    const char* e = q;
    while (e < end_ && *e != ',' && *e != '\n') ++e;
    Fail("expected an integer, got '" + std::string(p_, e) + "'");
  }
  if (v > static_cast<uint64_t>(INT64_MAX)) Fail("integer too large");
  p_ = q;
  AfterField();
  return neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
}

float CsvCursor::Float() {
  float v = 0;
  const char* q = p_;
  if (q < end_ && *q == '+') ++q;
  // libstdc++ 12's from_chars for float is correctly rounded and fast
  // (an Eisel-Lemire implementation), which a hand-rolled loop is not.
  auto r = std::from_chars(q, end_, v);
  if (r.ec == std::errc::result_out_of_range) {
    Fail("number out of float range");
  }
  if (r.ec != std::errc() || (r.ptr < end_ && *r.ptr != ',' && *r.ptr != '\n' && *r.ptr != '\r')) {
    const char* e = p_;
    while (e < end_ && *e != ',' && *e != '\n') ++e;
    Fail("expected a number, got '" + std::string(p_, e) + "'");
  }
  p_ = r.ptr;
  AfterField();
  return v;
}

int64_t CsvCursor::Label() {
  const char* q = p_;
  while (q < end_ && *q != ',' && *q != '\n' && *q != '\r') ++q;
  std::string_view field(p_, q - p_);
  if (field.empty() || field == "nan" || field == "NaN") {
    p_ = q;
    AfterField();
    return -1;
  }
  if (field.find('.') == std::string_view::npos && field.find('e') == std::string_view::npos) {
    return Int64();
  }
  float f = Float();
  // The bound also keeps the cast below defined (inf, 1e30).
  if (!(f >= 0 && f < kMaxLabel) || f != std::floor(f)) {
    Fail("label " + std::string(field) + " is not a class index");
  }
  return static_cast<int64_t>(f);
}

void CsvCursor::EndLine() {
  // AfterField() consumed a ',' that no field followed: "1,2,\n".
  if (p_ > begin_ && p_[-1] == ',' && (p_ == end_ || *p_ == '\n' || *p_ == '\r')) {
    Fail("empty last field (line ends with ',')");
  }
  if (p_ < end_ && *p_ == '\r') ++p_;
  if (p_ < end_ && *p_ != '\n') {
    const char* e = p_;
    while (e < end_ && *e != '\n') ++e;
    Fail("unexpected extra field(s) '" + std::string(p_, e) + "'");
  }
  if (p_ < end_) ++p_;
}

int64_t CsvCursor::CountFields() const {
  int64_t n = 1;
  for (const char* q = p_; q < end_ && *q != '\n'; ++q) n += (*q == ',');
  return n;
}

}  // namespace gnn
