// The guardian: a process forked by gnn-launch before any thread exists,
// which outlives a SIGKILLed launcher. It learns every process group the
// launcher starts through a pipe; if the pipe closes without the launcher's
// "done", it SIGTERMs the groups, SIGKILLs them after `grace_s` and removes
// the job's shared-memory segments (children killed by PR_SET_PDEATHSIG do
// not run their cleanup).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gnn {

class Guardian {
 public:
  Guardian(double grace_s, const std::vector<std::string>& shm_names);
  // Says "done" (nothing to clean up) and waits for the guardian to exit.
  ~Guardian();
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;

  // The guardian kills this process group if the launcher dies.
  void Watch(pid_t group);
  // Every group watched so far is gone (a run of the job was stopped): the
  // guardian forgets them, so it never signals a reused id.
  void ForgetGroups();
  // The guardian also removes this shared-memory segment (a later run's).
  void AddShm(const std::string& name);

 private:
  void Send(const std::string& line);
  pid_t pid_ = -1;
  int fd_ = -1;
};

}  // namespace gnn
