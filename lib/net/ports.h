// Who holds a TCP port: for "port busy" errors that name the culprit; and
// binding a port that a process of a stopped run may still hold.
#pragma once

#include <string>
#include <zmq.hpp>

namespace gnn {

// "pid 1234 (gnn-server)" for the process listening on TCP `port` (IPv4 or
// IPv6), read from /proc; "" when unknown (e.g. another user's process).
std::string DescribePortHolder(int port);

// Binds `sock` to `endpoint`; while the port is in use (EADDRINUSE), tries
// again every 200 ms for up to `retry_s` seconds (a restarted job's server
// may start while the one it replaces, on a machine reached over ssh, is
// still stopping). Rethrows the last zmq::error_t. A bind a signal
// interrupts (EINTR: libzmq polls its mailbox first, and a stop signal may
// come at any moment of start-up) is tried again at once.
void BindRetrying(zmq::socket_t& sock, const std::string& endpoint, double retry_s = 0);

// How long servers and the rendezvous wait for a busy port (preflight has
// already named any holder before a first start).
constexpr double kBindRetryS = 10;

}  // namespace gnn
