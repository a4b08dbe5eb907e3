// Running under Slurm without ssh: which machine this node is and the
// ip_config of the allocation, from the variables srun sets.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gnn {

// Expands a Slurm host list ("node[01-03,7],gpu5" -> node01 node02 node03
// node7 gpu5), keeping zero padding. Throws ConfigError naming `text` on a
// malformed list.
std::vector<std::string> ExpandHostList(const std::string& text);

struct SlurmNode {
  int machine_id = 0;              // SLURM_NODEID
  int num_machines = 0;            // SLURM_NNODES
  std::string job_id;              // SLURM_JOB_ID ("" if unset)
  std::vector<std::string> hosts;  // expanded SLURM_JOB_NODELIST, in order
};

// Reads SLURM_NODEID, SLURM_NNODES, SLURM_JOB_NODELIST (and SLURM_JOB_ID)
// from `env`; ConfigError naming the variable when one is missing or
// malformed, or when the node list does not have SLURM_NNODES hosts.
SlurmNode ReadSlurm(const std::map<std::string, std::string>& env);

// The process environment as a map (for ReadSlurm).
std::map<std::string, std::string> ProcessEnvironment();

// ip_config text for `hosts`, all with `port`: IPv4 literals as written,
// names resolved to their first non-loopback IPv4 address (kept as
// written when there is none).
std::string SlurmIpConfig(const std::vector<std::string>& hosts, int port);

struct LaunchOptions;

// --slurm: machine id (unless given) from SLURM_NODEID, job id from
// SLURM_JOB_ID (unless given), and the ip_config (default
// ip_config-slurm-<SLURM_JOB_ID>.txt in the workspace) written from
// SLURM_JOB_NODELIST with base port `port` when the file does not exist. ConfigError naming the
// variable or file on bad input.
void ApplySlurm(bool machine_id_given, int port, LaunchOptions* o);

}  // namespace gnn
