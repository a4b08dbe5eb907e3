// gnn-copy: ship partition i of a partitioned graph (with the partition
// config, the ip_config and an optional script folder) to the workspace of
// machine i of an ip_config, as DGL's tools/copy_files.py does, and verify
// every file's sha256 where it lands. Machines that are this host get a
// local copy; others are reached with ssh and rsync or scp. Files that are
// already in place with the right sha256 are not copied again.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cluster/remote.h"

namespace gnn {

// The executables --ship_binaries copies to WORKSPACE/bin (gnn-launch puts
// that folder first on PATH on every machine).
extern const std::vector<std::string> kShippedBinaries;

struct CopyOptions {
  std::string ip_config;  // machines, one "IP [PORT]" per line; machine i gets partition i mod P
  // Destination on every machine. "{machine}" expands to the machine index,
  // a leading "~/" is the (remote) user's home; a relative path is relative
  // to the home directory on remote machines and to the current directory
  // on local ones.
  std::string workspace;
  // The "{machine}" of machine i's workspace: workspace_index[i] (a job
  // moved off a lost machine keeps each survivor's workspace); empty = i.
  std::vector<int> workspace_index;
  std::string rel_data_path;  // partitions go to WORKSPACE/REL_DATA_PATH ("" = WORKSPACE)
  std::string part_config;    // partition config JSON written by gnn-partition
  std::string script_folder;  // optional; copied to WORKSPACE/<its basename>
  // Optional cluster secret (net/security.h): made here with mode 0600 when
  // it does not exist, shipped to WORKSPACE/<its basename> keeping mode
  // 0600, for per-node and Slurm launches (gnn-launch --secret_file).
  std::string secret_file;
  SshOptions ssh;
  bool ship_binaries = false;
  std::string binary_dir;  // where --ship_binaries takes them ("" = this executable's folder)
  std::string transfer = "auto";  // "auto" (rsync if here and there, else scp), "rsync", "scp"
  bool dry_run = false;           // print the plan; write nothing anywhere
  int jobs = 8;                   // machines handled in parallel
  // Every ssh/scp/rsync call must end within `timeout` plus 1 s per MB it
  // moves (plus 1 s per 20 MB it hashes).
  std::chrono::duration<double> timeout{60};

  void Validate() const;  // ConfigError naming the bad flag
};

struct MachineCopyResult {
  int machine = 0;
  std::string label;                // "machine 1 (10.0.0.5:22)"
  std::string workspace;            // as used on that machine
  std::string method;               // "local", "rsync" or "scp"
  std::vector<std::string> copied;  // destination paths relative to the workspace
  uint64_t copied_bytes = 0;
  int unchanged = 0;
};

struct CopyReport {
  std::vector<MachineCopyResult> machines;  // by machine index
};

// Checks everything first (ip_config, partition config, partition count ==
// machine count, every source file present and matching the config's
// sha256), then copies to all machines, `options.jobs` at a time, and
// verifies what it copied. Prints one line per machine ("... copied N files
// (X MB), M unchanged") and, with dry_run, the plan, to `out`. Throws
// ConfigError / DataError before anything is written when the input is
// wrong; when a machine fails (PeerError unreachable, TimeoutError, DataError
// checksum mismatch after copying) the other machines still finish, every
// failure is logged, and the lowest machine's error is thrown. Blocking.
// When `stop` (a caller's signal flag) becomes non-zero, running ssh/scp/
// rsync calls are killed, temporaries removed, and Error is thrown.
CopyReport RunCopy(const CopyOptions& options, std::ostream& out,
                   const std::atomic<int>* stop = nullptr);

}  // namespace gnn
