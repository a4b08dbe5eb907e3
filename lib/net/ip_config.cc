#include "net/ip_config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"

namespace gnn {

namespace {

constexpr int kMaxPort = 65535;

[[noreturn]] void Fail(const std::string& source, int line, const std::string& what) {
  throw ConfigError(source + ":" + std::to_string(line) + ": " + what);
}

bool IsHostnameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

// RFC 1123 hostname (underscores tolerated, as resolvers do): dot-separated
// labels of 1..63 characters that do not start or end with '-'.
bool ValidHostname(const std::string& host) {
  std::string h = host;
  if (!h.empty() && h.back() == '.') h.pop_back();  // fully qualified
  if (h.empty() || h.size() > 253) return false;
  size_t begin = 0;
  while (begin <= h.size()) {
    size_t end = std::min(h.find('.', begin), h.size());
    size_t len = end - begin;
    if (len == 0 || len > 63) return false;
    if (h[begin] == '-' || h[end - 1] == '-') return false;
    for (size_t i = begin; i < end; ++i) {
      if (!IsHostnameChar(h[i])) return false;
    }
    begin = end + 1;
  }
  return true;
}

bool AllDigitsAndDots(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == '.' || std::isdigit(static_cast<unsigned char>(c));
  });
}

// Validates `host` and returns a canonical key for duplicate detection.
// Throws ConfigError naming source:line.
std::string CheckHost(const std::string& host, const std::string& source, int line) {
  if (IsIpv6Literal(host)) {
    std::string addr = host, zone;
    size_t pct = addr.find('%');
    if (pct != std::string::npos) {
      zone = addr.substr(pct);
      addr = addr.substr(0, pct);
      if (zone.size() < 2) Fail(source, line, "empty IPv6 zone in '" + host + "'");
    }
    in6_addr a;
    if (inet_pton(AF_INET6, addr.c_str(), &a) != 1) {
      Fail(source, line,
           "'" + host +
               "' is not a valid IPv6 address (write 'HOST PORT' separated by a space, not "
               "HOST:PORT)");
    }
    char buf[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &a, buf, sizeof(buf));
    return std::string(buf) + zone;
  }
  if (AllDigitsAndDots(host)) {
    in_addr a;
    if (inet_pton(AF_INET, host.c_str(), &a) != 1) {
      Fail(source, line, "'" + host + "' is not a valid IPv4 address");
    }
    return host;
  }
  if (!ValidHostname(host)) Fail(source, line, "'" + host + "' is not a valid host name");
  std::string key = host;
  if (key.back() == '.') key.pop_back();
  std::transform(key.begin(), key.end(), key.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return key;
}

int ParsePort(const std::string& text, const std::string& source, int line) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    Fail(source, line, "port '" + text + "' is not a number");
  }
  // Compare digit strings without overflowing: anything longer than 5
  // significant digits is out of range.
  size_t first = text.find_first_not_of('0');
  std::string digits = first == std::string::npos ? "0" : text.substr(first);
  long value = digits.size() > 6 ? kMaxPort + 1L : std::stol(digits);
  if (value < 1 || value > kMaxPort) {
    Fail(source, line, "port " + text + " out of range [1, " + std::to_string(kMaxPort) + "]");
  }
  return static_cast<int>(value);
}

}  // namespace

bool IsIpv6Literal(const std::string& host) { return host.find(':') != std::string::npos; }

std::vector<MachineAddress> ParseIpConfig(const std::string& text, const std::string& source) {
  std::vector<MachineAddress> machines;
  std::map<std::pair<std::string, int>, int> seen;  // (host key, port) -> line
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    size_t hash = raw.find('#');
    if (hash != std::string::npos) raw.resize(hash);
    std::istringstream fields(raw);
    std::vector<std::string> tok;
    for (std::string t; fields >> t;) tok.push_back(t);
    if (tok.empty()) continue;
    if (tok.size() > 2) {
      Fail(source, line, "expected 'HOST [PORT]', got " + std::to_string(tok.size()) + " fields");
    }
    MachineAddress m;
    m.line = line;
    m.host = tok[0];
    if (m.host.front() == '[' || m.host.back() == ']') {
      if (m.host.size() < 3 || m.host.front() != '[' || m.host.back() != ']' ||
          !IsIpv6Literal(m.host.substr(1, m.host.size() - 2))) {
        Fail(source, line,
             "malformed address '" + tok[0] +
                 "' (brackets only around an IPv6 address; write '[IPv6] PORT', not [IPv6]:PORT)");
      }
      m.host = m.host.substr(1, m.host.size() - 2);
    }
    std::string key = CheckHost(m.host, source, line);
    if (tok.size() == 2) m.port = ParsePort(tok[1], source, line);
    auto [it, fresh] = seen.emplace(std::make_pair(key, m.port), line);
    if (!fresh) {
      Fail(source, line,
           "duplicate machine " + tok[0] + " port " + std::to_string(m.port) + " (first on line " +
               std::to_string(it->second) + ")");
    }
    machines.push_back(m);
  }
  if (machines.empty()) throw ConfigError(source + ": no machines listed");
  return machines;
}

std::vector<MachineAddress> ReadIpConfig(const std::string& path) {
  std::string text;
  try {
    text = ReadFile(path);
  } catch (const DataError& e) {
    throw ConfigError(e.what());  // a flag's file: exit 2, as for a malformed one
  }
  return ParseIpConfig(text, path);
}

std::string Endpoint(const MachineAddress& machine, int server_id) {
  if (server_id < 0) throw ConfigError("server id " + std::to_string(server_id) + " is negative");
  long port = static_cast<long>(machine.port) + server_id;
  if (port > kMaxPort) {
    throw ConfigError("port " + std::to_string(machine.port) + " + server id " +
                      std::to_string(server_id) + " exceeds " + std::to_string(kMaxPort) +
                      " (machine " + machine.host + ")");
  }
  std::string host = IsIpv6Literal(machine.host) ? "[" + machine.host + "]" : machine.host;
  return "tcp://" + host + ":" + std::to_string(port);
}

void CheckServerPorts(const std::vector<MachineAddress>& machines, int num_servers,
                      const std::string& source) {
  if (num_servers < 1) {
    throw ConfigError("--num_servers must be >= 1, got " + std::to_string(num_servers));
  }
  for (size_t i = 0; i < machines.size(); ++i) {
    const MachineAddress& a = machines[i];
    if (static_cast<long>(a.port) + num_servers - 1 > kMaxPort) {
      Fail(source, a.line,
           "ports " + std::to_string(a.port) + ".." + std::to_string(a.port + num_servers - 1) +
               " for " + std::to_string(num_servers) + " servers exceed " +
               std::to_string(kMaxPort));
    }
    for (size_t j = 0; j < i; ++j) {
      const MachineAddress& b = machines[j];
      if (CheckHost(a.host, source, a.line) != CheckHost(b.host, source, b.line)) continue;
      if (a.port < b.port + num_servers && b.port < a.port + num_servers) {
        Fail(source, a.line,
             "server ports " + std::to_string(a.port) + ".." +
                 std::to_string(a.port + num_servers - 1) + " overlap those of line " +
                 std::to_string(b.line) + " (same host " + a.host + ", " +
                 std::to_string(num_servers) + " servers each)");
      }
    }
  }
}

}  // namespace gnn
