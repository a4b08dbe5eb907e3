// ParseSyntheticSpec and CheckSyntheticSpec: the presets and the
// key=value form of "synthetic:" datasets, checked before anything is
// generated (graph/synthetic.cc).
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "common/error.h"
#include "graph/synthetic.h"

namespace gnn {

namespace {

// Largest node count: node ids travel as uint32 in the alias tables, and the
// pair key u * N + v must fit 64 bits.
constexpr int64_t kMaxNodes = (int64_t{1} << 31) - 1;
// Largest feature matrix (4 TiB of float32): beyond any machine, and keeps
// nodes * feat far from overflowing.
constexpr int64_t kMaxFeatureValues = int64_t{1} << 40;
constexpr const char* kPresetHelp =
    "known: tiny, small, products, proteins, proteins-small, bow, bow-small, edges, edges-small, "
    "or nodes=N,edges=E,feat=F,classes=C";

[[noreturn]] void BadSpec(const std::string& text, const std::string& what) {
  throw ConfigError("synthetic spec '" + text + "': " + what);
}

int64_t ParsePositiveInt(const std::string& text, const std::string& key,
                         const std::string& value) {
  int64_t out = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, out);
  if (value.empty() || ec != std::errc() || ptr != end || out <= 0) {
    BadSpec(text, key + " must be a positive integer, got '" + value + "'");
  }
  return out;
}

double ParseFraction(const std::string& text, const std::string& key, const std::string& value) {
  char* end = nullptr;
  double out = value.empty() ? 0.0 : std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(out) || out < 0 ||
      out > 1) {
    BadSpec(text, key + " must be a fraction in [0, 1], got '" + value + "'");
  }
  return out;
}

}  // namespace

void CheckSyntheticSpec(const SyntheticSpec& s, const std::string& text) {
  auto positive = [&](const char* key, int64_t value) {
    if (value <= 0) BadSpec(text, std::string(key) + " must be positive");
  };
  positive("nodes", s.num_nodes);
  positive("edges", s.num_edges);
  positive("feat", s.feature_dim);
  positive("classes", s.num_classes);
  if (s.num_nodes > kMaxNodes) {
    BadSpec(text, "nodes=" + std::to_string(s.num_nodes) + " exceeds the maximum " +
                      std::to_string(kMaxNodes));
  }
  if (s.feature_dim > kMaxFeatureValues / s.num_nodes) {
    BadSpec(text, "nodes*feat = " + std::to_string(s.num_nodes) + "*" +
                      std::to_string(s.feature_dim) + " feature values is too many");
  }
  const int64_t max_edges = s.num_nodes * (s.num_nodes - 1) / 2;
  if (s.num_edges > max_edges) {
    BadSpec(text, "edges=" + std::to_string(s.num_edges) + " exceeds nodes*(nodes-1)/2 = " +
                      std::to_string(max_edges) + " for nodes=" + std::to_string(s.num_nodes));
  }
  if (!(s.train_fraction > 0 && s.train_fraction <= 1)) {
    BadSpec(text, "train must be in (0, 1]");
  }
  if (!(s.valid_fraction >= 0 && s.valid_fraction <= 1)) {
    BadSpec(text, "valid must be in [0, 1]");
  }
  if (s.label_width > 0 && s.label_width > kMaxFeatureValues / s.num_nodes) {
    BadSpec(text, "nodes*labels = " + std::to_string(s.num_nodes) + "*" +
                      std::to_string(s.label_width) + " label values is too many");
  }
  if (s.train_fraction + s.valid_fraction > 1 + 1e-9) {
    BadSpec(text, "train + valid must not exceed 1");
  }
}

namespace {

// A named preset (tiny, small, products, proteins[-small], bow[-small],
// edges[-small]) into *s; false for any other text.
bool PresetSpec(const std::string& text, SyntheticSpec* out) {
  SyntheticSpec& s = *out;
  if (text == "tiny") {
    s = {"synthetic-tiny", 2000, 10000, 16, 4, 0.2, 0.1};
  } else if (text == "small") {
    s = {"synthetic-small", 100000, 1000000, 32, 8, 0.1, 0.05};
  } else if (text == "products") {
    s = {"synthetic-products", 2449029, 61859140, 100, 47, 0.0803, 0.0161};
  } else if (text == "proteins" || text == "proteins-small") {
    // ogbn-proteins' counts (132,534 nodes, 39,561,252 pairs, 8 edge
    // features, 112 labels), or a small one for tests; feat=8 are the
    // hidden classes' features, dropped once the edges carry them.
    if (text == "proteins") {
      s = {"synthetic-proteins", 132534, 39561252, 8, 16, 0.625, 0.125};
    } else {
      s = {"synthetic-proteins-small", 6000, 300000, 8, 16, 0.625, 0.125};
    }
    s.edge_feature_dim = 8;
    s.label_kind = LabelKind::kMultilabel;
    s.label_width = 112;
    s.proteins = true;
  } else if (text == "bow" || text == "bow-small") {
    // Bag-of-words features, 0.3 % / 0.5 % of the entries set, and a
    // training split large enough for many steps an epoch.
    if (text == "bow") {
      s = {"synthetic-bow", 50000, 500000, 10000, 16, 0.4, 0.1};
      s.bow_words = 30;
    } else {
      s = {"synthetic-bow-small", 5000, 40000, 4000, 8, 0.4, 0.1};
      s.bow_words = 20;
    }
  } else if (text == "edges" || text == "edges-small") {
    // Labelled edges for the edge tasks (edge classes from both ends).
    if (text == "edges") {
      s = {"synthetic-edges", 100000, 1000000, 32, 8, 0.1, 0.05};
    } else {
      s = {"synthetic-edges-small", 5000, 40000, 16, 8, 0.2, 0.1};
    }
    s.edge_labels = true;
  } else {
    return false;
  }
  return true;
}

// nodes=N,edges=E,feat=F,classes=C[,train=..,valid=..,efeat=..,task=..,
// labels=..,bow=..,etask=..]: each key once, known, and in range.
SyntheticSpec KeyValueSpec(const std::string& text) {
  SyntheticSpec s;
  std::map<std::string, std::string> values;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, end - begin);
    size_t eq = item.find('=');
    if (eq == std::string::npos) BadSpec(text, "item '" + item + "' is not key=value");
    std::string key = item.substr(0, eq);
    if (key != "nodes" && key != "edges" && key != "feat" && key != "classes" && key != "train" &&
        key != "valid" && key != "efeat" && key != "task" && key != "labels" && key != "bow" &&
        key != "etask") {
      BadSpec(text, "unknown key '" + key +
                        "' (known: nodes, edges, feat, classes, train, valid, efeat, task, "
                        "labels, bow, etask)");
    }
    if (!values.emplace(key, item.substr(eq + 1)).second) {
      BadSpec(text, "key '" + key + "' given twice");
    }
    begin = end + 1;
  }
  for (const char* key : {"nodes", "edges", "feat", "classes"}) {
    if (!values.count(key)) {
      BadSpec(text, std::string("missing ") + key + "= (" + kPresetHelp + ")");
    }
  }
  s.num_nodes = ParsePositiveInt(text, "nodes", values["nodes"]);
  s.num_edges = ParsePositiveInt(text, "edges", values["edges"]);
  s.feature_dim = ParsePositiveInt(text, "feat", values["feat"]);
  s.num_classes = ParsePositiveInt(text, "classes", values["classes"]);
  if (values.count("train")) s.train_fraction = ParseFraction(text, "train", values["train"]);
  if (values.count("valid")) s.valid_fraction = ParseFraction(text, "valid", values["valid"]);
  if (values.count("efeat")) {
    s.edge_feature_dim = ParsePositiveInt(text, "efeat", values["efeat"]);
    if (s.edge_feature_dim > kMaxFeatureValues / s.num_edges) {
      BadSpec(text, "edges*efeat = " + std::to_string(s.num_edges) + "*" +
                        std::to_string(s.edge_feature_dim) + " edge feature values is too many");
    }
  }
  if (values.count("bow")) {
    s.bow_words = ParsePositiveInt(text, "bow", values["bow"]);
    if (s.bow_words > s.feature_dim) BadSpec(text, "bow= is at most feat=");
  }
  if (values.count("task")) {
    const std::string& task = values["task"];
    if (task == "multilabel") {
      s.label_kind = LabelKind::kMultilabel;
      s.label_width = s.num_classes;
    } else if (task == "regression") {
      s.label_kind = LabelKind::kRegression;
      s.label_width = 1;
    } else if (task != "class") {
      BadSpec(text, "task must be class, multilabel or regression, got '" + task + "'");
    }
  }
  if (values.count("labels")) {
    if (s.label_kind == LabelKind::kClass)
      BadSpec(text, "labels= needs task=multilabel or task=regression");
    s.label_width = ParsePositiveInt(text, "labels", values["labels"]);
    if (s.label_width > 4096) BadSpec(text, "labels= is at most 4096");
  }
  if (values.count("etask")) {
    const std::string& etask = values["etask"];
    if (etask != "class" && etask != "regression")
      BadSpec(text, "etask must be class or regression, got '" + etask + "'");
    s.edge_labels = true;
    s.edge_task = etask == "class" ? LabelKind::kClass : LabelKind::kRegression;
  }
  s.name = "synthetic-n" + std::to_string(s.num_nodes) + "-e" + std::to_string(s.num_edges);
  if (s.bow_words > 0) s.name += "-bow";
  if (s.label_kind != LabelKind::kClass) s.name += std::string("-") + LabelKindName(s.label_kind);
  if (s.edge_labels) s.name += s.edge_task == LabelKind::kClass ? "-edgeclass" : "-edgeregression";
  return s;
}

}  // namespace

SyntheticSpec ParseSyntheticSpec(const std::string& text) {
  SyntheticSpec s;
  if (!PresetSpec(text, &s)) {
    if (text.find('=') == std::string::npos) {
      throw ConfigError("unknown synthetic preset '" + text + "' (" + kPresetHelp + ")");
    }
    s = KeyValueSpec(text);
  }
  CheckSyntheticSpec(s, text);
  return s;
}

}  // namespace gnn
