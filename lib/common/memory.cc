#include "common/memory.h"

#include <cstdint>
#include <cstdlib>  // defines __GLIBC__ (through <features.h>) on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#ifdef __linux__
#include <sys/mman.h>
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1; older C libraries' headers lack it
#endif
#endif

namespace gnn {

void KeepFreedMemoryForReuse() {
#if defined(__GLIBC__)
  // 32 MiB is glibc's largest accepted mmap threshold on 64-bit targets;
  // larger buffers are still mapped (and advised to huge pages where the
  // sampler fills them).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // And no mmap at all for the main heap: a products-size GAT step builds
  // and frees tensors of 60 MB and more, past any threshold, and faulting
  // them in page by page every step was a quarter of the step.
  mallopt(M_MMAP_MAX, 0);
  // And every thread on that heap: a thread's own arena maps whatever does
  // not fit its 64 MiB heaps (glibc falls back to mmap there, whatever
  // M_MMAP_MAX says) and unmaps it on free, so a distributed trainer's
  // prefetch thread faulted in each batch's 80 MB of input rows afresh
  // (products, GCN on 2 machines: 15 % of the box in page faults and
  // zeroing; epochs 18.9-21.7 s -> 13.9-14.6 s with one arena). The
  // threads allocate large buffers, not many small ones, so one arena's
  // lock costs nothing measurable (standalone GAT: 0.95x wall).
  mallopt(M_ARENA_MAX, 1);
#endif
}

bool CollapseToHugePages(const void* p, size_t bytes) {
#ifdef __linux__
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end <= begin) return false;
  return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_COLLAPSE) == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

}  // namespace gnn
