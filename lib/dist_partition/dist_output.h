// The output side of a distributed partitioning: a rank writes the
// partition it received, the ranks gather every partition's sizes and
// checksums, and the output is published once per filesystem.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist_partition/agreement.h"
#include "dist_partition/mpi_comm.h"
#include "partition/config.h"
#include "partition/partition_util.h"

namespace gnn {

// What a rank sends the owner of a partition about each node it gives it.
struct NodeRow {
  int64_t orig = 0, degree = 0, label = 0;
  uint8_t masks = 0;  // bit m: train, valid, test
};

// Writes part<part>/ under `tmp` (the single-machine files: indptr,
// indices, feat [rows, feature_dim], label (class ids, or `label_rows`
// [rows, label_width] when label_width > 0), the three masks, orig_nids)
// from rows in new-id order, [node_start, node_end); frees the inputs as it
// goes. The PartInfo's edge_end is the partition's edge count (GatherParts
// makes the ranges global).
PartInfo WriteReceivedPart(const std::string& tmp, int part, int64_t node_start, int64_t node_end,
                           std::vector<NodeRow>* rows, std::vector<int64_t>* indices,
                           std::vector<float>* feat, int64_t feature_dim,
                           std::vector<float>* label_rows = nullptr, int64_t label_width = 0);

// Every rank's PartInfo, in rank order, edge ranges made global.
std::vector<PartInfo> GatherParts(MpiComm& comm, const PartInfo& mine);

// "<output>.tmp.<random>", named by rank 0 and made on every rank: one
// folder on a shared filesystem, one per machine otherwise. Removed with its
// contents on failure.
std::unique_ptr<TempOutput> AgreedTempOutput(MpiComm& comm, Agreement& agree,
                                             const std::string& output);

// Writes the config and moves `tmp` to `output`, once per filesystem: every
// rank leaves a marker in its temporary folder, and the lowest rank that
// sees no lower rank's marker publishes (after removing the markers).
void PublishOncePerFilesystem(MpiComm& comm, Agreement& agree, TempOutput& tmp,
                              const std::string& json_name, const std::string& config_text,
                              const std::string& output);

}  // namespace gnn
