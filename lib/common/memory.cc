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
  // them in page by page every step was a quarter of the step. Threads'
  // arenas still map what does not fit their 64 MiB heaps (glibc falls
  // back to mmap there), as the sampler's huge-page-advised batch buffers.
  mallopt(M_MMAP_MAX, 0);
#endif
}

}  // namespace gnn
