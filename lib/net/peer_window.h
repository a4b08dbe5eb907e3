// What a server may hold for one peer: the reply window. ZeroMQ's
// high-water marks count messages, not bytes, and a peer that sends
// requests but never reads its replies (a buggy script, a trainer paused
// in a debugger) would have a server queue every reply it asked for. So
// each request says how many reply bytes its sender has taken so far
// (Header::taken_bytes), the server counts what it sends to each peer, and
// the difference, the bytes the peer has not taken, may not exceed the
// window: past it a reply is replaced by a small kErrBusy Error naming the
// bound, and other peers are not affected. A reply to a peer with nothing
// outstanding always goes (one reply may exceed the window by itself).
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>

namespace gnn::net {

// Per-peer accounting (peers named by their ROUTER routing id). Not
// thread-safe: the one thread that forwards requests and replies owns it.
class PeerWindows {
 public:
  // `window`: bytes one peer may leave untaken; `max_peers`: peers
  // remembered (the least recently heard one is forgotten beyond it, and
  // starts afresh if it comes back).
  explicit PeerWindows(uint64_t window, size_t max_peers = 4096);

  // A request from `peer` whose sender has taken `taken` reply bytes so far.
  void OnRequest(const std::string& peer, uint64_t taken);
  // Whether a reply of `bytes` to `peer` fits its window; if it does it is
  // counted as sent. *untaken (optional) is what the peer had not taken.
  bool Admit(const std::string& peer, uint64_t bytes, uint64_t* untaken = nullptr);
  // A reply that did not fit was replaced by one of `bytes`: counted, sent
  // regardless (it is small).
  void Count(const std::string& peer, uint64_t bytes);

  uint64_t window() const { return window_; }
  size_t peers() const { return peers_.size(); }
  // Bytes `peer` has not taken (0 for a peer not remembered).
  uint64_t Untaken(const std::string& peer) const;

 private:
  struct Peer {
    uint64_t sent = 0;   // bytes of replies sent since first heard
    uint64_t taken = 0;  // its taken_bytes minus the first one heard
    uint64_t base = 0;   // its taken_bytes when first heard
    std::list<std::string>::iterator lru;
  };
  Peer& Find(const std::string& peer);

  uint64_t window_;
  size_t max_peers_;
  std::unordered_map<std::string, Peer> peers_;
  std::list<std::string> lru_;  // most recent first
};

}  // namespace gnn::net
