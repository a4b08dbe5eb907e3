// Hand-rolled CSV field parsing over a line-aligned buffer. Errors name the
// file and 1-based line.
#pragma once

#include <cstdint>
#include <string>

namespace gnn {

// Cursor over whole CSV lines. Usage:
//   CsvCursor c(begin, end, "edge.csv.gz", first_line);
//   while (c.NextLine()) { a = c.Int64(); b = c.Int64(); c.EndLine(); }
class CsvCursor {
 public:
  CsvCursor(const char* begin, const char* end, const std::string& file, int64_t first_line)
      : begin_(begin), p_(begin), end_(end), file_(file), line_(first_line - 1) {}

  // Advances to the next line; false at the end of the buffer. Empty lines
  // are errors except a final empty line.
  bool NextLine();
  // Reads one field and consumes the ',' after it if present.
  int64_t Int64();
  float Float();
  // Integer label field: "3", "3.0" -> 3; "nan" or empty -> -1. A float
  // form must be a whole number in [0, 2^31).
  int64_t Label();
  // Requires the end of the line (after optional '\r'), consuming '\n'. A
  // trailing ',' (an empty last field) is an error.
  void EndLine();
  // Number of comma-separated fields on the current line, without consuming.
  int64_t CountFields() const;
  int64_t line() const { return line_; }
  [[noreturn]] void Fail(const std::string& what) const;

 private:
  void AfterField();
  const char* begin_;
  const char* p_;
  const char* end_;
  std::string file_;  // a copy: callers often pass a temporary
  int64_t line_;
};

}  // namespace gnn
