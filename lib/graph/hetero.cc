#include "graph/hetero.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include "common/error.h"
#include "graph/chunked.h"
#include "graph/ogb_hetero.h"
#include "graph/synthetic_hetero.h"

namespace gnn {

namespace {

void CheckIds(const HeteroDataset& d, const std::vector<int64_t>& ids, int64_t limit,
              const std::string& what) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= limit) {
      throw DataError(d.name + ": " + what + " has id " + std::to_string(ids[i]) + " outside [0, " +
                      std::to_string(limit) + ")");
    }
  }
}

void CheckSplit(const HeteroDataset& d, const std::vector<int64_t>& idx, int64_t limit,
                const char* which) {
  CheckIds(d, idx, limit, std::string(which) + " split");
  for (size_t i = 1; i < idx.size(); ++i) {
    if (idx[i] <= idx[i - 1])
      throw DataError(d.name + ": " + which + " split is not sorted and unique");
  }
}

// Type and relation names land in file names and in "src:rel:dst" keys:
// letters, digits, '_', '-', '.' only.
bool SafeName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         std::all_of(name.begin(), name.end(), [](char ch) {
           return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' ||
                  ch == '.';
         });
}

}  // namespace

int HeteroDataset::TypeIndex(const std::string& type) const {
  for (size_t i = 0; i < node_types.size(); ++i) {
    if (node_types[i].name == type) return static_cast<int>(i);
  }
  return -1;
}

int64_t HeteroDataset::num_nodes() const {
  int64_t n = 0;
  for (const auto& t : node_types) n += t.num_nodes;
  return n;
}

int64_t HeteroDataset::num_edges() const {
  int64_t m = 0;
  for (const auto& r : relations) m += r.num_edges();
  return m;
}

void HeteroDataset::Validate() const {
  if (node_types.empty()) throw DataError(name + ": no node types");
  std::set<std::string> seen;
  for (const auto& t : node_types) {
    if (!SafeName(t.name))
      throw DataError(name + ": node type '" + t.name +
                      "' (letters, digits, '_', '-', '.' only: it names files)");
    if (!seen.insert(t.name).second)
      throw DataError(name + ": node type '" + t.name + "' is listed twice");
    if (t.num_nodes <= 0) throw DataError(name + ": node type " + t.name + " has no nodes");
    int64_t cells = 0;
    if (t.feature_dim < 0 || __builtin_mul_overflow(t.num_nodes, t.feature_dim, &cells) ||
        static_cast<int64_t>(t.features.size()) != cells) {
      throw DataError(name + ": features of " + t.name + " have " +
                      std::to_string(t.features.size()) + " values, expected " +
                      std::to_string(t.num_nodes) + " x " + std::to_string(t.feature_dim));
    }
  }
  if (relations.empty()) throw DataError(name + ": no relations");
  std::set<std::string> keys;
  for (const auto& r : relations) {
    if (!SafeName(r.name))
      throw DataError(name + ": relation '" + r.name + "' (letters, digits, '_', '-', '.' only)");
    const int s = TypeIndex(r.src_type), t = TypeIndex(r.dst_type);
    if (s < 0 || t < 0) throw DataError(name + ": relation " + r.Key() + " names an unknown type");
    if (r.name.empty() || !keys.insert(r.Key()).second)
      throw DataError(name + ": relation " + r.Key() + " is unnamed or listed twice");
    if (r.src.size() != r.dst.size())
      throw DataError(name + ": relation " + r.Key() + " has src/dst arrays of different length");
    int64_t cells = 0;
    if (r.edge_feature_dim < 0 ||
        __builtin_mul_overflow(r.num_edges(), r.edge_feature_dim, &cells) ||
        static_cast<int64_t>(r.edge_features.size()) != cells) {
      throw DataError(name + ": edge features of " + r.Key() + " have " +
                      std::to_string(r.edge_features.size()) + " values, expected " +
                      std::to_string(r.num_edges()) + " x " + std::to_string(r.edge_feature_dim));
    }
    for (size_t i = 0; i < r.edge_features.size(); ++i) {
      if (!std::isfinite(r.edge_features[i])) {
        throw DataError(name + ": edge " + std::to_string(i / r.edge_feature_dim) + " of " +
                        r.Key() + " has a feature that is not a finite number (column " +
                        std::to_string(i % r.edge_feature_dim) + ")");
      }
    }
    CheckIds(*this, r.src, node_types[static_cast<size_t>(s)].num_nodes, r.Key() + " sources");
    CheckIds(*this, r.dst, node_types[static_cast<size_t>(t)].num_nodes, r.Key() + " destinations");
  }
  const int target_index = TypeIndex(target);
  if (target_index < 0) throw DataError(name + ": target type '" + target + "' is not a node type");
  const int64_t n = node_types[static_cast<size_t>(target_index)].num_nodes;
  if (static_cast<int64_t>(labels.size()) != n) {
    throw DataError(name + ": " + std::to_string(labels.size()) + " labels for " +
                    std::to_string(n) + " " + target + " nodes");
  }
  for (int64_t l : labels) {
    if (l < -1 || l >= num_classes)
      throw DataError(name + ": label " + std::to_string(l) + " outside [0, " +
                      std::to_string(num_classes) + ")");
  }
  CheckSplit(*this, train_idx, n, "train");
  CheckSplit(*this, valid_idx, n, "valid");
  CheckSplit(*this, test_idx, n, "test");
  if (edge_labeled()) {
    if (static_cast<size_t>(edge_task.relation) >= relations.size())
      throw DataError(name + ": edge labels on relation " + std::to_string(edge_task.relation) +
                      ", which is not one");
    const Relation& r = relations[static_cast<size_t>(edge_task.relation)];
    ValidateEdgeLabelArrays(name + " " + r.Key(), r.num_edges(), edge_task.kind,
                            edge_task.num_classes, edge_task.labels, edge_task.targets,
                            edge_task.split);
  }
}

void AddReverseRelations(HeteroDataset* d) {
  const size_t n = d->relations.size();
  for (size_t i = 0; i < n; ++i) {
    Relation rev;
    const Relation& r = d->relations[i];
    rev.src_type = r.dst_type;
    rev.name = "rev-" + r.name;
    rev.dst_type = r.src_type;
    rev.src = r.dst;
    rev.dst = r.src;
    rev.edge_feature_dim = r.edge_feature_dim;
    rev.edge_features = r.edge_features;
    d->relations.push_back(std::move(rev));
  }
}

bool IsHeteroDataset(const DatasetOptions& o) {
  if (o.files.given()) return false;  // plain files are one node type
  if (IsChunkedFolder(o.dataset)) return ReadChunkedMeta(o.dataset).hetero();
  const std::string prefix = "synthetic:";
  if (o.dataset.rfind(prefix, 0) == 0)
    return IsHeteroSyntheticPreset(o.dataset.substr(prefix.size()));
  const std::string folder = FindOgbFolder(o);
  std::error_code ec;
  return !folder.empty() &&
         std::filesystem::exists(std::filesystem::path(folder) / "raw/num-node-dict.csv.gz", ec);
}

HeteroDataset LoadHeteroDataset(const DatasetOptions& o) {
  if (IsChunkedFolder(o.dataset)) return ReadChunkedHeteroDataset(o.dataset, o.ignore_edge_data);
  const std::string prefix = "synthetic:";
  if (o.dataset.rfind(prefix, 0) == 0) {
    HeteroSyntheticSpec spec = ParseHeteroSyntheticSpec(o.dataset.substr(prefix.size()));
    if ((spec.edge_feature_dim > 0 || spec.edge_task) && o.ignore_edge_data) {
      std::vector<std::string> dropped;
      if (spec.edge_feature_dim > 0)
        dropped.push_back("efeat=" + std::to_string(spec.edge_feature_dim));
      if (spec.edge_task)
        dropped.push_back(std::string("etask=") + LabelKindName(spec.edge_task_kind));
      RefuseEdgeData(o.dataset, dropped, true);
      spec.edge_feature_dim = 0;
      spec.edge_task = false;
    }
    return GenerateHeteroSynthetic(spec, o.seed, o.num_threads);
  }
  if (!IsHeteroDataset(o)) {
    throw ConfigError(o.dataset +
                      " is not a heterogeneous dataset (synthetic:mag, "
                      "synthetic:mag-small, or an OGB folder with "
                      "raw/num-node-dict.csv.gz)");
  }
  return ReadOgbHeteroFolder(FindOgbFolder(o), o);
}

}  // namespace gnn
