// gnn-serve's first-layer cache: rows found as put, a slot's new row
// replacing its old one, the byte budget.
#include "serve/layer_cache.h"

#include <catch2/catch.hpp>
#include <vector>

#include "common/error.h"

using namespace gnn;

TEST_CASE("LayerCache finds what was put, and a slot holds its last row", "[unit][serve]") {
  LayerCache cache(64 * (3 * 4 + 8), 3);
  CHECK(cache.slots() == 64);
  CHECK(cache.dim() == 3);
  CHECK(cache.Find(7) == nullptr);
  const std::vector<float> a = {1, 2, 3}, b = {4, 5, 6};
  cache.Put(7, a.data());
  REQUIRE(cache.Find(7) != nullptr);
  CHECK(std::vector<float>(cache.Find(7), cache.Find(7) + 3) == a);
  cache.Put(7, b.data());
  CHECK(std::vector<float>(cache.Find(7), cache.Find(7) + 3) == b);
  // More nodes than slots: each found row is the one put for that node.
  for (int64_t v = 0; v < 1000; ++v) {
    const float row[3] = {static_cast<float>(v), 0.5f, static_cast<float>(-v)};
    cache.Put(v, row);
  }
  int found = 0;
  for (int64_t v = 0; v < 1000; ++v) {
    if (const float* r = cache.Find(v)) {
      ++found;
      CHECK(r[0] == static_cast<float>(v));
      CHECK(r[2] == static_cast<float>(-v));
    }
  }
  CHECK(found > 0);
  CHECK(found <= 64);
  // A budget below one row still holds one; a row needs a width.
  CHECK(LayerCache(1, 4).slots() == 1);
  CHECK_THROWS_AS(LayerCache(1024, 0), ConfigError);
}
