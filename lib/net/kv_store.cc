#include "net/kv_store.h"

#include <map>
#include <mutex>

#include "common/error.h"
#include "common/log.h"
#include "net/channel.h"
#include "net/ports.h"

namespace gnn::net {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<zmq::message_t> ToFrames(const std::vector<std::string>& parts) {
  std::vector<zmq::message_t> out;
  for (const auto& p : parts) out.emplace_back(p.data(), p.size());
  return out;
}

void SendFrames(zmq::socket_t& socket, std::vector<zmq::message_t>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    socket.send(frames[i],
                i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

bool ParseInt64(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  size_t used = 0;
  try {
    *out = std::stoll(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == s.size();
}

// The store itself: answers [op, args...] with ["ok", results...] or
// ["error", why]; never trusts a count or a size it was sent.
class Table {
 public:
  std::vector<std::string> Handle(const std::vector<std::string>& req) {
    if (req.empty()) return {"error", "empty request"};
    const std::string& op = req[0];
    if (op == "set" && req.size() == 3) {
      if (!Fits(req[1], req[2])) return {"error", "store full"};
      Put(req[1], req[2]);
      return {"ok"};
    }
    if (op == "get" && req.size() == 2) {
      auto it = map_.find(req[1]);
      if (it == map_.end()) return {"missing"};
      return {"ok", it->second};
    }
    if (op == "add" && req.size() == 3) {
      int64_t delta = 0, now = 0;
      if (!ParseInt64(req[2], &delta)) return {"error", "add needs an integer"};
      auto it = map_.find(req[1]);
      if (it != map_.end() && !ParseInt64(it->second, &now))
        return {"error", "key holds no counter"};
      if ((delta > 0 && now > INT64_MAX - delta) || (delta < 0 && now < INT64_MIN - delta)) {
        return {"error", "counter overflow"};
      }
      const std::string value = std::to_string(now + delta);
      if (it == map_.end() && !Fits(req[1], value)) return {"error", "store full"};
      Put(req[1], value);
      return {"ok", value};
    }
    if (op == "del" && req.size() == 2) {
      auto it = map_.find(req[1]);
      if (it == map_.end()) return {"ok", "0"};
      bytes_ -= it->first.size() + it->second.size();
      map_.erase(it);
      return {"ok", "1"};
    }
    if (op == "check") {
      for (size_t i = 1; i < req.size(); ++i) {
        if (!map_.count(req[i])) return {"ok", "0"};
      }
      return {"ok", "1"};
    }
    if (op == "num" && req.size() == 1) return {"ok", std::to_string(map_.size())};
    return {"error", "unknown request"};
  }

 private:
  bool Fits(const std::string& key, const std::string& value) const {
    auto it = map_.find(key);
    const size_t old = it == map_.end() ? 0 : key.size() + it->second.size();
    return (it != map_.end() || map_.size() < kMaxKvKeys) &&
           bytes_ - old + key.size() + value.size() <= kMaxKvBytes;
  }
  void Put(const std::string& key, const std::string& value) {
    auto it = map_.find(key);
    if (it != map_.end()) bytes_ -= key.size() + it->second.size();
    map_[key] = value;
    bytes_ += key.size() + value.size();
  }
  std::map<std::string, std::string> map_;
  size_t bytes_ = 0;
};

}  // namespace

KvServer::KvServer(const std::string& endpoint, const JobKeys& keys, double bind_retry_s) {
  auth_ = std::make_unique<Authenticator>(ctx_, keys, "the rendezvous");
  auto sock = std::make_shared<zmq::socket_t>(ctx_, zmq::socket_type::router);
  sock->set(zmq::sockopt::linger, 0);
  sock->set(zmq::sockopt::maxmsgsize, kMaxKvMessageBytes);
  sock->set(zmq::sockopt::sndhwm, 64);
  keys.MakeServer(*sock);
  try {
    BindRetrying(*sock, endpoint, bind_retry_s);
  } catch (const zmq::error_t& e) {
    throw ConfigError("the rendezvous cannot bind " + endpoint + ": " + e.what());
  }
  thread_ = std::thread([this, sock] {
    Table table;
    std::vector<zmq::message_t> parts;
    while (!stop_) {
      try {
        if (!RecvParts(*sock, &parts, Millis(100)) || parts.size() < 3) continue;
        // [identity, request id, op, args...]
        std::vector<std::string> req;
        for (size_t i = 2; i < parts.size(); ++i) req.push_back(parts[i].to_string());
        std::vector<std::string> reply = table.Handle(req);
        std::vector<zmq::message_t> out;
        out.push_back(std::move(parts[0]));
        out.push_back(std::move(parts[1]));
        for (auto& f : ToFrames(reply)) out.push_back(std::move(f));
        SendFrames(*sock, out);
      } catch (const zmq::error_t& e) {
        if (e.num() == ETERM) return;
        GNN_LOG(kWarn) << "rendezvous: " << e.what();
      }
    }
  });
}

KvServer::~KvServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  auth_.reset();
}

struct KvClient::Impl {
  zmq::context_t ctx;
  zmq::socket_t sock{ctx, zmq::socket_type::dealer};
  std::mutex mu;
  uint64_t next_id = 1;
};

KvClient::KvClient(const std::string& endpoint, const JobKeys& keys, std::string where)
    : impl_(std::make_unique<Impl>()), where_(std::move(where)) {
  impl_->sock.set(zmq::sockopt::linger, 0);
  impl_->sock.set(zmq::sockopt::maxmsgsize, kMaxKvMessageBytes);
  keys.MakeClient(impl_->sock);
  try {
    impl_->sock.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw ConfigError("cannot connect to " + where_ + " (" + endpoint + "): " + e.what());
  }
}

KvClient::~KvClient() = default;

std::vector<std::string> KvClient::Call(std::vector<std::string> request) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const std::string id = std::to_string(impl_->next_id++);
  request.insert(request.begin(), id);
  std::vector<zmq::message_t> frames = ToFrames(request);
  SendFrames(impl_->sock, frames);
  const auto deadline = Clock::now() + timeout_;
  std::vector<zmq::message_t> parts;
  while (true) {
    const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    if (left.count() <= 0 || !RecvParts(impl_->sock, &parts, left)) {
      throw TimeoutError(where_ + " did not answer " + request[1] + " within " +
                         std::to_string(timeout_.count() / 1000) +
                         " s (is rank 0 running? do all trainers "
                         "hold the job's secret?)");
    }
    if (parts.size() < 2 || parts[0].to_string() != id)
      continue;  // a late reply to an abandoned call
    std::vector<std::string> reply;
    for (size_t i = 1; i < parts.size(); ++i) reply.push_back(parts[i].to_string());
    if (reply[0] == "error") {
      throw PeerError(where_ + " refused " + request[1] + ": " +
                      (reply.size() > 1 ? reply[1] : "?"));
    }
    return reply;
  }
}

void KvClient::Set(const std::string& key, const std::string& value) { Call({"set", key, value}); }

std::optional<std::string> KvClient::TryGet(const std::string& key) {
  std::vector<std::string> r = Call({"get", key});
  if (r[0] == "missing") return std::nullopt;
  if (r.size() != 2) throw ProtocolError(where_ + " sent a malformed reply to get");
  return r[1];
}

std::string KvClient::Get(const std::string& key, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (auto v = TryGet(key)) return *v;
    if (Clock::now() >= deadline) {
      throw TimeoutError(where_ + ": key " + key + " was not set within " +
                         std::to_string(timeout.count() / 1000) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int64_t KvClient::Add(const std::string& key, int64_t delta) {
  std::vector<std::string> r = Call({"add", key, std::to_string(delta)});
  int64_t v = 0;
  if (r.size() != 2 || !ParseInt64(r[1], &v))
    throw ProtocolError(where_ + " sent a malformed reply to add");
  return v;
}

bool KvClient::Delete(const std::string& key) {
  std::vector<std::string> r = Call({"del", key});
  return r.size() == 2 && r[1] == "1";
}

bool KvClient::Check(const std::vector<std::string>& keys) {
  std::vector<std::string> req = {"check"};
  req.insert(req.end(), keys.begin(), keys.end());
  std::vector<std::string> r = Call(req);
  return r.size() == 2 && r[1] == "1";
}

int64_t KvClient::NumKeys() {
  std::vector<std::string> r = Call({"num"});
  int64_t v = 0;
  if (r.size() != 2 || !ParseInt64(r[1], &v))
    throw ProtocolError(where_ + " sent a malformed reply to num");
  return v;
}

}  // namespace gnn::net
