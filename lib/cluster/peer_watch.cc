#include "cluster/peer_watch.h"

#include <cmath>

#include "net/channel.h"
#include "net/messages.h"

namespace gnn {

using Clock = std::chrono::steady_clock;

bool Ping(zmq::context_t& ctx, const net::JobKeys& keys, const MachineAddress& machine, int m,
          int s, int timeout_ms) {
  net::Connection c(ctx, Endpoint(machine, s),
                    "machine " + std::to_string(m) + " server " + std::to_string(s), keys);
  try {
    net::Pong::Decode(c.Call(net::Ping{}.Encode(0), net::Millis(timeout_ms)));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

PeerWatch::PeerWatch(const std::vector<MachineAddress>& machines, int self,
                     const net::JobKeys& keys)
    : machines_(machines), keys_(keys) {
  if (self < 0 || machines.size() < 2) return;
  silent_since_.assign(machines.size(), Clock::time_point{});
  thread_ = std::thread([this, self] {
    zmq::context_t ctx;
    std::vector<int> misses(machines_.size(), 0);
    while (!stop_.load()) {
      for (size_t m = 0; m < machines_.size() && !stop_.load(); ++m) {
        if (static_cast<int>(m) == self) continue;
        const bool ok = Ping(ctx, keys_, machines_[m], static_cast<int>(m), 0, 500);
        std::lock_guard<std::mutex> lock(mu_);
        if (ok) {
          misses[m] = 0;
          silent_since_[m] = Clock::time_point{};
        } else if (++misses[m] == 2) {  // one lost ping is not a failure
          silent_since_[m] = Clock::now();
        }
      }
      for (int i = 0; i < 3 && !stop_.load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

void PeerWatch::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string PeerWatch::Silent(double for_s) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  double longest = -1;
  for (size_t m = 0; m < silent_since_.size(); ++m) {
    if (silent_since_[m] == Clock::time_point{}) continue;
    const double age = std::chrono::duration<double>(Clock::now() - silent_since_[m]).count();
    if (age >= for_s && age > longest) {
      longest = age;
      out = "machine " + std::to_string(m) + " (" + machines_[m].host + ":" +
            std::to_string(machines_[m].port) + ") stopped answering " +
            std::to_string(std::lround(age)) + " s ago: its job failed or the machine is gone";
    }
  }
  return out;
}

}  // namespace gnn
