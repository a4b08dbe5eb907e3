#include "server/server.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/sha256.h"
#include "net/channel.h"
#include "net/ip_config.h"
#include "net/peer_window.h"
#include "net/ports.h"
#include "net/protocol.h"
#include "partition/config.h"
#include "server/handlers.h"
#include "server/hetero_server.h"
#include "store/row_cache.h"
#include "store/shm_partition.h"
#include "store/shm_segment.h"

namespace gnn {

using net::Message;
using net::MsgType;

void ServerOptions::Validate() const {
  if (ip_config.empty()) throw ConfigError("--ip_config is required");
  if (part_config.empty()) throw ConfigError("--part_config is required");
  if (machine_id < 0) throw ConfigError("--machine_id must be >= 0");
  if (num_servers < 1) throw ConfigError("--num_servers must be >= 1");
  if (server_id < 0 || server_id >= num_servers) {
    throw ConfigError("--server_id must be in [0, --num_servers)");
  }
  if (num_threads < 0) throw ConfigError("--num_threads must be >= 0");
  if (attach_timeout < std::chrono::milliseconds(0)) {
    throw ConfigError("--attach_timeout_ms must be >= 0");
  }
  if (bind_retry < std::chrono::duration<double>(0)) throw ConfigError("bind retry must be >= 0");
  if (peer_window_bytes < (int64_t{1} << 20)) throw ConfigError("--peer_window_mb must be >= 1");
}

namespace {

using net::kMaxRequestBytes;

// One worker: takes [identity, header, arrays...] from the inproc backend,
// answers, and never lets a bad request take the server down.
void Worker(ServerState& s, zmq::context_t& ctx, const std::string& backend,
            const std::atomic<bool>& stop) {
  zmq::socket_t sock(ctx, zmq::socket_type::dealer);
  sock.set(zmq::sockopt::linger, 0);
  sock.connect(backend);
  std::vector<zmq::message_t> parts;
  while (!stop && !s.shutdown) {
    if (!net::RecvParts(sock, &parts, net::Millis(100))) continue;
    if (parts.size() < 2) continue;  // no identity or no header: nothing to answer
    std::vector<zmq::message_t> route;
    route.push_back(std::move(parts[0]));
    parts.erase(parts.begin());
    Message reply = Answer(s, std::move(parts));
    try {
      net::Send(sock, reply, &route, net::Millis(1000));
    } catch (const std::exception& e) {
      GNN_LOG(kWarn) << "could not send a reply: " << e.what();
    }
  }
}

// Where this server stands: its partition, its machine's line of the
// ip_config and the endpoint it binds.
struct Placement {
  int part = 0;
  MachineAddress me;
  std::string endpoint;
};

// Reads the partition config and the ip_config into `s` and checks them
// against each other and the flags.
Placement ReadConfigs(const ServerOptions& o, ServerState* s) {
  s->options = &o;
  s->name = "machine " + std::to_string(o.machine_id) + " server " + std::to_string(o.server_id);
  s->config = LoadPartitionConfig(o.part_config);
  s->config_sha = Sha256File(o.part_config);
  std::vector<MachineAddress> machines = ReadIpConfig(o.ip_config);
  CheckServerPorts(machines, o.num_servers, o.ip_config);
  if (o.machine_id >= static_cast<int>(machines.size())) {
    throw ConfigError("--machine_id " + std::to_string(o.machine_id) + " but " + o.ip_config +
                      " lists " + std::to_string(machines.size()) + " machines");
  }
  CheckMachinesForParts(s->config.num_parts, static_cast<int>(machines.size()), o.ip_config);
  Placement at;
  at.part = MachinePartition(o.machine_id, s->config.num_parts);
  at.me = machines[o.machine_id];
  at.endpoint = o.bind_endpoint.empty() ? Endpoint(at.me, o.server_id) : o.bind_endpoint;
  return at;
}

// The clients' ROUTER, a CURVE server with the job's keys, bound to the
// endpoint; a busy port is a ConfigError naming its holder.
zmq::socket_t BindFrontend(zmq::context_t& ctx, const ServerOptions& o, const std::string& name,
                           const Placement& at) {
  zmq::socket_t frontend(ctx, zmq::socket_type::router);
  frontend.set(zmq::sockopt::linger, 0);
  frontend.set(zmq::sockopt::router_mandatory, false);
  frontend.set(zmq::sockopt::maxmsgsize, kMaxRequestBytes);
  frontend.set(zmq::sockopt::rcvhwm, net::kMaxQueuedMessages);
  frontend.set(zmq::sockopt::sndhwm, net::kMaxQueuedMessages);
  o.keys.MakeServer(frontend);
  try {
    BindRetrying(frontend, at.endpoint, o.bind_retry.count());
  } catch (const zmq::error_t& e) {
    std::string holder;
    if (o.bind_endpoint.empty() && e.num() == EADDRINUSE) {
      holder = DescribePortHolder(at.me.port + o.server_id);
    }
    throw ConfigError(name + " cannot bind " + at.endpoint + ": " + e.what() +
                      (holder.empty() ? "" : " (held by " + holder + ")"));
  }
  return frontend;
}

// Server 0's sweep: jobs whose every process was SIGKILLed could not free
// their memory.
void SweepStale(const std::string& name) {
  StaleSweep swept = SweepStaleSegments();
  if (!swept.names.empty()) {
    GNN_LOG(kWarn) << name << ": removed " << swept.names.size()
                   << " stale shared memory segment(s) (" << (swept.bytes >> 20)
                   << " MiB) left by killed jobs, e.g. /dev/shm/" << swept.names[0];
  }
}

// The partition `s` answers from: the job's shared memory, created by
// server 0 and attached by the others (returned: it lives as long as the
// server). A heterogeneous partition's requests go to `s->hetero`.
std::unique_ptr<ShmPartition> OpenPartition(const ServerOptions& o, int part, ServerState* s) {
  const std::string shm_name =
      JobShmName(s->config.graph_name, s->config_sha, o.job_id, o.machine_id);
  std::unique_ptr<ShmPartition> shm =
      o.server_id == 0 ? ShmPartition::Create(shm_name, s->config, part, o.verify_checksums)
                       : ShmPartition::Attach(shm_name, s->config, part, o.attach_timeout);
  if (const HeteroPartitionView* typed = shm->hetero_view()) {
    // Embedding rows live at server 0 of the first machine serving the
    // partition (machine == partition).
    s->hetero = std::make_unique<HeteroServing>(s->config, *typed,
                                                o.server_id == 0 && o.machine_id == part, s->name);
  }
  s->view = &shm->view();
  // Server 0 removes the segment when it stops, after the job's other
  // holders have let go: trainers and samplers are often killed (a sampler
  // blocked on a stopped server is, 10 s after its launcher went away) and
  // then clean up nothing. Bounded by kServerRemoveWait, which gnn-server's
  // own stop allowance exceeds.
  if (o.server_id == 0) shm->SetRemoveWait(kServerRemoveWait);
  return shm;
}

// Moves one message waiting on `from`, all its frames, to `to`.
// Receives one whole message without waiting ([] when none is there).
std::vector<zmq::message_t> TakeMessage(zmq::socket_t& from) {
  std::vector<zmq::message_t> parts;
  while (true) {
    zmq::message_t part;
    if (!from.recv(part, zmq::recv_flags::dontwait)) return parts;
    const bool more = part.more();
    parts.push_back(std::move(part));
    if (!more) return parts;  // a multipart message arrives whole
  }
}

void SendParts(zmq::socket_t& to, std::vector<zmq::message_t>& parts) {
  for (size_t i = 0; i < parts.size(); ++i) {
    to.send(parts[i], i + 1 == parts.size() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  }
}

// A request [routing id, header, arrays...] goes to the workers; what its
// sender has taken so far is noted first. A header that does not decode
// is the worker's to answer.
void ForwardRequest(zmq::socket_t& frontend, zmq::socket_t& back, net::PeerWindows& windows) {
  std::vector<zmq::message_t> parts = TakeMessage(frontend);
  if (parts.size() >= 2) {
    try {
      windows.OnRequest(parts[0].to_string(), net::DecodeHeader(parts[1]).taken_bytes);
    } catch (const std::exception&) {
    }
  }
  if (!parts.empty()) SendParts(back, parts);
}

// A reply [routing id, header, arrays...] goes to its client if it fits the
// client's window; otherwise a small kErrBusy Error for the same request
// goes instead, and the reply's memory is freed here.
void ForwardReply(zmq::socket_t& back, zmq::socket_t& frontend, net::PeerWindows& windows,
                  const std::string& name) {
  std::vector<zmq::message_t> parts = TakeMessage(back);
  if (parts.size() < 2) return;
  const std::string peer = parts[0].to_string();
  uint64_t bytes = 0, untaken = 0;
  for (size_t i = 1; i < parts.size(); ++i) bytes += parts[i].size();
  if (windows.Admit(peer, bytes, &untaken)) {
    SendParts(frontend, parts);
    return;
  }
  uint64_t rid = 0;
  try {
    rid = net::DecodeHeader(parts[1]).request_id;
  } catch (const std::exception&) {
  }
  const uint64_t mib = uint64_t{1} << 20;
  Message busy = net::MakeError(
      rid, net::kErrBusy,
      name + ": this client has not taken " + std::to_string(untaken / mib) +
          " MiB of replies (its window is " + std::to_string(windows.window() / mib) +
          " MiB, --peer_window_mb): a reply of " + std::to_string(bytes / mib) +
          " MiB was dropped; read replies before asking for more");
  std::vector<zmq::message_t> out;
  out.push_back(std::move(parts[0]));
  out.push_back(net::EncodeHeader(busy.header));
  windows.Count(peer, out.back().size());
  parts.clear();  // the reply goes now, not when the peer reads
  SendParts(frontend, out);
}

// The proxy: requests to workers, replies back to their clients (within
// each client's reply window), until `stop` or a Shutdown request.
void Proxy(zmq::socket_t& frontend, zmq::socket_t& back, const std::atomic<bool>& stop,
           const ServerState& s, net::PeerWindows& windows) {
  zmq::pollitem_t items[] = {{frontend.handle(), 0, ZMQ_POLLIN, 0},
                             {back.handle(), 0, ZMQ_POLLIN, 0}};
  while (!stop && !s.shutdown) {
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(100));
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      continue;
    }
    if (items[0].revents & ZMQ_POLLIN) ForwardRequest(frontend, back, windows);
    if (items[1].revents & ZMQ_POLLIN) ForwardReply(back, frontend, windows, s.name);
  }
}

// The replies the stopped workers left in the backend go out.
void FlushReplies(zmq::socket_t& back, zmq::socket_t& frontend, net::PeerWindows& windows,
                  const std::string& name) {
  while (true) {
    zmq::pollitem_t b{back.handle(), 0, ZMQ_POLLIN, 0};
    try {
      if (zmq::poll(&b, 1, std::chrono::milliseconds(50)) <= 0) break;
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      continue;
    }
    ForwardReply(back, frontend, windows, name);
  }
}

}  // namespace

void RunServer(const ServerOptions& o, const std::atomic<bool>& stop,
               const std::function<void(const std::string&)>& on_ready) {
  o.Validate();
  ServerState s;
  const Placement at = ReadConfigs(o, &s);

  zmq::context_t ctx;
  // Only the job's processes complete a handshake (CURVE + ZAP).
  net::Authenticator auth(ctx, o.keys, s.name);
  zmq::socket_t frontend = BindFrontend(ctx, o, s.name, at);
  const std::string bound = frontend.get(zmq::sockopt::last_endpoint);

  // Only after the port is ours: a second server on a busy port must not
  // touch the shared memory of the one that holds it.
  if (o.server_id == 0) SweepStale(s.name);
  const std::unique_ptr<ShmPartition> shm = OpenPartition(o, at.part, &s);

  const std::string backend = "inproc://workers";
  zmq::socket_t back(ctx, zmq::socket_type::dealer);
  back.set(zmq::sockopt::linger, 0);
  BindRetrying(back, backend);
  const int threads = ResolveThreads(o.num_threads);
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] { Worker(s, ctx, backend, stop); });
  }
  GNN_LOG(kInfo) << s.name << " serving partition " << at.part << " (" << s.view->num_nodes
                 << " nodes) at " << bound << " with " << threads << " worker threads, "
                 << (o.keys.secure() ? "CURVE (job key required)" : "PLAINTEXT (--insecure)");
  if (on_ready) on_ready(bound);

  net::PeerWindows windows(static_cast<uint64_t>(o.peer_window_bytes));
  Proxy(frontend, back, stop, s, windows);
  // Let workers finish the reply they are sending (e.g. ShutdownReply).
  for (auto& w : workers) w.join();
  FlushReplies(back, frontend, windows, s.name);
  if (o.server_id == 0 && shm) {
    // The machine's hot-row cache (store/row_cache.h) has only trainers and
    // samplers as holders, and they are often killed: server 0 removes it
    // once they are gone, within the partition's own remove wait.
    const auto t0 = std::chrono::steady_clock::now();
    shm::RemoveWhenFree(RowCacheName(s.config.graph_name, s.config_sha, o.job_id, o.machine_id),
                        kServerRemoveWait);
    const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0);
    shm->SetRemoveWait(std::max(std::chrono::milliseconds(0), kServerRemoveWait - spent));
  }
  GNN_LOG(kInfo) << s.name << " stopped";
}

}  // namespace gnn
