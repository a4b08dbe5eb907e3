// Names, paths and housekeeping of gnn's shared-memory segments: how a
// partition's (and a job's) segment is named, where it and its lock file
// live, and removing them (one, or every stale one a killed job left).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "partition/config.h"

namespace gnn {

// sha256 (hex) of the canonical JSON of `config` (ToJson): identifies a
// partitioning independently of where its files live.
std::string PartitionConfigDigest(const PartitionConfig& config);

// Segment name for (graph, config digest, partition):
// "/gnn-<graph>-<first 16 chars of digest>-p<part>", with characters outside
// [A-Za-z0-9._-] replaced by '_' and the graph name cut to 48 characters, so
// it is at most 100 characters. Pure function.
std::string ShmSegmentName(const std::string& graph_name, const std::string& config_sha256,
                           int part);
// ShmSegmentName(config.graph_name, PartitionConfigDigest(config), part).
std::string ShmSegmentName(const PartitionConfig& config, int part);
// Shared-memory segment of partition `part` for one job: the job id is part
// of the name so two jobs on one machine never share or clobber a segment.
std::string JobShmName(const std::string& graph_name, const std::string& config_sha256,
                       const std::string& job_id, int part);

// Where the segment and its lock file live: "/dev/shm/<name without '/'>"
// and the same with ".lock" appended.
std::string ShmSegmentPath(const std::string& name);
std::string ShmLockPath(const std::string& name);

// Removes the segment and its lock file regardless of who is attached
// (attached processes keep their mapping). For operators and test cleanup;
// never throws.
void RemoveShmSegment(const std::string& name);

// What SweepStaleSegments removed.
struct StaleSweep {
  std::vector<std::string> names;  // segment file names
  uint64_t bytes = 0;
};

// Removes every gnn-* segment under `dir` whose lock file no process holds:
// the leftovers of jobs whose every process was SIGKILLed (nobody could
// clean up). Live segments are never touched (their users hold the lock),
// nor any whose lock file is younger than `min_age_s` (a job that is just
// failing may still be cleaning up). Server 0 runs it before creating its
// own segment.
StaleSweep SweepStaleSegments(const std::string& dir = "/dev/shm", double min_age_s = 60);

}  // namespace gnn
