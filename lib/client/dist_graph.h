// The client side of the data plane (like DGL's DistGraph): the partition
// book, one connection per server, concurrent requests to every owner, and
// the local machine's partition read straight from shared memory.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "client/sum_plans.h"
#include "common/memory.h"
#include "net/channel.h"
#include "net/ip_config.h"
#include "net/typed_messages.h"
#include "partition/config.h"
#include "partition/hetero_local.h"
#include "sampling/block.h"
#include "sampling/typed_sampler.h"
#include "store/shm_partition.h"

namespace gnn {

class ShmPartition;
class ShmRowCache;
class EdgeExclusion;
struct CscView;

// --cache_mb -1: the share of the whole graph's feature bytes a machine's
// hot-row cache may take.
constexpr double kAutoCacheShare = 0.05;

struct DistGraphOptions {
  std::string ip_config;
  std::string part_config;
  int num_servers = 1;        // servers per machine (backups round-robin)
  int local_machine_id = -1;  // >= 0: this machine; its partition is read from shared memory
  std::string job_id;
  net::JobKeys keys;                         // the job's CURVE keys (or Insecure())
  std::chrono::milliseconds timeout{30000};  // per request round
  std::chrono::milliseconds attach_timeout{kDefaultAttachTimeoutMs};
  // MakeBatch's last hop sampled and aggregated at the owners
  // (SampleAggregate) instead of shipping neighbour lists and rows.
  bool aggregate_at_owner = true;
  // With aggregate_at_owner: the sampled neighbours a destination's owner
  // does not hold are summed at their own owners too (PullSums: one row per
  // destination and owner crosses the network), not pulled as rows; those
  // in the local partition or the hot-row cache are summed here either way.
  bool remote_sums = true;
  // Whether the sampler (gnn-sampler, the trainer's sampling thread) packs
  // a batch's layer 0 as [destination rows | their neighbours' means]
  // (MiniBatch::input_means, PackInputMeans) for a first layer that
  // aggregates by the mean; false: every input row as sampled (GAT, GCN).
  bool pack_input_means = true;
  // Samples carry the sampled edges' data (the partitions' edge features:
  // Block::edge_data); the servers send it with each sample. Needs a
  // config with edge features. MakeBatch then ships rows (no sums at the
  // owner, no input means).
  bool edge_data = false;
  // How rows and partial sums from servers travel (--wire_dtype).
  net::RowFormat wire_format = net::RowFormat::kFloat32;
  // How the batches' ids, offsets, counts and labels travel (--wire_ids):
  // varints ask for ids sorted by owner and send 1-3 bytes an id.
  net::IdCoding id_coding = net::IdCoding::kInt64;
  // The machine's hot-row cache (store/row_cache.h, --cache_mb): at most
  // this many bytes of other partitions' rows, the ones HotRemoteRows ranks
  // first for batches of the local training nodes with fan-outs
  // `cache_fanouts` (the model's --fan_out), once per machine in shared
  // memory. 0: none; -1: kAutoCacheShare of the graph's feature
  // bytes. Needs local_machine_id >= 0.
  int64_t cache_bytes = 0;
  std::vector<int> cache_fanouts = {-1};
  // How long a process waits for another one of its machine to build the
  // cache.
  std::chrono::milliseconds cache_wait{600000};
  // Tests only: explicit server endpoints [partition][server] instead of
  // ip_config's addresses (local_machine_id is then the local partition).
  std::vector<std::vector<std::string>> endpoints;
  // Tests only: opens the connection to one server, given its endpoint and
  // its name for errors (unset: a net::Connection over `keys`). Servers in
  // the test's own process go here (tests/support/in_process_owners.h): the
  // planners then run without sockets.
  std::function<std::unique_ptr<net::Peer>(const std::string& endpoint, const std::string& name)>
      connect;

  // ConfigError naming the first bad field (DistGraph's constructor calls it).
  void Validate() const;
};

// Not thread-safe: one DistGraph per thread (each owns its sockets).
class DistGraph {
 public:
  // Connects to every server and checks the handshake (graph name and
  // partition-config checksum); a mismatch or silence throws naming the peer.
  explicit DistGraph(const DistGraphOptions& options);
  ~DistGraph();

  const PartitionConfig& config() const { return config_; }
  int64_t feature_dim() const { return config_.feature_dim; }

  // Sampled in-neighbours of `seeds` (any owners): CSR over seeds with global
  // ids, exactly as SampleNeighbors would return on one partition holding all
  // of them. Requests to all owners run concurrently.
  // With options.edge_data and `edge_rows`, each sampled edge's data
  // [indices.size(), config().edge_feature_dim] too.
  void SampleNeighbors(const std::vector<int64_t>& seeds, int fanout, bool replace,
                       uint64_t rng_seed, std::vector<int64_t>* indptr,
                       std::vector<int64_t>* indices, std::vector<float>* edge_rows = nullptr);
  // The width of the edge data samples carry (0 without options.edge_data).
  int64_t edge_dim() const { return options_.edge_data ? config_.edge_feature_dim : 0; }

  // Same contract as the standalone SampleBlocks (layer l draws with
  // MixSeed(rng_seed, l)); `exclude` filters every layer as there.
  // Layers `fanouts.size() - 1` down to `lowest` (blocks below it stay empty).
  std::vector<Block> SampleBlocks(const std::vector<int64_t>& seeds,
                                  const std::vector<int>& fanouts, bool replace, uint64_t rng_seed,
                                  const EdgeExclusion* exclude = nullptr, int lowest = 0);

  // Sample and aggregate at the owners (sampling/owner_aggregate.h): for
  // destinations `dsts` (any owners), out [2n, feature_dim] = their rows,
  // then the means of their sampled in-neighbours' rows, the neighbours
  // being those SampleNeighbors(dsts, fanout, replace, rng_seed) returns.
  // Each owner sums the rows it holds; the neighbours it does not hold come
  // from the local partition or the hot-row cache, and the rest from their
  // owners: with options.remote_sums as per-destination sums (PullSums),
  // else as rows (one PullFeatures). Requests to all owners run
  // concurrently, in pieces of about 4 MB.
  // With `exclude`, the sampled pairs in it are left out of the means (as
  // SampleBlocks' Filter leaves them out of a block).
  void SampleAggregate(const std::vector<int64_t>& dsts, int fanout, bool replace,
                       uint64_t rng_seed, NoInitVector<float>* out,
                       const EdgeExclusion* exclude = nullptr);

  // Feature rows [ids.size(), feature_dim] and labels of any nodes. A
  // sparse-feature graph's rows travel sparse (PullSparseFeatures) and are
  // made dense here.
  void PullFeatures(const std::vector<int64_t>& ids, NoInitVector<float>* out);
  // Full-neighbour inference: pulls the feature rows of `ids` (nodes of
  // other partitions, any order, repeats allowed) once and keeps them here
  // until ReleaseRows. PullFeatures takes held rows from here: a range's
  // first layer then moves each row it reads across the network once, not
  // once per batch that reads it. Dense rows only.
  void HoldRows(const std::vector<int64_t>& ids);
  void ReleaseRows();
  int64_t num_held_rows() const { return static_cast<int64_t>(held_ids_.size()); }
  // A sparse-feature graph (sparse_rows()): rows [ids.size(), feature_dim]
  // as stored, from shared memory or their owners (PullSparseRows, in
  // options.wire_format and id_coding); values kept when any row has them.
  void PullSparseFeatures(const std::vector<int64_t>& ids, SparseRows* out);
  // Whether the graph's node features are CSR rows (homogeneous, config
  // feature_format "sparse"): batches then carry them sparse
  // (MiniBatch::sparse), nothing is aggregated at the owners, and the
  // hot-row cache holds CSR rows (its budget counts rows at the graph's
  // average stored entries; rows denser than average take more).
  bool sparse_rows() const { return !config_.hetero() && config_.sparse_features; }
  void PullLabels(const std::vector<int64_t>& ids, std::vector<int64_t>* out);
  // A multi-label or regression graph's label rows [ids.size(), label_width]
  // (config label_kind), from shared memory or the owners (PullTargets).
  void PullTargets(const std::vector<int64_t>& ids, std::vector<float>* out);
  // Pings every connected server (the other partitions' servers; the
  // local partition is read from shared memory); throws PeerError or
  // TimeoutError naming the first that does not answer in time.
  void Ping();
  // The nodes' ids in the input dataset (their partitions' orig_nids).
  void PullOrigIds(const std::vector<int64_t>& ids, std::vector<int64_t>* out);

  // Nodes of `mask` (0 train, 1 valid, 2 test) at positions [begin, end) of
  // the global id-ordered list of such nodes, like DGL's node_split with
  // force_even: rank r of w takes [r*T/w, (r+1)*T/w), mostly its own
  // partition's nodes. Uses the config's per-partition counts; local nodes
  // come from shared memory, others from their servers.
  std::vector<int64_t> SplitNodes(int mask, int64_t begin, int64_t end);
  // Number of nodes of `mask` in the whole graph (from the config).
  int64_t CountNodes(int mask) const;

  // Seeds -> blocks, input features and seed labels: one mini-batch. With
  // options.aggregate_at_owner, layer 0 is sampled and aggregated at the
  // owners (each told the `exclude` pairs of its destinations): the batch
  // is in MiniBatch::input_means form and blocks[0] holds its destinations
  // only (no edges), which is all the first layer reads.
  MiniBatch MakeBatch(const std::vector<int64_t>& seeds, const std::vector<int>& fanouts,
                      bool replace, uint64_t rng_seed, const EdgeExclusion* exclude = nullptr);
  // A batch MakeBatch made, done with: its row buffer serves the next
  // batch (a server's batches take buffers of about the same size over and
  // over; fresh ones are pages the kernel must zero, a sixth of a loaded
  // gnn-serve's time). From the thread that calls MakeBatch.
  void Recycle(MiniBatch&& mb);

  // The local partition's in-edges (from shared memory) into *out; false
  // without a local partition. The view is valid while this DistGraph lives.
  bool LocalCsc(CscView* out) const;
  // The local partition's arrays in shared memory (masks, label rows); null
  // when this process has none.
  const PartitionView* LocalView() const;

  // DistGraphOptions::aggregate_at_owner, switched (benchmarks compare both).
  void SetAggregateAtOwner(bool on) { options_.aggregate_at_owner = on; }
  // DistGraphOptions::remote_sums, switched (benchmarks compare both).
  void SetRemoteSums(bool on) { options_.remote_sums = on; }
  // DistGraphOptions::edge_data, switched (a model file read after
  // connecting says it weighs messages); ConfigError without edge data.
  void SetEdgeData(bool on);

  // Bytes sent and received over sockets so far (local reads excluded).
  uint64_t wire_bytes() const { return wire_bytes_; }
  // Rows of other partitions asked for so far (PullFeatures, and so every
  // batch and evaluation), and how many of them the hot-row cache held.
  uint64_t cache_lookups() const { return cache_lookups_; }
  uint64_t cache_hits() const { return cache_hits_; }
  // The machine's hot-row cache, or null (no budget, no local partition).
  const ShmRowCache* row_cache() const { return cache_.get(); }
  // A typed graph's hot-row cache of node type `ntype`, or nullptr.
  const ShmRowCache* typed_row_cache(int ntype) const {
    return ntype >= 0 && static_cast<size_t>(ntype) < typed_caches_.size()
               ? typed_caches_[static_cast<size_t>(ntype)].get()
               : nullptr;
  }

  // Heterogeneous graphs (dist_graph_typed.cc; this machine's partition
  // read in place from shared memory, the others over their sockets; the
  // embedding rows always from their servers). SampleTypedBlocks has the contract of
  // the standalone SampleTypedBlocks (fanouts[layer][relation]).
  std::vector<Block> SampleTypedBlocks(const std::vector<int64_t>& seeds,
                                       const std::vector<std::vector<int>>& fanouts, bool replace,
                                       uint64_t rng_seed, const EdgeExclusion* exclude = nullptr);
  // Seeds -> one heterogeneous mini-batch: typed blocks, block 0's sources
  // grouped by node type with every featured type's rows, the seeds'
  // labels, and the bytes its making moved (wire_bytes). With
  // options.aggregate_at_owner the batch is in HeteroBatch::input_means
  // form: block 0's destinations' own rows, and each featured relation's
  // means summed where the sources live (TypedGroupSums). Embedding rows of
  // featureless types are not in it: they change every step, so the
  // trainer pulls them when it uses the batch. The in-process trainer and
  // gnn-sampler both make their batches here (the same batch for the same
  // arguments). `exclude` (a typed edge task's batch) filters every layer
  // as in SampleTypedBlocks.
  HeteroBatch MakeTypedBatch(const std::vector<int64_t>& seeds,
                             const std::vector<std::vector<int>>& fanouts, bool replace,
                             uint64_t rng_seed, const EdgeExclusion* exclude = nullptr);
  // Feature rows [ids.size(), dim of type ntype] of nodes of type `ntype`.
  void PullTyped(int ntype, const std::vector<int64_t>& ids, std::vector<float>* out);
  // Sums [groups, dim] of groups of rows of node type `ntype`: group k is
  // ids[group_ptr[k], group_ptr[k + 1]); the rows are the type's features,
  // or with `spec` (spec->ntype == ntype) its embedding table's rows, in
  // float32. Rows this machine holds (features: its partition, the hot-row
  // cache) are added here; of the others, each owner sums its share of a
  // group (one PullTypedSums per owner and piece of about 4 MB), unless a
  // group has one row there or the owner's groups name no more distinct
  // rows than they are (or options.remote_sums is off): those rows are
  // pulled, each once. All requests are in flight at once. Feature rows
  // read as rows (cached or pulled) count as cache lookups; rows summed
  // at their owner do not.
  void TypedGroupSums(int ntype, const net::EmbSpec* spec, const std::vector<int64_t>& ids,
                      const std::vector<int64_t>& group_ptr, std::vector<float>* out);
  // Embedding rows of featureless type spec.ntype (they live at server 0 of
  // the machine whose index is their partition), a sparse optimizer step
  // for rows with their (combined) gradients, and a partition's whole table
  // with its optimizer state as bytes, and back.
  // The rows travel in options.wire_format, or with `exact` in float32.
  void EmbPull(const net::EmbSpec& spec, const std::vector<int64_t>& ids, std::vector<float>* out,
               bool exact = false);
  void EmbPush(const net::EmbSpec& spec, const std::vector<int64_t>& ids,
               const std::vector<float>& grads);
  std::string EmbSave(const net::EmbSpec& spec, int part);
  void EmbRestore(const net::EmbSpec& spec, int part, const std::string& bytes);

 private:
  // The server that holds partition `part`'s embedding rows.
  net::Peer& EmbConn(int part) { return *conns_[part].front(); }
  // Rows per embedding request: about 4 MB of floats.
  static size_t EmbChunk(int64_t dim);

  net::Peer& Pick(int part);
  // The connection to one server (options.connect, or a socket).
  std::unique_ptr<net::Peer> Connect(const DistGraphOptions& o, const std::string& endpoint,
                                     const std::string& name);
  // PullLabels, or with `orig_ids` PullOrigIds.
  void PullNodeInts(const std::vector<int64_t>& ids, bool orig_ids, std::vector<int64_t>* out);
  // Opens (or builds) the machine's hot-row cache (constructor).
  void OpenRowCache();
  // The same for a typed graph: one cache per node type with features
  // (typed_caches_[t]), the other partitions' rows of that type that the
  // local partition's in-edges name most often, each up to the budget's
  // share of that type's feature bytes.
  void OpenTypedRowCaches();
  // Maps this machine's heterogeneous partition (hetero_part_) from the
  // job's shared memory and points hetero_csc_ at it.
  void AttachTyped(const DistGraphOptions& o);
  // A SampleAggregate request in flight: destinations dsts[slice[j]] at
  // their owner `part`.
  struct AggregateCall {
    net::Peer* peer;
    uint64_t rid;
    int part;
    std::vector<size_t> slice;
    net::SampleAggregateRequest asked;
  };
  // SampleAggregate's requests to the other partitions' owners (pos:
  // ByOwner(dsts); each owner's destinations whose own row the hot-row
  // cache holds are moved last, and not asked for), in pieces of about
  // 4 MB of reply, all started.
  std::vector<AggregateCall> StartAggregates(const std::vector<int64_t>& dsts,
                                             std::vector<std::vector<size_t>>* pos, int fanout,
                                             bool replace, uint64_t rng_seed,
                                             const EdgeExclusion* exclude,
                                             std::chrono::steady_clock::time_point deadline);
  // TypedGroupSums' first step: adds the rows this machine holds (its
  // partition's rows of type `ntype` at `local`, whose first id is
  // local_first; the hot-row cache's) into `out`, and returns the others
  // as each owner's share of each group.
  std::vector<std::vector<TypedShare>> TypedShares(int ntype, const net::EmbSpec* spec,
                                                   const std::vector<int64_t>& ids,
                                                   const std::vector<int64_t>& group_ptr,
                                                   const float* local, int64_t local_first,
                                                   const ShmRowCache* cache,
                                                   std::vector<float>* out);
  // SampleAggregate's last step with options.remote_sums: adds to sums[i]
  // (i < n) the rows of destination i's neighbours unique[row_of[k]] for k
  // in [rptr[i], rptr[i + 1]) and divides by counts[i]. Rows this machine
  // holds (partition, cache) and a destination's only neighbour at an
  // owner are pulled (each once); more than one at an owner are summed
  // there (PullSums).
  void FinishRemoteSums(int64_t n, const std::vector<int64_t>& counts,
                        const std::vector<int64_t>& rptr, const std::vector<int64_t>& unique,
                        const std::vector<int64_t>& row_of, float* sums);
  // Copies the rows of ids[i] that `cache` holds (null: none) into out +
  // i * dim and drops those positions from `pos` (per partition; partition
  // `skip`, the local one, untouched), counting lookups and hits.
  void TakeCached(const ShmRowCache* cache, const std::vector<int64_t>& ids, int skip, int64_t dim,
                  std::vector<std::vector<size_t>>* pos, float* out);
  // Splits positions of `ids` by owning partition. With varint ids the
  // other partitions' positions are in increasing order of their ids
  // (requests list them so: each a small difference from the last).
  std::vector<std::vector<size_t>> ByOwner(const std::vector<int64_t>& ids) const;
  // Frame bytes of a request about to be sent (what wire_bytes counts).
  uint64_t Sending(const net::Message& request);

  DistGraphOptions options_;
  PartitionConfig config_;
  std::string config_sha_;
  zmq::context_t ctx_;
  std::vector<std::vector<std::unique_ptr<net::Peer>>> conns_;  // [part][server]
  std::vector<size_t> next_server_;
  std::unique_ptr<ShmPartition> local_;
  std::unique_ptr<ShmRowCache> cache_;
  int local_part_ = -1;  // the partition read from shared memory (-1: none)
  // Heterogeneous: this machine's partition in its shared memory, sampled
  // and read in place (its servers still answer the embedding rows);
  // hetero_part_ -1: none.
  std::unique_ptr<ShmPartition> hetero_shm_;
  TypedCscView hetero_csc_;
  int hetero_part_ = -1;
  std::vector<std::unique_ptr<ShmRowCache>> typed_caches_;  // [ntype]; null: none
  // Sparse rows: stored entries per row, on average (sizes the requests).
  double avg_row_nnz_ = 0;
  uint64_t wire_bytes_ = 0;
  uint64_t cache_lookups_ = 0;
  uint64_t cache_hits_ = 0;
  // Buffers kept from one batch to the next (Recycle): a batch's input rows,
  // and the rows and sums the first layer's means are made of.
  NoInitVector<float> spare_rows_;
  NoInitVector<float> mean_rows_;
  // HoldRows: the held nodes (sorted) and their rows, in that order.
  std::vector<int64_t> held_ids_;
  NoInitVector<float> held_rows_;
  // The held row of node v, or null.
  const float* FindHeld(int64_t v) const;
  // Copies the held rows of ids[i] into out + i * feature_dim and drops
  // those positions from `pos` (partition `skip`, the local one, untouched).
  void TakeHeld(const std::vector<int64_t>& ids, int skip, std::vector<std::vector<size_t>>* pos,
                float* out) const;
};

}  // namespace gnn
