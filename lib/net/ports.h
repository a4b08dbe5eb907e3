// Who holds a TCP port: for "port busy" errors that name the culprit.
#pragma once

#include <string>

namespace gnn {

// "pid 1234 (gnn-server)" for the process listening on TCP `port` (IPv4 or
// IPv6), read from /proc; "" when unknown (e.g. another user's process).
std::string DescribePortHolder(int port);

}  // namespace gnn
