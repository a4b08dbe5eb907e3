// Real remote machines for tests: an sshd on a free port with throw-away
// keys, and network namespaces joined by a bridge that stand for hosts with
// their own addresses. Both need root and the system binaries (sshd, ip);
// where they cannot run, Start/Create return nullptr and say why, and the
// test SKIPs with that reason.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "process_util.h"
#include "test_util.h"

namespace gnn::test {

// A real OpenSSH server listening on `address`:port (inside network
// namespace `netns` if given), accepting one throw-away user key for the
// current user. Killed and its files removed by the destructor.
class SshServer {
 public:
  static std::unique_ptr<SshServer> Start(std::string* why,
                                          const std::string& address = "127.0.0.1",
                                          const std::string& netns = "");
  ~SshServer();
  SshServer(const SshServer&) = delete;
  SshServer& operator=(const SshServer&) = delete;

  int port() const { return port_; }
  const std::string& address() const { return address_; }
  // An ssh client config for `ssh -F`: this server's user key, no
  // host-key checks, BatchMode.
  const std::string& client_config() const { return client_config_; }
  // Also accept `other`'s user key, so one client config reaches both.
  void Authorize(const SshServer& other);

 private:
  SshServer() = default;
  TempDir dir_;
  std::string address_, client_config_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> sshd_;  // after dir_: it dies first
};

// `n` network namespaces, each with one address on a private /24 joined by
// a bridge in the root namespace (which has address host_address()), so
// every namespace reaches the others and the root namespace. Removed by
// the destructor.
class NetnsCluster {
 public:
  static std::unique_ptr<NetnsCluster> Create(int n, std::string* why);
  ~NetnsCluster();
  NetnsCluster(const NetnsCluster&) = delete;
  NetnsCluster& operator=(const NetnsCluster&) = delete;

  int size() const { return static_cast<int>(names_.size()); }
  const std::string& name(int i) const { return names_[static_cast<size_t>(i)]; }
  const std::string& address(int i) const { return addresses_[static_cast<size_t>(i)]; }
  const std::string& host_address() const { return host_address_; }

 private:
  NetnsCluster() = default;
  std::string bridge_, host_address_;
  std::vector<std::string> names_, addresses_, veths_;
};

}  // namespace gnn::test
