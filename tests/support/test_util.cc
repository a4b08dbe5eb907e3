#include "test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "common/gzip.h"

namespace gnn::test {

namespace {
std::string g_secret_dir;
std::string g_secret_file;
}  // namespace

bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

bool WaitForRewrites(const std::string& path, int times, std::chrono::milliseconds timeout,
                     const std::function<bool()>& keep_going) {
  auto signature = [&] {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::string();
    return std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  };
  std::string last = signature();
  int seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (seen < times) {
    if (std::chrono::steady_clock::now() >= deadline || !keep_going()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const std::string now = signature();
    if (!now.empty() && now != last) ++seen;
    last = now;
  }
  return true;
}

void InstallTestSecret() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/gnn-test-secret-XXXXXX";
  std::vector<char> name(templ.begin(), templ.end());
  name.push_back('\0');
  if (!::mkdtemp(name.data()))
    throw std::runtime_error("cannot make a directory for the test secret");
  g_secret_dir = name.data();
  g_secret_file = g_secret_dir + "/cluster.secret";
  net::WriteSecretFile(g_secret_file, net::NewSecret());
  ::setenv("GNN_SECRET_FILE", g_secret_file.c_str(), 1);
}

void RemoveTestSecret() {
  if (g_secret_dir.empty()) return;
  ::unlink(g_secret_file.c_str());
  ::rmdir(g_secret_dir.c_str());
}

const std::string& TestSecretFile() { return g_secret_file; }

net::JobKeys Keys(const std::string& job_id) {
  return net::JobKeys::Derive(net::ReadSecretFile(g_secret_file), job_id);
}

namespace fs = std::filesystem;

TempDir::TempDir() : dir_("", "gnn-test-") {}

std::string SharedDataset(const std::string& name) {
  fs::path p = fs::path(GNN_SOURCE_DIR) / ".." / "shared" / "datasets" / name;
  std::error_code ec;
  if (fs::is_directory(p / "raw", ec)) return fs::canonical(p).string();
  return "";
}

std::string TreeState(const std::string& dir) {
  std::vector<std::string> lines;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::string line = fs::relative(e.path(), dir).string();
    if (e.is_regular_file()) {
      line += " " + std::to_string(e.file_size()) + " " +
              std::to_string(e.last_write_time().time_since_epoch().count());
    }
    lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string Bin(const std::string& name) { return std::string(GNN_BIN_DIR) + "/" + name; }

ProcessResult RunProcess(const std::vector<std::string>& argv, double timeout_s) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  ProcessResult r;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  bool timed_out = false;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        ssize_t k = read(fds[i].fd, buf, sizeof(buf));
        if (k <= 0) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        } else {
          (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(k));
        }
      }
    }
  }
  if (timed_out) {
    kill(-pid, SIGKILL);
    for (auto& f : fds) {
      if (f.fd >= 0) close(f.fd);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) {
    throw std::runtime_error("process " + argv[0] + " timed out after " +
                             std::to_string(timeout_s) + " s; stderr: " + r.err);
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  return r;
}

void WriteGz(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  GzipWriter w(path);
  w.Write(text);
  w.Commit();
}

void ExpectOneLine(const ProcessResult& r, const std::string& program, const std::string& needle) {
  INFO(r.err);
  CHECK(r.exit_code > 0);
  std::string last = r.err;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  CHECK(last.find("error:") == last.rfind("error:"));  // one error line
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  CHECK_THAT(last, Catch::StartsWith(program + ": error: ") && Catch::Contains(needle));
}

}  // namespace gnn::test
