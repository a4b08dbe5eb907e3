#include "train/cluster/collective.h"

#include <cstring>
#include <thread>

#include "common/error.h"
#include "common/log.h"
#include "common/process.h"
#include "common/sha256.h"
#include "net/ip_config.h"
#include "net/kv_store.h"
#include "net/mesh.h"
#include "net/ports.h"

namespace gnn {

using Clock = std::chrono::steady_clock;

namespace {

std::string Bytes(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous().cpu();  // a GPU tensor is copied to the host
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

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
  store_endpoint_ = endpoint;
  store_where_ = where;
  keys_ = keys;
  timeout_ = timeout_ms;
  store_ = std::make_unique<net::KvClient>(endpoint, keys, where);
  store_->set_timeout(timeout_ms);
  // The mesh's listening socket first: its address is what a rank posts.
  mesh_ = std::make_unique<net::Mesh>(rank, world, bind_host, keys, who, timeout_ms);
  store_->Set("gnn/mesh/" + std::to_string(rank), mesh_->endpoint());
  auto deadline = Clock::now() + timeout;
  std::vector<std::string> posted;
  for (int r = 0; r < world; ++r) posted.push_back("gnn/mesh/" + std::to_string(r));
  while (!store_->Check(posted)) {
    if (Clock::now() >= deadline) {
      std::string missing;
      for (int r = 0; r < world; ++r) {
        if (!store_->Check({posted[r]})) missing += (missing.empty() ? "" : ", ") + who[r];
      }
      throw TimeoutError(where + ": " + missing + " did not arrive within " +
                         std::to_string(timeout.count()) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::vector<std::string> endpoints;
  for (int r = 0; r < world; ++r) endpoints.push_back(store_->Get(posted[r], timeout_ms));
  mesh_->Connect(endpoints);
  Barrier();  // every connection works before the first real collective
}

Collective::~Collective() = default;

void Collective::EnableNccl() {
  if (!nccl_) {
    nccl_ =
        std::make_unique<NcclGroup>(store_endpoint_, keys_, store_where_, rank_, world_, timeout_);
  }
}

std::vector<std::string> Collective::Gather(const std::string& mine, const char* what) {
  try {
    return mesh_->Allgather(mine);
  } catch (const Error& e) {
    throw PeerError(std::string(what) +
                    " among trainers failed (a trainer died or timed out): " + e.what());
  }
}

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
    std::vector<torch::Tensor> views;
    for (auto& g : grads) views.push_back(g.reshape({-1}));
    torch::Tensor flat = torch::cat(views, 0);
    if (nccl_ && flat.is_cuda()) {  // on the GPUs, with NCCL
      nccl_->AllreduceMean(flat);
      int64_t at = 0;
      for (size_t k = 0; k < grads.size(); ++k) {
        torch::Tensor slice = flat.slice(0, at, at + grads[k].numel()).view_as(grads[k]);
        const size_t idx = i - grads.size() + k;
        if (params[idx].grad().defined()) {
          params[idx].mutable_grad().copy_(slice);
        } else {
          params[idx].mutable_grad() = slice.clone();
        }
        at += grads[k].numel();
      }
      total += bytes;
      continue;
    }
    const std::vector<std::string> all = Gather(Bytes(flat), "all-reduce");
    // Summed in rank order on every rank, on the host: the same bits
    // everywhere, whichever device the gradients are on.
    torch::Tensor sum = torch::zeros({flat.numel()}, torch::kFloat32);
    for (const std::string& part : all) {
      if (part.size() != static_cast<size_t>(flat.numel() * 4)) {
        throw PeerError("all-reduce among trainers: a trainer sent " + std::to_string(part.size()) +
                        " bytes of gradients, expected " + std::to_string(flat.numel() * 4));
      }
      sum.add_(torch::from_blob(const_cast<char*>(part.data()), {flat.numel()}, torch::kFloat32));
    }
    sum.div_(world_);
    int64_t off = 0;
    for (size_t k = 0; k < grads.size(); ++k) {
      torch::Tensor slice = sum.slice(0, off, off + grads[k].numel()).view_as(grads[k]);
      size_t idx = i - grads.size() + k;
      if (params[idx].grad().defined()) {
        params[idx].mutable_grad().copy_(slice);
      } else {
        params[idx].mutable_grad() = slice.to(params[idx].device(), false, /*copy=*/true);
      }
      off += grads[k].numel();
    }
    total += bytes;
  }
  return total;
}

std::vector<double> Collective::AllreduceSum(const std::vector<double>& values) {
  const std::string mine(reinterpret_cast<const char*>(values.data()),
                         values.size() * sizeof(double));
  std::vector<double> out(values.size(), 0.0);
  for (const std::string& part : Gather(mine, "all-reduce")) {
    if (part.size() != mine.size()) throw PeerError("all-reduce among trainers: sizes differ");
    const double* v = reinterpret_cast<const double*>(part.data());
    for (size_t i = 0; i < out.size(); ++i) out[i] += v[i];
  }
  return out;
}

torch::Tensor Collective::AllgatherRows(const torch::Tensor& rows) {
  const int64_t cols = rows.size(1);
  const int64_t row_bytes = cols * static_cast<int64_t>(rows.element_size());
  const std::vector<std::string> all = Gather(Bytes(rows), "all-gather");
  int64_t total = 0;
  for (const std::string& part : all) {
    if (row_bytes == 0 || part.size() % static_cast<size_t>(row_bytes) != 0) {
      throw PeerError("all-gather among trainers: a trainer sent rows of another width");
    }
    total += static_cast<int64_t>(part.size()) / row_bytes;
  }
  torch::Tensor out = torch::empty({total, cols}, rows.options());
  char* dst = static_cast<char*>(out.data_ptr());
  for (const std::string& part : all) {
    std::memcpy(dst, part.data(), part.size());
    dst += part.size();
  }
  return out;
}

std::vector<std::string> Collective::AllgatherBytes(const std::string& mine) {
  return Gather(mine, "all-gather");
}

std::vector<std::string> Collective::Alltoall(const std::vector<std::string>& to) {
  try {
    return mesh_->Alltoall(to);
  } catch (const Error& e) {
    throw PeerError(
        std::string("all-to-all among trainers failed (a trainer died or timed out): ") + e.what());
  }
}

void Collective::Broadcast(const std::vector<torch::Tensor>& tensors) {
  for (const auto& t : tensors) {
    const std::string root = Gather(rank_ == 0 ? Bytes(t) : std::string(), "broadcast")[0];
    if (root.size() != static_cast<size_t>(t.numel() * t.element_size())) {
      throw PeerError("broadcast among trainers: rank 0 sent " + std::to_string(root.size()) +
                      " bytes for a tensor of " + std::to_string(t.numel() * t.element_size()));
    }
    if (rank_ != 0) {
      torch::Tensor src = torch::from_blob(const_cast<char*>(root.data()), t.sizes(),
                                           t.options().device(torch::kCPU));
      t.copy_(src);
    }
  }
}

void Collective::BroadcastBytes(std::string* bytes) {
  *bytes = Gather(rank_ == 0 ? *bytes : std::string(), "broadcast")[0];
}

void Collective::Barrier() { Gather(std::string(), "barrier"); }

DistGraphOptions GraphOptionsOf(const TrainOptions& o, const net::JobKeys& keys) {
  DistGraphOptions g;
  g.ip_config = o.ip_config;
  g.part_config = o.part_config;
  g.num_servers = o.num_servers;
  g.local_machine_id = o.machine_id;
  g.job_id = o.job_id;
  g.keys = keys;
  g.timeout = o.request_timeout;
  g.attach_timeout = o.request_timeout;
  g.aggregate_at_owner = o.AggregatesAtOwner();
  g.remote_sums = o.remote_sums;
  g.pack_input_means = o.TakesMeans();
  g.edge_data = o.ReadsEdgeData();
  g.wire_format = o.wire.row_format;
  g.id_coding = o.wire.id_coding;
  g.cache_bytes = o.cache_mb < 0 ? -1 : o.cache_mb << 20;
  if (!o.Typed()) g.cache_fanouts = o.Fanouts();
  return g;
}

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
  g.graph = GraphOptionsOf(o, g.keys);
  return g;
}

std::unique_ptr<SamplerProcesses> StartSamplers(const TrainOptions& o,
                                                const PartitionConfig& config,
                                                const TrainerGroup& group) {
  std::vector<SamplerLaunch> launches(static_cast<size_t>(o.num_samplers));
  for (int s = 0; s < o.num_samplers; ++s) {
    SamplerLaunch& launch = launches[static_cast<size_t>(s)];
    launch.ip_config = o.ip_config;
    launch.part_config = o.part_config;
    launch.machine_id = o.machine_id;
    launch.num_servers = o.num_servers;
    launch.trainer_id = group.rank;
    launch.sampler_id = s;
    launch.job_id = o.job_id;
    launch.timeout = o.request_timeout;
    launch.secret_file = o.secret_file;
    launch.insecure = o.insecure;
    launch.aggregate_at_owner = o.AggregatesAtOwner();
    launch.remote_sums = o.remote_sums;
    launch.input_means = o.TakesMeans();
    launch.edge_data = o.ReadsEdgeData();
    launch.wire = o.wire;
    // The trainer's hot-row cache (typed graphs: one per featured type,
    // ranked without the fan-outs, whose typed form names relations), so
    // that a batch's group sums take the same rows from it as in-process.
    launch.cache_mb = o.cache_mb;
    launch.cache_fan_out = o.Typed() ? "-1" : o.fan_out;
  }
  const net::Hello hello{config.graph_name, Sha256File(o.part_config), o.job_id};
  return std::make_unique<SamplerProcesses>(SelfDir() + "/gnn-sampler", std::move(launches), hello,
                                            o.prefetch, static_cast<int>(o.request_timeout.count()),
                                            group.keys);
}

}  // namespace gnn
