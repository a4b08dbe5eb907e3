// Client-side decoders of server replies: every count, offset and id that
// comes off the wire is checked against what was asked before anything is
// copied or indexed, so a broken or hostile server yields a ProtocolError
// naming it, never an out-of-range access.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net/protocol.h"

namespace gnn::net {

// SampleReply for `num_seeds` seeds drawn with `fanout` (-1 = all) from a
// graph of `num_nodes` nodes: indptr starts at 0, never decreases, ends at
// the number of indices; no row holds more than `fanout`; every index is a
// node id. `peer` names the server in errors.
void DecodeSampleReply(const Message& reply, size_t num_seeds, int fanout, int64_t num_nodes,
                       const std::string& peer, std::vector<int64_t>* indptr,
                       std::vector<int64_t>* indices);

// PullFeaturesReply for `count` rows of `dim` floats: a view of the rows.
const float* DecodeFeaturesReply(const Message& reply, size_t count, int64_t dim, const std::string& peer);

// PullLabelsReply for `count` nodes.
std::vector<int64_t> DecodeLabelsReply(const Message& reply, size_t count, const std::string& peer);

// SplitNodesReply: exactly `count` increasing ids inside [node_start, node_end).
std::vector<int64_t> DecodeSplitNodesReply(const Message& reply, int64_t count, int64_t node_start,
                                           int64_t node_end, const std::string& peer);

}  // namespace gnn::net
