#include "in_process_owners.h"

#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "common/error.h"
#include "common/sha256.h"
#include "server/handlers.h"
#include "server/server.h"
#include "store/shm_partition.h"

namespace gnn::test {

namespace {

constexpr char kScheme[] = "owner://";

// `m` as the frames a socket carries (header, then the arrays), the
// arrays copied: `m` stays as it was.
std::vector<zmq::message_t> Wire(const net::Message& m) {
  std::vector<zmq::message_t> parts;
  parts.push_back(net::EncodeHeader(m.header));
  for (const zmq::message_t& f : m.frames) parts.emplace_back(f.data(), f.size());
  return parts;
}

// One partition's server as a net::Peer: a request is answered when it
// is started, and its reply waits for its Finish.
class InProcessPeer : public net::Peer {
 public:
  InProcessPeer(InProcessOwners* owners, int part, std::string name)
      : owners_(owners), part_(part), name_(std::move(name)) {}

  const std::string& peer() const override { return name_; }

  uint64_t Start(net::Message request, uint64_t, std::chrono::steady_clock::time_point) override {
    const uint64_t id = next_id_++;
    request.header.request_id = id;
    replies_[id] = owners_->Answer(part_, std::move(request));
    return id;
  }

  net::Message Finish(uint64_t request_id, std::chrono::steady_clock::time_point deadline,
                      const std::string& what) override {
    const auto it = replies_.find(request_id);
    if (it == replies_.end()) throw Error(name_ + ": no request " + std::to_string(request_id));
    net::Message reply = std::move(it->second);
    replies_.erase(it);
    if (owners_->silent.count(part_)) {
      std::this_thread::sleep_until(deadline);
      throw TimeoutError(name_ + " did not answer " + what + " in time");
    }
    if (owners_->tamper) owners_->tamper(part_, &reply);
    // The reply as the planner's socket would deliver it.
    std::vector<zmq::message_t> parts = Wire(reply);
    owners_->Count(parts);
    reply = net::Decode(std::move(parts));
    if (reply.header.msg_type() == net::MsgType::kError) {
      throw PeerError(name_ + " refused " + what + ": " + reply.header.text);
    }
    return reply;
  }

 private:
  InProcessOwners* owners_;
  int part_;
  std::string name_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, net::Message> replies_;
};

}  // namespace

struct InProcessOwners::Owner {
  ServerOptions options;
  std::unique_ptr<ShmPartition> shm;
  ServerState state;
};

InProcessOwners::InProcessOwners(const std::string& part_config, const std::string& job)
    : part_config_(part_config), job_(job) {
  const PartitionConfig config = LoadPartitionConfig(part_config);
  const std::string sha = Sha256File(part_config);
  static int counter = 0;
  for (int p = 0; p < config.num_parts; ++p) {
    auto o = std::make_unique<Owner>();
    o->options.machine_id = p;
    o->options.server_id = 0;
    o->options.num_servers = 1;
    o->options.job_id = job;
    ServerState& s = o->state;
    s.options = &o->options;
    s.config = config;
    s.config_sha = sha;
    s.name = "machine " + std::to_string(p) + " server 0";
    o->shm = ShmPartition::Create(
        "/gnn-test-owner-" + std::to_string(getpid()) + "-" + std::to_string(counter++), config, p,
        false);
    if (const HeteroPartitionView* typed = o->shm->hetero_view()) {
      s.hetero = std::make_unique<HeteroServing>(s.config, *typed, true, s.name);
    }
    s.view = &o->shm->view();
    owners_.push_back(std::move(o));
  }
}

InProcessOwners::~InProcessOwners() = default;

DistGraphOptions InProcessOwners::Options() {
  DistGraphOptions o;
  o.part_config = part_config_;
  o.job_id = job_;
  o.keys = net::JobKeys::Insecure();
  o.timeout = std::chrono::milliseconds(2000);
  for (size_t p = 0; p < owners_.size(); ++p) {
    o.endpoints.push_back({kScheme + std::string("in-process-") + std::to_string(p)});
  }
  o.connect = [this](const std::string& endpoint, const std::string& name) {
    const int part = std::stoi(endpoint.substr(endpoint.rfind('-') + 1));
    return std::make_unique<InProcessPeer>(this, part, name);
  };
  return o;
}

net::Message InProcessOwners::Answer(int part, net::Message request) {
  // What the owner receives: the request as it travelled.
  std::vector<zmq::message_t> parts = Wire(request);
  Count(parts);
  requests_.push_back({part, net::Decode(std::move(parts))});
  return gnn::Answer(owners_[static_cast<size_t>(part)]->state, Wire(request));
}

void InProcessOwners::Count(const std::vector<zmq::message_t>& parts) {
  bytes_.headers += parts.front().size();
  for (size_t i = 1; i < parts.size(); ++i) bytes_.frames += parts[i].size();
}

}  // namespace gnn::test
