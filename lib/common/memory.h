// Process-wide allocator policy for programs that build and free large
// per-batch buffers (features, blocks) in a loop, and the prefetch every
// gather of scattered rows uses.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace gnn {

// Asks the CPU for the first cache lines (at most `max_lines` of 64 bytes)
// of [p, p + bytes) ahead of their use. Rows gathered from a matrix far
// larger than the caches miss one after another in a plain loop; issuing a
// row's lines some rows ahead keeps several misses in flight, and the
// hardware prefetcher streams the rest of a long row. A hint: never faults.
inline void PrefetchBytes(const void* p, size_t bytes, size_t max_lines = 4) {
  const char* c = static_cast<const char*>(p);
  const size_t lines = std::min(max_lines, (bytes + 63) / 64);
  for (size_t i = 0; i < lines; ++i) __builtin_prefetch(c + 64 * i);
}

// Keeps freed memory in the process for reuse instead of handing it back to
// the kernel: glibc otherwise serves each multi-MB batch buffer with a fresh
// mmap whose pages the kernel must zero on first touch, then unmaps it when
// the batch is freed, every step. Raises malloc's mmap threshold to its
// maximum (32 MiB), stops the main heap from using mmap at all (larger
// buffers come from the heap too), raises the trim threshold to 1 GiB and
// puts every thread on that one heap (one arena: a thread's own arena maps
// and unmaps large buffers whatever the settings). Call once, early,
// before threads start; a no-op off glibc.
void KeepFreedMemoryForReuse();

// Backs the 2 MiB-aligned pages inside [p, p + bytes) with transparent
// huge pages now (Linux 6.1's MADV_COLLAPSE): anonymous memory whatever the
// THP settings say; shared memory only where its tmpfs mount allows huge
// pages (/dev/shm with huge=advise, within_size or always; the default,
// never, refuses). For arrays read at random far beyond the TLB's reach: a
// graph's neighbour lists, sampled a few entries per node. The pages keep
// their contents. True when the kernel did it; false where it cannot (an
// older kernel, such a mount, no free huge pages): a hint, the memory is
// unchanged.
bool CollapseToHugePages(const void* p, size_t bytes);

// std::allocator whose value-less construct leaves the element
// uninitialized: resize() on a vector of it reserves and does not write.
// For buffers every element of which is written right after (a batch's
// input rows: 80 MB a step for GraphSAGE/GCN on products, which a plain
// vector would zero first for nothing).
template <class T>
struct NoInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <class U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible<U>::value) {
    ::new (static_cast<void*>(p)) U;  // default-initialized: no value for a float
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <class T>
using NoInitVector = std::vector<T, NoInitAllocator<T>>;

}  // namespace gnn
