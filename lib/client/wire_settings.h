// How a job's batches cross the network: one typed setting each, parsed
// once where its flag enters (gnn-train, gnn-sampler), its default stated
// once, written into a child's argv by the same code that reads it back.
#pragma once

#include <string>
#include <vector>

#include "net/messages.h"
#include "net/protocol.h"

namespace CLI {
class App;
}

namespace gnn {

struct WireSettings {
  // --wire_dtype float32|bfloat16: feature rows and partial sums
  // (bfloat16: half the bytes, ~3 significant digits; the default since
  // synthetic:small, synthetic:products and Cora train to the same
  // accuracy with it, docs/PERFORMANCE.md).
  net::RowFormat row_format = net::RowFormat::kBfloat16;
  // --wire_ids varint|int64: the batches' ids, offsets, counts and labels
  // (varint: zigzag differences of ids sorted by owner, 1-3 bytes an id
  // instead of 8; the same batches either way).
  net::IdCoding id_coding = net::IdCoding::kVarint;

  bool operator==(const WireSettings& o) const {
    return row_format == o.row_format && id_coding == o.id_coding;
  }
};

// Registers --wire_dtype and --wire_ids on `app`, parsed into *out (a bad
// value is CLI11's error naming the flag and the values it takes).
void AddWireFlags(CLI::App& app, WireSettings* out);
// The same flags with their values, appended to a child's argv.
void AppendWireArgv(const WireSettings& s, std::vector<std::string>* argv);

}  // namespace gnn
