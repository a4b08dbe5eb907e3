#include "graph/dataset_tool.h"

#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "common/timer.h"
#include "graph/chunked.h"
#include "graph/hetero.h"
#include "graph/ogb_hetero.h"
#include "graph/ogb_reader.h"

namespace gnn {

using nlohmann::json;

void DatasetToolOptions::Validate() const {
  if ((write_chunked != 0) != !output.empty()) {
    throw ConfigError("--write_chunked N and --output DIR go together");
  }
}

namespace {

// --write_chunked: writes `d` as `chunks` chunks into `output` and says so
// in the statistics.
template <typename D>
void WriteChunkedTimed(const D& d, int chunks, const std::string& output, json* stats) {
  Stopwatch w;
  WriteChunked(d, chunks, output);
  (*stats)["chunked_seconds"] = w.Seconds();
  (*stats)["chunks"] = chunks;
  (*stats)["chunked_to"] = output;
}

// --write_ogb: writes `d` as an OGB raw folder by `write` and says so in
// the statistics.
template <typename D, typename WriteFolder>
void WriteOgbTimed(const D& d, const DatasetToolOptions& o, WriteFolder write, json* stats) {
  Stopwatch w;
  write(d, o.write_ogb, o.write_split);
  (*stats)["write_seconds"] = w.Seconds();
  (*stats)["written_to"] = o.write_ogb;
}

// Heterogeneous: per node type and per relation.
json HeteroStats(const HeteroDataset& h, double load_seconds) {
  json types = json::object(), relations = json::object();
  for (const auto& t : h.node_types)
    types[t.name] = {{"num_nodes", t.num_nodes}, {"feature_dim", t.feature_dim}};
  json edge_dims = json::object();  // relations with edge features only
  for (const auto& r : h.relations) {
    relations[r.Key()] = r.num_edges();
    if (r.edge_feature_dim > 0) edge_dims[r.Key()] = r.edge_feature_dim;
  }
  return {{"name", h.name},
          {"relation_edge_feature_dims", edge_dims},
          {"num_nodes", h.num_nodes()},
          {"num_edges", h.num_edges()},
          {"node_types", types},
          {"relations", relations},
          {"target", h.target},
          {"num_classes", h.num_classes},
          {"train", h.train_idx.size()},
          {"valid", h.valid_idx.size()},
          {"test", h.test_idx.size()},
          {"load_seconds", load_seconds}};
}

// Homogeneous: counts, and degrees over both ends of each listed edge.
json HomogeneousStats(const Dataset& d, double load_seconds) {
  std::vector<int64_t> degree(d.num_nodes, 0);
  for (size_t i = 0; i < d.src.size(); ++i) {
    ++degree[d.src[i]];
    ++degree[d.dst[i]];
  }
  int64_t max_degree = d.num_nodes ? *std::max_element(degree.begin(), degree.end()) : 0;
  int64_t isolated = std::count(degree.begin(), degree.end(), 0);
  return {
      {"name", d.name},
      {"num_nodes", d.num_nodes},
      {"num_edges", d.num_edges()},
      {"known_undirected", d.known_undirected()},
      {"feature_dim", d.feature_dim},
      {"edge_feature_dim", d.edge_feature_dim},
      {"num_classes", d.num_classes},
      {"label_kind", LabelKindName(d.label_kind)},
      {"label_width", d.label_width},
      {"train", d.train_idx.size()},
      {"valid", d.valid_idx.size()},
      {"test", d.test_idx.size()},
      {"max_degree", max_degree},
      {"isolated_nodes", isolated},
      {"load_seconds", load_seconds},
  };
}

json RunHetero(const DatasetToolOptions& o) {
  Stopwatch load;
  HeteroDataset h = LoadHeteroDataset(o.data);
  if (o.undirected) AddReverseRelations(&h);
  json stats = HeteroStats(h, load.Seconds());
  if (h.edge_labeled()) {
    const HeteroDataset::EdgeLabels& e = h.edge_task;
    int64_t count[4] = {0, 0, 0, 0};
    for (uint8_t s : e.split) ++count[s];
    stats["target_etype"] = h.relations[static_cast<size_t>(e.relation)].Key();
    stats["edge_label_kind"] = e.kind == LabelKind::kClass ? "class" : "regression";
    stats["num_edge_classes"] = e.num_classes;
    stats["train_edges"] = count[1];
    stats["valid_edges"] = count[2];
    stats["test_edges"] = count[3];
    if (!o.write_ogb.empty()) {
      throw ConfigError("--write_ogb: OGB's typed layout has no place for " +
                        stats["target_etype"].get<std::string>() +
                        "'s edge labels; --write_chunked keeps them");
    }
  }
  if (!o.write_ogb.empty()) WriteOgbTimed(h, o, WriteOgbHeteroFolder, &stats);
  if (o.write_chunked != 0) WriteChunkedTimed(h, o.write_chunked, o.output, &stats);
  return stats;
}

json RunHomogeneous(const DatasetToolOptions& o) {
  if (o.undirected) throw ConfigError("--undirected applies to heterogeneous datasets");
  Stopwatch load;
  const Dataset d = LoadDataset(o.data);
  const double load_seconds = load.Seconds();
  json stats = HomogeneousStats(d, load_seconds);
  if (!d.node_ids.empty() && !o.write_ogb.empty()) {
    // Said, not dropped silently: OGB's layout names nodes by row (the
    // chunked format keeps them as node_data "node_ids").
    GNN_LOG(kWarn) << "--node_ids: the OGB folder names nodes by their row (0.." << d.num_nodes - 1
                   << " in --node_ids' order); write --write_chunked, or partition the plain "
                      "files with gnn-partition --node_ids, to keep your ids for inference and "
                      "serving";
  }
  if (d.edge_labeled()) {
    int64_t count[4] = {0, 0, 0, 0};
    for (uint8_t s : d.edge_split) ++count[s];
    stats["edge_label_kind"] = d.edge_label_kind == LabelKind::kClass ? "class" : "regression";
    stats["num_edge_classes"] = d.num_edge_classes;
    stats["train_edges"] = count[1];
    stats["valid_edges"] = count[2];
    stats["test_edges"] = count[3];
  }
  if (o.write_chunked != 0) WriteChunkedTimed(d, o.write_chunked, o.output, &stats);
  if (!o.write_ogb.empty()) WriteOgbTimed(d, o, WriteOgbFolder, &stats);
  return stats;
}

}  // namespace

json RunDatasetTool(const DatasetToolOptions& options) {
  options.Validate();
  return IsHeteroDataset(options.data) ? RunHetero(options) : RunHomogeneous(options);
}

}  // namespace gnn
