#include "cluster/job_secret.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "cluster/remote.h"
#include "common/error.h"

namespace gnn {

namespace {

namespace fs = std::filesystem;

constexpr const char* kSecretsDir = ".gnn/secrets";
constexpr double kShipTimeoutS = 30;

}  // namespace

JobSecret::JobSecret(const LaunchOptions& o, const std::vector<MachinePlan>& plans,
                     const std::vector<bool>& mine, const std::string& job_id)
    : o_(o), plans_(plans), paths_(plans.size()), written_(plans.size()) {
  if (o.insecure) {
    std::cerr
        << "gnn-launch: --insecure: servers, samplers and the rendezvous run in PLAINTEXT without "
           "authentication; anyone who reaches their ports can read the graph and stop the job\n";
    keys_ = net::JobKeys::Insecure();
    return;
  }
  if (!o.secret_file.empty()) {
    secret_ = net::ReadSecretFile(LauncherPath(o, o.secret_file));
    keys_ = net::JobKeys::Derive(secret_, job_id);
    for (size_t m = 0; m < plans.size(); ++m) {
      paths_[m] = plans[m].local ? InWorkspace(plans[m].workspace, ExpandHome(o.secret_file))
                                 : o.secret_file;
    }
    return;
  }
  if (o.machine_id >= 0) {
    throw ConfigError(
        "a per-node launch (--machine_id / --slurm) needs --secret_file: one cluster secret on "
        "every machine "
        "(gnn-copy --secret_file FILE makes and ships it), or --insecure for plaintext");
  }
  secret_ = net::NewSecret();
  const std::string& secret = secret_;
  keys_ = net::JobKeys::Derive(secret, job_id);
  const std::string rel = std::string(kSecretsDir) + "/" + job_id + ".secret";
  for (size_t m = 0; m < plans.size(); ++m) {
    if (!mine[m]) continue;
    const MachinePlan& p = plans[m];
    if (p.local) {
      const std::string dir = InWorkspace(p.workspace, kSecretsDir);
      std::error_code ec;
      fs::create_directories(dir, ec);
      ::chmod(dir.c_str(), 0700);
      paths_[m] = InWorkspace(p.workspace, rel);
      net::WriteSecretFile(paths_[m], secret);
      written_[m] = paths_[m];
      continue;
    }
    // Over ssh's stdin: a command line is visible to every user of both hosts.
    const CommandResult r = WriteFileOverSsh(o.ssh, p.address.host, p.workspace, rel, secret + "\n",
                                             true, kShipTimeoutS);
    if (r.exit_code != 0) {
      throw ConfigError("machine " + std::to_string(m) + " (" + p.address.host +
                        "): cannot write the job's secret into its workspace: " + r.Describe() +
                        ": " + r.LastErrorLine());
    }
    paths_[m] = rel;  // the remote process runs in its workspace
    written_[m] = rel;
  }
}

JobSecret::~JobSecret() {
  for (size_t m = 0; m < written_.size(); ++m) {
    if (written_[m].empty()) continue;
    if (plans_[m].local) {
      ::unlink(written_[m].c_str());
    } else {
      RunCommand(
          SshArgv(o_.ssh, plans_[m].address.host,
                  "cd " + ShellPath(plans_[m].workspace) + " && rm -f " + ShellQuote(written_[m])),
          kShipTimeoutS);
    }
  }
}

net::JobKeys JobSecret::KeysFor(const std::string& job_id) const {
  return o_.insecure ? net::JobKeys::Insecure() : net::JobKeys::Derive(secret_, job_id);
}

std::string JobSecret::EnvFor(size_t machine) const {
  if (!keys_.secure()) return "GNN_INSECURE=1";
  return "GNN_SECRET_FILE=" + paths_[machine];
}

}  // namespace gnn
