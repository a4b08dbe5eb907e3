#include "train/models/node_model.h"

#include "common/error.h"
#include "train/models/gat.h"
#include "train/models/gcn.h"
#include "train/models/sage.h"
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
    return std::make_shared<GatImpl>(g);
  }
  if (o.model == "gcn") {
    return std::make_shared<GcnImpl>(in, o.num_hidden, out, o.num_layers, o.dropout);
  }
  return std::make_shared<GraphSageImpl>(in, o.num_hidden, out, o.num_layers, o.dropout);
}

}  // namespace gnn
