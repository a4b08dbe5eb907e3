// Short texts for error lines: a tensor's shape, the first line of a
// library's message (LibTorch's carry a backtrace after it).
#pragma once

#include <torch/torch.h>

#include <string>

namespace gnn {

// "[3, 5]".
inline std::string ShapeText(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

inline std::string FirstLine(const std::string& what) { return what.substr(0, what.find('\n')); }

}  // namespace gnn
