// ip_config: the machines of a cluster, one per line, as DGL's launch tools
// read it. Machine i (0-based, counting only machine lines) serves
// partition i.
//
//   # comment                 whole-line and trailing comments are ignored
//   10.0.0.1                  port defaults to kDefaultPort
//   10.0.0.2 30060
//   node-3.cluster.local      hostnames are accepted
//   fe80::1 30050             IPv6 literal, with or without [brackets]
#pragma once

#include <string>
#include <vector>

namespace gnn {

constexpr int kDefaultPort = 30050;
// The trainers' rendezvous on machine 0 (DGL's and torch.distributed's default).
constexpr int kDefaultMasterPort = 29500;

struct MachineAddress {
  std::string host;  // as written (brackets of an IPv6 literal removed)
  int port = kDefaultPort;
  int line = 0;  // 1-based line in the file, for error messages
};

// Parses ip_config text. `source` names the file in errors
// ("ip_config.txt:3: port 99999 out of range [1, 65535]"). Throws ConfigError
// on a malformed line, a bad host or port, a duplicate host:port, or when no
// machine is listed. Pure function.
std::vector<MachineAddress> ParseIpConfig(const std::string& text, const std::string& source);

// Reads and parses the file at `path` (ConfigError if it cannot be read).
std::vector<MachineAddress> ReadIpConfig(const std::string& path);

// True if `host` is an IPv6 literal (contains ':').
bool IsIpv6Literal(const std::string& host);

// ZeroMQ endpoint of server `server_id` of a machine: "tcp://HOST:PORT+id",
// IPv6 hosts in brackets ("tcp://[::1]:30051"). Throws ConfigError if
// server_id < 0 or the port would exceed 65535.
std::string Endpoint(const MachineAddress& machine, int server_id);

// Checks that every machine's server ports [port, port + num_servers) fit in
// 65535 and do not overlap another machine line with the same host (two
// lines for one host are allowed, e.g. for tests on one box, as long as the
// port ranges are disjoint). Throws ConfigError naming `source` and lines.
void CheckServerPorts(const std::vector<MachineAddress>& machines, int num_servers,
                      const std::string& source);

}  // namespace gnn
