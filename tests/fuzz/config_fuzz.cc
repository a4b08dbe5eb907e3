// libFuzzer target for the partition config reader: JSON text through
// ParsePartitionConfigText (parse + every range, consistency and path
// check). The only acceptable failure is a gnn::Error subclass; anything
// else (a raw nlohmann exception, a sanitizer report, an accepted config
// that breaks a documented invariant) is a crash. part_dir checks resolve
// paths under a scratch folder made once per process.
//
//   CXX=clang++ cmake -S . -B build-fuzz -DGNN_FUZZ=ON -DGNN_WITH_TORCH=OFF -DGNN_BUILD_TESTS=OFF
//   cmake --build build-fuzz --target gnn-config-fuzz
//   build-fuzz/tests/fuzz/gnn-config-fuzz -max_total_time=60
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/error.h"
#include "common/fs.h"
#include "partition/config.h"

namespace {

[[noreturn]] void Broken(const std::string& what) {
  std::fprintf(stderr, "invariant broken: %s\n", what.c_str());
  std::abort();
}

// Made on first use, removed at exit (libFuzzer leaves through exit()).
struct ScratchDir {
  std::string path = gnn::MakeUniqueDir("/tmp/gnn-config-fuzz.");
  ~ScratchDir() { gnn::RemoveAllQuietly(path); }
};

const std::string& BaseDir() {
  static const ScratchDir dir;
  return dir.path;
}

void CheckAccepted(const gnn::PartitionConfig& c) {
  if (c.num_parts < 1 || c.parts.size() != static_cast<size_t>(c.num_parts)) {
    Broken("num_parts does not match the parts");
  }
  int64_t next_node = 0, next_edge = 0;
  for (const gnn::PartInfo& p : c.parts) {
    if (p.node_start != next_node || p.node_end < p.node_start) Broken("node ranges");
    if (p.edge_start != next_edge || p.edge_end < p.edge_start) Broken("edge ranges");
    if (p.num_train < 0 || p.num_train > p.num_nodes()) Broken("num_train");
    const std::filesystem::path dir(p.dir);
    if (p.dir.empty() || dir.is_absolute()) Broken("part_dir not relative: " + p.dir);
    for (const auto& part : dir) {
      if (part == "..") Broken("part_dir has a '..' component: " + p.dir);
    }
    next_node = p.node_end;
    next_edge = p.edge_end;
  }
  if (next_node != c.num_nodes || next_edge != c.num_edges) Broken("ranges do not cover");
  if (c.PartOf(c.num_nodes) != -1 || (c.num_nodes > 0 && c.PartOf(c.num_nodes - 1) < 0)) {
    Broken("PartOf");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    CheckAccepted(gnn::ParsePartitionConfigText(text, BaseDir(), "fuzz.json"));
  } catch (const gnn::Error&) {
  }
  return 0;
}
