// What typed inference asks of RGCN's and RGAT's Learner
// (rgcn_learner.cc): the same model, batches and embedding tables, used
// to predict rather than to train. The learned node embeddings of
// featureless types travel in --save_model's file keyed by input node id
// (tensors "node_embeddings.<ntype>", row i = the type's input id i), so
// they load onto any partitioning of the graph.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "train/loop/hetero_source.h"
#include "train/loop/training_loop.h"

namespace gnn {

// The file's tensor holding node type `ntype`'s learned embeddings.
inline std::string NodeEmbeddingKey(const std::string& ntype) { return "node_embeddings." + ntype; }

class TypedModel : public Learner {
 public:
  virtual HeteroSource& source() = 0;
  // The logits [seeds, classes] of a batch's seeds, in eval mode; with
  // `emb`, also layer `capture_layer`'s output for them (0-based, after its
  // activation). Seeds may be of any node type (logits of others than the
  // target type mean nothing).
  virtual torch::Tensor Predict(HeteroBatch& b, int capture_layer = -1,
                                torch::Tensor* emb = nullptr) = 0;
};

// The Learner over a source made already (inference reads the model file
// through it before the model's sizes are known).
std::unique_ptr<TypedModel> MakeTypedModel(const TrainOptions& o, const PartitionConfig& config,
                                           std::unique_ptr<HeteroSource> source);

// Every featureless type's embedding rows in input-id order, as the
// model file holds them (rank 0 reads every partition's rows through
// `source`; the other ranks get nothing). DataError when a partition's
// input ids are not a numbering of the type's nodes.
std::vector<std::pair<std::string, torch::Tensor>> GatherNodeEmbeddings(
    HeteroSource& source, const PartitionConfig& config, int64_t dim);

}  // namespace gnn
