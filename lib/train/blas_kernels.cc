#include "train/blas_kernels.h"

#include <dlfcn.h>
#include <strings.h>
#include <unistd.h>

#include <cstdlib>

namespace gnn {
namespace {

constexpr const char* kMarker = "GNN_BLAS_KERNELS_SET";

}  // namespace

void UseBestBlasKernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || std::getenv(kMarker) != nullptr) return;
  using CoreName = char* (*)();
  auto core_name = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (core_name == nullptr) return;  // not OpenBLAS
  const char* core = core_name();
  if (core == nullptr || strcasecmp(core, "prescott") != 0) return;
  const char* better = __builtin_cpu_supports("avx512f") ? "SKYLAKEX"
                       : __builtin_cpu_supports("avx2")  ? "HASWELL"
                                                         : nullptr;
  if (better == nullptr) return;  // Prescott is right for this CPU
  setenv("OPENBLAS_CORETYPE", better, 1);
  setenv(kMarker, better, 1);
  // By the binary's own path, not /proc/self/exe: the process's name
  // (comm, what ps and pkill show) is the basename of the path exec'd.
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = 0;
    execv(self, argv);
  }
  // The re-exec failed: carry on with the fallback kernels.
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(kMarker);  // BlasKernelsNote must not claim kernels this process lacks
}

std::string BlasKernelsNote() {
  const char* set = std::getenv(kMarker);
  if (set == nullptr || *set == 0) return "";
  return std::string(
             "OpenBLAS did not recognise this CPU and fell back to its Prescott (SSE3) "
             "kernels; using its ") +
         set + " kernels (set OPENBLAS_CORETYPE to choose)";
}

}  // namespace gnn
