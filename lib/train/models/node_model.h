// What the homogeneous trainer needs of a model (GraphSAGE, GAT, GCN): a
// stack of layers over message-flow blocks, each usable alone for
// layer-wise full-neighbour inference. The training loop, the environments
// (standalone, cluster), checkpoints and evaluation see only this; a new
// homogeneous model is one more subclass and one more case in
// MakeNodeModel.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/models/aggregate.h"

namespace gnn {

struct TrainOptions;
struct MiniBatch;

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

// A sampled mini-batch through every layer, without gradients (input_means
// form too): the first `rows` seeds' outputs [rows, out]; with
// capture_layer >= 0 (0-based) that layer's rows of them into *captured.
torch::Tensor PredictBatch(NodeModel& model, const MiniBatch& mb, int64_t rows, int capture_layer,
                           torch::Tensor* captured);

// Makes the mini-batch of `seeds` (global ids, distinct), each layer
// drawn with MixSeed(rng_seed, layer).
using BatchMaker = std::function<MiniBatch(const std::vector<int64_t>& seeds, uint64_t rng_seed)>;

// Layer 0's output [mb.blocks[0].num_dst, OutDim(0)] of a batch (its other
// blocks unused), as PredictBatch computes it: gnn-serve's first-layer
// cache fills from it.
torch::Tensor PredictFirstLayer(NodeModel& model, const MiniBatch& mb);

// Sampled inference (--inference --fan_out) of nodes [start, start + n)
// in batches of `batch`, every batch drawn with one seed derived from
// `seed`: a node's sampled neighbourhood depends on the node, the layer
// and the seed alone, not on its batch or the partitioning. Returns
// [n, out] and, with capture_layer >= 0, *captured [n, OutDim(layer)].
torch::Tensor PredictSampled(NodeModel& model, int64_t start, int64_t n, int64_t batch,
                             uint64_t seed, int capture_layer, torch::Tensor* captured,
                             const BatchMaker& make);

// Layer widths in -> hidden x (num_layers - 1) -> out: [num_layers + 1].
std::vector<int64_t> LayerWidths(int64_t in, int64_t hidden, int64_t out, int num_layers);

// The model of o.model (graphsage, gat, gcn) from `in` input features to
// `out` outputs.
std::shared_ptr<NodeModel> MakeNodeModel(const TrainOptions& o, int64_t in, int64_t out);

}  // namespace gnn
