// The secret a launch hands its processes, from which every one of them
// derives the job's CURVE keys (net/security.h):
//  * --secret_file F: a cluster secret already on every machine (gnn-copy
//    --secret_file makes and ships it, mode 0600); per-node and Slurm launches need
//    one, since no launcher talks to another. Keys are per job all the
//    same: they derive from the secret and the job id.
//  * otherwise (one launcher for all machines): a fresh random secret for
//    this job, written with mode 0600 into every machine's workspace
//    (.gnn/secrets/<job>.secret; over ssh's stdin for remote machines,
//    never on a command line) and removed when the job ends.
//  * --insecure: none; plaintext, said in the log.
#pragma once

#include <string>
#include <vector>

#include "cluster/launch_plan.h"
#include "net/security.h"

namespace gnn {

class JobSecret {
 public:
  // Prepares the secret for the machines this launcher starts (`mine`).
  // ConfigError naming the file or machine when it cannot.
  JobSecret(const LaunchOptions& o, const std::vector<MachinePlan>& plans,
            const std::vector<bool>& mine, const std::string& job_id);
  // Removes the per-job secret files it wrote (best effort for remote ones).
  ~JobSecret();
  JobSecret(const JobSecret&) = delete;
  JobSecret& operator=(const JobSecret&) = delete;

  // The job's keys (for the launcher's own pings).
  const net::JobKeys& keys() const { return keys_; }
  // The keys of another job id with the same secret (a restarted job's).
  net::JobKeys KeysFor(const std::string& job_id) const;
  // Environment for machine m's processes: GNN_SECRET_FILE=... or GNN_INSECURE=1.
  std::string EnvFor(size_t machine) const;

 private:
  const LaunchOptions& o_;
  const std::vector<MachinePlan> plans_;  // a copy: the launcher re-plans after a lost machine
  std::string secret_;                    // "" when insecure
  net::JobKeys keys_;
  std::vector<std::string> paths_;    // per machine, as its processes see it
  std::vector<std::string> written_;  // per machine: the per-job file we wrote ("" if none)
};

}  // namespace gnn
