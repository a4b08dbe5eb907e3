#include "cluster/preflight.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <thread>

#include "cluster/launch_plan.h"
#include "cluster/remote.h"
#include "common/fs.h"
#include "common/launch_env.h"
#include "net/ip_config.h"
#include "net/ports.h"
#include "net/security.h"
#include "partition/config.h"

namespace gnn {

namespace fs = std::filesystem;

namespace {

// Whether a trainer command asks for a typed model, --model rgcn or rgat
// (or --model=rgcn, with or without quotes around the value).
bool NamesTypedModel(const std::string& command) {
  std::istringstream words(command);
  std::string w, prev;
  while (words >> w) {
    w.erase(std::remove(w.begin(), w.end(), '\''), w.end());
    w.erase(std::remove(w.begin(), w.end(), '"'), w.end());
    for (const char* m : {"rgcn", "rgat"}) {
      if (w == std::string("--model=") + m || (prev == "--model" && w == m)) return true;
    }
    // An inference run takes its model from the file (checked there).
    if (w == "--inference" || w == "--inference=true") return true;
    prev = w;
  }
  return false;
}

}  // namespace

// "" if TCP `port` can be bound on this host, else why not.
std::string PortBusy(const std::string& host, int port) {
  const bool v6 = IsIpv6Literal(host);
  int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    if (::inet_pton(AF_INET6, host.c_str(), &a.sin6_addr) != 1) a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  } else {
    // The machine's own address (two "machines" of one host may use the
    // same port on 127.0.0.1 and 127.0.0.2); a host name binds any.
    sockaddr_in a{};
    a.sin_family = AF_INET;
    if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  int err = errno;
  ::close(fd);
  if (rc == 0) return "";
  std::string holder = DescribePortHolder(port);
  return std::string(std::strerror(err)) + (holder.empty() ? "" : ", held by " + holder);
}

PortReservation::~PortReservation() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock; the file stays (see Take)
}

std::string PortReservation::Take(const std::string& host, int port) {
  (void)host;  // keyed by port alone: "localhost" and "127.0.0.1" are one port
  if (fd_ >= 0) return "";
  // Never removed: unlinking a lock file while another launcher waits on
  // it would let two of them hold "the" lock on two files. Made 0666 so
  // every user's jobs share it; opened without following a link, and used
  // only when it is a plain file.
  const std::string path =
      (fs::temp_directory_path() / ("gnn-master-port-" + std::to_string(port) + ".lock")).string();
  int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
      (void)::fchmod(fd, 0666);  // past the umask
    } else if (errno == EEXIST) {
      fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    }
  }
  // Another user's file we may not write: an exclusive lock through a
  // read-only descriptor still holds others off, it just cannot say who.
  if (fd < 0 && errno == EACCES) fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "";  // no usable lock file: the port check alone stands
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return "";
  }
  const bool writable = (::fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    // The holder writes its name just after taking the lock: a launcher
    // started at the same moment may look in between.
    char buf[200] = {0};
    ssize_t n = 0;
    for (int tries = 0; tries < 25 && n <= 0; ++tries) {
      if (tries > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    }
    ::close(fd);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    while (!holder.empty() && holder.back() == '\n') holder.pop_back();
    return "another gnn-launch" + (holder.empty() ? "" : " (" + holder + ")");
  }
  if (writable) {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    char when[32] = "?";
    if (::localtime_r(&now, &local)) std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &local);
    const std::string me = "pid " + std::to_string(::getpid()) + ", since " + when + "\n";
    if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, me.data(), me.size(), 0) < 0) {
      // The holder's name is a courtesy to the next launcher; the lock holds.
    }
  }
  fd_ = fd;
  return "";
}

namespace {

// The files of the partition machine m serves, as that machine's processes
// see them (next to its copy of the config), with the sizes the config
// gives; `folder` is the partition's folder.
struct PartFiles {
  int part = 0;
  std::string folder;
  std::vector<std::pair<std::string, uint64_t>> files;
};

// A remote check script's line for one problem: its exit code, a blank,
// what is wrong (CheckRemoteMachine reads it back).
std::string Say(int code, const std::string& what) {
  return "echo " + ShellQuote(std::to_string(code) + " " + what);
}

// One shell script that prints one line per problem on a remote machine.
std::string RemoteCheckScript(const MachinePlan& p, const std::string& trainer_word,
                              int num_servers, int master_port, int machine,
                              const PartFiles* parts) {
  const std::string ws = ShellPath(p.workspace);
  std::string s = "cd " + ws + " 2>/dev/null || { " +
                  Say(kExitData, "workspace " + p.workspace + " does not exist") +
                  "; exit 0; }; PATH=\"$PWD/bin:$PATH\"; ";
  for (const auto& f : {p.part_config, p.ip_config}) {
    s += "test -r " + ShellQuote(f) + " || " +
         Say(kExitData, "file " + f + " not found in the workspace") + "; ";
  }
  if (parts) {
    // The partition's folder, then each file at the size the config gives.
    std::string files;
    for (const auto& [path, bytes] : parts->files) {
      files += "test \"$(wc -c < " + ShellQuote(path) +
               " 2>/dev/null)\" = " + std::to_string(bytes) + " || " +
               Say(kExitData, "partition " + std::to_string(parts->part) + " file " + path +
                                  " is missing or not " + std::to_string(bytes) +
                                  " bytes (copy it again: gnn-copy)") +
               "; ";
    }
    s += "if test -d " + ShellQuote(parts->folder) + "; then " + files + "else " +
         Say(kExitData, "partition " + std::to_string(parts->part) + " folder " + parts->folder +
                            " not found (gnn-copy ships it)") +
         "; fi; ";
  }
  for (const auto& b : {std::string("gnn-server"), trainer_word}) {
    s += "command -v " + ShellQuote(b) + " >/dev/null || " +
         Say(kExitConfig, "binary " + b + " not found (workspace bin/ or PATH)") + "; ";
  }
  // Ports a listener already holds (bash's /dev/tcp connects; plain sh
  // without bash skips this check and the server reports a busy port).
  std::vector<std::pair<int, std::string>> ports;
  for (int k = 0; k < num_servers; ++k)
    ports.push_back({p.address.port + k, "server " + std::to_string(k)});
  if (machine == 0) ports.push_back({master_port, "the trainers' rendezvous (--master_port)"});
  std::string probe;
  for (const auto& [port, what] : ports) {
    const std::string target = "/dev/tcp/" + p.address.host + "/" + std::to_string(port);
    probe += "if (exec 3<>" + target + ") 2>/dev/null; then echo \"" + std::to_string(kExitConfig) +
             " port " + std::to_string(port) + " for " + what +
             " is busy: something listens there\"; fi; ";
  }
  s += "if command -v bash >/dev/null && command -v timeout >/dev/null; then timeout 5 bash -c " +
       ShellQuote(probe) + "; fi; ";
  return s + "exit 0";
}

// What the launcher reads itself: the ip_config and the partition config
// (one that cannot be read is a problem said once, and checked no further).
struct LaunchInputs {
  std::string ip_path, part_path;
  std::vector<MachineAddress> machines;
  PartitionConfig config;
  bool have_machines = false, have_parts = false;
};

PartFiles FilesOfMachine(const LaunchInputs& in, const MachinePlan& p, size_t m) {
  PartFiles out;
  out.part = MachinePartition(static_cast<int>(m), in.config.num_parts);
  const PartInfo& info = in.config.parts[static_cast<size_t>(out.part)];
  out.folder = (fs::path(p.part_config).parent_path() / info.dir).string();
  for (const auto& [name, file] : info.files) {
    out.files.emplace_back((fs::path(out.folder) / name).string(), file.bytes);
  }
  return out;
}

LaunchInputs ReadLaunchInputs(const LaunchOptions& o, std::vector<LaunchProblem>* problems) {
  LaunchInputs in;
  in.ip_path = LauncherPath(o, o.ip_config);
  in.part_path = LauncherPath(o, o.part_config);
  try {
    in.machines = ReadIpConfig(in.ip_path);
    in.have_machines = true;
  } catch (const std::exception& e) {
    problems->push_back({std::string("ip_config: ") + e.what(), ExitCodeOf(e)});
  }
  try {
    in.config = LoadPartitionConfig(in.part_path);
    in.have_parts = true;
  } catch (const std::exception& e) {
    problems->push_back({std::string("part_config: ") + e.what(), ExitCodeOf(e)});
  }
  return in;
}

// The partition config against the trainer command and the machines.
void CheckPartitionFits(const LaunchOptions& o, const LaunchInputs& in,
                        std::vector<LaunchProblem>* problems) {
  // Servers serve heterogeneous partitions; a trainer needs RGCN for them.
  if (in.have_parts && in.config.hetero() && !NamesTypedModel(o.command)) {
    problems->push_back({"partition config " + in.part_path +
                         " is a heterogeneous partitioning: the trainer command needs --model "
                         "rgcn or rgat (or --inference with such a model)"});
  }
  if (in.have_machines && in.have_parts &&
      in.config.num_parts > static_cast<int>(in.machines.size())) {
    problems->push_back({"partition config " + in.part_path + " has " +
                         std::to_string(in.config.num_parts) + " partitions but ip_config " +
                         in.ip_path + " lists " + std::to_string(in.machines.size()) +
                         " machines (machine m serves partition m mod " +
                         std::to_string(in.config.num_parts) + ": every partition needs one)"});
  }
}

// --part_source (where failover copies partitions from) must hold the same
// partitioning under the same file name.
void CheckPartSource(const LaunchOptions& o, const LaunchInputs& in,
                     std::vector<LaunchProblem>* problems) {
  if (o.part_source.empty()) return;
  try {
    const PartitionConfig source = LoadPartitionConfig(o.part_source);
    if (in.have_parts && source.num_parts != in.config.num_parts)
      problems->push_back({"--part_source " + o.part_source + " has " +
                           std::to_string(source.num_parts) + " partitions, --part_config " +
                           std::to_string(in.config.num_parts)});
    if (fs::path(o.part_source).filename() != fs::path(o.part_config).filename())
      problems->push_back({"--part_source " + o.part_source + " and --part_config " +
                           o.part_config + " name different files"});
  } catch (const std::exception& e) {
    problems->push_back({std::string("--part_source: ") + e.what(), ExitCodeOf(e)});
  }
}

// The cluster secret: readable when given, and required per node.
void CheckSecret(const LaunchOptions& o, std::vector<LaunchProblem>* problems) {
  if (!o.insecure && !o.secret_file.empty()) {
    try {
      net::ReadSecretFile(LauncherPath(o, o.secret_file));
    } catch (const std::exception& e) {
      problems->push_back({std::string("--secret_file: ") + e.what(), ExitCodeOf(e)});
    }
  } else if (!o.insecure && o.machine_id >= 0) {
    problems->push_back(
        {"a per-node launch (--machine_id / --slurm) needs --secret_file: one cluster secret on "
         "every machine (gnn-copy --secret_file FILE makes and ships it), or --insecure"});
  }
}

// The partition a local machine serves: its folder, then each file at the
// size the config gives (one line for a missing folder).
void CheckLocalPartFiles(const PartFiles& parts, const std::string& who,
                         std::vector<LaunchProblem>* problems) {
  std::error_code ec;
  const std::string part = who + ": partition " + std::to_string(parts.part);
  if (!fs::is_directory(parts.folder, ec)) {
    problems->push_back(
        {part + ": " + CannotMessage("open folder", parts.folder, DirectoryErrno(parts.folder)) +
             " (gnn-copy ships it)",
         kExitData});
    return;
  }
  for (const auto& [path, bytes] : parts.files) {
    const uintmax_t size = fs::file_size(path, ec);
    if (ec || size != bytes) {
      problems->push_back({part +
                               (ec ? ": " + CannotMessage("open", path, ec)
                                   : " file " + path + " has " + std::to_string(size) +
                                         " bytes, not " + std::to_string(bytes)) +
                               " (copy it again: gnn-copy)",
                           kExitData});
    }
  }
}

// A machine of this host: its workspace and files, its servers' ports and,
// on machine 0, the trainers' rendezvous port.
void CheckLocalMachine(const LaunchOptions& o, const LaunchInputs& in, const MachinePlan& p,
                       size_t m, const std::string& who, PortReservation* hold,
                       std::vector<LaunchProblem>* problems) {
  std::error_code ec;
  if (!fs::is_directory(p.workspace, ec)) {
    problems->push_back(
        {who + ": " + CannotMessage("open workspace", p.workspace, DirectoryErrno(p.workspace)),
         kExitData});
  } else {
    for (const auto& f : {p.part_config, p.ip_config}) {
      const bool said =
          (f == in.part_path && !in.have_parts) || (f == in.ip_path && !in.have_machines);
      if (!said && ::access(f.c_str(), R_OK) != 0)
        problems->push_back({who + ": " + CannotMessage("read", f, errno), kExitData});
    }
  }
  if (in.have_parts) {
    CheckLocalPartFiles(FilesOfMachine(in, p, m), who, problems);
  }
  for (int s = 0; s < o.num_servers && p.address.port + s <= 65535; ++s) {
    std::string why = PortBusy(p.address.host, p.address.port + s);
    if (!why.empty()) {
      problems->push_back({"port " + std::to_string(p.address.port + s) + " of machine " +
                           std::to_string(m) + " server " + std::to_string(s) + " (" + in.ip_path +
                           ":" + std::to_string(p.address.line) + ") is busy: " + why});
    }
  }
  if (m != 0) return;
  if (o.master_port >= p.address.port && o.master_port < p.address.port + o.num_servers) {
    problems->push_back({"--master_port " + std::to_string(o.master_port) +
                         " collides with machine 0's server ports"});
  } else {
    // Reserved first, then probed: a job that took the port between the two
    // holds the reservation too, so one of them is refused either way.
    const std::string holder = hold ? hold->Take(p.address.host, o.master_port) : "";
    std::string why = holder.empty() ? PortBusy(p.address.host, o.master_port) : "";
    if (!holder.empty()) {
      problems->push_back({"master port " + std::to_string(o.master_port) +
                           " on this host is held by " + holder +
                           " from its check until its trainers end: wait for that job or choose "
                           "another --master_port"});
    } else if (!why.empty()) {
      problems->push_back(
          {"master port " + std::to_string(o.master_port) + " on machine 0 is busy: " + why});
    }
  }
}

// A remote machine, over ssh: RemoteCheckScript's lines, or why ssh failed.
std::vector<LaunchProblem> CheckRemoteMachine(const LaunchOptions& o, const LaunchInputs& in,
                                              const MachinePlan& p, const std::string& word,
                                              size_t m, const std::string& who) {
  std::vector<LaunchProblem> problems;
  const PartFiles parts = in.have_parts ? FilesOfMachine(in, p, m) : PartFiles{};
  const std::string script = RemoteCheckScript(
      p, word, o.num_servers, o.master_port, static_cast<int>(m), in.have_parts ? &parts : nullptr);
  CommandResult r =
      RunCommand(SshArgv(o.ssh, p.address.host, script), o.ssh.connect_timeout.count() + 20);
  if (r.timed_out) {
    problems.push_back({who + ": ssh timed out (" + r.Describe() + ")", kExitTimeout});
    return problems;
  }
  if (r.exit_code != 0) {
    problems.push_back(
        {who + ": ssh failed (" + r.Describe() + "): " + r.LastErrorLine(), kExitPeer});
    return problems;
  }
  std::istringstream lines(r.out);  // one problem per line, "CODE what"
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    int code = kExitConfig;
    if (line.size() > 2 && line[0] >= '1' && line[0] <= '9' && line[1] == ' ') {
      code = line[0] - '0';
      line = line.substr(2);
    }
    problems.push_back({who + ": " + line, code});
  }
  return problems;
}

// The trainer binary on every local machine this launcher checks, and the
// server binary the local machines run.
void CheckLocalBinaries(const LaunchOptions& o, const std::vector<MachinePlan>& plans,
                        const std::string& word, std::vector<LaunchProblem>* problems) {
  for (size_t m = 0; m < plans.size(); ++m) {
    if (!plans[m].local || (o.machine_id >= 0 && static_cast<int>(m) != o.machine_id)) continue;
    if (ResolveBinary(word, plans[m].workspace).empty()) {
      problems->push_back({"machine " + std::to_string(m) + ": trainer binary '" + word +
                           "' not found (workspace bin/, PATH, or workspace " + plans[m].workspace +
                           ")"});
    }
  }
  const std::string server = ServerBinary(o);
  if (!IsExecutableFile(server)) problems->push_back({"server binary " + server + " not found"});
}

// The trainer command's flags, before any server loads a partition: the
// trainer binary of every local machine (each workspace once) parses them with --check_only
// (flags, config file keys, model defaults, the partition config against
// them) in that machine's environment, as it will at start. Only for
// gnn-train and gnn-serve: another command's flags are its own.
void CheckTrainerFlags(const LaunchOptions& o, const LaunchInputs& in,
                       const std::vector<MachinePlan>& plans,
                       std::vector<LaunchProblem>* problems) {
  std::string rest;
  const std::string word = FirstWord(o.command, &rest);
  const std::string program = fs::path(word).filename().string();
  if ((program != "gnn-train" && program != "gnn-serve") || !in.have_machines) return;
  // Every machine's workspace, once (a remote one per host): a relative
  // --config or model path in the command is resolved in each workspace as
  // the process will, on its own machine. Remote machines run the check
  // over ssh, all at once.
  std::vector<std::string> checked;
  std::vector<std::pair<size_t, std::vector<std::string>>> runs;  // machine, argv
  for (size_t m = 0; m < plans.size(); ++m) {
    const MachinePlan& p = plans[m];
    if (o.machine_id >= 0 && static_cast<int>(m) != o.machine_id) continue;
    const std::string key = (p.local ? std::string() : p.address.host) + "\n" + p.workspace;
    if (std::find(checked.begin(), checked.end(), key) != checked.end()) continue;
    checked.push_back(key);
    // The user's --extra_envs first, as the launch sets them; ours after.
    std::vector<std::string> env = o.extra_envs;
    env.insert(env.end(),
               {std::string(launch_env::kMachineId) + "=" + std::to_string(m),
                std::string(launch_env::kIpConfig) + "=" + p.ip_config,
                std::string(launch_env::kPartConfig) + "=" + p.part_config,
                launch_env::Entry(launch_env::kTrainerId, "0"),
                std::string(launch_env::kNumTrainers) + "=" + std::to_string(o.num_trainers),
                std::string(launch_env::kNumServers) + "=" + std::to_string(o.num_servers),
                std::string(launch_env::kNumSamplers) + "=" + std::to_string(o.num_samplers),
                std::string(launch_env::kMasterAddr) + "=" + in.machines[0].host,
                std::string(launch_env::kMasterPort) + "=" + std::to_string(o.master_port)});
    if (!p.local) {
      runs.push_back({m, SshArgv(o.ssh, p.address.host,
                                 RemoteCommand(p.workspace, env, o.command + " --check_only"))});
      continue;
    }
    const std::string binary = ResolveBinary(word, p.workspace);
    if (binary.empty()) continue;  // said by CheckLocalBinaries
    std::vector<std::string> argv = {"/usr/bin/env"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {"/bin/sh", "-c",
                             "cd " + ShellQuote(p.workspace) + " && exec " + ShellQuote(binary) +
                                 rest + " --check_only"});
    runs.push_back({m, std::move(argv)});
  }
  // At most kParallelChecks at once (each child holds a few descriptors);
  // a check that cannot even start is its machine's problem, not a crash.
  constexpr size_t kParallelChecks = 32;
  std::vector<CommandResult> results(runs.size());
  std::vector<std::string> failures(runs.size());
  for (size_t begin = 0; begin < runs.size(); begin += kParallelChecks) {
    std::vector<std::thread> threads;
    for (size_t i = begin; i < std::min(runs.size(), begin + kParallelChecks); ++i) {
      const double timeout = plans[runs[i].first].local ? 120 : o.ssh.connect_timeout.count() + 120;
      threads.emplace_back([&, i, timeout] {
        try {
          results[i] = RunCommand(runs[i].second, timeout);
        } catch (const std::exception& e) {
          failures[i] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const CommandResult& r = results[i];
    const std::string where =
        "trainer command (" + word + ") on machine " + std::to_string(runs[i].first) + ": ";
    if (!failures[i].empty()) {
      problems->push_back({where + "its check could not run: " + failures[i]});
      return;
    }
    if (r.exit_code == 0) continue;
    if (r.timed_out) {
      problems->push_back({where + "its check timed out (" + r.Describe() + ")", kExitTimeout});
      return;
    }
    std::string line = r.LastErrorLine();
    const std::string prefix = program + ": error: ";
    if (line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
    // gnn-train's own class (2 flags, 3 data); one that could not run: 2.
    const bool classed = r.exit_code >= kExitConfig && r.exit_code <= kExitPeer;
    problems->push_back({where + line, classed ? r.exit_code : kExitConfig});
    return;  // one machine's refusal is enough to say
  }
}

// Every machine this launcher starts: local ones here, remote ones over ssh
// in parallel (their problems follow the local ones, in machine order).
void CheckMachines(const LaunchOptions& o, const LaunchInputs& in, PortReservation* hold,
                   std::vector<LaunchProblem>* problems) {
  const std::string word = FirstWord(o.command, nullptr);
  const std::vector<MachinePlan> plans = PlanMachines(o, in.machines);
  bool any_local = false;
  std::vector<std::thread> remote_checks;
  std::vector<std::vector<LaunchProblem>> remote_problems(plans.size());
  for (size_t m = 0; m < plans.size(); ++m) {
    const MachinePlan& p = plans[m];
    const std::string who = "machine " + std::to_string(m) + " (" + p.address.host + ")";
    if (o.machine_id >= 0 && static_cast<int>(m) != o.machine_id)
      continue;  // its own launcher checks it
    if (o.machine_id >= 0 && !p.local) {
      problems->push_back({who + " (" + in.ip_path + ":" + std::to_string(p.address.line) +
                           ") is not an address of this host: run gnn-launch --machine_id " +
                           std::to_string(m) + " on that machine"});
      continue;
    }
    if (!p.local) {
      remote_checks.emplace_back([&, m, who] {
        try {
          remote_problems[m] = CheckRemoteMachine(o, in, plans[m], word, m, who);
        } catch (const std::exception& e) {
          remote_problems[m] = {{who + ": its check could not run: " + e.what()}};
        }
      });
      continue;
    }
    any_local = true;
    CheckLocalMachine(o, in, p, m, who, hold, problems);
  }
  for (auto& t : remote_checks) t.join();
  for (const auto& rp : remote_problems) problems->insert(problems->end(), rp.begin(), rp.end());
  if (any_local) CheckLocalBinaries(o, plans, word, problems);
  if (problems->empty()) CheckTrainerFlags(o, in, plans, problems);
}

}  // namespace

std::vector<LaunchProblem> CheckLaunch(const LaunchOptions& o, PortReservation* hold) {
  std::vector<LaunchProblem> problems;
  const LaunchInputs in = ReadLaunchInputs(o, &problems);
  if (in.have_machines && o.machine_id >= static_cast<int>(in.machines.size())) {
    problems.push_back({"--machine_id " + std::to_string(o.machine_id) + " but ip_config " +
                        in.ip_path + " lists " + std::to_string(in.machines.size()) + " machines"});
    return problems;
  }
  CheckPartitionFits(o, in, &problems);
  CheckPartSource(o, in, &problems);
  CheckSecret(o, &problems);
  if (!in.have_machines) return problems;
  try {
    CheckServerPorts(in.machines, o.num_servers, in.ip_path);
  } catch (const std::exception& e) {
    problems.push_back({e.what(), ExitCodeOf(e)});
  }
  CheckMachines(o, in, hold, &problems);
  return problems;
}

}  // namespace gnn
