#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace gnn {
namespace {
std::string g_role = "gnn";
bool g_show_role = true;
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mutex;
std::string g_status;  // under g_mutex

// Erases the status line from the terminal (the cursor stays on its row).
void ClearStatusLocked() {
  if (!g_status.empty()) std::fputs("\r\x1b[K", stderr);
}
}  // namespace

void SetLogRole(const std::string& role) { g_role = role; }
void ShowLogRole(bool show) { g_show_role = show; }
void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

void LogLine(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) < g_level.load()) return;
  const char* tag = "";
  switch (level) {
    case LogLevel::kWarn:
      tag = "warning: ";
      break;
    case LogLevel::kError:
      tag = "error: ";
      break;
    default:
      break;
  }
  std::string line = (g_show_role ? "[" + g_role + "] " : std::string()) + tag + message + "\n";
  std::lock_guard<std::mutex> lock(g_mutex);
  ClearStatusLocked();
  std::fwrite(line.data(), 1, line.size(), stderr);
  if (!g_status.empty()) std::fputs(g_status.c_str(), stderr);
  std::fflush(stderr);
}

void SetStatusLine(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ClearStatusLocked();
  g_status = text;
  if (!g_status.empty()) std::fputs(g_status.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace gnn
