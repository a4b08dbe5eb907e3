#include "net/ports.h"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace gnn {

namespace {

// Inode of the socket listening on `port` in /proc/net/tcp{,6}, or "".
std::string ListeningInode(int port) {
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      size_t colon = local.rfind(':');
      if (colon == std::string::npos || state != "0A") continue;  // 0A = LISTEN
      if (std::strtol(local.c_str() + colon + 1, nullptr, 16) == port) return inode;
    }
  }
  return "";
}

}  // namespace

std::string DescribePortHolder(int port) {
  std::string inode = ListeningInode(port);
  if (inode.empty() || inode == "0") return "";
  const std::string target = "socket:[" + inode + "]";
  DIR* proc = opendir("/proc");
  if (!proc) return "";
  std::string found;
  while (dirent* e = readdir(proc)) {
    std::string pid = e->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string fd_dir = "/proc/" + pid + "/fd";
    DIR* fds = opendir(fd_dir.c_str());
    if (!fds) continue;
    while (dirent* fd = readdir(fds)) {
      char buf[256];
      std::string link = fd_dir + "/" + fd->d_name;
      ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
      if (n > 0 && target.compare(0, std::string::npos, buf, static_cast<size_t>(n)) == 0) {
        std::ifstream comm("/proc/" + pid + "/comm");
        std::string name;
        std::getline(comm, name);
        found = "pid " + pid + " (" + name + ")";
        break;
      }
    }
    closedir(fds);
    if (!found.empty()) break;
  }
  closedir(proc);
  return found;
}

void BindRetrying(zmq::socket_t& sock, const std::string& endpoint, double retry_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(retry_s);
  while (true) {
    try {
      sock.bind(endpoint);
      return;
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      if (e.num() != EADDRINUSE || std::chrono::steady_clock::now() > deadline) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace gnn
