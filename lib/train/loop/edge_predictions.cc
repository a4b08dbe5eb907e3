// The edge models' inference outputs, shared by the homogeneous
// (predict.cc) and typed (typed_edges.cc) paths.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/fs.h"
#include "common/npy.h"
#include "train/loop/predict.h"

namespace gnn {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string Part(int p) { return "part" + std::to_string(p); }

}  // namespace

std::vector<int64_t> ChooseEdges(const TrainOptions& o, const LabeledEdgeRows& edges,
                                 const std::vector<int64_t>& listed) {
  const int split = o.node_mask == "train"   ? 1
                    : o.node_mask == "valid" ? 2
                    : o.node_mask == "test"  ? 3
                                             : 0;
  std::vector<int64_t> pick;
  for (size_t i = 0; i < edges.split.size(); ++i) {
    const bool chosen = o.edge_ids.empty()
                            ? edges.split[i] != 4 && (split == 0 || edges.split[i] == split)
                            : std::binary_search(listed.begin(), listed.end(), edges.eids[i]);
    if (chosen) pick.push_back(static_cast<int64_t>(i));
  }
  return pick;
}

void CheckListedEdges(const TrainOptions& o, const PartitionConfig& config,
                      const std::vector<int64_t>& listed, double found) {
  if (o.edge_ids.empty() || found >= static_cast<double>(listed.size())) return;
  const std::string what = config.hetero() ? config.target_etype + " edges" : "edges";
  throw DataError("--edge_ids " + o.edge_ids + ": " +
                  std::to_string(listed.size() - static_cast<size_t>(found)) + " of its " +
                  std::to_string(listed.size()) + " ids are not " + what + " of " +
                  config.graph_name + " (input edge ids are the lines of " +
                  (config.hetero() ? "the relation's" : "its") + " edge list)");
}

void WriteEdgePredictions(const std::string& dir, const LabeledEdgeRows& edges,
                          const std::vector<int64_t>& pick, const torch::Tensor& out, bool classes,
                          double score[2], double total[2]) {
  MakeDirs(dir);
  std::vector<int64_t> eids;
  for (int64_t i : pick) eids.push_back(edges.eids[static_cast<size_t>(i)]);
  WriteNpy(dir + "/edge_ids.npy", eids);
  torch::Tensor pred = out;
  if (classes) {
    pred = out.argmax(1).contiguous();
    WriteNpy(dir + "/logits.npy", out.data_ptr<float>(), {out.size(0), out.size(1)});
    WriteNpy(dir + "/pred.npy", pred.data_ptr<int64_t>(), {pred.size(0)});
  } else {
    WriteNpy(dir + "/pred.npy", out.data_ptr<float>(), {out.size(0)});
  }
  for (size_t i = 0; i < pick.size(); ++i) {
    const size_t e = static_cast<size_t>(pick[i]);
    const int k = edges.split[e] - 2;
    if (k < 0 || k > 1) continue;  // train edges, or edges in no split
    total[k] += 1;
    if (classes) {
      score[k] += pred.data_ptr<int64_t>()[i] == edges.labels[e];
    } else {
      const double d = static_cast<double>(out.data_ptr<float>()[i]) - edges.targets[e];
      score[k] += d * d;
    }
  }
}

void WriteEdgeManifest(const TrainOptions& o, const PartitionConfig& config,
                       const nlohmann::json& meta, int64_t written,
                       const std::vector<double>& counts, const std::function<int(int)>& machine) {
  const bool classes = o.Kind() == TaskKind::kEdgeClass;
  json shards = json::array();
  for (int p = 0; p < config.num_parts; ++p) {
    json sh = {{"part", p},
               {"machine", machine(p)},
               {"num_edges", static_cast<int64_t>(counts[static_cast<size_t>(p)])},
               {"edge_ids", Part(p) + "/edge_ids.npy"},
               {"pred", Part(p) + "/pred.npy"}};
    if (classes) sh["logits"] = Part(p) + "/logits.npy";
    shards.push_back(sh);
  }
  json m = {{"format_version", kInferenceManifestVersion},
            {"kind", "edge_predictions"},
            {"graph_name", config.graph_name},
            {"num_parts", config.num_parts},
            {"num_edges", written},
            {"edges", o.edge_ids.empty() ? o.node_mask : "--edge_ids " + o.edge_ids},
            {"ids", "input edge ids"},
            {"model_path", o.restore_model_path},
            {"model", meta},
            {"saved_model_epoch", meta.value("saved_epoch", json(nullptr))},
            {"shards", shards}};
  if (config.hetero()) {
    // A typed graph's: lines of the labelled relation's input.
    m["etype"] = config.target_etype;
    m["ids"] = "input edge ids of " + config.target_etype;
    m["fan_out"] = o.infer_fan_out.empty() ? "every neighbour" : o.infer_fan_out;
  }
  MakeDirs(o.save_prediction_path);
  WriteFileAtomic((fs::path(o.save_prediction_path) / "manifest.json").string(), m.dump(2) + "\n");
}

void AddEdgeFigures(bool classes, const double score[2], const double total[2],
                    nlohmann::json* summary) {
  for (int k = 0; k < 2; ++k) {
    if (total[k] == 0) continue;
    const std::string key = std::string(k == 0 ? "val_" : "test_") + (classes ? "acc" : "rmse");
    (*summary)[key] = classes ? score[k] / total[k] : std::sqrt(score[k] / total[k]);
  }
}

}  // namespace gnn
