// How much memory this process may still take: the machine's available
// memory (/proc/meminfo's MemAvailable), or less where a cgroup limits the
// process (a container, a systemd slice, a batch job's allocation), and
// its own resident size now.
#pragma once

#include <cstdint>
#include <string>

namespace gnn {

// Bytes this process can still allocate without swapping or being killed:
// the least of MemAvailable and every cgroup limit's headroom (v2
// memory.max - memory.current, v1 limit - usage); -1 when none can be read.
int64_t AvailableMemoryBytes();

// This process's resident set now (/proc/self/status VmRSS); 0 if unknown.
int64_t CurrentRssBytes();

// "1.9 GiB" (one decimal), or "310 MiB" under 1 GiB.
std::string MemoryText(int64_t bytes);

}  // namespace gnn
