#include "train/cluster/nccl_group.h"

#include "common/error.h"
#include "common/log.h"

#if GNN_CUDA_KERNELS
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1
#endif
#include <exception>
#include <mutex>
#include <thread>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "net/kv_store.h"
#endif

namespace gnn {

#if GNN_CUDA_KERNELS
namespace {

using Clock = std::chrono::steady_clock;

// c10d's Store over the job's rendezvous. c10d may call it from its own
// threads: one mutex around the one connection; waits poll without it.
class CurveStore : public c10d::Store {
 public:
  struct Shared {
    std::mutex mu;
    std::unique_ptr<net::KvClient> kv;
  };
  CurveStore(std::shared_ptr<Shared> shared, std::chrono::milliseconds timeout)
      : c10d::Store(timeout), shared_(std::move(shared)) {}

  c10::intrusive_ptr<c10d::Store> clone() override {
    return c10::make_intrusive<CurveStore>(shared_, timeout_);
  }
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->kv->Set(key, std::string(value.begin(), value.end()));
  }
  std::vector<uint8_t> get(const std::string& key) override {
    wait({key}, timeout_);
    std::lock_guard<std::mutex> lock(shared_->mu);
    const std::optional<std::string> v = shared_->kv->TryGet(key);
    if (!v) throw TimeoutError("the NCCL rendezvous: key " + key + " vanished");
    return std::vector<uint8_t>(v->begin(), v->end());
  }
  int64_t add(const std::string& key, int64_t value) override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    return shared_->kv->Add(key, value);
  }
  bool deleteKey(const std::string& key) override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    return shared_->kv->Delete(key);
  }
  bool check(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    return shared_->kv->Check(keys);
  }
  int64_t getNumKeys() override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    return shared_->kv->NumKeys();
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    const auto deadline = Clock::now() + timeout;
    while (!check(keys)) {
      if (timeout != kNoTimeout && Clock::now() >= deadline) {
        throw TimeoutError("the NCCL rendezvous: " + std::to_string(keys.size()) +
                           " key(s) not set within " + std::to_string(timeout.count()) + " ms");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace

struct NcclGroup::Impl {
  int world = 1;
  bool failed = false;  // an all-reduce failed: abort, do not wait for peers
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg;
};

NcclGroup::NcclGroup(const std::string& store_endpoint, const net::JobKeys& keys,
                     const std::string& where, int rank, int world,
                     std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  auto shared = std::make_shared<CurveStore::Shared>();
  shared->kv = std::make_unique<net::KvClient>(store_endpoint, keys, where);
  shared->kv->set_timeout(timeout);
  // Its keys apart from the trainers' own.
  auto store = c10::make_intrusive<c10d::PrefixStore>(
      "gnn/nccl", c10::make_intrusive<CurveStore>(shared, timeout));
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  impl_->world = world;
  impl_->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, options);
}

// The group's communicators are released before exit (else NCCL warns
// that they leak): shut down after the last all-reduce finished, aborted
// after one failed or while an error unwinds the trainer (a peer may be
// gone or inside a collective, and nothing waits for it).
NcclGroup::~NcclGroup() {
  if (!impl_ || !impl_->pg) return;
  try {
    if (impl_->failed || std::uncaught_exceptions() > 0) {
      impl_->pg->abort();
    } else {
      impl_->pg->shutdown();
    }
  } catch (const std::exception& e) {
    GNN_LOG(kWarn) << "NCCL group shutdown: " << e.what();
  }
}

void NcclGroup::AllreduceMean(torch::Tensor& flat) {
  std::vector<at::Tensor> tensors{flat};
  try {
    impl_->pg->allreduce(tensors)->wait();
  } catch (const std::exception& e) {
    impl_->failed = true;
    throw PeerError(std::string("NCCL all-reduce among trainers failed: ") + e.what());
  }
  flat.div_(impl_->world);
}

#else

struct NcclGroup::Impl {};

NcclGroup::NcclGroup(const std::string&, const net::JobKeys&, const std::string&, int, int,
                     std::chrono::milliseconds) {
  throw ConfigError("NCCL: this gnn-train was built without CUDA (scripts/build-cuda.sh)");
}

NcclGroup::~NcclGroup() = default;

void NcclGroup::AllreduceMean(torch::Tensor&) {
  throw ConfigError("NCCL: this gnn-train was built without CUDA");
}

#endif

}  // namespace gnn
