// The supervisor: the processes of a job as gnn-launch sees them. Each runs
// in its own process group with three pipes; one poll loop forwards their
// output (prefixed "[machine role rank]" on stderr, one log file each),
// reaps them, and tells who failed first. Stopping closes every stdin
// (processes watch it, also through ssh), SIGTERMs, then SIGKILLs.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace gnn {

class Guardian;

// One started process: its pipes, log file and last lines.
struct Proc {
  int machine = 0;
  std::string role;
  int rank = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};  // stdout, stderr read ends
  std::string partial[2];
  std::ofstream log;
  std::string log_path;
  std::deque<std::string> tail;
  std::string last_stdout;
  int stdin_fd = -1;    // write end of its stdin; closing it tells it to stop
  bool remote = false;  // an ssh client standing for a remote process
  bool exited = false;
  int status = 0;
  int exit_seq = 0;  // order in which exits were seen
  // What a trainer says on "@gnn ..." stdout lines (GNN_REPORT_PROGRESS),
  // which are kept out of the output and the log.
  int64_t step = -1;             // "@gnn step G": global steps done
  int64_t resumed_step = -1;     // "@gnn resumed G": where this run began
  int64_t checkpoint_step = -1;  // "@gnn checkpoint G PATH": its newest checkpoint (rank 0)
  std::string checkpoint_path;
  std::chrono::steady_clock::time_point first_step_at{};  // when it first reported a step

  std::string Name() const {
    return "[" + std::to_string(machine) + " " + role + " " + std::to_string(rank) + "]";
  }
  bool Failed() const { return exited && !(WIFEXITED(status) && WEXITSTATUS(status) == 0); }
};

class Job {
 public:
  // echo: also write every output line, prefixed, to stderr (the log
  // files get them either way).
  Job(Guardian* guardian, bool echo) : guardian_(guardian), echo_(echo) {}
  ~Job() {
    if (!stopped_) KillAll();
  }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Starts argv in its own process group with `env` added (SpawnPiped).
  Proc* Start(int machine, const std::string& role, int rank, const std::vector<std::string>& argv,
              const std::vector<std::string>& env, const std::string& cwd,
              const std::string& log_dir, bool remote);

  // Forwards output for up to `timeout_ms`, then reaps exited children.
  void Pump(int timeout_ms);

  // Reaps exited children, and the orphans of a failed trainer too (the
  // launcher is their subreaper).
  void Reap();

  // The first process that failed (or a server that ended early), or null.
  Proc* FirstFailure(bool servers_must_run);

  // True once a trainer exited 0: it passed the job's last collective, so
  // every trainer everywhere is done with the servers.
  bool AnyTrainerSucceeded() const;

  bool TrainersDone() const;

  // Closes every stdin (a remote process sees EOF through ssh and stops),
  // SIGTERMs every local process group, and after `grace` SIGTERMs the ssh
  // clients still running and SIGKILLs what is left.
  void Stop(double grace_s);

  const std::vector<std::unique_ptr<Proc>>& procs() const { return procs_; }

 private:
  bool AllExited() const;
  bool AnyOpen() const;
  // SIGKILL every group (also children a leader left behind) and reap.
  void KillAll();
  void Read(Proc* p, int k);
  void Flush(Proc* p);
  void Line(Proc* p, int k, const std::string& line);
  // Takes an "@gnn ..." progress line; false if `line` is not one.
  static bool Progress(Proc* p, const std::string& line);

  Guardian* guardian_;
  bool echo_;
  std::vector<std::unique_ptr<Proc>> procs_;
  int exits_ = 0;
  bool stopped_ = false;  // Stop() ran: every group is gone, their ids may be reused
};

}  // namespace gnn
