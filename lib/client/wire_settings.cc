#include "client/wire_settings.h"

#include <CLI/CLI.hpp>

namespace gnn {

void AddWireFlags(CLI::App& app, WireSettings* out) {
  app.add_option_function<std::string>(
         "--wire_dtype",
         [out](const std::string& v) { out->row_format = net::ParseRowFormat(v, "--wire_dtype"); },
         "float32, or bfloat16 (half the bytes) for feature rows and partial sums on the "
         "network")
      ->check(CLI::IsMember({"float32", "bfloat16"}))
      ->default_str(net::RowFormatName(out->row_format));
  app.add_option_function<std::string>(
         "--wire_ids",
         [out](const std::string& v) { out->id_coding = net::ParseIdCoding(v, "--wire_ids"); },
         "varint (1-3 bytes an id) or int64 for the batches' ids, offsets and counts on the "
         "network")
      ->check(CLI::IsMember({"varint", "int64"}))
      ->default_str(net::IdCodingName(out->id_coding));
}

void AppendWireArgv(const WireSettings& s, std::vector<std::string>* argv) {
  argv->insert(argv->end(), {"--wire_dtype", net::RowFormatName(s.row_format), "--wire_ids",
                             net::IdCodingName(s.id_coding)});
}

}  // namespace gnn
