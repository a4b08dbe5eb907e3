// gnn-train --model rgcn: node classification on one labelled type of a
// heterogeneous graph with RGCN (DGL's entity_classify_dist.py), standalone
// or as one trainer of a cluster: typed sampling, learnable embeddings for
// featureless types updated by a sparse optimizer where they live,
// evaluation on sampled neighbourhoods, checkpoints with the embeddings.
#pragma once

#include <nlohmann/json.hpp>

#include "partition/config.h"
#include "train/trainer.h"

namespace gnn {

// Runs training on a heterogeneous `config` (checked by RunTrain); returns
// the summary, with the fields of RunTrain's.
nlohmann::json RunHeteroTrain(const TrainOptions& o, const PartitionConfig& config);

}  // namespace gnn
