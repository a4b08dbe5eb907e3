#include "client/sampler_service.h"

#include <signal.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <thread>
#include <tuple>

#include "common/cli.h"
#include "common/error.h"
#include "common/log.h"
#include "common/process.h"
#include "common/sha256.h"
#include "net/channel.h"
#include "net/messages.h"
#include "sampling/edge_batch.h"

namespace gnn {

using net::Message;
using net::MsgType;
using Clock = std::chrono::steady_clock;

std::vector<std::string> SamplerLaunch::ToArgv(const std::string& binary) const {
  std::vector<std::string> argv = {binary,
                                   "--ip_config",
                                   ip_config,
                                   "--part_config",
                                   part_config,
                                   "--machine_id",
                                   std::to_string(machine_id),
                                   "--num_servers",
                                   std::to_string(num_servers),
                                   "--trainer_endpoint",
                                   trainer_endpoint,
                                   "--trainer_id",
                                   std::to_string(trainer_id),
                                   "--sampler_id",
                                   std::to_string(sampler_id),
                                   "--job_id",
                                   job_id,
                                   "--timeout_ms",
                                   std::to_string(timeout.count()),
                                   "--idle_timeout_s",
                                   std::to_string(idle_timeout.count()),
                                   "--aggregate_at_owner",
                                   aggregate_at_owner ? "1" : "0",
                                   "--remote_sums",
                                   remote_sums ? "1" : "0",
                                   "--input_means",
                                   input_means ? "1" : "0",
                                   "--edge_data",
                                   edge_data ? "1" : "0",
                                   "--cache_mb",
                                   std::to_string(cache_mb),
                                   "--cache_fan_out",
                                   cache_fan_out};
  AppendWireArgv(wire, &argv);
  if (insecure) {
    argv.push_back("--insecure");
  } else if (!secret_file.empty()) {
    argv.insert(argv.end(), {"--secret_file", secret_file});
  }
  return argv;
}

bool SamplerLaunch::operator==(const SamplerLaunch& o) const {
  return std::tie(ip_config, part_config, machine_id, num_servers, trainer_endpoint, trainer_id,
                  sampler_id, job_id, timeout, idle_timeout, secret_file, insecure,
                  aggregate_at_owner, remote_sums, input_means, edge_data, wire, cache_mb,
                  cache_fan_out) ==
         std::tie(o.ip_config, o.part_config, o.machine_id, o.num_servers, o.trainer_endpoint,
                  o.trainer_id, o.sampler_id, o.job_id, o.timeout, o.idle_timeout, o.secret_file,
                  o.insecure, o.aggregate_at_owner, o.remote_sums, o.input_means, o.edge_data,
                  o.wire, o.cache_mb, o.cache_fan_out);
}

void AddSamplerFlags(CLI::App& app, SamplerLaunch* s) {
  app.add_option("--ip_config", s->ip_config, "machines, one 'IP [PORT]' per line");
  app.add_option("--part_config", s->part_config, "partition config JSON (required)");
  app.add_option("--machine_id", s->machine_id,
                 "this machine (its partition is read from shared memory; -1: none)")
      ->capture_default_str();
  app.add_option("--num_servers", s->num_servers, "servers per machine")->capture_default_str();
  app.add_option("--trainer_endpoint", s->trainer_endpoint, "where the trainer listens (required)");
  app.add_option("--trainer_id", s->trainer_id, "trainer this sampler serves")
      ->capture_default_str();
  app.add_option("--sampler_id", s->sampler_id, "index among the trainer's samplers")
      ->capture_default_str();
  app.add_option("--job_id", s->job_id, "job id (must match the trainer's and servers')");
  app.add_option_function<int64_t>(
      "--timeout_ms", [s](int64_t ms) { s->timeout = std::chrono::milliseconds(ms); },
      "deadline per request round (default 30000)");
  app.add_option_function<int64_t>(
      "--idle_timeout_s", [s](int64_t secs) { s->idle_timeout = std::chrono::seconds(secs); },
      "exit when the trainer is silent this long (default 600)");
  app.add_flag_callback(
      "--no_local", [s] { s->machine_id = -1; }, "reach the local partition over the network too");
  app.add_option("--aggregate_at_owner", s->aggregate_at_owner,
                 "sample and aggregate a batch's last hop where its nodes live (1), or ship "
                 "neighbour lists and rows (0)")
      ->capture_default_str();
  app.add_option("--remote_sums", s->remote_sums,
                 "with --aggregate_at_owner 1: sum the neighbours a destination's owner does not "
                 "hold at their own owners (1), or pull their rows (0)")
      ->capture_default_str();
  app.add_option("--input_means", s->input_means,
                 "send layer 0 as the destinations' rows and their neighbours' means (1: a "
                 "mean-aggregating first layer), or every input row (0)")
      ->capture_default_str();
  app.add_option("--edge_data", s->edge_data,
                 "sample the sampled edges' data with them (1: the model reads edge weights)")
      ->capture_default_str();
  AddWireFlags(app, &s->wire);
  app.add_option("--cache_mb", s->cache_mb,
                 "MB of other partitions' hottest rows cached once per machine (0: none, -1: auto)")
      ->capture_default_str();
  app.add_option("--cache_fan_out", s->cache_fan_out,
                 "the model's fan-outs, which rank the rows to cache")
      ->capture_default_str();
  AddJobSecretFlags(app, &s->secret_file, &s->insecure);
}

SamplerOptions ToSamplerOptions(const SamplerLaunch& s) {
  SamplerOptions o;
  o.graph.ip_config = s.ip_config;
  o.graph.part_config = s.part_config;
  o.graph.local_machine_id = s.machine_id;
  o.graph.num_servers = s.num_servers;
  o.graph.job_id = s.job_id;
  o.graph.timeout = s.timeout;
  o.graph.aggregate_at_owner = s.aggregate_at_owner;
  o.graph.remote_sums = s.remote_sums;
  o.graph.pack_input_means = s.input_means;
  o.graph.edge_data = s.edge_data;
  o.graph.wire_format = s.wire.row_format;
  o.graph.id_coding = s.wire.id_coding;
  o.graph.cache_bytes = s.cache_mb < 0 ? -1 : s.cache_mb << 20;
  o.graph.cache_fanouts = ParseFanouts(s.cache_fan_out, "--cache_fan_out");
  o.trainer_endpoint = s.trainer_endpoint;
  o.trainer_id = s.trainer_id;
  o.sampler_id = s.sampler_id;
  o.idle_timeout = s.idle_timeout;
  o.graph.keys = net::ResolveJobKeys(s.secret_file, s.insecure, s.job_id, "gnn-sampler");
  return o;
}

void SamplerOptions::Validate() const {
  if (trainer_endpoint.empty()) throw ConfigError("--trainer_endpoint is required");
  if (graph.part_config.empty()) throw ConfigError("--part_config is required");
  if (idle_timeout < std::chrono::seconds(1)) throw ConfigError("--idle_timeout_s must be >= 1");
  if (graph.timeout < std::chrono::milliseconds(1)) throw ConfigError("--timeout_ms must be >= 1");
}

namespace {

Message MakeBatchReply(DistGraph& graph, const SamplerOptions& o, const net::SeedBatch& sb,
                       uint64_t request_id) {
  EdgeExclusion exclude(sb.exclude);
  MiniBatch mb = graph.MakeBatch(sb.seeds, sb.fanouts, sb.replace, sb.rng_seed,
                                 exclude.empty() ? nullptr : &exclude);
  mb.index = sb.index;
  // Layer 0's means here: the trainer gets [2 x dst] rows instead
  // of one per input node (4x fewer feature bytes on products).
  if (o.graph.pack_input_means) PackInputMeans(&mb, 1);
  return net::EncodeMiniBatch(mb, request_id);
}

// Typed blocks, labels and featured types' rows; the trainer pulls the
// embedding rows (they change every step).
Message MakeTypedBatchReply(DistGraph& graph, const net::TypedSeedBatch& sb, uint64_t request_id) {
  if (!graph.config().hetero()) {
    throw DataError("a typed batch asked of a homogeneous graph (" + graph.config().graph_name +
                    ")");
  }
  const EdgeExclusion exclude(sb.exclude);
  HeteroBatch b = graph.MakeTypedBatch(sb.seeds, sb.fanouts, sb.replace, sb.rng_seed,
                                       sb.exclude.empty() ? nullptr : &exclude);
  b.index = sb.index;
  return net::EncodeTypedMiniBatch(b, request_id);
}

}  // namespace

void RunSampler(const SamplerOptions& o, const std::atomic<bool>& stop) {
  o.Validate();
  DistGraph graph(o.graph);
  zmq::context_t ctx;
  zmq::socket_t sock(ctx, zmq::socket_type::dealer);
  sock.set(zmq::sockopt::linger, 1000);
  sock.set(zmq::sockopt::maxmsgsize, net::kMaxReplyBytes);
  o.graph.keys.MakeClient(sock);
  sock.connect(o.trainer_endpoint);
  const net::SamplerHello hello{
      {graph.config().graph_name, Sha256File(o.graph.part_config), o.graph.job_id},
      o.trainer_id,
      o.sampler_id};
  Message h = hello.Encode(0);
  net::Send(sock, h);
  GNN_LOG(kInfo) << "sampler " << o.trainer_id << "." << o.sampler_id << " connected to trainer at "
                 << o.trainer_endpoint;
  auto last_heard = Clock::now();
  std::vector<zmq::message_t> parts;
  while (!stop) {
    if (!net::RecvParts(sock, &parts, net::Millis(100))) {
      if (Clock::now() - last_heard > o.idle_timeout) {
        throw TimeoutError("trainer at " + o.trainer_endpoint + " sent nothing for " +
                           std::to_string(o.idle_timeout.count()) + " s; exiting");
      }
      continue;
    }
    last_heard = Clock::now();
    Message m = net::Decode(std::move(parts));
    switch (m.header.msg_type()) {
      case MsgType::kStop:
        GNN_LOG(kInfo) << "trainer said stop";
        return;
      case MsgType::kError:
        throw PeerError("trainer at " + o.trainer_endpoint +
                        " refused this sampler: " + net::ErrorReply::Decode(m).message);
      case MsgType::kSeedBatch:
      case MsgType::kTypedSeedBatch: {
        Message reply;
        try {
          reply =
              m.header.msg_type() == MsgType::kSeedBatch
                  ? MakeBatchReply(graph, o, net::DecodeSeedBatch(m), m.header.request_id)
                  : MakeTypedBatchReply(graph, net::DecodeTypedSeedBatch(m), m.header.request_id);
        } catch (const Error& e) {
          // Never a silent empty batch: the trainer learns why, then we exit.
          Message err = net::MakeError(m.header.request_id, net::kErrInternal,
                                       "sampler " + std::to_string(o.trainer_id) + "." +
                                           std::to_string(o.sampler_id) + ": " + e.what());
          net::Send(sock, err);
          throw;
        }
        net::Send(sock, reply);
        break;
      }
      default:
        break;  // HelloReply and anything newer: nothing to do
    }
  }
}

SamplerPool::SamplerPool(const std::string& bind_endpoint, int num_samplers, net::Hello hello,
                         int prefetch_per_sampler, int timeout_ms, const net::JobKeys& keys,
                         uint64_t window_bytes)
    : auth_(ctx_, keys, "the trainer's sampler pool"),
      sock_(ctx_, zmq::socket_type::router),
      num_samplers_(num_samplers),
      hello_(std::move(hello)),
      prefetch_(std::max(1, prefetch_per_sampler)),
      timeout_ms_(timeout_ms),
      window_bytes_(std::max<uint64_t>(1, window_bytes)) {
  sock_.set(zmq::sockopt::linger, 0);
  sock_.set(zmq::sockopt::maxmsgsize, net::kMaxReplyBytes);
  // A sampler has at most `prefetch` replies and one hello or Error to
  // send: anything past that waits in its own process (TCP pushes back).
  sock_.set(zmq::sockopt::rcvhwm, prefetch_ + 2);
  keys.MakeServer(sock_);
  try {
    sock_.bind(bind_endpoint);
  } catch (const zmq::error_t& e) {
    throw ConfigError("trainer cannot bind " + bind_endpoint + " for its samplers: " + e.what());
  }
  endpoint_ = sock_.get(zmq::sockopt::last_endpoint);
}

SamplerPool::~SamplerPool() {
  try {
    Stop();
  } catch (...) {
  }
}

void SamplerPool::WaitForSamplers(int timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<zmq::message_t> parts;
  while (static_cast<int>(identities_.size()) < num_samplers_) {
    auto left = std::chrono::duration_cast<net::Millis>(deadline - Clock::now());
    if (left.count() <= 0 || !net::RecvParts(sock_, &parts, left)) {
      throw TimeoutError(std::to_string(num_samplers_ - static_cast<int>(identities_.size())) +
                         " of " + std::to_string(num_samplers_) + " samplers did not connect to " +
                         endpoint_ + " within " + std::to_string(timeout_ms) + " ms");
    }
    if (parts.size() < 2) continue;
    zmq::message_t id = std::move(parts[0]);
    parts.erase(parts.begin());
    Message m;
    try {
      m = net::Decode(std::move(parts));
    } catch (const ProtocolError&) {
      continue;  // not a protocol message: not a sampler's hello
    }
    if (m.header.msg_type() != MsgType::kHello) continue;
    if (!SameJob(m)) {
      std::vector<zmq::message_t> route;
      route.push_back(std::move(id));
      Message err = net::MakeError(0, net::kErrMismatch,
                                   "sampler runs a different graph, partition config or job");
      net::Send(sock_, err, &route);
      throw ConfigError("a sampler with a different graph, partition config or job connected to " +
                        endpoint_);
    }
    identities_.push_back(std::move(id));
    in_flight_.push_back(0);
    held_bytes_.push_back(0);
  }
}

bool SamplerPool::SameJob(const Message& hello) const {
  try {
    return net::SamplerHello::Decode(hello).hello == hello_;
  } catch (const ProtocolError&) {
    return false;  // not a sampler's hello: refused like a stranger's
  }
}

void SamplerPool::Start(std::vector<net::SeedBatch> batches) {
  typed_.clear();
  batches_ = std::move(batches);
  reply_type_ = MsgType::kMiniBatch;
  Begin(batches_.size());
}

void SamplerPool::Start(std::vector<net::TypedSeedBatch> batches) {
  batches_.clear();
  typed_ = std::move(batches);
  reply_type_ = MsgType::kTypedMiniBatch;
  Begin(typed_.size());
}

void SamplerPool::Begin(size_t count) {
  count_ = count;
  next_dispatch_ = 0;
  next_return_ = 0;
  ready_.clear();
  std::fill(held_bytes_.begin(), held_bytes_.end(), 0);
  Dispatch();
}

Message SamplerPool::EncodeNext() {
  const size_t i = next_dispatch_;
  if (reply_type_ == MsgType::kTypedMiniBatch) {
    Message m = net::EncodeTypedSeedBatch(typed_[i], i + 1);
    typed_[i] = net::TypedSeedBatch();  // sent: release its seeds
    return m;
  }
  if (prepare_) prepare_(&batches_[i]);
  Message m = net::EncodeSeedBatch(batches_[i], i + 1);
  if (prepare_) batches_[i] = net::SeedBatch();
  return m;
}

bool SamplerPool::HasCredit(int s) const {
  if (in_flight_[s] == 0) return true;  // one batch is always allowed
  if (in_flight_[s] >= prefetch_ || largest_reply_ == 0) return false;
  const uint64_t expected = static_cast<uint64_t>(in_flight_[s] + 1) * largest_reply_;
  return held_bytes_[s] + expected <= window_bytes_;
}

void SamplerPool::Dispatch() {
  // Batch i always goes to sampler i % n (the order is deterministic), but
  // only while that sampler has credit: fewer than `prefetch` batches in
  // flight, whose replies fit its byte window.
  while (next_dispatch_ < count_) {
    int s = static_cast<int>(next_dispatch_ % identities_.size());
    if (!HasCredit(s)) return;
    Message m = EncodeNext();
    std::vector<zmq::message_t> route;
    route.emplace_back(identities_[s].data(), identities_[s].size());
    net::Send(sock_, m, &route);
    ++in_flight_[s];
    max_in_flight_ = std::max(max_in_flight_, in_flight_[s]);
    ++next_dispatch_;
  }
}

void SamplerPool::ReceiveOne(int timeout_ms) {
  std::vector<zmq::message_t> parts;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      throw TimeoutError("no mini-batch from the samplers within " + std::to_string(timeout_ms) +
                         " ms (waiting for batch " + std::to_string(next_return_) + ")");
    }
    if (net::RecvParts(sock_, &parts, std::min(left, std::chrono::milliseconds(500)))) break;
    if (check_) {
      std::string why = check_();
      if (!why.empty())
        throw PeerError(why + " (waiting for batch " + std::to_string(next_return_) + ")");
    }
  }
  if (parts.size() < 2) return;
  int sampler = -1;
  for (size_t i = 0; i < identities_.size(); ++i) {
    if (identities_[i] == parts[0]) sampler = static_cast<int>(i);
  }
  if (sampler < 0) return;  // not one of our samplers: dropped unread
  parts.erase(parts.begin());
  uint64_t bytes = 0;
  for (const auto& p : parts) bytes += p.size();
  bytes_received_ += bytes;
  Message m = net::Decode(std::move(parts));
  if (m.header.msg_type() == MsgType::kError) {
    throw PeerError("sampler " + std::to_string(sampler) +
                    " failed: " + net::ErrorReply::Decode(m).message);
  }
  if (m.header.msg_type() != reply_type_) return;
  // Only an answer to a batch this sampler has in flight counts: another
  // id would be a stale or a stranger's reply.
  const uint64_t id = m.header.request_id;
  if (id < 1 || id > next_dispatch_ || ready_.count(static_cast<int64_t>(id) - 1) ||
      static_cast<int64_t>(id) - 1 < next_return_ ||
      (id - 1) % identities_.size() != static_cast<size_t>(sampler)) {
    throw ProtocolError("sampler " + std::to_string(sampler) + " answered batch " +
                        std::to_string(static_cast<int64_t>(id) - 1) + ", which it was not given");
  }
  --in_flight_[sampler];
  largest_reply_ = std::max(largest_reply_, bytes);
  held_bytes_[sampler] += bytes;
  ready_[static_cast<int64_t>(id) - 1] = Ready{std::move(m), sampler, bytes};
}

std::optional<Message> SamplerPool::NextMessage() {
  if (next_return_ >= static_cast<int64_t>(count_)) return std::nullopt;
  while (ready_.find(next_return_) == ready_.end()) {
    ReceiveOne(timeout_ms_);
    Dispatch();
  }
  auto it = ready_.find(next_return_);
  Message m = std::move(it->second.message);
  held_bytes_[it->second.sampler] -= it->second.bytes;
  ready_.erase(it);
  ++next_return_;
  Dispatch();
  return m;
}

std::optional<MiniBatch> SamplerPool::Next() {
  if (reply_type_ != MsgType::kMiniBatch) throw Error("SamplerPool::Next after a typed Start");
  std::optional<Message> m = NextMessage();
  if (!m) return std::nullopt;
  return net::DecodeMiniBatch(*m);
}

void SamplerPool::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& id : identities_) {
    std::vector<zmq::message_t> route;
    route.emplace_back(id.data(), id.size());
    Message m = net::Stop{}.Encode(0);
    net::Send(sock_, m, &route, net::Millis(1000));
  }
}

SamplerProcesses::SamplerProcesses(const std::string& binary, std::vector<SamplerLaunch> launches,
                                   const net::Hello& hello, int prefetch_per_sampler,
                                   int timeout_ms, const net::JobKeys& keys)
    : pool_(std::make_unique<SamplerPool>("tcp://127.0.0.1:*", static_cast<int>(launches.size()),
                                          hello, prefetch_per_sampler, timeout_ms, keys)) {
  for (SamplerLaunch& launch : launches) {
    launch.trainer_endpoint = pool_->endpoint();
    pids_.push_back(SpawnChild(launch.ToArgv(binary), SIGTERM));
  }
  pool_->SetLivenessCheck([this] { return Exited(); });
  Named([&] {
    pool_->WaitForSamplers(timeout_ms);
    return 0;
  });
}

SamplerProcesses::~SamplerProcesses() {
  try {
    pool_->Stop();
  } catch (...) {
  }
  for (pid_t pid : pids_) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

std::string SamplerProcesses::Exited() {
  for (size_t i = 0; i < pids_.size(); ++i) {
    int status = 0;
    if (waitpid(pids_[i], &status, WNOHANG) == pids_[i]) {
      const std::string how = DescribeWaitStatus(status);
      pids_.erase(pids_.begin() + static_cast<long>(i));
      return "gnn-sampler " + std::to_string(i) + " " + how;
    }
  }
  return "";
}

template <typename F>
auto SamplerProcesses::Named(F f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    const std::string exited = Exited();
    throw PeerError(std::string(e.what()) + (exited.empty() ? "" : " (" + exited + ")"));
  }
}

std::optional<MiniBatch> SamplerProcesses::Next() {
  return Named([&] { return pool_->Next(); });
}

std::optional<net::Message> SamplerProcesses::NextMessage() {
  return Named([&] { return pool_->NextMessage(); });
}

}  // namespace gnn
