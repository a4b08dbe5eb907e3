#include "serve/layer_cache.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "common/random.h"

namespace gnn {

LayerCache::LayerCache(int64_t bytes, int64_t dim) : dim_(dim) {
  if (dim < 1) throw ConfigError("layer cache rows of " + std::to_string(dim) + " floats");
  const int64_t per_slot = dim * static_cast<int64_t>(sizeof(float)) + 8;
  const int64_t slots = std::max<int64_t>(1, bytes / per_slot);
  keys_.assign(static_cast<size_t>(slots), -1);
  rows_.resize(static_cast<size_t>(slots * dim));
}

size_t LayerCache::Slot(int64_t v) const {
  return static_cast<size_t>(Mix64(static_cast<uint64_t>(v)) % keys_.size());
}

const float* LayerCache::Find(int64_t v) const {
  const size_t s = Slot(v);
  return keys_[s] == v ? rows_.data() + s * static_cast<size_t>(dim_) : nullptr;
}

void LayerCache::Put(int64_t v, const float* row) {
  const size_t s = Slot(v);
  keys_[s] = v;
  std::memcpy(rows_.data() + s * static_cast<size_t>(dim_), row,
              static_cast<size_t>(dim_) * sizeof(float));
}

}  // namespace gnn
