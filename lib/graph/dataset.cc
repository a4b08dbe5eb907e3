#include "graph/dataset.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "graph/chunked.h"
#include "graph/hetero.h"
#include "graph/ogb_reader.h"
#include "graph/plain_files.h"
#include "graph/synthetic.h"

namespace gnn {

namespace {

void CheckSplit(const Dataset& d, const std::vector<int64_t>& idx, const char* which) {
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= d.num_nodes) {
      throw DataError(d.name + ": " + which + " split has node id " + std::to_string(idx[i]) +
                      " outside [0, " + std::to_string(d.num_nodes) + ")");
    }
    if (i > 0 && idx[i] <= idx[i - 1]) {
      throw DataError(d.name + ": " + which + " split is not sorted and unique");
    }
  }
}

}  // namespace

void Dataset::Validate() const {
  if (num_nodes <= 0) throw DataError(name + ": dataset has no nodes");
  if (src.size() != dst.size()) throw DataError(name + ": src/dst edge arrays differ in length");
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] < 0 || src[i] >= num_nodes || dst[i] < 0 || dst[i] >= num_nodes) {
      throw DataError(name + ": edge " + std::to_string(i) + " (" + std::to_string(src[i]) + ", " +
                      std::to_string(dst[i]) + ") has a node id outside [0, " +
                      std::to_string(num_nodes) + ")");
    }
  }
  int64_t cells = 0;
  if (sparse()) {
    if (!features.empty() || sparse_features.rows() != num_nodes ||
        sparse_features.cols != feature_dim) {
      throw DataError(name + ": sparse features of " + std::to_string(sparse_features.rows()) +
                      " x " + std::to_string(sparse_features.cols) + ", expected " +
                      std::to_string(num_nodes) + " x " + std::to_string(feature_dim));
    }
    CheckSparse(sparse_features.view(), static_cast<int64_t>(sparse_features.indices.size()),
                static_cast<int64_t>(sparse_features.values.size()), name + ": node features");
  } else if (feature_dim < 0 || __builtin_mul_overflow(num_nodes, feature_dim, &cells) ||
             static_cast<int64_t>(features.size()) != cells) {
    throw DataError(name + ": feature matrix has " + std::to_string(features.size()) +
                    " values, expected " + std::to_string(num_nodes) + " x " +
                    std::to_string(feature_dim));
  }
  if (label_kind == LabelKind::kClass) {
    if (static_cast<int64_t>(labels.size()) != num_nodes) {
      throw DataError(name + ": " + std::to_string(labels.size()) + " labels for " +
                      std::to_string(num_nodes) + " nodes");
    }
    for (int64_t l : labels) {
      if (l < -1 || l >= num_classes) {
        throw DataError(name + ": label " + std::to_string(l) + " outside [0, " +
                        std::to_string(num_classes) + ")");
      }
    }
  } else {
    int64_t label_cells = 0;
    if (label_width <= 0 || !labels.empty() ||
        __builtin_mul_overflow(num_nodes, label_width, &label_cells) ||
        static_cast<int64_t>(targets.size()) != label_cells) {
      throw DataError(name + ": " + std::to_string(targets.size()) + " " +
                      LabelKindName(label_kind) + " label values, expected " +
                      std::to_string(num_nodes) + " nodes x " + std::to_string(label_width));
    }
    for (size_t i = 0; i < targets.size(); ++i) {
      const float t = targets[i];
      if (std::isfinite(t) && (label_kind == LabelKind::kRegression || t == 0.0f || t == 1.0f))
        continue;
      throw DataError(name + ": node " + std::to_string(static_cast<int64_t>(i) / label_width) +
                      " has label " + std::to_string(t) + " in column " +
                      std::to_string(static_cast<int64_t>(i) % label_width) +
                      (label_kind == LabelKind::kRegression ? ", not a finite number"
                                                            : ", not 0 or 1 (multi-label)"));
    }
  }
  CheckSplit(*this, train_idx, "train");
  CheckSplit(*this, valid_idx, "valid");
  CheckSplit(*this, test_idx, "test");
  if (!node_ids.empty() && static_cast<int64_t>(node_ids.size()) != num_nodes) {
    throw DataError(name + ": " + std::to_string(node_ids.size()) + " node ids for " +
                    std::to_string(num_nodes) + " nodes");
  }
  int64_t edge_cells = 0;
  if (edge_feature_dim < 0 || __builtin_mul_overflow(num_edges(), edge_feature_dim, &edge_cells) ||
      static_cast<int64_t>(edge_features.size()) != edge_cells) {
    throw DataError(name + ": edge feature matrix has " + std::to_string(edge_features.size()) +
                    " values, expected " + std::to_string(num_edges()) + " edges x " +
                    std::to_string(edge_feature_dim));
  }
  for (size_t i = 0; i < edge_features.size(); ++i) {
    if (!std::isfinite(edge_features[i])) {
      const int64_t w = edge_feature_dim;
      throw DataError(name + ": edge " + std::to_string(static_cast<int64_t>(i) / w) +
                      " has a feature that is not a finite number (column " +
                      std::to_string(static_cast<int64_t>(i) % w) + ")");
    }
  }
  if (edge_labeled()) ValidateEdgeLabels();
}

void Dataset::ValidateEdgeLabels() const {
  ValidateEdgeLabelArrays(name, num_edges(), edge_label_kind, num_edge_classes, edge_labels,
                          edge_targets, edge_split);
}

void ValidateEdgeLabelArrays(const std::string& name, int64_t num_edges, LabelKind kind,
                             int64_t num_classes, const std::vector<int64_t>& labels,
                             const std::vector<float>& targets, const std::vector<uint8_t>& split) {
  const size_t m = static_cast<size_t>(num_edges);
  const bool classes = kind == LabelKind::kClass;
  if (split.size() != m || (classes ? labels.size() : targets.size()) != m ||
      (classes ? !targets.empty() : !labels.empty())) {
    throw DataError(name + ": edge labels for " +
                    std::to_string(classes ? labels.size() : targets.size()) +
                    " edges and a split of " + std::to_string(split.size()) + ", expected " +
                    std::to_string(m) + " edges each");
  }
  int64_t in_split = 0;
  for (size_t i = 0; i < m; ++i) {
    if (split[i] > 3) {
      throw DataError(name + ": edge " + std::to_string(i) + " is in split " +
                      std::to_string(split[i]) + " (0 none, 1 train, 2 valid, 3 test)");
    }
    if (split[i] == 0) continue;
    ++in_split;
    if (classes && (labels[i] < 0 || labels[i] >= num_classes)) {
      throw DataError(name + ": edge " + std::to_string(i) + " is in a split but has label " +
                      std::to_string(labels[i]) + ", not a class in [0, " +
                      std::to_string(num_classes) + ")");
    }
    if (!classes && !std::isfinite(targets[i])) {
      throw DataError(name + ": edge " + std::to_string(i) + " has label " +
                      std::to_string(targets[i]) + ", not a finite number");
    }
  }
  if (in_split == 0) throw DataError(name + ": edge labels, but no edge is in any split");
}

namespace {

bool IsTask(const std::string& task) {
  return task == "auto" || task == "node" || task == "multilabel" || task == "node_regression";
}

void SetTargets(Dataset* d, LabelKind kind, int64_t width, const std::vector<double>& rows) {
  d->label_kind = kind;
  d->label_width = width;
  d->num_classes = kind == LabelKind::kMultilabel ? width : 0;
  d->labels.clear();
  d->labels.shrink_to_fit();
  d->targets.assign(rows.begin(), rows.end());
}

}  // namespace

LabelKind ChooseLabelKind(const std::string& task, int64_t width, bool integral, bool binary,
                          const std::string& what) {
  if (!IsTask(task)) {
    throw ConfigError("--task must be auto, node, multilabel or node_regression, got '" + task +
                      "'");
  }
  if (width < 1 || width > kMaxLabelWidth) {
    throw DataError(what + ": " + std::to_string(width) + " label columns; at most " +
                    std::to_string(kMaxLabelWidth) + " are carried");
  }
  const std::string columns = std::to_string(width) + " column" + (width == 1 ? "" : "s");
  if (task == "node" || (task == "auto" && width == 1 && integral)) {
    if (width != 1 || !integral) {
      throw DataError(what + ": labels of " + columns + (integral ? "" : " with fractions") +
                      " are not class ids (--task node); gnn-partition --task multilabel or "
                      "--task node_regression says what they are");
    }
    return LabelKind::kClass;
  }
  if (task == "multilabel" || (task == "auto" && binary)) {
    if (!binary) {
      throw DataError(what +
                      ": --task multilabel takes labels of 0 and 1; these have other "
                      "values");
    }
    return LabelKind::kMultilabel;
  }
  return LabelKind::kRegression;
}

std::string LabelKindLine(LabelKind kind, int64_t width, const std::string& task,
                          const std::string& what) {
  if (kind == LabelKind::kClass) return "";
  const std::string columns = std::to_string(width) + " column" + (width == 1 ? "" : "s");
  return what + ": " + columns +
         (kind == LabelKind::kMultilabel ? " of 0/1 per node: multi-label node classification"
                                         : " of real values per node: node regression") +
         (task == "auto" ? " (gnn-partition --task says otherwise)" : "");
}

std::string SetLabelRows(Dataset* d, std::vector<double> rows, int64_t width,
                         const std::string& task, const std::string& what) {
  bool integral = true, binary = true;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double v = rows[i];
    if (!std::isfinite(v)) {
      throw DataError(what + ": node " + std::to_string(static_cast<int64_t>(i) / width) +
                      " has label " + std::to_string(v) + ", not a finite number");
    }
    integral &= v == std::floor(v);
    binary &= v == 0.0 || v == 1.0;
  }
  const LabelKind kind = ChooseLabelKind(task, width, integral, binary, what);
  if (kind == LabelKind::kClass) {
    int64_t max_label = -1;
    d->labels.resize(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] < -1 || rows[i] >= static_cast<double>(std::numeric_limits<int32_t>::max())) {
        throw DataError(what + ": label " + std::to_string(rows[i]) + " of node " +
                        std::to_string(i) + " is not a class id");
      }
      d->labels[i] = static_cast<int64_t>(rows[i]);
      max_label = std::max(max_label, d->labels[i]);
    }
    d->label_kind = LabelKind::kClass;
    d->label_width = 0;
    d->num_classes = max_label + 1;
    d->targets.clear();
    return "";
  }
  SetTargets(d, kind, width, rows);
  return LabelKindLine(kind, width, task, what);
}

LabelKind TaskOnLabelRows(LabelKind read, const std::string& task, const std::string& name) {
  const bool fits =
      (task == "multilabel" && read == LabelKind::kMultilabel) || task == "node_regression";
  if (!fits) {
    throw DataError(name + ": --task " + task + " does not fit its " + LabelKindName(read) +
                    " labels");
  }
  return task == "node_regression" ? LabelKind::kRegression : read;
}

void ApplyLabelTask(Dataset* d, const std::string& task) {
  if (!IsTask(task)) {
    throw ConfigError("--task must be auto, node, multilabel or node_regression, got '" + task +
                      "'");
  }
  if (task == "auto") return;
  if (d->label_kind != LabelKind::kClass) {
    d->label_kind = TaskOnLabelRows(d->label_kind, task, d->name);
    if (d->label_kind == LabelKind::kRegression) d->num_classes = 0;
    return;
  }
  if (task == "node") return;
  std::vector<double> rows(d->labels.begin(), d->labels.end());
  for (size_t i = 0; i < rows.size(); ++i) {
    if (d->labels[i] < 0) {
      throw DataError(d->name + ": node " + std::to_string(i) + " has no label (-1); --task " +
                      task + " needs a value for every node");
    }
  }
  SetLabelRows(d, std::move(rows), 1, task, d->name);
}

void NodeFeaturesFromEdges(Dataset* d, bool undirected,
                           const std::function<bool(int64_t, int64_t)>& skip) {
  const int64_t w = d->edge_feature_dim, n = d->num_nodes;
  if (w <= 0) throw DataError(d->name + ": --node_feat_from_edges needs edge features");
  std::vector<double> sum(static_cast<size_t>(n * w), 0.0);
  std::vector<int64_t> count(static_cast<size_t>(n), 0);
  auto add = [&](int64_t node, int64_t edge) {
    const float* row = d->edge_features.data() + edge * w;
    double* out = sum.data() + node * w;
    for (int64_t j = 0; j < w; ++j) out[j] += row[j];
    ++count[static_cast<size_t>(node)];
  };
  for (int64_t e = 0; e < d->num_edges(); ++e) {
    if (skip && skip(d->src[static_cast<size_t>(e)], d->dst[static_cast<size_t>(e)])) continue;
    add(d->dst[static_cast<size_t>(e)], e);
    if (undirected && d->src[static_cast<size_t>(e)] != d->dst[static_cast<size_t>(e)])
      add(d->src[static_cast<size_t>(e)], e);
  }
  if (d->sparse()) {
    // The means are dense columns: the rows become dense again.
    d->features.resize(static_cast<size_t>(n * d->feature_dim));
    Densify(d->sparse_features.view(), d->features.data());
    d->sparse_features = SparseRows();
  }
  const int64_t old = d->feature_dim, width = old + w;
  std::vector<float> features(static_cast<size_t>(n * width));
  for (int64_t v = 0; v < n; ++v) {
    float* out = features.data() + v * width;
    std::copy(d->features.begin() + v * old, d->features.begin() + (v + 1) * old, out);
    const int64_t c = count[static_cast<size_t>(v)];
    for (int64_t j = 0; j < w; ++j)
      out[old + j] = c == 0 ? 0.0f : static_cast<float>(sum[static_cast<size_t>(v * w + j)] / c);
  }
  d->features = std::move(features);
  d->feature_dim = width;
}

std::string OgbDatasetName(const std::string& name) {
  // The names DGL's distributed examples use (partition_graph.py --dataset).
  if (name == "ogb-product") return "ogbn-products";
  if (name == "ogb-paper100M") return "ogbn-papers100M";
  return name;
}

std::string KnownUndirectedReason(const std::string& name_in) {
  const std::string name = OgbDatasetName(name_in);
  static const char* kNames[] = {"ogbn-products", "ogbn-proteins", "cora", "citeseer", "pubmed"};
  std::string n = name;
  std::replace(n.begin(), n.end(), '_', '-');
  std::transform(n.begin(), n.end(), n.begin(), ::tolower);
  for (const char* k : kNames) {
    if (n == k) return name + " is a known undirected dataset (each pair listed once)";
  }
  if (n.rfind("synthetic", 0) == 0)
    return "synthetic graphs are undirected (each pair listed once)";
  return "";
}

EdgeOrder CountEdgeOrder(const std::vector<int64_t>& src, const std::vector<int64_t>& dst) {
  EdgeOrder order;
  for (size_t k = 0; k < src.size(); ++k) order.Add(src[k], dst[k]);
  return order;
}

bool TreatAsUndirected(DirectionFlag flag, const std::string& undirected_reason) {
  if (flag == DirectionFlag::kAuto) return !undirected_reason.empty();
  return flag == DirectionFlag::kUndirected;
}

std::string DirectionLine(DirectionFlag flag, const std::string& name,
                          const std::string& undirected_reason, int64_t num_edges,
                          const EdgeOrder& order, bool* suggest) {
  *suggest = false;
  const std::string edges = std::to_string(num_edges) + " listed edges";
  if (TreatAsUndirected(flag, undirected_reason)) {
    const std::string why = flag == DirectionFlag::kUndirected
                                ? "--undirected"
                                : undirected_reason + "; --directed keeps the edges as listed";
    return "treating " + name + " as undirected (" + why + "): adding the reverse of its " + edges;
  }
  std::string line = "treating " + name + " as directed (";
  if (flag == DirectionFlag::kDirected) {
    line += "--directed";
    if (!undirected_reason.empty()) line += ", although " + undirected_reason;
  } else {
    line += "not known to be undirected; --undirected adds reverse edges";
  }
  line += "): keeping its " + edges + " as they are";
  if (flag == DirectionFlag::kAuto && order.OneWay()) {
    *suggest = true;
    line += "; every edge runs from the " +
            std::string(order.backward == 0 ? "lower to the higher" : "higher to the lower") +
            " id, as undirected graphs are stored with each pair once: if " + name +
            " is undirected, pass --undirected (sampling would see only one direction)";
  }
  return line;
}

std::vector<std::string> OgbEdgeDataFiles(const std::string& folder, bool features_carried) {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  std::error_code ec;
  // Sorted, so the error names the same file on every run.
  auto scan = [&](const fs::path& dir, bool typed) {
    std::vector<std::string> names;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      const std::string name = it->path().filename().string();
      if (name == "edge.csv.gz" || name == "num-edge-list.csv.gz") continue;
      if (typed ? name == "edge_reltype.csv.gz" : name.rfind("edge", 0) != 0) continue;
      // Carried: edge features (a typed graph's per relation) and the edge
      // labels of a homogeneous graph.
      if (features_carried && (name == kOgbEdgeFeatFile || (!typed && name == kOgbEdgeLabelFile)))
        continue;
      names.push_back((dir / name).string());
    }
    std::sort(names.begin(), names.end());
    found.insert(found.end(), names.begin(), names.end());
  };
  const fs::path raw = fs::path(folder) / "raw";
  scan(raw, false);
  std::vector<fs::path> relations;
  for (fs::directory_iterator it(raw / "relations", ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec)) relations.push_back(it->path());
  std::sort(relations.begin(), relations.end());
  for (const fs::path& r : relations) scan(r, true);
  return found;
}

void RefuseEdgeData(const std::string& dataset, const std::vector<std::string>& found, bool ignore,
                    const std::string& why) {
  if (found.empty()) return;
  if (!ignore) {
    const std::string more =
        found.size() > 1 ? " and " + std::to_string(found.size() - 1) + " more" : "";
    throw DataError(dataset + " has edge data (" + found[0] + more + "), " + why +
                    "; pass --ignore_edge_data to go on without it");
  }
  std::string list;
  for (const std::string& f : found) list += (list.empty() ? "" : ", ") + f;
  GNN_LOG(kWarn) << "dropping the edge data of " << dataset << " (--ignore_edge_data): " << list;
}

std::string FindOgbFolder(const DatasetOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(fs::path(options.dataset) / "raw", ec)) return options.dataset;
  std::string under = OgbDatasetName(options.dataset);
  std::replace(under.begin(), under.end(), '-', '_');
  const fs::path candidate = fs::path(options.root) / under;
  return fs::is_directory(candidate / "raw", ec) ? candidate.string() : "";
}

void DatasetOptions::Validate() const {
  if (files.given()) {
    if (!dataset.empty()) {
      throw ConfigError("--dataset and --edges are two ways to give the graph: give one of them");
    }
    files.Validate();
  } else if (dataset.empty()) {
    throw ConfigError(
        "--dataset is required (or plain files: --edges, --node_feat, --labels, --train_ids)");
  }
  if (num_threads < 0) throw ConfigError("--num_threads must be >= 0");
  if (feature_format != "auto" && feature_format != "dense" && feature_format != "sparse") {
    throw ConfigError("--feature_format must be auto, dense or sparse, got '" + feature_format +
                      "'");
  }
}

std::string ApplyFeatureFormat(Dataset* d, const std::string& format, int threads) {
  if (d->feature_dim == 0 || (format == "dense" && !d->sparse())) return "";
  const double cells = static_cast<double>(d->num_nodes) * static_cast<double>(d->feature_dim);
  const int64_t nnz = d->sparse()
                          ? d->sparse_features.nnz()
                          : CountNonZero(d->features.data(), d->num_nodes, d->feature_dim, threads);
  const double density = cells > 0 ? static_cast<double>(nnz) / cells : 0.0;
  const bool sparse = format == "sparse" || (format == "auto" && density <= kSparseFeatureDensity);
  if (sparse && d->feature_dim > std::numeric_limits<int32_t>::max()) {
    throw DataError(d->name + ": " + std::to_string(d->feature_dim) +
                    " feature columns do not fit sparse rows' int32 column ids");
  }
  if (sparse && !d->sparse()) {
    d->sparse_features = SparsifyDense(d->features.data(), d->num_nodes, d->feature_dim, threads);
    std::vector<float>().swap(d->features);
  } else if (!sparse && d->sparse()) {
    d->features.resize(static_cast<size_t>(d->num_nodes * d->feature_dim));
    Densify(d->sparse_features.view(), d->features.data(), threads);
    d->sparse_features = SparseRows();
  }
  std::ostringstream line;
  line << d->name << ": node features " << (sparse ? "sparse" : "dense") << " (--feature_format "
       << format;
  if (format == "auto") {
    line << ": " << std::setprecision(3) << 100.0 * density << " % of the entries are non-zero, "
         << (sparse ? "at most " : "above ") << 100.0 * kSparseFeatureDensity << " %";
  } else {
    line << "; " << std::setprecision(3) << 100.0 * density << " % non-zero";
  }
  line << ")";
  if (sparse) line << (d->sparse_features.binary() ? ", every value 1" : "");
  return line.str();
}

namespace {

Dataset LoadAnyDataset(const DatasetOptions& options) {
  if (options.files.given()) {
    return LoadPlainFiles(options.files, options.ignore_edge_data,
                          options.feature_format != "dense");
  }
  if (IsHeteroDataset(options)) {
    throw ConfigError(options.dataset +
                      " is a heterogeneous graph (several node and edge types): gnn-dataset "
                      "reads and writes it, gnn-partition partitions it; training takes one node "
                      "type so far");
  }
  if (IsChunkedFolder(options.dataset))
    return ReadChunkedDataset(options.dataset, options.ignore_edge_data);
  if (options.dataset.rfind("synthetic:", 0) == 0) {
    SyntheticSpec spec = ParseSyntheticSpec(options.dataset.substr(10));
    if (spec.edge_feature_dim > 0 && options.ignore_edge_data) {
      RefuseEdgeData(options.dataset, {"efeat=" + std::to_string(spec.edge_feature_dim)}, true);
      spec.edge_feature_dim = 0;
    }
    Dataset d = GenerateSynthetic(spec, options.seed, options.num_threads);
    d.Validate();
    return d;
  }
  const std::string folder = FindOgbFolder(options);
  if (folder.empty()) {
    std::string under = OgbDatasetName(options.dataset);
    std::replace(under.begin(), under.end(), '-', '_');
    const std::string candidate = (std::filesystem::path(options.root) / under).string();
    bool looks_like_path = options.dataset.find('/') != std::string::npos;
    throw DataError("dataset " + options.dataset + " not found: " +
                    (looks_like_path ? CannotMessage("open", options.dataset + "/raw",
                                                     DirectoryErrno(options.dataset + "/raw"))
                                     : "neither " + options.dataset + "/raw nor " + candidate +
                                           "/raw exists (see --root)"));
  }
  Dataset d = ReadOgbFolder(folder, options);
  // A DGL alias names the graph as DGL does (graph_name "ogb-product").
  if (OgbDatasetName(options.dataset) != options.dataset) d.name = options.dataset;
  d.Validate();
  return d;
}

}  // namespace

Dataset LoadDataset(const DatasetOptions& options) {
  options.Validate();
  Dataset d = LoadAnyDataset(options);
  const std::string line = ApplyFeatureFormat(&d, options.feature_format, options.num_threads);
  if (!line.empty() && options.feature_format != "dense") {
    GNN_LOG(kInfo) << line;
  }
  return d;
}

}  // namespace gnn
