// Learnable node embeddings (server/embedding_table): initial values keyed
// by input node id, DGL's SparseAdagrad and SparseAdam against hand-worked
// steps and against a plain double-precision reimplementation written here,
// refusal of bad updates, Save/Restore blobs, and the combination of
// several trainers' gradients.
#include "store/embedding_table.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/crc32c.h"
#include "common/error.h"
#include "common/random.h"

using namespace gnn;

namespace {

std::vector<uint64_t> Iota(uint64_t n, uint64_t first = 0) {
  std::vector<uint64_t> keys(n);
  std::iota(keys.begin(), keys.end(), first);
  return keys;
}

std::vector<int64_t> AllRows(const EmbeddingTable& t) {
  std::vector<int64_t> rows(static_cast<size_t>(t.num_rows()));
  std::iota(rows.begin(), rows.end(), 0);
  return rows;
}

std::vector<float> PullAll(const EmbeddingTable& t) {
  std::vector<float> out;
  t.Pull(AllRows(t), &out, 1);
  return out;
}

std::vector<float> PullRow(const EmbeddingTable& t, int64_t row) {
  std::vector<float> out;
  t.Pull({row}, &out, 1);
  return out;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

EmbeddingOptions Options(int64_t dim, SparseOptimizerKind kind, double lr = 0.1) {
  EmbeddingOptions o;
  o.dim = dim;
  o.optimizer = kind;
  o.lr = lr;
  o.seed = 42;
  return o;
}

// The optimizers as their formulas read, everything in double, state kept
// in double (the table stores float), one row at a time.
struct Reference {
  SparseOptimizerKind kind;
  int64_t dim;
  double lr, eps, b1 = 0.9, b2 = 0.999;
  std::vector<double> value, s1, s2;
  std::vector<int64_t> t;

  Reference(const EmbeddingOptions& o, const std::vector<float>& initial)
      : kind(o.optimizer),
        dim(o.dim),
        lr(o.lr),
        eps(o.optimizer == SparseOptimizerKind::kAdam ? 1e-8 : 1e-10),
        value(initial.begin(), initial.end()),
        s1(initial.size(), 0.0),
        s2(initial.size(), 0.0),
        t(initial.size() / o.dim, 0) {}

  void Step(const std::vector<int64_t>& rows, const std::vector<float>& grads) {
    for (size_t i = 0; i < rows.size(); ++i) {
      const int64_t r = rows[i];
      ++t[r];
      for (int64_t j = 0; j < dim; ++j) {
        const size_t at = static_cast<size_t>(r * dim + j);
        const double g = grads[i * dim + j];
        if (kind == SparseOptimizerKind::kAdagrad) {
          s1[at] += g * g;
          value[at] -= lr * g / (std::sqrt(s1[at]) + eps);
        } else {
          s1[at] = b1 * s1[at] + (1 - b1) * g;
          s2[at] = b2 * s2[at] + (1 - b2) * g * g;
          const double mhat = s1[at] / (1 - std::pow(b1, static_cast<double>(t[r])));
          const double vhat = s2[at] / (1 - std::pow(b2, static_cast<double>(t[r])));
          value[at] -= lr * mhat / (std::sqrt(vhat) + eps);
        }
      }
    }
  }
};

// Gradients of varied sign and magnitude (a few exact zeros among them).
std::vector<float> Grads(const std::vector<int64_t>& rows, int64_t dim, int step) {
  std::vector<float> g;
  for (int64_t r : rows) {
    for (int64_t j = 0; j < dim; ++j) {
      const int64_t k = step * 7 + r * 3 + j;
      g.push_back(k % 11 == 0 ? 0.0f : static_cast<float>(std::sin(0.7 * k) * (1 + k % 5)));
    }
  }
  return g;
}

// Rows updated at each step: overlapping but different sets, so rows see
// different numbers of steps (Adam's bias correction is per row).
const std::vector<std::vector<int64_t>> kStepRows = {{0, 2, 5}, {2, 3},       {5, 0, 6},
                                                     {2},       {6, 5, 3, 0}, {3, 2}};

}  // namespace

TEST_CASE("sparse optimizer names and option validation", "[unit][embedding]") {
  CHECK(ParseSparseOptimizer("adagrad") == SparseOptimizerKind::kAdagrad);
  CHECK(ParseSparseOptimizer("adam") == SparseOptimizerKind::kAdam);
  CHECK(std::string(SparseOptimizerName(SparseOptimizerKind::kAdagrad)) == "adagrad");
  CHECK(std::string(SparseOptimizerName(SparseOptimizerKind::kAdam)) == "adam");
  CHECK_THROWS_AS(ParseSparseOptimizer("sgd"), ConfigError);
  CHECK_THROWS_WITH(ParseSparseOptimizer("Adam"), Catch::Contains("'Adam'"));

  EmbeddingOptions ok = Options(4, SparseOptimizerKind::kAdam);
  CHECK_NOTHROW(ok.Validate());
  auto bad = [&](auto change, const char* field) {
    EmbeddingOptions o = ok;
    change(o);
    CHECK_THROWS_AS(o.Validate(), ConfigError);
    CHECK_THROWS_WITH(o.Validate(), Catch::Contains(field));
  };
  bad([](EmbeddingOptions& o) { o.dim = 0; }, "dim");
  bad([](EmbeddingOptions& o) { o.lr = 0; }, "lr");
  bad([](EmbeddingOptions& o) { o.lr = std::nan(""); }, "lr");
  bad([](EmbeddingOptions& o) { o.eps = 0; }, "eps");
  bad([](EmbeddingOptions& o) { o.eps = std::numeric_limits<double>::infinity(); }, "eps");
  bad([](EmbeddingOptions& o) { o.beta1 = 1; }, "beta1");
  bad([](EmbeddingOptions& o) { o.beta2 = -0.5; }, "beta2");
  // Betas mean nothing to Adagrad.
  EmbeddingOptions adagrad = ok;
  adagrad.optimizer = SparseOptimizerKind::kAdagrad;
  adagrad.beta1 = 2;
  CHECK_NOTHROW(adagrad.Validate());
  // The table refuses what Validate refuses.
  EmbeddingOptions no_dim = ok;
  no_dim.dim = 0;
  CHECK_THROWS_AS(EmbeddingTable(no_dim, Iota(3)), ConfigError);
}

TEST_CASE("initial rows depend only on seed and node key", "[unit][embedding]") {
  const int64_t dim = 16;
  EmbeddingOptions o = Options(dim, SparseOptimizerKind::kAdagrad);
  EmbeddingTable a(o, Iota(500));
  REQUIRE(a.num_rows() == 500);
  REQUIRE(a.dim() == dim);
  std::vector<float> all = PullAll(a);
  REQUIRE(all.size() == size_t{500 * dim});

  // Every value in [-1, 1), spread over the whole range around 0.
  double sum = 0;
  float lo = 1, hi = -1;
  for (float v : all) {
    REQUIRE(v >= -1.0f);
    REQUIRE(v < 1.0f);
    sum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(std::abs(sum / all.size()) < 0.05);
  CHECK(lo < -0.99f);
  CHECK(hi > 0.99f);

  // The formula the header documents, recomputed here for one row.
  {
    const uint64_t key = 123;
    uint64_t s = MixSeed(o.seed, key);
    std::vector<float> expect;
    for (int64_t j = 0; j < dim; ++j) {
      uint64_t x = Mix64(s += kGoldenGamma);
      expect.push_back(static_cast<float>((static_cast<double>(x >> 40) - 8388608.0) / 8388608.0));
    }
    CHECK(SameBits(PullRow(a, 123), expect));
  }

  // The same again, and with more threads: identical bits.
  CHECK(SameBits(PullAll(EmbeddingTable(o, Iota(500))), all));
  CHECK(SameBits(PullAll(EmbeddingTable(o, Iota(500), 4)), all));

  // Another table holding a shuffled subset of the nodes (another
  // partition, another process): each node's row is the same.
  std::vector<uint64_t> keys = Iota(500);
  std::mt19937_64 shuffle(7);
  std::shuffle(keys.begin(), keys.end(), shuffle);
  keys.resize(120);
  EmbeddingTable b(o, keys, 3);
  for (size_t i = 0; i < keys.size(); ++i) {
    std::vector<float> expect(all.begin() + keys[i] * dim, all.begin() + (keys[i] + 1) * dim);
    REQUIRE(SameBits(PullRow(b, static_cast<int64_t>(i)), expect));
  }

  // Rows of different nodes differ, and another seed gives other rows.
  CHECK_FALSE(SameBits(PullRow(a, 0), PullRow(a, 1)));
  EmbeddingOptions other = o;
  other.seed = 43;
  CHECK_FALSE(SameBits(PullRow(EmbeddingTable(other, Iota(1)), 0), PullRow(a, 0)));

  // Pulls in any order and with repeats, any thread count.
  std::vector<float> got;
  a.Pull({7, 3, 7}, &got, 2);
  REQUIRE(got.size() == size_t{3 * dim});
  CHECK(std::equal(got.begin(), got.begin() + dim, all.begin() + 7 * dim));
  CHECK(std::equal(got.begin() + dim, got.begin() + 2 * dim, all.begin() + 3 * dim));
  CHECK(std::equal(got.begin() + 2 * dim, got.end(), all.begin() + 7 * dim));
  CHECK_THROWS_AS(a.Pull({0, 500}, &got, 1), DataError);
  CHECK_THROWS_WITH(a.Pull({-1}, &got, 1), Catch::Contains("row -1"));
  got.assign(5, 1.0f);
  a.Pull({}, &got, 1);
  CHECK(got.empty());
}

TEST_CASE("SparseAdagrad: two steps worked by hand", "[unit][embedding]") {
  // lr 0.1, eps 1e-10. Row 1 gets g = (3, 4), then (4, 3):
  //   step 1: s = (9, 16),  update = 0.1 * (3/3, 4/4) = (0.1, 0.1)
  //   step 2: s = (25, 25), update = 0.1 * (4/5, 3/5) = (0.08, 0.06)
  // (eps changes these by < 1e-10.) Each element has its own sum, as in
  // DGL's dgl.distributed.optim.SparseAdagrad: a per-row mean of squares
  // would give s = 12.5 and update 0.1 * 3/sqrt(12.5) = 0.0849 at step 1.
  EmbeddingTable t(Options(2, SparseOptimizerKind::kAdagrad), Iota(3));
  const std::vector<float> before = PullAll(t);
  t.Apply({1}, {3, 4}, 1);
  std::vector<float> one = PullRow(t, 1);
  CHECK(one[0] == Approx(before[2] - 0.1).margin(1e-7));
  CHECK(one[1] == Approx(before[3] - 0.1).margin(1e-7));
  t.Apply({1}, {4, 3}, 1);
  std::vector<float> two = PullRow(t, 1);
  CHECK(two[0] == Approx(one[0] - 0.08).margin(1e-7));
  CHECK(two[1] == Approx(one[1] - 0.06).margin(1e-7));
  // Rows 0 and 2 never moved.
  std::vector<float> after = PullAll(t);
  CHECK(std::equal(after.begin(), after.begin() + 2, before.begin()));
  CHECK(std::equal(after.begin() + 4, after.end(), before.begin() + 4));
}

TEST_CASE("SparseAdam: two steps worked by hand", "[unit][embedding]") {
  // lr 0.1, betas (0.9, 0.999), eps 1e-8; row 0, element 0 gets 3 then 4:
  //   step 1: m = 0.3, v = 0.009; mhat = 0.3/0.1 = 3, vhat = 0.009/0.001 = 9;
  //           update = 0.1 * 3 / (3 + 1e-8) = 0.1 (to 3e-10)
  //   step 2: m = 0.27 + 0.4 = 0.67, v = 0.008991 + 0.016 = 0.024991;
  //           mhat = 0.67 / 0.19 = 3.5263158, vhat = 0.024991 / 0.001999 = 12.501751,
  //           sqrt(vhat) = 3.5357815; update = 0.1 * 3.5263158 / 3.5357815 = 0.0997323
  // Element 1 gets -2 then 0: step 1 moves it by +0.1; step 2 has
  //   m = -0.18, v = 0.003996; mhat = -0.9473684, vhat = 1.9989995,
  //   update = 0.1 * -0.9473684 / 1.4138598 = -0.0670059 (moves up again).
  EmbeddingTable t(Options(2, SparseOptimizerKind::kAdam), Iota(2));
  const std::vector<float> before = PullAll(t);
  t.Apply({0}, {3, -2}, 1);
  std::vector<float> one = PullRow(t, 0);
  CHECK(one[0] == Approx(before[0] - 0.1).margin(1e-7));
  CHECK(one[1] == Approx(before[1] + 0.1).margin(1e-7));
  t.Apply({0}, {4, 0}, 1);
  std::vector<float> two = PullRow(t, 0);
  CHECK(two[0] == Approx(one[0] - 0.0997323).margin(2e-7));
  CHECK(two[1] == Approx(one[1] + 0.0670059).margin(2e-7));
  CHECK(SameBits(PullRow(t, 1), {before[2], before[3]}));

  // Row 1's first step is a first step (its own count), not a third.
  t.Apply({1}, {3, -2}, 1);
  std::vector<float> row1 = PullRow(t, 1);
  CHECK(row1[0] == Approx(before[2] - 0.1).margin(1e-7));
  CHECK(row1[1] == Approx(before[3] + 0.1).margin(1e-7));
}

TEST_CASE("sparse optimizers over several steps equal a double-precision reference",
          "[unit][embedding]") {
  for (SparseOptimizerKind kind : {SparseOptimizerKind::kAdagrad, SparseOptimizerKind::kAdam}) {
    DYNAMIC_SECTION(SparseOptimizerName(kind)) {
      const int64_t dim = 5, rows = 9;
      EmbeddingOptions o = Options(dim, kind, 0.05);
      EmbeddingTable t(o, Iota(rows, 1000));
      EmbeddingTable threaded(o, Iota(rows, 1000));
      const std::vector<float> initial = PullAll(t);
      Reference ref(o, initial);
      for (size_t step = 0; step < kStepRows.size(); ++step) {
        const std::vector<float> g = Grads(kStepRows[step], dim, static_cast<int>(step));
        t.Apply(kStepRows[step], g, 1);
        threaded.Apply(kStepRows[step], g, 3);
        ref.Step(kStepRows[step], g);
      }
      const std::vector<float> got = PullAll(t);
      for (int64_t i = 0; i < rows * dim; ++i) {
        INFO("row " << i / dim << " element " << i % dim);
        // float storage between steps: ~1e-7 per step.
        CHECK(got[i] == Approx(ref.value[i]).margin(2e-6));
      }
      // Rows 1, 4, 7, 8 were never named: bit-identical to their start.
      for (int64_t r : {1, 4, 7, 8}) {
        CHECK(std::equal(got.begin() + r * dim, got.begin() + (r + 1) * dim,
                         initial.begin() + r * dim));
      }
      // Every updated row did move.
      for (int64_t r : {0, 2, 3, 5, 6}) {
        CHECK_FALSE(std::equal(got.begin() + r * dim, got.begin() + (r + 1) * dim,
                               initial.begin() + r * dim));
      }
      // The thread count never shows in the result.
      CHECK(SameBits(PullAll(threaded), got));
    }
  }
}

TEST_CASE("updates on disjoint rows may run concurrently", "[unit][embedding]") {
  const int64_t dim = 8;
  EmbeddingOptions o = Options(dim, SparseOptimizerKind::kAdam);
  EmbeddingTable shared(o, Iota(200)), sequential(o, Iota(200));
  std::vector<int64_t> even, odd;
  for (int64_t r = 0; r < 200; ++r) (r % 2 ? odd : even).push_back(r);
  auto run = [&](EmbeddingTable* t, const std::vector<int64_t>& rows) {
    for (int step = 0; step < 20; ++step) t->Apply(rows, Grads(rows, dim, step), 2);
  };
  std::thread a([&] { run(&shared, even); });
  std::thread b([&] { run(&shared, odd); });
  a.join();
  b.join();
  run(&sequential, even);
  run(&sequential, odd);
  CHECK(SameBits(PullAll(shared), PullAll(sequential)));
}

TEST_CASE("bad updates are refused and change nothing", "[unit][embedding]") {
  for (SparseOptimizerKind kind : {SparseOptimizerKind::kAdagrad, SparseOptimizerKind::kAdam}) {
    DYNAMIC_SECTION(SparseOptimizerName(kind)) {
      const int64_t dim = 3;
      EmbeddingTable t(Options(dim, kind), Iota(6));
      t.Apply({1, 4}, Grads({1, 4}, dim, 0), 1);
      const std::vector<float> before = PullAll(t);
      const std::string blob = t.Save(0, 6);

      CHECK_THROWS_AS(t.Apply({1, 3, 1}, Grads({1, 3, 1}, dim, 1), 2), DataError);
      CHECK_THROWS_WITH(t.Apply({1, 3, 1}, Grads({1, 3, 1}, dim, 1), 1),
                        Catch::Contains("row 1") && Catch::Contains("more than once"));
      CHECK_THROWS_WITH(t.Apply({2, 6}, Grads({2, 6}, dim, 1), 1),
                        Catch::Contains("row 6") && Catch::Contains("[0, 6)"));
      CHECK_THROWS_AS(t.Apply({-1}, Grads({0}, dim, 1), 1), DataError);
      CHECK_THROWS_WITH(t.Apply({0, 2}, std::vector<float>(5, 0.5f), 1),
                        Catch::Contains("5 gradient floats") && Catch::Contains("expected 6"));
      CHECK_THROWS_AS(t.Apply({0}, {}, 1), DataError);
      std::vector<float> nan = Grads({0, 2, 5}, dim, 1);
      nan[7] = std::nanf("");
      CHECK_THROWS_WITH(t.Apply({0, 2, 5}, nan, 3),
                        Catch::Contains("row 5") && Catch::Contains("nan"));
      std::vector<float> inf = Grads({0, 2}, dim, 1);
      inf[1] = -std::numeric_limits<float>::infinity();
      CHECK_THROWS_AS(t.Apply({0, 2}, inf, 1), DataError);

      // Nothing moved, not even the optimizer state (the blob is the same).
      CHECK(SameBits(PullAll(t), before));
      CHECK(t.Save(0, 6) == blob);
      // An empty update is a no-op.
      t.Apply({}, {}, 2);
      CHECK(t.Save(0, 6) == blob);
    }
  }
}

TEST_CASE("Save and Restore carry values and optimizer state", "[unit][embedding]") {
  for (SparseOptimizerKind kind : {SparseOptimizerKind::kAdagrad, SparseOptimizerKind::kAdam}) {
    DYNAMIC_SECTION(SparseOptimizerName(kind)) {
      const int64_t dim = 4, rows = 7;
      EmbeddingOptions o = Options(dim, kind, 0.05);
      EmbeddingTable src(o, Iota(rows));
      for (size_t step = 0; step < kStepRows.size(); ++step) {
        src.Apply(kStepRows[step], Grads(kStepRows[step], dim, static_cast<int>(step)), 1);
      }

      // The whole table into one that started elsewhere (another seed).
      EmbeddingOptions fresh = o;
      fresh.seed = 99;
      EmbeddingTable dst(fresh, Iota(rows));
      REQUIRE_FALSE(SameBits(PullAll(dst), PullAll(src)));
      dst.Restore(src.Save(0, rows), 0, "test");
      CHECK(SameBits(PullAll(dst), PullAll(src)));
      // The same next steps give the same bits: the state came along (a
      // fresh state would take first-step-sized steps).
      for (int step = 10; step < 13; ++step) {
        const std::vector<int64_t> r = {0, 2, 3, 6};
        src.Apply(r, Grads(r, dim, step), 1);
        dst.Apply(r, Grads(r, dim, step), 2);
      }
      CHECK(SameBits(PullAll(dst), PullAll(src)));
      CHECK(dst.Save(0, rows) == src.Save(0, rows));

      // A range: rows [2, 5) of src into rows [2, 5), then into [0, 3) of
      // a smaller table; other rows keep their own values.
      EmbeddingTable part(fresh, Iota(rows));
      const std::vector<float> part_before = PullAll(part);
      const std::string range = src.Save(2, 5);
      part.Restore(range, 2, "test");
      std::vector<float> got = PullAll(part), want = PullAll(src);
      for (int64_t i = 0; i < rows * dim; ++i) {
        const bool inside = i >= 2 * dim && i < 5 * dim;
        REQUIRE(got[i] == (inside ? want[i] : part_before[i]));
      }
      EmbeddingTable small(fresh, Iota(3));
      small.Restore(range, 0, "test");
      std::vector<float> src_range;
      src.Pull({2, 3, 4}, &src_range, 1);
      CHECK(SameBits(PullAll(small), src_range));
      const std::vector<float> g = Grads({2, 3, 4}, dim, 20);
      src.Apply({2, 3, 4}, g, 1);
      small.Apply({0, 1, 2}, g, 1);
      src.Pull({2, 3, 4}, &src_range, 1);
      CHECK(SameBits(PullAll(small), src_range));

      // An empty range is a valid blob.
      CHECK_NOTHROW(small.Restore(src.Save(4, 4), 3, "test"));
      CHECK_THROWS_AS(src.Save(3, 2), DataError);
      CHECK_THROWS_AS(src.Save(0, rows + 1), DataError);
      CHECK_THROWS_AS(src.Save(-1, 2), DataError);
    }
  }
}

TEST_CASE("SetValues puts rows in place with fresh optimizer state", "[unit][embedding]") {
  for (SparseOptimizerKind kind : {SparseOptimizerKind::kAdagrad, SparseOptimizerKind::kAdam}) {
    DYNAMIC_SECTION(SparseOptimizerName(kind)) {
      const int64_t dim = 3, rows = 7;
      const EmbeddingOptions o = Options(dim, kind, 0.05);
      EmbeddingTable trained(o, Iota(rows));
      for (size_t step = 0; step < kStepRows.size(); ++step) {
        trained.Apply(kStepRows[step], Grads(kStepRows[step], dim, static_cast<int>(step)), 1);
      }
      // Rows [1, 3) take new values; the others keep theirs.
      const std::vector<float> before = PullAll(trained);
      const std::vector<float> values = {1, 2, 3, 4, 5, 6};
      trained.SetValues(1, values.data(), 2);
      const std::vector<float> after = PullAll(trained);
      for (int64_t i = 0; i < rows * dim; ++i) {
        const bool inside = i >= dim && i < 3 * dim;
        REQUIRE(after[i] == (inside ? values[i - dim] : before[i]));
      }
      // Their state is fresh: the next step is a first step, as on a
      // table that starts from those values.
      EmbeddingTable fresh(o, Iota(2));
      fresh.SetValues(0, values.data(), 2);
      const std::vector<float> g = Grads({1, 2}, dim, 7);
      trained.Apply({1, 2}, g, 1);
      fresh.Apply({0, 1}, g, 1);
      std::vector<float> got;
      trained.Pull({1, 2}, &got, 1);
      CHECK(SameBits(got, PullAll(fresh)));
      CHECK_THROWS_AS(trained.SetValues(6, values.data(), 2), DataError);
      CHECK_THROWS_AS(trained.SetValues(-1, values.data(), 1), DataError);
    }
  }
}

TEST_CASE("Restore refuses malformed blobs, naming the source", "[unit][embedding]") {
  const int64_t dim = 3;
  EmbeddingOptions o = Options(dim, SparseOptimizerKind::kAdam);
  EmbeddingTable t(o, Iota(5));
  t.Apply({0, 3}, Grads({0, 3}, dim, 0), 1);
  const std::string good = t.Save(1, 4);
  EmbeddingTable dst(o, Iota(5));
  const std::string before = dst.Save(0, 5);
  auto refused = [&](const std::string& blob, int64_t begin, const std::string& why) {
    CHECK_THROWS_AS(dst.Restore(blob, begin, "peer 10.0.0.7:5000"), DataError);
    CHECK_THROWS_WITH(dst.Restore(blob, begin, "peer 10.0.0.7:5000"),
                      Catch::Contains("peer 10.0.0.7:5000") && Catch::Contains(why));
    CHECK(dst.Save(0, 5) == before);
  };
  refused(good.substr(0, good.size() - 1), 0, "truncated");
  refused(good.substr(0, 20), 0, "truncated");
  refused("", 0, "truncated");
  refused(good + std::string(4, '\0'), 0, "rows its header names");
  std::string magic = good;
  magic[0] = 'X';
  refused(magic, 0, "not an embedding blob");
  std::string version = good;
  version[4] = 9;
  refused(version, 0, "version 9");
  std::string flipped = good;
  flipped[good.size() - 3] ^= 0x10;
  refused(flipped, 0, "checksum");
  // A row count that would overflow when multiplied by the row size.
  std::string huge = good;
  const int64_t big = int64_t{1} << 61;
  std::memcpy(&huge[16], &big, sizeof(big));
  refused(huge, 0, "rows its header names");
  // Does not fit: 3 rows from row 3 of 5.
  refused(good, 3, "do not fit");
  refused(good, -1, "do not fit");

  // Another dim, another optimizer.
  EmbeddingOptions wide = o;
  wide.dim = 4;
  refused(EmbeddingTable(wide, Iota(5)).Save(0, 2), 0, "dim 4");
  EmbeddingOptions adagrad = o;
  adagrad.optimizer = SparseOptimizerKind::kAdagrad;
  refused(EmbeddingTable(adagrad, Iota(5)).Save(0, 2), 0, "adagrad");
  EmbeddingTable adagrad_table(adagrad, Iota(5));
  CHECK_THROWS_WITH(adagrad_table.Restore(good, 0, "f.bin"),
                    Catch::Contains("f.bin") && Catch::Contains("adam"));

  // A well-formed blob whose v is negative (written by something else, its
  // checksum right): refused, since the next step would take its square
  // root. v follows values and m: header 32 bytes + 2 * dim floats.
  std::string negative_v = EmbeddingTable(o, Iota(1)).Save(0, 1);
  const float minus_one = -1.0f;
  std::memcpy(&negative_v[32 + 2 * dim * 4], &minus_one, sizeof(minus_one));
  const uint32_t crc = Crc32c(negative_v.data() + 32, negative_v.size() - 32);
  std::memcpy(&negative_v[24], &crc, sizeof(crc));
  refused(negative_v, 0, "second moment of row 0 is -1");
}

TEST_CASE("CombineSparseGrads averages each id's rows across trainers", "[unit][embedding]") {
  // Trainer 0: ids 5, 2, 5; trainer 1: ids 2, 9; trainer 2: nothing.
  const std::vector<int64_t> ids0 = {5, 2, 5}, ids1 = {2, 9}, ids2 = {};
  const std::vector<float> g0 = {1, 10, 2, 20, 4, 40}, g1 = {-3, 0.5f, 7, 7}, g2 = {};
  std::vector<int64_t> ids;
  std::vector<float> grads;
  CombineSparseGrads({&ids0, &ids1, &ids2}, {&g0, &g1, &g2}, 2, &ids, &grads);
  CHECK(ids == std::vector<int64_t>{2, 5, 9});
  // 2: ((2, 20) + (-3, 0.5)) / 2; 5: ((1, 10) + (4, 40)) / 2; 9: (7, 7).
  CHECK(grads == std::vector<float>{-0.5f, 10.25f, 2.5f, 25, 7, 7});

  // A table takes the combination, not the raw concatenation (id 5 twice).
  EmbeddingTable t(Options(2, SparseOptimizerKind::kAdagrad), Iota(10));
  CHECK_THROWS_AS(t.Apply(ids0, g0, 1), DataError);
  CHECK_NOTHROW(t.Apply(ids, grads, 1));

  // Outputs may alias an input.
  std::vector<int64_t> alias_ids = {3, 3};
  std::vector<float> alias_grads = {1, 2, 3, 4};
  CombineSparseGrads({&alias_ids}, {&alias_grads}, 2, &alias_ids, &alias_grads);
  CHECK(alias_ids == std::vector<int64_t>{3});
  CHECK(alias_grads == std::vector<float>{2, 3});

  // Nothing in, nothing out.
  CombineSparseGrads({}, {}, 4, &ids, &grads);
  CHECK(ids.empty());
  CHECK(grads.empty());

  const std::vector<float> short_g = {1, 2, 3};
  CHECK_THROWS_AS(CombineSparseGrads({&ids0}, {&short_g}, 2, &ids, &grads), DataError);
  CHECK_THROWS_WITH(CombineSparseGrads({&ids0, &ids1}, {&g0}, 2, &ids, &grads),
                    Catch::Contains("2 id arrays but 1 gradient arrays"));
  CHECK_THROWS_AS(CombineSparseGrads({&ids0}, {&g0}, 0, &ids, &grads), DataError);
  CHECK_THROWS_AS(CombineSparseGrads({&ids0}, {nullptr}, 2, &ids, &grads), DataError);
}
