// gnn-serve's queue: HTTP handler threads submit queries, one worker thread
// owns the Engine (its sockets are not thread-safe) and runs them.
// Queries of existing nodes that wait together are answered by one batch
// (up to max_batch_nodes rows, waiting at most max_wait after the first one
// arrived), and so are an edge model's queries of existing nodes' edges; a
// query with new nodes runs alone (its nodes and edges are its own graph). The queue is bounded: a
// query over max_queue in flight is refused at once. Every query has a deadline. Between queries,
// and every probe_interval when idle, the worker asks the engine whether the graph answers; when it
// does not, queries are refused until it does again.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "serve/serving.h"

namespace gnn {

struct BatcherOptions {
  int64_t max_batch_nodes = 8192;            // --max_batch_nodes
  std::chrono::microseconds max_wait{1000};  // --max_wait_ms
  int64_t max_queue = 128;                   // --max_queue: queries in flight
  std::chrono::milliseconds probe_interval{1000};
};

// What happened to a query.
enum class QueryStatus {
  kOk,
  kBadRequest,  // the engine said the caller got it wrong (400)
  kFull,        // max_queue queries in flight (503)
  kNotReady,    // the graph does not answer (503)
  kDeadline,    // not answered before its deadline (504)
  kFailed,      // anything else (500)
  kStopping,    // the server is stopping (503)
};

struct QueryResult {
  QueryStatus status = QueryStatus::kFailed;
  Answer answer;
  std::string error;  // what went wrong (not kOk)
};

// Counts for /metrics.
struct BatcherStats {
  int64_t batches = 0;      // engine runs
  int64_t queries = 0;      // queries answered
  int64_t nodes = 0;        // rows answered
  int64_t new_nodes = 0;    // of them, new nodes
  double busy_seconds = 0;  // the worker's time in the engine
};

class Batcher {
 public:
  Batcher(Engine& engine, const BatcherOptions& options);
  ~Batcher();  // Stop()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Blocks until the query is answered, refused, or `deadline` passes.
  QueryResult Submit(Query query, std::chrono::steady_clock::time_point deadline);
  // The engine answered its last probe (and the model is loaded).
  bool ready() const { return ready_.load(); }
  int64_t queued() const;     // waiting for the worker
  int64_t in_flight() const;  // submitted and not yet returned
  BatcherStats stats() const;
  // Refuses new queries, answers the waiting ones kStopping, joins the worker.
  void Stop();

 private:
  struct Item;
  void Work();
  // Under mu_: the queries the worker takes next (a batch of existing-node
  // queries, or one with new nodes), waiting up to max_wait for more.
  std::deque<std::shared_ptr<Item>> TakeBatch(std::unique_lock<std::mutex>& lock);
  void RunBatch(std::deque<std::shared_ptr<Item>>& batch);
  void Finish(Item& item, QueryResult result);
  void ProbeEngine();

  Engine& engine_;
  BatcherOptions options_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the worker waits for queries
  std::condition_variable done_cv_;  // submitters wait for answers
  std::deque<std::shared_ptr<Item>> queue_;
  int64_t in_flight_ = 0;
  bool stop_ = false;
  std::atomic<bool> ready_{false};
  BatcherStats stats_;
  std::chrono::steady_clock::time_point last_probe_{};
  std::thread worker_;
};

}  // namespace gnn
