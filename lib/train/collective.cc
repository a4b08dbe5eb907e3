#include "train/collective.h"

#include <cstring>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "common/error.h"
#include "common/log.h"
#include "net/ip_config.h"
#include "net/kv_store.h"
#include "net/ports.h"

namespace gnn {

using Clock = std::chrono::steady_clock;

namespace {

// c10d's Store interface over the job's rendezvous (net::KvClient), so
// ProcessGroupGloo exchanges its addresses only with the job's trainers.
class RendezvousStore : public c10d::Store {
 public:
  RendezvousStore(const std::string& endpoint, const net::JobKeys& keys, const std::string& where,
                  std::chrono::milliseconds timeout)
      : Store(timeout), client_(endpoint, keys, where) {
    client_.set_timeout(timeout);
  }
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    client_.Set(key, std::string(value.begin(), value.end()));
  }
  std::vector<uint8_t> get(const std::string& key) override {
    const std::string v = client_.Get(key, timeout_);
    return std::vector<uint8_t>(v.begin(), v.end());
  }
  int64_t add(const std::string& key, int64_t value) override { return client_.Add(key, value); }
  bool deleteKey(const std::string& key) override { return client_.Delete(key); }
  bool check(const std::vector<std::string>& keys) override { return client_.Check(keys); }
  int64_t getNumKeys() override { return client_.NumKeys(); }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    const auto deadline = Clock::now() + timeout;
    while (!client_.Check(keys)) {
      if (Clock::now() >= deadline)
        throw TimeoutError("rendezvous: keys not set within the timeout");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  net::KvClient client_;
};

}  // namespace

Collective::Collective(const std::string& master_addr, int master_port, int rank, int world,
                       const std::vector<std::string>& who, const std::string& bind_host,
                       std::chrono::seconds timeout, const net::JobKeys& keys, double bind_retry_s)
    : rank_(rank), world_(world) {
  const std::string where = "the rendezvous at " + master_addr + ":" + std::to_string(master_port);
  // Bound to the master address only (not every interface), and only the
  // job's trainers complete a handshake.
  const std::string endpoint = Endpoint(MachineAddress{master_addr, master_port, 0}, 0);
  if (rank == 0) server_ = std::make_unique<net::KvServer>(endpoint, keys, bind_retry_s);
  const auto timeout_ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  auto store = c10::make_intrusive<RendezvousStore>(endpoint, keys, where, timeout_ms);
  store_ = store;
  store_->set("gnn/arrived/" + std::to_string(rank), std::vector<uint8_t>{1});
  auto deadline = Clock::now() + timeout;
  std::vector<std::string> keys_arrived;
  for (int r = 0; r < world; ++r) keys_arrived.push_back("gnn/arrived/" + std::to_string(r));
  while (!store_->check(keys_arrived)) {
    if (Clock::now() >= deadline) {
      std::string missing;
      for (int r = 0; r < world; ++r) {
        if (!store_->check({keys_arrived[r]})) missing += (missing.empty() ? "" : ", ") + who[r];
      }
      throw TimeoutError(where + ": " + missing + " did not arrive within " +
                         std::to_string(timeout.count()) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto options = c10d::ProcessGroupGloo::Options::create(
      std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(bind_host));
  options->threads = 1;
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("gnn/pg", store_);
  try {
    pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, world, options);
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw PeerError("trainers could not connect for all-reduce: " +
                    what.substr(0, what.find('\n')));
  }
}

Collective::~Collective() = default;

namespace {
void Wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    std::string msg = e.what();
    throw PeerError(std::string(what) + " among trainers failed (a trainer died or timed out): " +
                    msg.substr(0, msg.find('\n')));
  }
}
}  // namespace

int64_t Collective::AllreduceMeanGrads(const std::vector<torch::Tensor>& params,
                                       int64_t bucket_bytes) {
  int64_t total = 0;
  size_t i = 0;
  while (i < params.size()) {
    std::vector<torch::Tensor> grads;
    int64_t bytes = 0;
    while (i < params.size() && (grads.empty() || bytes + params[i].numel() * 4 <= bucket_bytes)) {
      torch::Tensor g = params[i].grad();
      if (!g.defined()) g = torch::zeros_like(params[i]);
      grads.push_back(g);
      bytes += g.numel() * 4;
      ++i;
    }
    std::vector<torch::Tensor> flat = {torch::cat(
        [&] {
          std::vector<torch::Tensor> views;
          for (auto& g : grads) views.push_back(g.reshape({-1}));
          return views;
        }(),
        0)};
    Wait(pg_->allreduce(flat), "all-reduce");
    flat[0].div_(world_);
    int64_t off = 0;
    for (size_t k = 0; k < grads.size(); ++k) {
      torch::Tensor slice = flat[0].slice(0, off, off + grads[k].numel()).view_as(grads[k]);
      size_t idx = i - grads.size() + k;
      if (params[idx].grad().defined()) {
        params[idx].mutable_grad().copy_(slice);
      } else {
        params[idx].mutable_grad() = slice.clone();
      }
      off += grads[k].numel();
    }
    total += bytes;
  }
  return total;
}

std::vector<double> Collective::AllreduceSum(const std::vector<double>& values) {
  std::vector<torch::Tensor> t = {
      torch::tensor(values, torch::TensorOptions().dtype(torch::kFloat64))};
  Wait(pg_->allreduce(t), "all-reduce");
  std::vector<double> out(values.size());
  auto a = t[0].accessor<double, 1>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = a[i];
  return out;
}

torch::Tensor Collective::AllgatherRows(const torch::Tensor& rows) {
  // Gloo's allgather needs equal shapes: share the counts, pad to the max.
  std::vector<double> counts(world_, 0.0);
  counts[rank_] = static_cast<double>(rows.size(0));
  counts = AllreduceSum(counts);
  int64_t max_rows = 0;
  for (double c : counts) max_rows = std::max<int64_t>(max_rows, static_cast<int64_t>(c));
  torch::Tensor padded = torch::zeros({max_rows, rows.size(1)}, rows.options());
  padded.slice(0, 0, rows.size(0)).copy_(rows);
  std::vector<std::vector<torch::Tensor>> out(1);
  for (int r = 0; r < world_; ++r) out[0].push_back(torch::empty_like(padded));
  std::vector<torch::Tensor> in = {padded};
  Wait(pg_->allgather(out, in), "all-gather");
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < world_; ++r) {
    parts.push_back(out[0][r].slice(0, 0, static_cast<int64_t>(counts[r])));
  }
  return torch::cat(parts, 0);
}

void Collective::Broadcast(const std::vector<torch::Tensor>& tensors) {
  for (const auto& t : tensors) {
    std::vector<torch::Tensor> v = {t};
    Wait(pg_->broadcast(v), "broadcast");
  }
}

void Collective::BroadcastBytes(std::string* bytes) {
  torch::Tensor size = torch::tensor({static_cast<int64_t>(bytes->size())}, torch::kInt64);
  Broadcast({size});
  const int64_t n = size.item<int64_t>();
  if (n == 0) {
    bytes->clear();
    return;
  }
  torch::Tensor data = torch::empty({n}, torch::kUInt8);
  if (rank_ == 0) std::memcpy(data.data_ptr(), bytes->data(), static_cast<size_t>(n));
  Broadcast({data});
  if (rank_ != 0) bytes->assign(static_cast<const char*>(data.data_ptr()), static_cast<size_t>(n));
}

void Collective::Barrier() { Wait(pg_->barrier(), "barrier"); }

TrainerGroup JoinTrainers(const TrainOptions& o, const std::vector<MachineAddress>& machines,
                          int num_parts) {
  const int num_machines = static_cast<int>(machines.size());
  if (o.machine_id < 0 || o.machine_id >= num_machines) {
    throw ConfigError("--machine_id " + std::to_string(o.machine_id) + " is not a line of " +
                      o.ip_config);
  }
  if (o.trainer_id < 0 || o.trainer_id >= o.num_trainers) {
    throw ConfigError("--trainer_id must be in [0, --num_trainers)");
  }
  TrainerGroup g;
  g.world = num_machines * o.num_trainers;
  g.rank = o.machine_id * o.num_trainers + o.trainer_id;
  std::vector<std::string> who;
  for (int r = 0; r < g.world; ++r) {
    who.push_back("rank " + std::to_string(r) + " (machine " + std::to_string(r / o.num_trainers) +
                  " trainer " + std::to_string(r % o.num_trainers) + ")");
  }
  g.keys = net::ResolveJobKeys(o.secret_file, o.insecure, o.job_id, "gnn-train");
  const std::string master = o.master_addr.empty() ? machines[0].host : o.master_addr;
  GNN_LOG(kInfo) << "rank " << g.rank << " of " << g.world << ": rendezvous at " << master << ":"
                 << o.master_port;
  g.collective = std::make_unique<Collective>(
      master, o.master_port, g.rank, g.world, who, machines[static_cast<size_t>(o.machine_id)].host,
      o.rendezvous_timeout, g.keys, o.restart > 0 ? kBindRetryS : 0);
  int before = 0;  // machines serving a lower partition
  for (int p = 0; p < MachinePartition(o.machine_id, num_parts); ++p)
    before += static_cast<int>(PartitionMachines(p, num_parts, num_machines).size());
  g.slot = (before + o.machine_id / num_parts) * o.num_trainers + o.trainer_id;
  g.graph.ip_config = o.ip_config;
  g.graph.part_config = o.part_config;
  g.graph.num_servers = o.num_servers;
  g.graph.local_machine_id = o.machine_id;
  g.graph.job_id = o.job_id;
  g.graph.keys = g.keys;
  g.graph.timeout = o.request_timeout;
  g.graph.attach_timeout = o.request_timeout;
  g.graph.aggregate_at_owner = o.aggregate_at_owner;
  g.graph.wire_format = net::ParseRowFormat(o.wire_dtype, "--wire_dtype");
  g.graph.cache_bytes = o.cache_mb < 0 ? -1 : o.cache_mb << 20;
  if (!o.Rgcn()) g.graph.cache_fanouts = o.Fanouts();
  return g;
}

}  // namespace gnn
