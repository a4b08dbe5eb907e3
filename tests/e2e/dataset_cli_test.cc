// The real gnn-dataset binary on heterogeneous data: statistics of
// synthetic:mag-small, DGL's reverse relations, OGB's heterogeneous layout
// written and read back through the CLI; DGL's chunked format written and
// read back.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "process_util.h"
#include "test_util.h"

namespace test = gnn::test;
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
                   "graphsage (use --model rgcn or rgat) takes one node type") !=
        std::string::npos);
  // --undirected is for heterogeneous graphs only.
  const auto h =
      RunProcess({Bin("gnn-dataset"), "--dataset", "synthetic:tiny", "--undirected"}, 60);
  CHECK(h.exit_code == 2);
}

TEST_CASE("gnn-dataset --write_chunked: DGL's chunked format, read back into the same partitions",
          "[e2e][python]") {
  test::TempDir dir;
  // Homogeneous (4 chunks) and heterogeneous (3 chunks, with DGL's reverses).
  for (const auto& [dataset, chunks, extra] :
       {std::tuple<std::string, std::string, std::string>{"synthetic:tiny", "4", ""},
        {"synthetic:mag-small", "3", "--undirected"}}) {
    INFO(dataset);
    const std::string out = dir / ("chunked-" + chunks);
    std::vector<std::string> args = {
        Bin("gnn-dataset"), "--dataset", dataset,  "--write_chunked", chunks,
        "--output",         out,         "--quiet"};
    if (!extra.empty()) args.push_back(extra);
    auto w = RunProcess(args, 120);
    INFO(w.err);
    REQUIRE(w.exit_code == 0);
    // Partitioning the chunks gives the partitions of the dataset itself.
    std::vector<std::string> direct = {
        Bin("gnn-partition"),       "--dataset", dataset, "--num_parts", "2", "--output",
        dir / ("direct-" + chunks), "--quiet"};
    if (!extra.empty()) direct.push_back(extra);
    REQUIRE(RunProcess(direct, 300).exit_code == 0);
    auto fromchunks = RunProcess({Bin("gnn-partition"), "--dataset", out, "--num_parts", "2",
                                  "--output", dir / ("fromchunks-" + chunks), "--quiet"},
                                 300);
    INFO(fromchunks.err);
    REQUIRE(fromchunks.exit_code == 0);
    const std::string name = dataset == "synthetic:tiny" ? "synthetic-tiny" : "synthetic-mag-small";
    const json a =
        json::parse(test::ReadFileOrEmpty(dir / ("direct-" + chunks + "/" + name + ".json")));
    const json b =
        json::parse(test::ReadFileOrEmpty(dir / ("fromchunks-" + chunks + "/" + name + ".json")));
    CHECK(a.at("part-0") == b.at("part-0"));
    CHECK(a.at("part-1") == b.at("part-1"));
    CHECK(a.at("num_edges") == b.at("num_edges"));
  }
  // DGL's keys, chunk sizes that add up, arrays numpy reads.
  if (RunProcess({"/usr/bin/python3", "-c", "import numpy"}).exit_code != 0) {
    GNN_SKIP("python3-numpy not installed: chunk files not checked");
  }
  const char* script = R"(import json, sys
import numpy as np
d = sys.argv[1]
m = json.load(open(d + "/metadata.json"))
assert m["node_type"] == ["author", "field_of_study", "institution", "paper"], m["node_type"]
assert len(m["edge_type"]) == 8 and all(e.count(":") == 2 for e in m["edge_type"])
for t, counts in zip(m["node_type"], m["num_nodes_per_chunk"]):
    assert len(counts) == 3
    n = sum(counts)
    for name, spec in m["node_data"].get(t, {}).items():
        rows = [np.load(d + "/" + p) for p in spec["data"]]
        assert [len(r) for r in rows] == counts, (t, name)
for e, counts in zip(m["edge_type"], m["num_edges_per_chunk"]):
    src_t, _, dst_t = e.split(":")
    nsrc = sum(m["num_nodes_per_chunk"][m["node_type"].index(src_t)])
    ndst = sum(m["num_nodes_per_chunk"][m["node_type"].index(dst_t)])
    for p, c in zip(m["edges"][e]["data"], counts):
        a = np.load(d + "/" + p)
        assert a.shape == (c, 2) and a.dtype == np.int64
        assert (a[:, 0] < nsrc).all() and (a[:, 1] < ndst).all()
paper = m["node_data"]["paper"]
train = np.concatenate([np.load(d + "/" + p) for p in paper["train_mask"]["data"]])
assert train.sum() > 0 and set(np.unique(train)) <= {0, 1}
print("ok")
)";
  auto py = RunProcess({"/usr/bin/python3", "-c", script, dir / "chunked-3"}, 120);
  INFO(py.err);
  CHECK(py.out == "ok\n");
}

TEST_CASE("chunked datasets: bad input is one error line naming the file", "[e2e]") {
  test::TempDir dir;
  auto fail = [&](std::vector<std::string> args, const std::string& needle) {
    args.insert(args.begin(), Bin("gnn-dataset"));
    args.push_back("--quiet");
    auto r = RunProcess(args, 120);
    INFO(r.err);
    CHECK(r.exit_code > 0);
    CHECK(r.err.find(needle) != std::string::npos);
    CHECK(r.out.empty());
  };
  const std::string out = dir / "c";
  REQUIRE(RunProcess({Bin("gnn-dataset"), "--dataset", "synthetic:tiny", "--write_chunked", "2",
                      "--output", out, "--quiet"},
                     60)
              .exit_code == 0);
  fail({"--dataset", "synthetic:tiny", "--write_chunked", "2", "--output", out}, "exists");
  fail({"--dataset", "synthetic:tiny", "--write_chunked", "2"}, "go together");
  fail({"--dataset", "synthetic:tiny", "--write_chunked", "0", "--output", dir / "z"},
       "go together");
  fail({"--dataset", "synthetic:tiny", "--write_chunked", "100000", "--output", dir / "z"},
       "chunks");
  CHECK(!std::filesystem::exists(dir / "z"));
  // A chunk cut short, a path out of the folder, chunk counts that disagree.
  {
    std::filesystem::resize_file(out + "/edges/_N:_E:_N/chunk-1.npy", 200);
    fail({"--dataset", out}, "chunk-1.npy");
  }
  REQUIRE(RunProcess({Bin("gnn-dataset"), "--dataset", "synthetic:tiny", "--write_chunked", "2",
                      "--output", dir / "d", "--quiet"},
                     60)
              .exit_code == 0);
  const std::string meta = test::ReadFileOrEmpty(dir / "d/metadata.json");
  json m = json::parse(meta);
  m["edges"]["_N:_E:_N"]["data"][0] = "../../etc/passwd";
  {
    std::ofstream f(dir / "d/metadata.json");
    f << m.dump();
  }
  fail({"--dataset", dir / "d"}, "must be absolute or a path inside the folder");
  // DGL's metadata may name its files by absolute paths.
  m = json::parse(meta);
  m["edges"]["_N:_E:_N"]["data"][0] =
      (std::filesystem::absolute(dir / "d") / m["edges"]["_N:_E:_N"]["data"][0].get<std::string>())
          .string();
  {
    std::ofstream f(dir / "d/metadata.json");
    f << m.dump();
  }
  CHECK(RunProcess({Bin("gnn-dataset"), "--dataset", dir / "d", "--quiet"}, 60).exit_code == 0);
  m["edges"]["_N:_E:_N"]["format"]["name"] = "parquet";
  {
    std::ofstream f(dir / "d/metadata.json");
    f << m.dump();
  }
  fail({"--dataset", dir / "d"}, "parquet is not read");
  m = json::parse(meta);
  m["num_nodes_per_chunk"][0].push_back(5);
  {
    std::ofstream f(dir / "d/metadata.json");
    f << m.dump();
  }
  fail({"--dataset", dir / "d"}, "metadata.json");
  // The graph name becomes a file name; the labelled type needs labels.
  m = json::parse(meta);
  m["graph_name"] = "../x";
  {
    std::ofstream f(dir / "d/metadata.json");
    f << m.dump();
  }
  fail({"--dataset", dir / "d"}, "cannot name a graph");
  m = json::parse(meta);
  m["node_data"]["_N"].erase("label");
  m.erase("gnn");  // as DGL writes it: the labelled type is the one with labels
  {
    std::ofstream f(dir / "d/metadata.json");
    f << m.dump();
  }
  fail({"--dataset", dir / "d"}, "no node type has a 'label'");
  m["gnn"] = {{"target", "_N"}};
  {
    std::ofstream f(dir / "d/metadata.json");
    f << m.dump();
  }
  fail({"--dataset", dir / "d"}, "_N has no label");
  // A trailing slash names the same folder.
  REQUIRE(RunProcess({Bin("gnn-dataset"), "--dataset", "synthetic:tiny", "--write_chunked", "2",
                      "--output", dir / "e/", "--quiet"},
                     60)
              .exit_code == 0);
  CHECK(std::filesystem::exists(dir / "e/metadata.json"));
}
