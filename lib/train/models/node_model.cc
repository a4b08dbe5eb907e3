#include "train/models/node_model.h"

#include <algorithm>

#include "common/error.h"
#include "common/random.h"
#include "sampling/block.h"
#include "train/models/gat.h"
#include "train/models/gcn.h"
#include "train/models/sage.h"
#include "train/models/sparse_input.h"
#include "train/options/train_options.h"

namespace gnn {

torch::Tensor NodeModel::Forward(const std::vector<BlockTensors>& blocks, torch::Tensor x) {
  for (int l = 0; l < num_layers(); ++l) x = ForwardLayer(l, blocks[l], x);
  return x;
}

torch::Tensor NodeModel::ForwardLayerFromMeans(int /*l*/, const torch::Tensor& /*x*/) {
  throw Error("--model " + Name() + " cannot start from the neighbours' means");
}

torch::Tensor NodeModel::ForwardFromMeans(const std::vector<BlockTensors>& blocks,
                                          const torch::Tensor& x) {
  torch::Tensor h = ForwardLayerFromMeans(0, x);
  for (int l = 1; l < num_layers(); ++l) h = ForwardLayer(l, blocks[l], h);
  return h;
}

torch::Tensor PredictBatch(NodeModel& model, const MiniBatch& mb, int64_t rows, int capture_layer,
                           torch::Tensor* captured) {
  torch::NoGradGuard no_grad;
  std::vector<BlockTensors> blocks;
  for (const Block& b : mb.blocks) blocks.push_back(ToTensors(b));
  const int64_t in_rows =
      mb.input_means ? 2 * mb.blocks.front().num_dst : mb.blocks.front().num_src();
  torch::Tensor h = mb.sparse ? SparseInput(mb.sparse_features)
                              : torch::from_blob(const_cast<float*>(mb.features.data()),
                                                 {in_rows, mb.feature_dim}, torch::kFloat32);
  for (int l = 0; l < model.num_layers(); ++l) {
    h = l == 0 && mb.input_means ? model.ForwardLayerFromMeans(0, h)
                                 : model.ForwardLayer(l, blocks[static_cast<size_t>(l)], h);
    if (captured && l == capture_layer) *captured = h.slice(0, 0, rows).contiguous();
  }
  return h.slice(0, 0, rows).contiguous();
}

torch::Tensor PredictFirstLayer(NodeModel& model, const MiniBatch& mb) {
  torch::NoGradGuard no_grad;
  const Block& b0 = mb.blocks.front();
  const int64_t in_rows = mb.input_means ? 2 * b0.num_dst : b0.num_src();
  const torch::Tensor x = mb.sparse ? SparseInput(mb.sparse_features)
                                    : torch::from_blob(const_cast<float*>(mb.features.data()),
                                                       {in_rows, mb.feature_dim}, torch::kFloat32);
  return mb.input_means ? model.ForwardLayerFromMeans(0, x)
                        : model.ForwardLayer(0, ToTensors(b0), x);
}

torch::Tensor PredictSampled(NodeModel& model, int64_t start, int64_t n, int64_t batch,
                             uint64_t seed, int capture_layer, torch::Tensor* captured,
                             const BatchMaker& make) {
  const uint64_t rng_seed = MixSeed(seed, 0x5a3b1ed);
  torch::Tensor out = torch::empty({n, model.OutDim(model.num_layers() - 1)}, torch::kFloat32);
  if (capture_layer >= 0 && captured)
    *captured = torch::empty({n, model.OutDim(capture_layer)}, torch::kFloat32);
  std::vector<int64_t> seeds;
  for (int64_t begin = 0; begin < n; begin += batch) {
    const int64_t end = std::min(n, begin + batch);
    seeds.resize(static_cast<size_t>(end - begin));
    for (int64_t i = begin; i < end; ++i) seeds[static_cast<size_t>(i - begin)] = start + i;
    const MiniBatch mb = make(seeds, rng_seed);
    torch::Tensor rows;
    out.slice(0, begin, end)
        .copy_(PredictBatch(model, mb, end - begin, capture_layer,
                            capture_layer >= 0 && captured ? &rows : nullptr));
    if (rows.defined()) captured->slice(0, begin, end).copy_(rows);
  }
  return out;
}

std::vector<int64_t> LayerWidths(int64_t in, int64_t hidden, int64_t out, int num_layers) {
  std::vector<int64_t> dims{in};
  for (int l = 0; l + 1 < num_layers; ++l) dims.push_back(hidden);
  dims.push_back(out);
  return dims;
}

std::shared_ptr<NodeModel> MakeNodeModel(const TrainOptions& o, int64_t in, int64_t out) {
  if (o.model == "gat") {
    GatOptions g;
    g.in = in;
    g.hidden = o.num_hidden;
    g.classes = out;
    g.num_layers = o.num_layers;
    g.heads = o.num_heads;
    g.out_heads = o.num_out_heads;
    g.feat_drop = o.dropout;
    g.attn_drop = o.attn_drop;
    g.negative_slope = o.negative_slope;
    g.residual = o.residual;
    g.edge_dim = o.edge_feat_dim;
    g.edge_op = o.edge_feat_mp_op;
    return std::make_shared<GatImpl>(g);
  }
  if (o.model == "gcn") {
    return std::make_shared<GcnImpl>(in, o.num_hidden, out, o.num_layers, o.dropout);
  }
  return std::make_shared<GraphSageImpl>(in, o.num_hidden, out, o.num_layers, o.dropout,
                                         o.edge_feat_dim, o.edge_feat_mp_op);
}

}  // namespace gnn
