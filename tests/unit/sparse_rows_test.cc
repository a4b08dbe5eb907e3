// Sparse features without LibTorch (#53 item 1): the CSR checks name the
// first bad row, dense <-> sparse round trips, row gathers, the
// feature_format choice, the synthetic bag-of-words preset, and the OGB
// reader building CSR rows as it parses (and caching them) with the same
// numbers as its dense read.
#include "common/sparse_rows.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <string>

#include "common/error.h"
#include "common/fs.h"
#include "graph/dataset.h"
#include "graph/ogb_reader.h"
#include "graph/synthetic.h"
#include "test_util.h"

namespace gnn {
namespace {

std::string CheckError(const SparseRows& s) {
  try {
    CheckSparse(s.view(), static_cast<int64_t>(s.indices.size()),
                static_cast<int64_t>(s.values.size()), "rows.npz");
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

SparseRows Small() {
  SparseRows s;
  s.cols = 5;
  s.indptr = {0, 2, 2, 5};
  s.indices = {1, 4, 0, 2, 3};
  s.values = {0.5f, 2.0f, 1.0f, -3.0f, 4.0f};
  return s;
}

}  // namespace

TEST_CASE("CheckSparse names the first bad row of a CSR matrix", "[unit]") {
  CHECK(CheckError(Small()).empty());
  SparseRows s = Small();
  s.indices[3] = 7;
  CHECK(CheckError(s) == "rows.npz: row 2: column id 7 is outside 0..4");
  s = Small();
  s.indices = {4, 1, 0, 2, 3};
  CHECK(CheckError(s) == "rows.npz: row 0: column ids are not sorted (4 then 1)");
  s = Small();
  s.indices = {1, 4, 0, 2, 2};
  CHECK(CheckError(s) == "rows.npz: row 2: column id 2 appears twice");
  s = Small();
  s.indptr = {0, 2, 2, 4};
  CHECK(CheckError(s) == "rows.npz: row pointers end at 4, but there are 5 column ids");
  s = Small();
  s.indptr = {0, 3, 2, 5};
  CHECK(CheckError(s) == "rows.npz: row pointers decrease at row 1 (3 then 2)");
  s = Small();
  s.values.pop_back();
  CHECK(CheckError(s) == "rows.npz: 4 values for 5 column ids");
  s = Small();
  s.values[4] = std::nanf("");
  CHECK(CheckError(s).find("rows.npz: row 2: value nan at column 3 is not finite") == 0);
}

TEST_CASE("dense and sparse rows round-trip, and rows are gathered in order", "[unit]") {
  const SparseRows s = Small();
  std::vector<float> dense(static_cast<size_t>(3 * 5), -1.0f);
  Densify(s.view(), dense.data(), 2);
  CHECK(dense == std::vector<float>{0, 0.5f, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0, -3, 4, 0});
  CHECK(CountNonZero(dense.data(), 3, 5) == 5);
  const SparseRows back = SparsifyDense(dense.data(), 3, 5, 2);
  CHECK(back.indptr == s.indptr);
  CHECK(back.indices == s.indices);
  CHECK(back.values == s.values);
  // Every stored value 1: no value array.
  const std::vector<float> ones = {1, 0, 1, 0, 0, 1};
  const SparseRows binary = SparsifyDense(ones.data(), 2, 3);
  CHECK(binary.binary());
  CHECK(binary.indices == std::vector<int32_t>{0, 2, 2});
  CHECK(binary.density() == Approx(0.5));

  SparseRows g;
  const std::vector<int64_t> ids = {12, 10, 12};  // rows 2, 0, 2 of a range starting at 10
  GatherSparseRows(s.view(), ids.data(), 3, 10, &g, 2);
  CHECK(g.cols == 5);
  CHECK(g.indptr == std::vector<int64_t>{0, 3, 5, 8});
  CHECK(g.indices == std::vector<int32_t>{0, 2, 3, 1, 4, 0, 2, 3});
  CHECK(g.values == std::vector<float>{1, -3, 4, 0.5f, 2, 1, -3, 4});
  // Appending keeps what is there.
  GatherSparseRows(s.view(), ids.data() + 1, 1, 10, &g, 1);
  CHECK(g.indptr.back() == 10);

  // Whole matrices appended: a binary one after one with values gets ones.
  SparseRows all;
  all.cols = 3;
  AppendSparseRows(binary, &all);
  CHECK(all.binary());
  CHECK(all.indptr == std::vector<int64_t>{0, 2, 3});
  SparseRows valued;
  valued.cols = 3;
  valued.indptr = {0, 1};
  valued.indices = {1};
  valued.values = {2.5f};
  AppendSparseRows(valued, &all);
  AppendSparseRows(binary, &all);
  CHECK(all.indptr == std::vector<int64_t>{0, 2, 3, 4, 6, 7});
  CHECK(all.indices == std::vector<int32_t>{0, 2, 2, 1, 0, 2, 2});
  CHECK(all.values == std::vector<float>{1, 1, 1, 2.5f, 1, 1, 1});
}

TEST_CASE("feature_format: auto keeps rows sparse below the density threshold", "[unit]") {
  Dataset d =
      GenerateSynthetic(ParseSyntheticSpec("nodes=400,edges=1600,feat=500,classes=4,bow=8"), 7, 2);
  REQUIRE(d.sparse());
  REQUIRE(d.features.empty());
  d.Validate();
  // Deterministic whatever the thread count, and about 8 words a node.
  const Dataset again =
      GenerateSynthetic(ParseSyntheticSpec("nodes=400,edges=1600,feat=500,classes=4,bow=8"), 7, 1);
  CHECK(again.sparse_features.indices == d.sparse_features.indices);
  CHECK(d.sparse_features.nnz() > 400 * 6);
  CHECK(d.sparse_features.nnz() <= 400 * 8);
  CHECK(d.sparse_features.binary());

  const SparseRows kept = d.sparse_features;
  std::string line = ApplyFeatureFormat(&d, "dense");
  CHECK(!d.sparse());
  CHECK(d.features.size() == 400u * 500u);
  CHECK(line.find("node features dense (--feature_format dense") != std::string::npos);
  line = ApplyFeatureFormat(&d, "auto");
  CHECK(d.sparse());
  CHECK(d.sparse_features.indices == kept.indices);
  CHECK(line.find("at most 10 %") != std::string::npos);

  // Dense features stay dense under auto; "sparse" makes them sparse anyway.
  Dataset tiny = GenerateSynthetic(ParseSyntheticSpec("tiny"), 1, 2);
  ApplyFeatureFormat(&tiny, "auto");
  CHECK(!tiny.sparse());
  ApplyFeatureFormat(&tiny, "sparse");
  CHECK(tiny.sparse());
  CHECK(tiny.sparse_features.nnz() == 2000 * 16);
  CHECK(!tiny.sparse_features.binary());

  DatasetOptions bad;
  bad.dataset = "synthetic:tiny";
  bad.feature_format = "csr";
  CHECK_THROWS_WITH(bad.Validate(),
                    Catch::Contains("--feature_format must be auto, dense or sparse, got 'csr'"));
}

TEST_CASE("the OGB reader keeps sparse rows as it parses, and caches them", "[unit]") {
  test::TempDir tmp;
  // A bag-of-words graph written as OGB csv.gz, then read three ways.
  Dataset d =
      GenerateSynthetic(ParseSyntheticSpec("nodes=3000,edges=9000,feat=300,classes=3,bow=6"), 3, 2);
  ApplyFeatureFormat(&d, "dense");
  const std::string folder = tmp / "bow";
  WriteOgbFolder(d, folder, "random");

  DatasetOptions o;
  o.dataset = folder;
  o.use_cache = false;
  o.feature_format = "dense";
  const Dataset dense = LoadDataset(o);
  REQUIRE(!dense.sparse());
  CHECK(dense.features == d.features);
  o.feature_format = "auto";
  const Dataset sparse = LoadDataset(o);
  REQUIRE(sparse.sparse());
  CHECK(sparse.sparse_features.binary());
  std::vector<float> made(dense.features.size());
  Densify(sparse.sparse_features.view(), made.data());
  CHECK(made == dense.features);

  // Cached as CSR, read back as CSR (or dense when asked).
  o.use_cache = true;
  o.cache_dir = tmp / "cache";
  const Dataset first = LoadDataset(o);
  CHECK(PathExists(tmp / "cache/feat_indices.npy"));
  CHECK(!PathExists(tmp / "cache/feat.npy"));
  CHECK(!PathExists(tmp / "cache/feat_values.npy"));  // every value 1
  const Dataset cached = LoadDataset(o);
  REQUIRE(cached.sparse());
  CHECK(cached.sparse_features.indices == sparse.sparse_features.indices);
  o.feature_format = "dense";
  CHECK(LoadDataset(o).features == dense.features);

  // Values other than 1, the very first one too, are kept as they are
  // (--feature_format sparse on a small hand-written folder).
  for (const auto& [rel, text] : std::map<std::string, std::string>{
           {"raw/num-node-list.csv.gz", "4\n"},
           {"raw/num-edge-list.csv.gz", "2\n"},
           {"raw/edge.csv.gz", "0,1\n2,3\n"},
           {"raw/node-feat.csv.gz", "0.5,0,1\n0,0,0\n1,0,-2e3\n0,1,0\n"},
           {"raw/node-label.csv.gz", "0\n1\n0\n1\n"},
           {"split/s/train.csv.gz", "0\n"},
           {"split/s/valid.csv.gz", "1\n"},
           {"split/s/test.csv.gz", "2\n"}}) {
    test::WriteGz(tmp / ("hand/" + rel), text);
  }
  DatasetOptions h;
  h.dataset = tmp / "hand";
  h.use_cache = false;
  h.feature_format = "sparse";
  const Dataset hand = LoadDataset(h);
  REQUIRE(hand.sparse());
  CHECK(hand.sparse_features.indptr == std::vector<int64_t>{0, 2, 2, 4, 5});
  CHECK(hand.sparse_features.indices == std::vector<int32_t>{0, 2, 0, 2, 1});
  CHECK(hand.sparse_features.values == std::vector<float>{0.5f, 1, 1, -2000, 1});

  // A dense file read with auto switches to dense rows early, and stays so.
  Dataset tiny =
      GenerateSynthetic(ParseSyntheticSpec("nodes=1500,edges=3000,feat=5,classes=2"), 1, 2);
  WriteOgbFolder(tiny, tmp / "dense", "random");
  DatasetOptions t;
  t.dataset = tmp / "dense";
  t.use_cache = false;
  t.feature_format = "auto";
  const Dataset read = LoadDataset(t);
  CHECK(!read.sparse());
  CHECK(read.features.size() == 1500u * 5u);
}

}  // namespace gnn
