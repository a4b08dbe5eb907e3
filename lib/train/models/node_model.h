// What the homogeneous trainer needs of a model (GraphSAGE, GAT, GCN): a
// stack of layers over message-flow blocks, each usable alone for
// layer-wise full-neighbour inference. The training loop, the environments
// (standalone, cluster), checkpoints and evaluation see only this; a new
// homogeneous model is one more subclass and one more case in
// MakeNodeModel.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/models/aggregate.h"

namespace gnn {

struct TrainOptions;

class NodeModel : public torch::nn::Module {
 public:
  virtual int num_layers() const = 0;
  // Output width of layer `l` (heads concatenated).
  virtual int64_t OutDim(int l) const = 0;
  // Layer `l` alone, with what follows it (activation, dropout): h holds
  // the block's source rows, destinations first. Returns [num_dst, OutDim].
  virtual torch::Tensor ForwardLayer(int l, const BlockTensors& block, const torch::Tensor& h) = 0;
  // Every layer, input -> output; x: [blocks[0].num_src, in].
  torch::Tensor Forward(const std::vector<BlockTensors>& blocks, torch::Tensor x);

  // Whether layer 0 can start from the destinations' rows and the means of
  // their neighbours' rows (MiniBatch::input_means: computed where the rows
  // live). Only a model whose first layer is a linear function of the
  // neighbours' mean can; GAT's weights and GCN's source degrees are not.
  virtual bool TakesMeans() const { return false; }
  // Layer `l` over [2n, in]: n destinations' rows, then their neighbours'
  // means. Only when TakesMeans().
  virtual torch::Tensor ForwardLayerFromMeans(int l, const torch::Tensor& x);
  // Forward with layer 0's input as [2 * blocks[0].num_dst, in].
  torch::Tensor ForwardFromMeans(const std::vector<BlockTensors>& blocks, const torch::Tensor& x);

  // --model's name, and what --save_model's metadata says about the model
  // beyond the common entries (parameter naming, heads, ...).
  virtual std::string Name() const = 0;
  virtual nlohmann::json Describe() const = 0;
};

// Layer widths in -> hidden x (num_layers - 1) -> out: [num_layers + 1].
std::vector<int64_t> LayerWidths(int64_t in, int64_t hidden, int64_t out, int num_layers);

// The model of o.model (graphsage, gat, gcn) from `in` input features to
// `out` outputs.
std::shared_ptr<NodeModel> MakeNodeModel(const TrainOptions& o, int64_t in, int64_t out);

}  // namespace gnn
