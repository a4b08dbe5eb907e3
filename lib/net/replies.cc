#include "net/replies.h"

#include "common/error.h"

namespace gnn::net {

namespace {

[[noreturn]] void Bad(const std::string& peer, const std::string& what) {
  throw ProtocolError(peer + " sent " + what);
}

}  // namespace

void DecodeSampleReply(const Message& reply, size_t num_seeds, int fanout, int64_t num_nodes,
                       const std::string& peer, std::vector<int64_t>* indptr,
                       std::vector<int64_t>* indices) {
  CheckShape(reply, 0, 2);
  size_t np = 0, ni = 0;
  const int64_t* ptr = reply.Array<int64_t>(0, &np);
  const int64_t* idx = reply.Array<int64_t>(1, &ni);
  if (np != num_seeds + 1) {
    Bad(peer, "a SampleReply with " + std::to_string(np) + " offsets for " + std::to_string(num_seeds) + " seeds");
  }
  if (ptr[0] != 0 || ptr[num_seeds] != static_cast<int64_t>(ni)) {
    Bad(peer, "a SampleReply whose offsets do not span its " + std::to_string(ni) + " neighbours");
  }
  for (size_t i = 0; i < num_seeds; ++i) {
    const int64_t row = ptr[i + 1] - ptr[i];
    if (row < 0) Bad(peer, "a SampleReply with decreasing offsets at seed " + std::to_string(i));
    if (fanout >= 0 && row > fanout) {
      Bad(peer, "a SampleReply with " + std::to_string(row) + " neighbours for fanout " + std::to_string(fanout));
    }
  }
  for (size_t j = 0; j < ni; ++j) {
    if (idx[j] < 0 || idx[j] >= num_nodes) {
      Bad(peer, "a SampleReply with node id " + std::to_string(idx[j]) + " outside the graph");
    }
  }
  indptr->assign(ptr, ptr + np);
  indices->assign(idx, idx + ni);
}

const float* DecodeFeaturesReply(const Message& reply, size_t count, int64_t dim, const std::string& peer) {
  CheckShape(reply, 1, 1);
  size_t n = 0;
  const float* rows = reply.Array<float>(0, &n);
  if (reply.header.ints[0] != dim || dim < 0 || n != count * static_cast<size_t>(dim)) {
    Bad(peer, "a PullFeaturesReply of " + std::to_string(n) + " floats of width " +
                  std::to_string(reply.header.ints[0]) + " for " + std::to_string(count) + " rows of " +
                  std::to_string(dim));
  }
  return rows;
}

std::vector<int64_t> DecodeLabelsReply(const Message& reply, size_t count, const std::string& peer) {
  CheckShape(reply, 0, 1);
  std::vector<int64_t> labels = reply.CopyArray<int64_t>(0);
  if (labels.size() != count) {
    Bad(peer, "a PullLabelsReply of " + std::to_string(labels.size()) + " labels for " + std::to_string(count) +
                  " nodes");
  }
  return labels;
}

std::vector<int64_t> DecodeSplitNodesReply(const Message& reply, int64_t count, int64_t node_start,
                                           int64_t node_end, const std::string& peer) {
  CheckShape(reply, 0, 1);
  std::vector<int64_t> ids = reply.CopyArray<int64_t>(0);
  if (static_cast<int64_t>(ids.size()) != count) {
    Bad(peer, "a SplitNodesReply of " + std::to_string(ids.size()) + " ids, expected " + std::to_string(count));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < node_start || ids[i] >= node_end || (i > 0 && ids[i] <= ids[i - 1])) {
      Bad(peer, "a SplitNodesReply with id " + std::to_string(ids[i]) + " out of order or outside [" +
                    std::to_string(node_start) + ", " + std::to_string(node_end) + ")");
    }
  }
  return ids;
}

}  // namespace gnn::net
