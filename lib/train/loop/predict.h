// gnn-train --inference: apply a model saved by --save_model to the graph
// (GraphStorm's gs_inference with GraphStorm's flag names), standalone or
// as every trainer of a gnn-launch job, and write what it predicts.
//
// Output (each DIR: --save_prediction_path, --save_embed_path):
//   DIR/part<i>/ids.npy     int64 [n]     the nodes' ids in the input dataset
//   DIR/part<i>/logits.npy  float32 [n, C] the last layer's output (predictions)
//   DIR/part<i>/pred.npy    int64 [n]     argmax of logits (predictions)
//   DIR/part<i>/emb.npy     float32 [n, d] layer --embed_layer's output (embeddings)
//   DIR/manifest.json       what the files are, the model, one entry per shard
// Partition i's files are written, each atomically, by the trainer that
// holds partition i's rows (on its machine); manifest.json last, by rank 0.
#pragma once

#include <nlohmann/json.hpp>

#include "partition/config.h"
#include "train/options/train_options.h"

namespace gnn {

// Runs inference; returns the summary (what was written, how long it took,
// and for labelled graphs the accuracy of the written predictions).
// Throws ConfigError / DataError naming the flag or file before anything
// is written: a model file that is missing, foreign or does not fit the
// graph (feature width, classes), an id of --nodes not in the graph.
nlohmann::json RunInference(const TrainOptions& options, const PartitionConfig& config);

}  // namespace gnn
