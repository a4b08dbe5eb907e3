// Prefetching mini-batch loader for one partition (standalone mode): worker
// threads sample and gather batches k+1..k+P while the trainer uses batch k.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/random.h"
#include "common/sparse_rows.h"
#include "sampling/block.h"
#include "sampling/sampler.h"

namespace gnn {

struct LoaderOptions {
  std::vector<int> fanouts;  // per layer, DGL order
  int64_t batch_size = 1000;
  bool replace = false;
  bool shuffle = true;
  bool drop_last = false;
  int num_workers = 1;  // sampling threads (each batch is sampled by one worker)
  int prefetch = 2;     // batches ready ahead of the consumer (bound on memory)
  uint64_t seed = 0;
  // Link prediction: the loader's items are in-edges (positions in
  // graph.csc.indices, see EdgeEndpoints) instead of seed nodes; each batch
  // is an EdgeBatchPlan with negatives drawn from the CSC's own node range,
  // and with remove_edge the batch's edges are kept out of its blocks.
  bool link = false;
  int num_negs = 1;
  bool remove_edge = false;
  // Also build the transposes (BuildTranspose) of blocks 1.. in the worker,
  // off the consumer's critical path: the trainer's backward pass reads
  // them. Block 0 aggregates raw features, through which no gradient flows.
  bool transpose = false;
  // Every block with a self-loop per destination (AddSelfLoops: GAT's and
  // GCN's convention) made in the worker; with `transpose`, every block's
  // transpose then, block 0's too (those models' first layer projects
  // before it aggregates, so its gradient flows through block 0).
  bool self_loops = false;
  // Batches carry block 0's destination rows and their sources' means
  // (MiniBatch::input_means) instead of every source row.
  bool input_means = false;
  // A device cache of feature rows (gnn-train --gpu_cache_mb): per node of
  // the CSC, its row in the cache or -1 ([csc.num_nodes], outlives the
  // loader). Batches then carry only the rows it lacks (MiniBatch::
  // split_rows), never means: the consumer assembles block 0's input.
  const int32_t* cache_slot = nullptr;
  // Run on each finished batch by the thread that made it, off the
  // consumer's critical path (a GPU trainer pins the batch's arrays).
  std::function<void(MiniBatch&)> stage;

  // ConfigError naming the first bad field (BatchLoader's constructor calls it).
  void Validate() const;
};

// Everything the loader reads; the arrays outlive the loader.
struct LocalGraph {
  CscView csc;
  const float* features = nullptr;  // rows of csc's nodes, [num_nodes, feature_dim]
  int64_t feature_dim = 0;
  // Or the rows kept sparse (sparse.rows == num_nodes, features then
  // null): batches carry CSR rows (MiniBatch::sparse), never means.
  SparseView sparse;
  const int64_t* labels = nullptr;  // [num_nodes]; nullptr: batches carry no labels
  // Or label rows [num_nodes, label_width] (multi-label, regression).
  const float* targets = nullptr;
  int64_t label_width = 0;
  // Edge tasks (LoaderOptions::link with num_negs 0): per stored in-edge
  // (csc.indices position) its class or its value; a batch then carries
  // the label of each positive edge in MiniBatch::labels, or its value in
  // MiniBatch::targets (label_width 1), instead of the seeds' labels.
  const int64_t* edge_labels = nullptr;
  const float* edge_targets = nullptr;
  // And, for the decoder, each stored in-edge's features [edges,
  // edge_input_dim]: a batch carries its positives' (MiniBatch::edge_inputs).
  const float* edge_inputs = nullptr;
  int64_t edge_input_dim = 0;
};

// Iterates one epoch of mini-batches over `seeds` (edge positions when
// options.link) in order (batch i of epoch
// e is the same whatever num_workers is). Next() blocks until the next
// batch is ready; the destructor stops the workers. Not thread-safe.
//
// Epoch e's seed order is a Fisher-Yates shuffle from MixSeed(seed, e) (when
// shuffle); batch i is sampled with rng seed MixSeed(MixSeed(seed, e), i).
// num_workers == 0 samples each batch inside Next() with all cores.
// The constructor throws ConfigError on bad options; a bad seed or graph
// surfaces as the DataError thrown by Next() when it reaches that batch
// (batches before it are still returned).
class BatchLoader {
 public:
  // Starts at batch `first_batch` of the epoch (a run resumed mid-epoch):
  // the earlier batches are skipped, not sampled.
  BatchLoader(const LocalGraph& graph, std::vector<int64_t> seeds, const LoaderOptions& options,
              int64_t epoch, int64_t first_batch = 0);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  int64_t num_batches() const { return num_batches_; }
  // Most batches ever finished and waiting for Next() at once (<= prefetch);
  // for tests and monitoring. Locks; call from the consumer thread.
  int64_t peak_ready();
  // The next batch in order, or nullopt after the last. Rethrows a worker's
  // exception.
  std::optional<MiniBatch> Next();

 private:
  void Work();
  // Samples and gathers batch `index` with `threads` threads.
  MiniBatch Make(int64_t index, int threads) const;
  // Batch b's input rows (sampled blocks in place): sparse CSR rows, the
  // device cache's split, [destination rows | means], or every input row.
  void GatherInputs(MiniBatch* b, int threads) const;
  // The edge tasks' labels of the in-edges at `offsets` into b.
  void LabelEdges(const std::vector<int64_t>& offsets, MiniBatch* b) const;

  LocalGraph graph_;
  std::vector<int64_t> seeds_;
  LoaderOptions options_;
  int64_t epoch_;
  int64_t num_batches_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  int64_t next_to_claim_ = 0;
  int64_t next_to_return_ = 0;
  std::map<int64_t, MiniBatch> ready_;
  std::exception_ptr error_;  // the failure of batch error_index_ (the lowest failed)
  int64_t error_index_ = -1;
  int64_t peak_ready_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace gnn
