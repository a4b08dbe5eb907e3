// The real gnn-dataset binary on heterogeneous data: statistics of
// synthetic:mag-small, DGL's reverse relations, OGB's heterogeneous layout
// written and read back through the CLI; what cannot train it yet says so.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "test_util.h"

using gnn::test::Bin;
using gnn::test::RunProcess;
using nlohmann::json;

namespace {

json Stats(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Bin("gnn-dataset"), "--quiet"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = RunProcess(argv, 120);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("gnn-dataset: synthetic:mag-small per type and relation, written and read as OGB",
          "[e2e]") {
  gnn::test::TempDir dir;
  const json s = Stats({"--dataset", "synthetic:mag-small"});
  CHECK(s.at("num_nodes") == 19397);
  CHECK(s.at("num_edges") == 211111);
  CHECK(s.at("target") == "paper");
  CHECK(s.at("node_types").at("paper").at("feature_dim") == 64);
  CHECK(s.at("node_types").at("author").at("feature_dim") == 0);
  CHECK(s.at("relations").at("paper:cites:paper") == 54163);

  const json u =
      Stats({"--dataset", "synthetic:mag-small", "--undirected", "--write_ogb", dir / "mag_small"});
  CHECK(u.at("num_edges") == 2 * 211111);
  CHECK(u.at("relations").at("paper:rev-writes:author") == 71457);
  const json back = Stats({"--dataset", dir / "mag_small"});
  CHECK(back.at("name") == "mag-small");
  CHECK(back.at("relations") == u.at("relations"));
  CHECK(back.at("node_types") == u.at("node_types"));
  CHECK(back.at("train") == u.at("train"));

  // Partitioned (gnn-partition): GraphSAGE says in one line to use RGCN.
  const auto p = RunProcess({Bin("gnn-partition"), "--dataset", dir / "mag_small", "--num_parts",
                             "1", "--output", dir / "out", "--quiet"},
                            60);
  REQUIRE(p.exit_code == 0);
  const auto t = RunProcess(
      {Bin("gnn-train"), "--standalone", "--part_config", dir / "out/mag-small.json"}, 60);
  CHECK(t.exit_code == 2);
  CHECK(t.err.find("heterogeneous graph (4 node types, 8 relations): gnn-train --model "
                   "graphsage (use --model rgcn) takes one node type") != std::string::npos);
  // --undirected is for heterogeneous graphs only.
  const auto h =
      RunProcess({Bin("gnn-dataset"), "--dataset", "synthetic:tiny", "--undirected"}, 60);
  CHECK(h.exit_code == 2);
}
