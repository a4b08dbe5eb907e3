#include "common/memory.h"

#include <cstdlib>  // defines __GLIBC__ (through <features.h>) on glibc

#if defined(__GLIBC__)
#include <malloc.h>
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

}  // namespace gnn
