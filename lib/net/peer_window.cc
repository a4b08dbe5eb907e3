#include "net/peer_window.h"

namespace gnn::net {

PeerWindows::PeerWindows(uint64_t window, size_t max_peers)
    : window_(window), max_peers_(max_peers < 1 ? 1 : max_peers) {}

PeerWindows::Peer& PeerWindows::Find(const std::string& peer) {
  auto it = peers_.find(peer);
  if (it != peers_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second;
  }
  if (peers_.size() >= max_peers_) {
    peers_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(peer);
  Peer& p = peers_[peer];
  p.lru = lru_.begin();
  return p;
}

void PeerWindows::OnRequest(const std::string& peer, uint64_t taken) {
  const bool known = peers_.count(peer) != 0;
  Peer& p = Find(peer);
  // A peer's counter only grows; the first one heard is its zero (it may
  // have taken replies before we remembered it).
  if (!known) p.base = taken;
  if (taken >= p.base && taken - p.base > p.taken) p.taken = taken - p.base;
}

uint64_t PeerWindows::Untaken(const std::string& peer) const {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return 0;
  const Peer& p = it->second;
  return p.sent > p.taken ? p.sent - p.taken : 0;
}

bool PeerWindows::Admit(const std::string& peer, uint64_t bytes, uint64_t* untaken) {
  Peer& p = Find(peer);
  const uint64_t out = p.sent > p.taken ? p.sent - p.taken : 0;
  if (untaken) *untaken = out;
  if (out > 0 && out + bytes > window_) return false;
  p.sent += bytes;
  return true;
}

void PeerWindows::Count(const std::string& peer, uint64_t bytes) { Find(peer).sent += bytes; }

}  // namespace gnn::net
