// Moving a job off machines that are gone (gnn-launch --max_restarts with
// --part_source): which machines still answer, which surviving machine
// serves which partition in the next run (machine j serves partition
// j mod P, and as many machines as possible keep a partition they already
// hold), and gnn-copy's verified copy of what is missing, with the run's
// ip_config, to every survivor.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "cluster/launch_options.h"
#include "net/ip_config.h"

namespace gnn {

// Of `machines` (original indices into `all`), those that do not answer:
// a remote machine whose `ssh HOST true` fails within the connect timeout
// (its reason in `why`, one per lost machine); a local machine never.
std::vector<int> ProbeLost(const SshOptions& ssh, const std::vector<MachineAddress>& all,
                           const std::vector<int>& machines, std::vector<std::string>* why);

// `survivors` (original indices) in the order of the next run: slot j
// serves partition j mod num_parts, and a survivor keeps a slot of a
// partition it holds (holds[original index]) when one is free, so that
// as little as possible is copied. ConfigError when fewer survivors than
// partitions.
std::vector<int> Reassign(const std::vector<int>& survivors,
                          const std::vector<std::set<int>>& holds, int num_parts);

// Writes the run's ip_config (`all` in `order`) at `ip_path` on this host
// and ships it, the partition config and each machine's partition from
// `part_source` to the machines of `order` (machine j's workspace is the
// one of original machine order[j]) with gnn-copy's RunCopy: only what is
// missing or different is copied, all of it verified. The ip_config lands
// at WORKSPACE/<basename of ip_path>. Progress goes to stderr.
// Writes the run's ip_config at `ip_path` and puts it into every
// machine's workspace when no partition has to move (local machines: a
// file; remote ones: over ssh's stdin).
void ShipIpConfig(const LaunchOptions& o, const std::vector<MachineAddress>& all,
                  const std::vector<int>& order, const std::string& ip_path);

void ShipRunLayout(const LaunchOptions& o, const std::vector<MachineAddress>& all,
                   const std::vector<int>& order, const std::string& ip_path,
                   const std::string& part_source);

}  // namespace gnn
