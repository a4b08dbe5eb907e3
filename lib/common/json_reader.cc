#include "common/json_reader.h"

#include <limits>
#include <utility>

#include "common/error.h"

namespace gnn {

namespace {

// A short rendering of a bad value for the error line.
std::string Brief(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

}  // namespace

JsonReader::JsonReader(const nlohmann::json& value, std::string source, std::string key_path)
    : value_(value), source_(std::move(source)), key_path_(std::move(key_path)) {}

void JsonReader::Fail(const std::string& what) const {
  throw DataError(source_ + ": " + (key_path_.empty() ? "top level" : "key '" + key_path_ + "'") +
                  ": " + what);
}

std::string JsonReader::Child(const std::string& key) const {
  return key_path_.empty() ? key : key_path_ + "." + key;
}

bool JsonReader::Has(const std::string& key) const {
  return value_.is_object() && value_.contains(key);
}

JsonReader JsonReader::At(const std::string& key) const {
  if (!value_.is_object()) Fail("expected an object, got " + Brief(value_));
  auto it = value_.find(key);
  if (it == value_.end()) JsonReader(value_, source_, Child(key)).Fail("missing");
  return JsonReader(*it, source_, Child(key));
}

size_t JsonReader::ArraySize() const {
  if (!value_.is_array()) Fail("expected an array, got " + Brief(value_));
  return value_.size();
}

std::vector<std::string> JsonReader::Keys() const {
  if (!value_.is_object()) Fail("expected an object, got " + Brief(value_));
  std::vector<std::string> keys;
  for (auto it = value_.begin(); it != value_.end(); ++it) keys.push_back(it.key());
  return keys;
}

JsonReader JsonReader::Item(size_t i) const {
  if (i >= ArraySize()) Fail("has no element " + std::to_string(i));
  return JsonReader(value_[i], source_, key_path_ + "[" + std::to_string(i) + "]");
}

int64_t JsonReader::Int(int64_t lo, int64_t hi) const {
  const std::string want =
      "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got ";
  if (value_.is_number_unsigned()) {
    const uint64_t v = value_.get<uint64_t>();
    if (hi < 0 || v > static_cast<uint64_t>(hi) || (lo > 0 && v < static_cast<uint64_t>(lo))) {
      Fail(want + Brief(value_));
    }
    return static_cast<int64_t>(v);
  }
  if (!value_.is_number_integer()) Fail(want + Brief(value_));
  const int64_t v = value_.get<int64_t>();
  if (v < lo || v > hi) Fail(want + Brief(value_));
  return v;
}

uint64_t JsonReader::Uint64() const {
  if (value_.is_number_unsigned()) return value_.get<uint64_t>();
  if (value_.is_number_integer() && value_.get<int64_t>() >= 0) {
    return static_cast<uint64_t>(value_.get<int64_t>());
  }
  Fail("expected a non-negative 64-bit integer, got " + Brief(value_));
}

double JsonReader::Number(double lo, double hi) const {
  if (!value_.is_number()) Fail("expected a number, got " + Brief(value_));
  const double v = value_.get<double>();
  if (!(v >= lo && v <= hi)) {
    Fail("expected a number in [" + Brief(lo) + ", " + Brief(hi) + "], got " + Brief(value_));
  }
  return v;
}

bool JsonReader::Bool() const {
  if (!value_.is_boolean()) Fail("expected true or false, got " + Brief(value_));
  return value_.get<bool>();
}

std::string JsonReader::String() const {
  if (!value_.is_string()) Fail("expected a string, got " + Brief(value_));
  return value_.get<std::string>();
}

}  // namespace gnn
