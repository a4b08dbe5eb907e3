// Logging facade. Human-readable lines go to stderr, each prefixed with the
// process role (set once in main, e.g. "[partition]", "[server 1.0]").
// Thread-safe: each line is written with one call.
#pragma once

#include <sstream>
#include <string>

namespace gnn {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kQuiet = 4 };

// Sets the role prefix and the minimum level. Call once at the top of main
// (or a test) before other threads start.
void SetLogRole(const std::string& role);
// Whether lines carry the role prefix (default yes). A process gnn-launch
// started has none of its own: the launcher prefixes each line it forwards
// with the machine, role and rank ("[1 trainer 0] "), so one prefix it is.
void ShowLogRole(bool show);
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();

void LogLine(LogLevel level, const std::string& message);

// The live status line on a terminal (common/progress): log lines are
// written above it, and it is redrawn after them. "" clears it.
void SetStatusLine(const std::string& text);

namespace detail {
class LogStream {
 public:
  explicit LogStream(LogLevel level) : level_(level) {}
  ~LogStream() { LogLine(level_, stream_.str()); }
  template <typename T>
  LogStream& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace detail

}  // namespace gnn

// Usage: GNN_LOG(kInfo) << "loaded " << n << " nodes";
#define GNN_LOG(level)                                 \
  if (::gnn::LogLevel::level < ::gnn::GetLogLevel()) { \
  } else                                               \
    ::gnn::detail::LogStream(::gnn::LogLevel::level)
