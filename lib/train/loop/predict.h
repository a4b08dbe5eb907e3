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

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "partition/config.h"
#include "partition/local_partition.h"
#include "train/models/node_model.h"
#include "train/options/train_options.h"

namespace gnn {

// manifest.json's format_version, for every kind of inference output.
constexpr int kInferenceManifestVersion = 1;

// The reading steps both inference paths share. `broadcast` sends rank
// 0's bytes to every rank (TrainEnv's or HeteroSource's BroadcastBytes).
using BroadcastFn = std::function<void(std::string*)>;
// Rank 0 runs `read`; every rank gets its bytes, or the same DataError.
std::string ReadOnRankZero(int rank, const BroadcastFn& broadcast,
                           const std::function<std::string()>& read);
// --restore_model_path's bytes (a missing file is one line).
std::string ReadModelBytes(int rank, const BroadcastFn& broadcast, const std::string& path);
// --nodes / --edge_ids: the ids of an int64 .npy, sorted without repeats.
std::vector<int64_t> ReadRequestedIds(int rank, const BroadcastFn& broadcast,
                                      const std::string& path);
// Before any work: `dir` (flag `flag`; "" for none) is a folder that can
// hold manifest.json, or does not exist yet and its parent can hold it.
void CheckOutputDir(const std::string& flag, const std::string& dir);
// Field `key` of a model file's metadata (_metadata["gnn"]); DataError
// naming `path` when the file has no gnn metadata or no such field.
const nlohmann::json& ModelMetaField(const nlohmann::json& meta, const std::string& path,
                                     const char* key);

// A --save_model file's bytes applied to `config`'s graph: its metadata
// checked against the graph by schema (feature width, classes) and copied
// into *o (model, task, sizes, the training fan-out), the model built and
// its parameters loaded strictly, in eval mode. `embed_layer` is
// o->embed_layer, or the last hidden layer when it is -1. DataError /
// ConfigError naming `path` and what does not fit.
struct RestoredModel {
  std::shared_ptr<NodeModel> model;
  nlohmann::json meta;  // the file's _metadata["gnn"]
  int embed_layer = 1;  // 1-based
};
RestoredModel RestoreModel(const std::vector<char>& bytes, const std::string& path,
                           const PartitionConfig& config, TrainOptions* o);

// An edge model's inference, shared by the homogeneous and typed paths.
// The positions in `edges` (one partition's labelled edges) to write:
// those --edge_ids lists (`listed`, sorted), or those in --node_mask's
// split (all: every edge in a split).
std::vector<int64_t> ChooseEdges(const TrainOptions& o, const LabeledEdgeRows& edges,
                                 const std::vector<int64_t>& listed);
// DataError naming --edge_ids when the partitions hold fewer (`found`,
// over every rank) of its ids than it lists: ids that are no edge.
void CheckListedEdges(const TrainOptions& o, const PartitionConfig& config,
                      const std::vector<int64_t>& listed, double found);
// One partition's files in `dir` (edge_ids.npy: the chosen edges' input
// ids; logits.npy and pred.npy, int64 argmax, for classes, or pred.npy,
// float32 values), `out` the decoder's rows for edges.*[pick[i]]; the
// chosen valid (k 0) and test (k 1) edges' right answers or squared
// errors added to score[k], their count to total[k].
void WriteEdgePredictions(const std::string& dir, const LabeledEdgeRows& edges,
                          const std::vector<int64_t>& pick, const torch::Tensor& out, bool classes,
                          double score[2], double total[2]);
// Rank 0's manifest.json ("kind": "edge_predictions"): each partition's
// edge count (counts) and writer's machine; a typed graph's names the
// relation ("etype").
void WriteEdgeManifest(const TrainOptions& o, const PartitionConfig& config,
                       const nlohmann::json& meta, int64_t written,
                       const std::vector<double>& counts, const std::function<int(int)>& machine);
// The summary's val_acc / test_acc (classes) or val_rmse / test_rmse from
// the sums over every rank.
void AddEdgeFigures(bool classes, const double score[2], const double total[2],
                    nlohmann::json* summary);

// Runs inference; returns the summary (what was written, how long it took,
// and for labelled graphs the accuracy of the written predictions).
// Throws ConfigError / DataError naming the flag or file before anything
// is written: a model file that is missing, foreign or does not fit the
// graph (feature width, classes), an id of --nodes not in the graph.
nlohmann::json RunInference(const TrainOptions& options, const PartitionConfig& config);

// The same for an RGCN or RGAT model on a heterogeneous partitioning
// (typed_inference.cc): the target type's predictions, ids.npy holding
// the type's input ids; the model file's learned node embeddings put in
// place by input id first.
nlohmann::json RunTypedInference(const TrainOptions& options, const PartitionConfig& config);

}  // namespace gnn
