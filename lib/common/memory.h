// Process-wide allocator policy for programs that build and free large
// per-batch buffers (features, blocks) in a loop.
#pragma once

namespace gnn {

// Keeps freed memory in the process for reuse instead of handing it back to
// the kernel: glibc otherwise serves each multi-MB batch buffer with a fresh
// mmap whose pages the kernel must zero on first touch, then unmaps it when
// the batch is freed, every step. Raises malloc's mmap threshold to its
// maximum (32 MiB), stops the main heap from using mmap at all (larger
// buffers come from the heap too) and raises the trim threshold to 1 GiB.
// Call once, early, before threads start; a no-op off glibc.
void KeepFreedMemoryForReuse();

}  // namespace gnn
