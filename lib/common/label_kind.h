// What a graph's node labels are, from the partitioner (detected, or
// gnn-partition --task) through the partition config to the trainer's task:
// one class id per node (int64 [N], -1 = unlabelled), several 0/1 labels per
// node (multi-label classification, ogbn-proteins' shape), or real values
// (node regression). The last two travel as float32 rows [N, width]
// ("targets"); which nodes count is said by the split masks alone.
#pragma once

#include <cstdint>
#include <string>

#include "common/error.h"

namespace gnn {

enum class LabelKind { kClass, kMultilabel, kRegression };

// The most label columns a graph may have (the config, shared memory and the
// MiniBatch codec all refuse more).
constexpr int64_t kMaxLabelWidth = int64_t{1} << 16;

// "class", "multilabel", "regression": the partition config's label_kind.
inline const char* LabelKindName(LabelKind k) {
  switch (k) {
    case LabelKind::kMultilabel:
      return "multilabel";
    case LabelKind::kRegression:
      return "regression";
    case LabelKind::kClass:
      break;
  }
  return "class";
}

// The inverse of LabelKindName; ConfigError naming `what` otherwise.
inline LabelKind ParseLabelKind(const std::string& name, const std::string& what) {
  if (name == "class") return LabelKind::kClass;
  if (name == "multilabel") return LabelKind::kMultilabel;
  if (name == "regression") return LabelKind::kRegression;
  throw ConfigError(what + ": label kind '" + name + "' is none of class, multilabel, regression");
}

// The trainer's --task of a graph with these labels ("node" for class ids).
inline const char* LabelTaskName(LabelKind k) {
  switch (k) {
    case LabelKind::kMultilabel:
      return "multilabel";
    case LabelKind::kRegression:
      return "node_regression";
    case LabelKind::kClass:
      break;
  }
  return "node";
}

}  // namespace gnn
