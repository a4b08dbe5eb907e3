// libFuzzer target for the .npy header parser (ParseNpyHeader, which
// ReadNpyHeader and ReadNpy use): the input is a whole file. The only
// acceptable failure is a DataError; anything else (another exception, a
// sanitizer report, an accepted header that breaks its invariants) is a
// crash.
//
//   CXX=clang++ cmake -S . -B build-fuzz -DGNN_FUZZ=ON -DGNN_WITH_TORCH=OFF -DGNN_BUILD_TESTS=OFF
//   cmake --build build-fuzz --target gnn-npy-fuzz
//   build-fuzz/tests/fuzz/gnn-npy-fuzz -max_total_time=60
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "common/npy.h"

namespace {

[[noreturn]] void Broken(const std::string& what) {
  std::fprintf(stderr, "invariant broken: %s\n", what.c_str());
  std::abort();
}

void CheckAccepted(const gnn::NpyHeader& h, size_t size) {
  if (h.shape.size() > gnn::kMaxNpyDims) Broken("too many dimensions");
  __int128 elements = 1;
  for (int64_t d : h.shape) {
    if (d < 0) Broken("negative extent");
    elements *= d;
    if (elements > INT64_MAX) elements = INT64_MAX;  // only to keep the product bounded
  }
  if (elements != h.num_elements) Broken("num_elements differs from prod(shape)");
  if (h.data_bytes != static_cast<uint64_t>(h.num_elements) * gnn::DTypeSize(h.dtype)) {
    Broken("data_bytes differs from num_elements * dtype size");
  }
  if (h.data_offset > size || h.data_bytes != size - h.data_offset) {
    Broken("accepted a header whose sizes disagree with the file");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    CheckAccepted(gnn::ParseNpyHeader(data, size, size, "fuzz.npy"), size);
  } catch (const gnn::DataError&) {
  }
  return 0;
}
