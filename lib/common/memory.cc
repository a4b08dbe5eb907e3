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
#endif
}

}  // namespace gnn
