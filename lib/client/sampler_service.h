// gnn-sampler's job: take seed batches from one trainer, sample every layer
// across partitions (local partition from shared memory, others over the
// network), gather features and labels, and stream finished mini-batches
// back. The trainer decides how many batches are in flight (credit), so a
// slow trainer applies back-pressure and memory stays flat.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "client/dist_graph.h"
#include "client/wire_settings.h"
#include "net/batch_codec.h"
#include "net/messages.h"
#include "net/security.h"

namespace CLI {
class App;
}

namespace gnn {

// The contract between a trainer and the gnn-sampler processes it starts:
// the trainer fills one SamplerLaunch per sampler and spawns ToArgv();
// gnn-sampler's main registers AddSamplerFlags and gets the same struct
// back, so the argv is written and read by this one piece of code.
struct SamplerLaunch {
  std::string ip_config;                     // --ip_config: the machines
  std::string part_config;                   // --part_config: the partition config JSON
  int machine_id = -1;                       // --machine_id: this machine, its partition read from
                                             // shared memory (-1: every partition over the network)
  int num_servers = 1;                       // --num_servers per machine
  std::string trainer_endpoint;              // --trainer_endpoint: where the trainer listens
  int trainer_id = 0;                        // --trainer_id: the trainer's rank
  int sampler_id = 0;                        // --sampler_id: index among the trainer's samplers
  std::string job_id;                        // --job_id: shared with the trainer and the servers
  std::chrono::milliseconds timeout{30000};  // --timeout_ms: deadline per request round
  std::chrono::seconds idle_timeout{600};    // --idle_timeout_s: exit when the trainer is silent
  std::string secret_file;                   // --secret_file: the job's secret
  bool insecure = false;                     // --insecure: plaintext
  bool aggregate_at_owner = true;            // --aggregate_at_owner 0|1 (DistGraphOptions')
  bool remote_sums = true;                   // --remote_sums 0|1 (DistGraphOptions')
  bool input_means = true;           // --input_means 0|1 (DistGraphOptions::pack_input_means)
  bool edge_data = false;            // --edge_data 0|1 (DistGraphOptions::edge_data)
  WireSettings wire;                 // --wire_dtype, --wire_ids
  int64_t cache_mb = 0;              // --cache_mb: the machine's hot-row cache (-1: auto)
  std::string cache_fan_out = "-1";  // --cache_fan_out: the model's fan-outs (ranks rows)

  // `binary` followed by every field as its flag.
  std::vector<std::string> ToArgv(const std::string& binary) const;
  bool operator==(const SamplerLaunch& o) const;
};

// Registers every SamplerLaunch field as a flag of `app`, parsed into *out
// (durations in the flags' units); --no_local sets machine_id to -1.
void AddSamplerFlags(CLI::App& app, SamplerLaunch* out);

struct SamplerOptions {
  DistGraphOptions graph;        // servers, part_config, local machine
  std::string trainer_endpoint;  // --trainer_endpoint: where the trainer listens
  int trainer_id = 0;
  int sampler_id = 0;
  std::chrono::seconds idle_timeout{600};  // exit if the trainer sends nothing this long
  void Validate() const;
};

// What RunSampler runs for a launch: its fields, with the job's keys
// resolved from its secret (net::ResolveJobKeys).
SamplerOptions ToSamplerOptions(const SamplerLaunch& launch);

// Runs until the trainer sends Stop (returns), `stop` is set, or an error:
// a sampling failure is first reported to the trainer as an Error reply for
// that batch, then rethrown (so the process exits non-zero).
void RunSampler(const SamplerOptions& options, const std::atomic<bool>& stop);

// Bytes of mini-batches the trainer lets one sampler have on their way or
// waiting to be used: past it the trainer gives that sampler no more
// batches until it uses what it holds (one batch is always allowed).
constexpr uint64_t kSamplerWindowBytes = uint64_t{512} << 20;

// The trainer's side: a ROUTER the samplers connect to. Not thread-safe.
//
// What one peer can make the trainer hold: a sampler is given at most
// `prefetch_per_sampler` batches at a time, and fewer when their replies
// would pass `window_bytes` (the largest reply seen so far estimates the
// ones to come; until the first arrives, one batch at a time). ZeroMQ
// queues at most prefetch + 2 messages per connection (replies, a hello,
// an Error) before TCP pushes back, so a peer that sends what it was not
// asked (a stranger with the job's keys, a broken sampler) parks at most
// that many messages, each of frames of at most kMaxReplyBytes; what the
// trainer reads from a peer that is not one of its samplers is dropped
// unread.
class SamplerPool {
 public:
  // Binds `bind_endpoint` (e.g. "tcp://127.0.0.1:*"). `hello` is what
  // samplers must present (graph, partition config sha256, job id).
  // Only samplers holding the job's `keys` can connect (CURVE + ZAP).
  SamplerPool(const std::string& bind_endpoint, int num_samplers, net::Hello hello,
              int prefetch_per_sampler, int timeout_ms, const net::JobKeys& keys,
              uint64_t window_bytes = kSamplerWindowBytes);
  ~SamplerPool();
  const std::string& endpoint() const { return endpoint_; }

  // Waits until every sampler said hello; TimeoutError says how many did not.
  void WaitForSamplers(int timeout_ms);
  // Queues an epoch's batches (dispatch starts at once, bounded by credit),
  // in place of any earlier Start's.
  void Start(std::vector<net::SeedBatch> batches);
  // Heterogeneous batches: the samplers answer each with a TypedMiniBatch,
  // which NextMessage returns for the caller to decode against its graph
  // (net::DecodeTypedMiniBatch).
  void Start(std::vector<net::TypedSeedBatch> batches);
  // Optional: called on each batch just before it is sent (on the thread
  // calling Start/Next), so batches can be completed lazily (link
  // prediction turns edge positions into seeds there); a sent batch's
  // arrays are released.
  void SetPrepare(std::function<void(net::SeedBatch*)> prepare) { prepare_ = std::move(prepare); }
  // The next batch in order; nullopt after the last. Throws PeerError when a
  // sampler reports an error and TimeoutError when no batch arrives in time.
  std::optional<MiniBatch> Next();
  // The next answer in order as received (a MiniBatch or TypedMiniBatch
  // message, as Start was given); nullopt after the last. Errors as Next.
  std::optional<net::Message> NextMessage();
  // While waiting for batches, `check` runs about twice a second; a
  // non-empty return (e.g. "gnn-sampler 0 was killed by signal 9") ends
  // the wait at once with a PeerError carrying it, instead of a timeout.
  void SetLivenessCheck(std::function<std::string()> check) { check_ = std::move(check); }
  // Tells every sampler to exit.
  void Stop();
  uint64_t bytes_received() const { return bytes_received_; }
  // The most batches one sampler had in flight at once so far.
  int max_in_flight() const { return max_in_flight_; }

 private:
  // Whether sampler s may be given one more batch now.
  bool HasCredit(int s) const;
  void Begin(size_t count);
  net::Message EncodeNext();
  void Dispatch();
  bool SameJob(const net::Message& hello) const;
  void ReceiveOne(int timeout_ms);

  zmq::context_t ctx_;
  net::Authenticator auth_;  // before sock_ binds, gone after it closes
  zmq::socket_t sock_;
  std::string endpoint_;
  int num_samplers_;
  net::Hello hello_;
  int prefetch_;
  int timeout_ms_;
  std::vector<zmq::message_t> identities_;
  std::vector<int> in_flight_;
  std::vector<uint64_t> held_bytes_;  // [sampler] replies received, not yet returned
  uint64_t window_bytes_;
  uint64_t largest_reply_ = 0;  // 0: none seen yet
  int max_in_flight_ = 0;
  std::vector<net::SeedBatch> batches_;     // plain Start's
  std::vector<net::TypedSeedBatch> typed_;  // typed Start's
  net::MsgType reply_type_ = net::MsgType::kMiniBatch;
  size_t count_ = 0;
  std::function<void(net::SeedBatch*)> prepare_;
  size_t next_dispatch_ = 0;
  int64_t next_return_ = 0;
  struct Ready {
    net::Message message;
    int sampler;
    uint64_t bytes;
  };
  std::map<int64_t, Ready> ready_;  // answers not yet returned, by batch
  uint64_t bytes_received_ = 0;
  bool stopped_ = false;
  std::function<std::string()> check_;
};

// A trainer's gnn-sampler processes: one per launch, spawned as children
// that die with the trainer (PR_SET_PDEATHSIG), connected to one
// SamplerPool, reaped (SIGKILL after 5 s) on destruction. Errors while
// waiting name a sampler that exited ("gnn-sampler 1 was killed by signal
// 9"). Not thread-safe.
class SamplerProcesses {
 public:
  // Binds the pool on loopback, spawns `binary` with each launch (its
  // trainer_endpoint set to the pool's) and waits up to timeout_ms for
  // every hello: PeerError naming a sampler that exited meanwhile.
  SamplerProcesses(const std::string& binary, std::vector<SamplerLaunch> launches,
                   const net::Hello& hello, int prefetch_per_sampler, int timeout_ms,
                   const net::JobKeys& keys);
  ~SamplerProcesses();
  SamplerPool& pool() { return *pool_; }
  // The pool's Next and NextMessage, an exited sampler named in their errors.
  std::optional<MiniBatch> Next();
  std::optional<net::Message> NextMessage();

 private:
  // "" while every sampler runs; else which one exited and how.
  std::string Exited();
  template <typename F>
  auto Named(F f) -> decltype(f());

  std::unique_ptr<SamplerPool> pool_;
  std::vector<pid_t> pids_;
};

}  // namespace gnn
