#include "train/models/rgat.h"

#include <string>

#include "common/error.h"
#include "sampling/sampler.h"
#include "train/models/rgcn.h"

namespace gnn {

RelGATConvImpl::RelGATConvImpl(int64_t in, int64_t width, int heads, int64_t num_rels,
                               bool self_loop, const GatOptions& o, const RelEdgeOptions* edges)
    : in_(in), width_(width), num_rels_(num_rels), heads_(heads) {
  if (in < 1 || width < 1 || heads < 1 || num_rels < 1) {
    throw ConfigError("RelGATConv: in " + std::to_string(in) + ", width " + std::to_string(width) +
                      ", heads " + std::to_string(heads) + " and relations " +
                      std::to_string(num_rels) + " must be positive");
  }
  GatOptions per_relation = o;
  per_relation.residual = false;  // the self-loop weight plays that part
  mods_ = register_module("mods", torch::nn::ModuleList());
  if (edges && edges->used()) {
    if (static_cast<int64_t>(edges->dims.size()) != num_rels) {
      throw ConfigError("RelGATConv: edge feature widths for " +
                        std::to_string(edges->dims.size()) + " of " + std::to_string(num_rels) +
                        " relations");
    }
    edge_dims_ = edges->dims;
  }
  for (int64_t r = 0; r < num_rels; ++r) {
    GatOptions mod = per_relation;
    if (!edge_dims_.empty() && edge_dims_[static_cast<size_t>(r)] > 0) {
      mod.edge_dim = edge_dims_[static_cast<size_t>(r)];
      mod.edge_op = edges->op;  // GATConv checks it: add, sub or mul
    }
    mods_->push_back(GATConv(in, width, heads, mod));
  }
  if (self_loop) {
    loop_weight_ = register_parameter("loop_weight", torch::empty({in, heads * width}));
    torch::NoGradGuard no_grad;
    torch::nn::init::xavier_uniform_(loop_weight_, std::sqrt(2.0));  // as RelGraphConv's
  }
  h_bias_ = register_parameter("h_bias", torch::zeros({heads * width}));
}

torch::Tensor RelGATConvImpl::forward(const BlockTensors& relation_block, int64_t num_dst,
                                      const torch::Tensor& h_src, const RelEdgeTensors* edges) {
  if (!edge_dims_.empty() && edges == nullptr) {
    throw DataError("RelGATConv takes edge features: the block's edge rows are missing");
  }
  if (h_src.dim() != 2 || h_src.size(0) != relation_block.num_src || h_src.size(1) != in_ ||
      relation_block.num_dst != num_rels_ * num_dst) {
    throw DataError("RelGATConv: input of " + std::to_string(h_src.size(0)) + " rows over a " +
                    "relation block of " + std::to_string(relation_block.num_dst) +
                    " rows, expected " + std::to_string(num_rels_) + " relations x " +
                    std::to_string(num_dst) + " destinations over " +
                    std::to_string(relation_block.num_src) + " sources of width " +
                    std::to_string(in_));
  }
  torch::Tensor h_dst = h_src.slice(0, 0, num_dst);
  torch::Tensor out = loop_weight_.defined()
                          ? torch::addmm(h_bias_, h_dst, loop_weight_)
                          : h_bias_.unsqueeze(0).expand({num_dst, heads_ * width_}).clone();
  out = out.view({num_dst, heads_, width_});
  // Each relation's block is made on the host, with the transpose its
  // backward pass reads, then placed where h_src lives.
  const torch::Device cpu(torch::kCPU);
  const torch::Tensor indptr = relation_block.indptr.to(cpu);
  const torch::Tensor indices = relation_block.indices.to(cpu);
  const int64_t* ptr = indptr.data_ptr<int64_t>();
  const torch::Tensor edge_ids = edges ? edges->groups.indices.to(cpu) : torch::Tensor();
  for (int64_t r = 0; r < num_rels_; ++r) {
    const int64_t e0 = ptr[r * num_dst], e1 = ptr[(r + 1) * num_dst];
    if (e1 == e0) continue;  // HeteroGraphConv skips a relation without edges
    // Relation r's rows, its sources renumbered densely (sorted unique).
    torch::Tensor sources, local;
    std::tie(sources, local) =
        at::_unique(indices.slice(0, e0, e1), /*sorted=*/true, /*return_inverse=*/true);
    BlockTensors rel;
    rel.num_dst = num_dst;
    rel.num_src = sources.numel();
    rel.indptr = indptr.slice(0, r * num_dst, (r + 1) * num_dst + 1) - e0;
    rel.indices = local.to(torch::kInt64).contiguous();
    if (torch::GradMode::is_enabled() && h_src.requires_grad()) {  // backward reads it
      const int64_t edges = e1 - e0;
      rel.t_indptr = torch::empty({rel.num_src + 1}, torch::kInt64);
      rel.t_indices = torch::empty({edges}, torch::kInt64);
      rel.t_eids = torch::empty({edges}, torch::kInt64);
      TransposeCsr(rel.indptr.data_ptr<int64_t>(), rel.indices.data_ptr<int64_t>(), num_dst,
                   rel.num_src, rel.t_indptr.data_ptr<int64_t>(), rel.t_indices.data_ptr<int64_t>(),
                   rel.t_eids.data_ptr<int64_t>());
    }
    const int64_t w = edge_dims_.empty() ? 0 : edge_dims_[static_cast<size_t>(r)];
    if (w > 0) {
      // Relation r's edges' rows in its block order, its own columns.
      rel.edge_data =
          edges->rows.index_select(0, edge_ids.slice(0, e0, e1)).slice(1, 0, w).contiguous();
    }
    rel = rel.To(h_src.device());
    out = out + mods_[r]->as<GATConvImpl>()->ForwardBipartite(
                    rel, h_src.index_select(0, sources.to(h_src.device())), h_dst);
  }
  return out;
}

}  // namespace gnn
