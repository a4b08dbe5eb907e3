// Checked reading of JSON documents: every value is read with its type and
// range checked, and every failure is one DataError line naming the file
// and the key path ("cfg.json: key 'part-2.num_train': expected ...").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gnn {

// A view of one value inside a JSON document read from `source`. Holds a
// reference to the value: the document must outlive it. Copyable, cheap,
// thread-compatible.
class JsonReader {
 public:
  JsonReader(const nlohmann::json& value, std::string source, std::string key_path = "");

  bool Has(const std::string& key) const;
  // The value of an object's `key`; DataError if this is not an object or
  // the key is missing.
  JsonReader At(const std::string& key) const;
  // Element `i` of an array; DataError if this is not an array or too short.
  JsonReader Item(size_t i) const;
  size_t ArraySize() const;  // DataError unless an array
  // The keys of an object, sorted; DataError unless an object.
  std::vector<std::string> Keys() const;

  // An integer (not a float, string or bool) in [lo, hi].
  int64_t Int(int64_t lo, int64_t hi) const;
  uint64_t Uint64() const;
  // A number (integer or float) in [lo, hi].
  double Number(double lo, double hi) const;
  bool Bool() const;
  std::string String() const;

  const nlohmann::json& raw() const { return value_; }
  const std::string& key_path() const { return key_path_; }
  [[noreturn]] void Fail(const std::string& what) const;

 private:
  std::string Child(const std::string& key) const;
  const nlohmann::json& value_;
  std::string source_;
  std::string key_path_;
};

}  // namespace gnn
