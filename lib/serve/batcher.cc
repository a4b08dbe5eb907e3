#include "serve/batcher.h"

#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "common/timer.h"

namespace gnn {

using Clock = std::chrono::steady_clock;

struct Batcher::Item {
  Query query;
  Clock::time_point arrived, deadline;
  bool taken = false;  // by the worker
  bool done = false;
  QueryResult result;
};

Batcher::Batcher(Engine& engine, const BatcherOptions& options)
    : engine_(engine), options_(options) {
  worker_ = std::thread([this] { Work(); });
}

Batcher::~Batcher() { Stop(); }

void Batcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

int64_t Batcher::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

int64_t Batcher::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

BatcherStats Batcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

QueryResult Batcher::Submit(Query query, Clock::time_point deadline) {
  auto item = std::make_shared<Item>();
  item->query = std::move(query);
  item->arrived = Clock::now();
  item->deadline = deadline;
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_) return {QueryStatus::kStopping, {}, "gnn-serve is stopping"};
  if (!ready_) {
    return {QueryStatus::kNotReady, {}, "not ready: the graph's servers do not all answer"};
  }
  if (in_flight_ >= options_.max_queue) {
    return {QueryStatus::kFull,
            {},
            "the queue is full (" + std::to_string(options_.max_queue) +
                " requests in flight, --max_queue): try again"};
  }
  ++in_flight_;
  queue_.push_back(item);
  work_cv_.notify_one();
  const bool answered = done_cv_.wait_until(lock, deadline, [&] { return item->done; });
  --in_flight_;
  if (!answered) {
    if (!item->taken) queue_.erase(std::find(queue_.begin(), queue_.end(), item));
    return {QueryStatus::kDeadline, {}, "no answer within the request's deadline (--deadline_ms)"};
  }
  return std::move(item->result);
}

void Batcher::Finish(Item& item, QueryResult result) {
  std::lock_guard<std::mutex> lock(mu_);
  item.result = std::move(result);
  item.done = true;
  done_cv_.notify_all();
}

void Batcher::ProbeEngine() {
  bool ok = false;
  try {
    ok = engine_.Probe();
  } catch (const std::exception& e) {
    GNN_LOG(kWarn) << "probe failed: " << e.what();
  }
  if (ok != ready_.load()) {
    GNN_LOG(kInfo) << (ok ? "ready: every partition answers" : "not ready");
  }
  ready_ = ok;
  last_probe_ = Clock::now();
}

void Batcher::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!ready_) {
      lock.unlock();
      ProbeEngine();
      lock.lock();
      if (!ready_) {
        // What waits now would wait for a graph that may not come back.
        for (auto& item : queue_) {
          item->taken = true;
          item->result = {
              QueryStatus::kNotReady, {}, "not ready: the graph's servers do not all answer"};
          item->done = true;
        }
        queue_.clear();
        done_cv_.notify_all();
        work_cv_.wait_for(lock, options_.probe_interval, [&] { return stop_; });
        continue;
      }
    }
    if (queue_.empty()) {
      const bool woken = work_cv_.wait_until(lock, last_probe_ + options_.probe_interval,
                                             [&] { return stop_ || !queue_.empty(); });
      if (!woken) {
        lock.unlock();
        ProbeEngine();
        lock.lock();
      }
      continue;
    }
    std::deque<std::shared_ptr<Item>> batch = TakeBatch(lock);
    lock.unlock();
    RunBatch(batch);
    lock.lock();
  }
  for (auto& item : queue_) {
    item->result = {QueryStatus::kStopping, {}, "gnn-serve is stopping"};
    item->done = true;
  }
  queue_.clear();
  done_cv_.notify_all();
}

std::deque<std::shared_ptr<Batcher::Item>> Batcher::TakeBatch(std::unique_lock<std::mutex>& lock) {
  std::deque<std::shared_ptr<Item>> batch;
  std::shared_ptr<Item> first = queue_.front();
  queue_.pop_front();
  first->taken = true;
  batch.push_back(first);
  if (first->query.num_new > 0) return batch;
  int64_t nodes = first->query.nodes();
  const Clock::time_point until = first->arrived + options_.max_wait;
  while (nodes < options_.max_batch_nodes) {
    for (auto it = queue_.begin(); it != queue_.end();) {
      const Query& q = (*it)->query;
      if (q.num_new == 0 && q.edge_query == first->query.edge_query &&
          nodes + q.nodes() <= options_.max_batch_nodes) {
        nodes += q.nodes();
        (*it)->taken = true;
        batch.push_back(*it);
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    if (nodes >= options_.max_batch_nodes || stop_ || Clock::now() >= until) break;
    work_cv_.wait_until(lock, until);
  }
  return batch;
}

void Batcher::RunBatch(std::deque<std::shared_ptr<Item>>& batch) {
  const Clock::time_point now = Clock::now();
  for (auto it = batch.begin(); it != batch.end();) {
    if ((*it)->deadline <= now) {
      Finish(
          **it,
          {QueryStatus::kDeadline, {}, "no answer within the request's deadline (--deadline_ms)"});
      it = batch.erase(it);
    } else {
      ++it;
    }
  }
  if (batch.empty()) return;
  Query merged;
  const Query* q = &batch.front()->query;
  if (batch.size() > 1) {
    merged.edge_query = batch.front()->query.edge_query;
    for (const auto& item : batch) {
      const Query& one = item->query;
      merged.node_ids.insert(merged.node_ids.end(), one.node_ids.begin(), one.node_ids.end());
      merged.edges.insert(merged.edges.end(), one.edges.begin(), one.edges.end());
      merged.edge_features.insert(merged.edge_features.end(), one.edge_features.begin(),
                                  one.edge_features.end());
      merged.embedding = merged.embedding || one.embedding;
    }
    q = &merged;
  }
  Stopwatch watch;
  try {
    Answer a = engine_.Run(*q);
    int64_t row = 0;
    for (const auto& item : batch) {
      QueryResult r;
      r.status = QueryStatus::kOk;
      Answer& mine = r.answer;
      mine.rows = item->query.rows();
      mine.classes = a.classes;
      mine.emb_dim = item->query.embedding ? a.emb_dim : 0;
      mine.logits.assign(a.logits.begin() + row * a.classes,
                         a.logits.begin() + (row + mine.rows) * a.classes);
      if (mine.emb_dim > 0) {
        mine.embedding.assign(a.embedding.begin() + row * a.emb_dim,
                              a.embedding.begin() + (row + mine.rows) * a.emb_dim);
      }
      row += mine.rows;
      Finish(*item, std::move(r));
    }
    std::lock_guard<std::mutex> lock(mu_);
    stats_.batches += 1;
    stats_.queries += static_cast<int64_t>(batch.size());
    stats_.nodes += a.rows;
    stats_.new_nodes += q->num_new;
    stats_.busy_seconds += watch.Seconds();
  } catch (const BadRequest& e) {
    if (batch.size() == 1) {
      Finish(*batch.front(), {QueryStatus::kBadRequest, {}, e.what()});
      return;
    }
    // One query's mistake is not the others': each alone.
    for (auto& item : batch) {
      std::deque<std::shared_ptr<Item>> alone{item};
      RunBatch(alone);
    }
  } catch (const Error& e) {
    const bool lost = dynamic_cast<const PeerError*>(&e) || dynamic_cast<const TimeoutError*>(&e) ||
                      dynamic_cast<const ProtocolError*>(&e);
    if (lost) {
      GNN_LOG(kWarn) << "the graph stopped answering: " << e.what();
      ready_ = false;
    }
    for (auto& item : batch) {
      Finish(*item, {lost ? QueryStatus::kNotReady : QueryStatus::kFailed,
                     {},
                     lost ? std::string("not ready: ") + e.what() : std::string(e.what())});
    }
  } catch (const std::exception& e) {
    for (auto& item : batch) Finish(*item, {QueryStatus::kFailed, {}, e.what()});
  }
}

}  // namespace gnn
