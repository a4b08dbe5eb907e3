#include "train/loop/inference.h"

#include <algorithm>

#include "common/progress.h"
#include "sampling/block.h"
#include "sampling/sampler.h"
#include "train/models/aggregate.h"

namespace gnn {

torch::Tensor LayerwiseInference(NodeModel& model, const InferenceSource& source, int64_t lo,
                                 int64_t hi, int64_t batch_size, bool exchange_last,
                                 int capture_layer, torch::Tensor* captured) {
  torch::NoGradGuard no_grad;
  model.eval();
  const int64_t batches = (hi - lo + batch_size - 1) / batch_size;
  Progress progress("evaluation (layer-wise inference)", model.num_layers() * batches, "batches");
  torch::Tensor h;  // the previous layer's rows of every node
  for (int l = 0; l < model.num_layers(); ++l) {
    torch::Tensor mine = torch::empty({hi - lo, model.OutDim(l)}, torch::kFloat32);
    for (int64_t start = lo; start < hi; start += batch_size) {
      const int64_t end = std::min(hi, start + batch_size);
      std::vector<int64_t> dst(end - start);
      for (int64_t i = start; i < end; ++i) dst[i - start] = i;
      if (l == 0 && source.input_means && model.TakesMeans()) {
        mine.slice(0, start - lo, end - lo)
            .copy_(model.ForwardLayerFromMeans(0, source.input_means(dst)));
        progress.Add();
        continue;
      }
      std::vector<int64_t> ptr, idx;
      std::vector<float> edge_rows;
      source.neighbors(dst, &ptr, &idx, &edge_rows);
      Block block = ToBlock(dst, std::move(ptr), idx);
      if (source.edge_dim > 0) {
        block.edge_dim = source.edge_dim;
        block.edge_data = std::move(edge_rows);
      }
      BlockTensors bt = ToTensors(block);
      torch::Tensor x;
      if (l == 0) {
        x = source.features(block.src_nodes);
      } else {
        if (source.locate) {
          std::vector<int64_t> rows = source.locate(block.src_nodes);
          x = h.index_select(0, torch::from_blob(rows.data(), {block.num_src()}, torch::kInt64));
        } else {
          torch::Tensor src =
              torch::from_blob(block.src_nodes.data(), {block.num_src()}, torch::kInt64);
          x = h.index_select(0, src - source.base);
        }
      }
      mine.slice(0, start - lo, end - lo).copy_(model.ForwardLayer(l, bt, x));
      progress.Add();
    }
    if (captured && l == capture_layer) *captured = mine;
    const bool last = l + 1 == model.num_layers();
    h = !last || exchange_last ? source.exchange(mine) : mine;
  }
  model.train();
  return h;
}

}  // namespace gnn
