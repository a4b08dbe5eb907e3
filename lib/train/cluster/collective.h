// Collectives among trainers: a rendezvous store served by rank 0 on the
// master address only, over CURVE with the job's keys (net/kv_store; it
// names who is missing on timeout), where each rank posts the address of
// its end of the trainers' mesh (net/mesh.h: CURVE sockets with the job's
// keys, so gradients, evaluation rows and checkpoints are encrypted and
// only the job's trainers take part). All-reduce, all-gather and broadcast
// are all-gathers over the mesh; sums run in rank order on every rank, so
// every rank gets the same bits. Every call blocks with the group's
// timeout.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "client/dist_graph.h"
#include "client/sampler_service.h"
#include "net/ip_config.h"
#include "net/security.h"
#include "train/cluster/nccl_group.h"
#include "train/options/train_options.h"

namespace gnn {

namespace net {
class KvServer;
class KvClient;
class Mesh;
}  // namespace net

class Collective {
 public:
  // `who[r]` describes rank r in errors ("machine 1 trainer 0"). `bind_host`
  // is this rank's address for the mesh's connections. Throws TimeoutError
  // naming the ranks that did not arrive within `timeout`. Rank 0 waits up
  // to `bind_retry_s` for a busy master port (a restarted job's rendezvous
  // may start while the one it replaces is still stopping).
  Collective(const std::string& master_addr, int master_port, int rank, int world,
             const std::vector<std::string>& who, const std::string& bind_host,
             std::chrono::seconds timeout, const net::JobKeys& keys, double bind_retry_s = 0);
  ~Collective();

  int rank() const { return rank_; }
  int world() const { return world_; }

  // Averages the gradients of `params` across ranks, packed into flat
  // buckets of at most bucket_bytes so small tensors share a round trip.
  // Returns the bytes all-reduced.
  int64_t AllreduceMeanGrads(const std::vector<torch::Tensor>& params,
                             int64_t bucket_bytes = 32 << 20);
  // Sum of `values` over ranks (float64).
  std::vector<double> AllreduceSum(const std::vector<double>& values);
  // Rows of every rank concatenated in rank order ([sum rows, cols]; any
  // dtype).
  torch::Tensor AllgatherRows(const torch::Tensor& rows);
  // Every rank's bytes, in rank order.
  std::vector<std::string> AllgatherBytes(const std::string& mine);
  // to[r] to rank r; what each rank sent this one, in rank order.
  std::vector<std::string> Alltoall(const std::vector<std::string>& to);
  // Overwrites `tensors` with rank 0's values.
  void Broadcast(const std::vector<torch::Tensor>& tensors);
  // Overwrites `bytes` with rank 0's.
  void BroadcastBytes(std::string* bytes);
  void Barrier();
  // GPU gradients: from now on AllreduceMeanGrads sums CUDA gradients with
  // NCCL (train/nccl_group), set up through this rendezvous. A CUDA build
  // only (ConfigError otherwise).
  void EnableNccl();

 private:
  int rank_, world_;
  // Every rank's buffer through the mesh; a failure is a PeerError
  // naming `what`.
  std::vector<std::string> Gather(const std::string& mine, const char* what);

  std::unique_ptr<net::KvServer> server_;  // rank 0 only
  std::unique_ptr<net::KvClient> store_;
  std::string store_endpoint_, store_where_;
  net::JobKeys keys_;
  std::chrono::milliseconds timeout_{0};
  std::unique_ptr<NcclGroup> nccl_;
  std::unique_ptr<net::Mesh> mesh_;
};

// The trainers of a distributed job: rank = machine_id * num_trainers +
// trainer_id of world = machines * num_trainers, the job's keys, and the
// collective joined (rendezvous at machine 0, or --master_addr; a
// restarted run waits for a busy master port). ConfigError for a machine
// or trainer id out of range.
struct TrainerGroup {
  int rank = 0, world = 1;
  // node_split's slot (force_even: slot s takes [s*T/W, (s+1)*T/W) of the
  // id-ordered nodes): slots follow partitions (every trainer of the
  // machines serving partition 0 first, ...), so with one machine per
  // partition the slot is the rank and a share is mostly its own partition.
  int slot = 0;
  net::JobKeys keys;
  std::unique_ptr<Collective> collective;
  DistGraphOptions graph;  // how this trainer reaches the servers
};
TrainerGroup JoinTrainers(const TrainOptions& o, const std::vector<MachineAddress>& machines,
                          int num_parts);
// How a process of the job reaches its servers (a trainer's DistGraph,
// gnn-serve's): the job's machines, keys, timeouts and wire, the owners'
// aggregation where o's model takes means, the machine's hot-row cache
// ranked for o's fan-outs. The one place these settings become
// DistGraphOptions.
DistGraphOptions GraphOptionsOf(const TrainOptions& o, const net::JobKeys& keys);

// This trainer's o.num_samplers gnn-sampler processes (the binary beside
// gnn-train), each launched with the job's settings and this trainer's
// rank; connected when it returns. GraphSAGE-like models get the owners'
// aggregation and input means where TrainOptions asks for them, typed
// models neither (nor the hot-row cache: their partitions have none).
std::unique_ptr<SamplerProcesses> StartSamplers(const TrainOptions& o,
                                                const PartitionConfig& config,
                                                const TrainerGroup& group);

}  // namespace gnn
