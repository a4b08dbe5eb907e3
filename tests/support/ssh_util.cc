#include "ssh_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cluster/remote.h"
#include "process_util.h"

namespace gnn::test {
namespace {

using Clock = std::chrono::steady_clock;

std::string SystemBinary(const std::string& name) {
  std::string p = FindOnPath(name);
  if (!p.empty()) return p;
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    std::string c = dir + name;
    if (::access(c.c_str(), X_OK) == 0) return c;
  }
  return "";
}

// Runs a command; "" on success, else what went wrong.
std::string Run(const std::vector<std::string>& argv) {
  CommandResult r = RunCommand(argv, 20);
  if (r.exit_code == 0) return "";
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  return cmd + ": " + r.Describe() + ": " + r.LastErrorLine();
}

}  // namespace

std::unique_ptr<SshServer> SshServer::Start(std::string* why, const std::string& address,
                                            const std::string& netns) {
  const std::string sshd = SystemBinary("sshd"), keygen = SystemBinary("ssh-keygen");
  if (sshd.empty() || keygen.empty() || FindOnPath("ssh").empty()) {
    *why = "OpenSSH (sshd, ssh, ssh-keygen) is not installed";
    return nullptr;
  }
  std::unique_ptr<SshServer> s(new SshServer());
  s->address_ = address;
  const std::string& d = s->dir_.path();
  for (const char* key : {"host_key", "user_key"}) {
    std::string err = Run({keygen, "-q", "-t", "ed25519", "-N", "", "-f", d + "/" + key});
    if (!err.empty()) {
      *why = err;
      return nullptr;
    }
  }
  std::error_code ec;
  std::filesystem::create_directories("/run/sshd", ec);  // privilege separation dir
  std::filesystem::copy_file(d + "/user_key.pub", d + "/authorized_keys", ec);
  ::chmod((d + "/authorized_keys").c_str(), 0600);
  // Inside a namespace the port space is the namespace's own.
  s->port_ = netns.empty() ? FreeLoopbackPortRanges(1, 1)[0] : 2222;
  {
    std::ofstream c(d + "/sshd_config");
    c << "Port " << s->port_ << "\nListenAddress " << address << "\nHostKey " << d
      << "/host_key\nAuthorizedKeysFile " << d << "/authorized_keys\nPidFile " << d
      << "/sshd.pid\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
      << "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nMaxStartups 100\n"
      << "MaxSessions 100\n";
  }
  s->client_config_ = d + "/ssh_config";
  {
    std::ofstream c(s->client_config_);
    c << "Host *\n  IdentityFile " << d
      << "/user_key\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
      << "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  BatchMode yes\n";
  }
  std::vector<std::string> argv;
  if (!netns.empty()) argv = {SystemBinary("ip"), "netns", "exec", netns};
  for (const std::string& a :
       {sshd, std::string("-D"), std::string("-e"), std::string("-f"), d + "/sshd_config"}) {
    argv.push_back(a);
  }
  s->sshd_ = std::make_unique<ChildProcess>(argv, d + "/sshd");  // its log: sshd.err
  // Ready when a real login runs a command.
  SshOptions o;
  o.port = s->port_;
  o.config = s->client_config_;
  o.connect_timeout = std::chrono::seconds(2);
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  std::string last;
  while (Clock::now() < deadline) {
    if (!s->sshd_->Running()) {
      *why = "sshd exited at start: " + s->sshd_->Stderr();
      return nullptr;
    }
    CommandResult r = RunCommand(SshArgv(o, address, "echo gnn-ssh-ok"), 5);
    if (r.exit_code == 0 && r.out.find("gnn-ssh-ok") != std::string::npos) return s;
    last = r.LastErrorLine();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  *why = "sshd on " + address + ":" + std::to_string(s->port_) +
         " did not accept a login: " + last + "; " + s->sshd_->Stderr();
  return nullptr;
}

// Its sessions end with their connections; sshd_ (the listener's process
// group) is SIGKILLed by ChildProcess before dir_ goes.
SshServer::~SshServer() = default;

void SshServer::Authorize(const SshServer& other) {
  std::ofstream(dir_ / "authorized_keys", std::ios::app)
      << ReadFileOrEmpty(other.dir_ / "user_key.pub");
}

std::unique_ptr<NetnsCluster> NetnsCluster::Create(int n, std::string* why) {
  if (::geteuid() != 0) {
    *why = "network namespaces need root";
    return nullptr;
  }
  const std::string ip = SystemBinary("ip");
  if (ip.empty()) {
    *why = "iproute2 (ip) is not installed";
    return nullptr;
  }
  std::unique_ptr<NetnsCluster> c(new NetnsCluster());
  // A private /24 per test process: 10.(100 + pid/250 % 150).(pid % 250).0/24.
  const int pid = static_cast<int>(::getpid());
  const std::string net =
      "10." + std::to_string(100 + (pid / 250) % 150) + "." + std::to_string(pid % 250) + ".";
  const std::string tag = std::to_string(pid % 100000);
  c->bridge_ = "gnnbr" + tag;
  c->host_address_ = net + "1";
  std::string err = Run({ip, "link", "add", c->bridge_, "type", "bridge"});
  if (!err.empty()) {
    c->bridge_.clear();
    *why = "cannot create a bridge: " + err;
    return nullptr;
  }
  for (const auto& step : std::vector<std::vector<std::string>>{
           {ip, "addr", "add", c->host_address_ + "/24", "dev", c->bridge_},
           {ip, "link", "set", c->bridge_, "up"}}) {
    err = Run(step);
    if (!err.empty()) {
      *why = err;
      return nullptr;
    }
  }
  for (int i = 0; i < n; ++i) {
    const std::string ns = "gnnns" + tag + "-" + std::to_string(i);
    const std::string veth = "gnnv" + tag + "-" + std::to_string(i);
    const std::string peer = "gnnp" + tag + "-" + std::to_string(i);
    const std::string addr = net + std::to_string(2 + i);
    err = Run({ip, "netns", "add", ns});
    if (!err.empty()) {
      *why = "cannot create a network namespace: " + err;
      return nullptr;
    }
    c->names_.push_back(ns);
    err = Run({ip, "link", "add", veth, "type", "veth", "peer", "name", peer});
    if (!err.empty()) {
      *why = "cannot create a veth pair: " + err;
      return nullptr;
    }
    c->veths_.push_back(veth);
    for (const auto& step : std::vector<std::vector<std::string>>{
             {ip, "link", "set", peer, "netns", ns},
             {ip, "link", "set", veth, "master", c->bridge_},
             {ip, "link", "set", veth, "up"},
             {ip, "netns", "exec", ns, ip, "addr", "add", addr + "/24", "dev", peer},
             {ip, "netns", "exec", ns, ip, "link", "set", peer, "up"},
             {ip, "netns", "exec", ns, ip, "link", "set", "lo", "up"}}) {
      err = Run(step);
      if (!err.empty()) {
        *why = err;
        return nullptr;
      }
    }
    c->addresses_.push_back(addr);
  }
  return c;
}

NetnsCluster::~NetnsCluster() {
  const std::string ip = SystemBinary("ip");
  for (const auto& ns : names_) Run({ip, "netns", "delete", ns});
  for (const auto& v : veths_)
    RunCommand({ip, "link", "delete", v}, 10);  // gone with its peer already, usually
  if (!bridge_.empty()) Run({ip, "link", "delete", bridge_});
}

}  // namespace gnn::test
