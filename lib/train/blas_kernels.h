// OpenBLAS picks its GEMM kernels by the CPU's family and model at load
// time. Debian 12's OpenBLAS 0.3.21 does not know CPUs newer than it
// (e.g. family 6 model 207, Emerald Rapids) and falls back to its
// "Prescott" kernels (SSE3): a [56k, 32] x [32, 64] GEMM takes 24 ms
// instead of 12 ms with its SkylakeX (AVX-512) ones. The choice can only
// be overridden before the library loads (OPENBLAS_CORETYPE), so a
// trainer that finds the fallback on a CPU with AVX-512 or AVX2 sets it
// and re-executes itself once, with the same arguments.
#pragma once

#include <string>

namespace gnn {

// Re-executes this process with OPENBLAS_CORETYPE set when OpenBLAS fell
// back to Prescott on an AVX2/AVX-512 CPU and the user set no core type;
// returns when there is nothing to do or the re-exec failed.
void UseBestBlasKernels(char** argv);

// After such a re-exec: the one line that says so ("" otherwise).
std::string BlasKernelsNote();

}  // namespace gnn
