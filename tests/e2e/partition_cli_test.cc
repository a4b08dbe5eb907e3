// The real gnn-partition binary, run as a process.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/npy.h"
#include "partition/config.h"
#include "test_util.h"

using namespace gnn;
using test::Bin;
using test::RunProcess;

namespace {

// Every failure is one "gnn-partition: error: ..." line and a non-zero exit.
void ExpectCleanFailure(const test::ProcessResult& r, const std::string& needle) {
  INFO("stderr: " << r.err);
  CHECK(r.exit_code > 0);
  std::string last = r.err;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  CHECK(last.rfind("gnn-partition: error: ", 0) == 0);
  CHECK(last.find(needle) != std::string::npos);
}

void WriteTinyOgb(const std::string& root) {
  test::WriteGz(root + "/raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,0\n");
  test::WriteGz(root + "/raw/num-node-list.csv.gz", "4\n");
  test::WriteGz(root + "/raw/num-edge-list.csv.gz", "4\n");
  test::WriteGz(root + "/raw/node-feat.csv.gz", "1,0\n0,1\n1,1\n0,0\n");
  test::WriteGz(root + "/raw/node-label.csv.gz", "0\n1\n0\n1\n");
  test::WriteGz(root + "/split/s/train.csv.gz", "0\n1\n");
  test::WriteGz(root + "/split/s/valid.csv.gz", "2\n");
  test::WriteGz(root + "/split/s/test.csv.gz", "3\n");
}

}  // namespace

TEST_CASE("gnn-partition partitions a synthetic graph and numpy can read it", "[e2e]") {
  test::TempDir dir;
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", "synthetic:tiny", "--num_parts", "2",
                       "--balance_train", "--balance_edges", "--output", dir / "data"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("edge_cut") != std::string::npos);
  CHECK(r.out.find("partition config: " + (dir / "data") + "/synthetic-tiny.json") !=
        std::string::npos);
  CHECK(r.err.find("metis done in") != std::string::npos);  // progress lines
  PartitionConfig c = LoadPartitionConfig(dir / "data/synthetic-tiny.json");
  CHECK(c.num_parts == 2);
  CHECK(c.report.at("edge_cut_fraction").get<double>() < 0.5);

  if (!PathExists("/usr/bin/python3")) GNN_SKIP("/usr/bin/python3 not installed");
  auto probe = RunProcess({"/usr/bin/python3", "-c", "import numpy"});
  if (probe.exit_code != 0) GNN_SKIP("python3-numpy not installed");
  // numpy.load opens every file; shapes agree with the config.
  std::string script =
      "import json, numpy as np, sys\n"
      "c = json.load(open(sys.argv[1] + '/synthetic-tiny.json'))\n"
      "total = 0\n"
      "for i in range(c['num_parts']):\n"
      "    p = c['part-%d' % i]; d = sys.argv[1] + '/' + p['part_dir']\n"
      "    indptr = np.load(d + '/indptr.npy'); idx = np.load(d + '/indices.npy')\n"
      "    feat = np.load(d + '/feat.npy'); lab = np.load(d + '/label.npy')\n"
      "    tm = np.load(d + '/train_mask.npy'); orig = np.load(d + '/orig_nids.npy')\n"
      "    assert indptr.dtype == np.int64 and idx.dtype == np.int64 and orig.dtype == np.int64\n"
      "    assert feat.dtype == np.float32 and feat.shape == (p['num_nodes'], c['feature_dim'])\n"
      "    assert lab.shape == (p['num_nodes'],) and tm.dtype == np.uint8\n"
      "    assert indptr[-1] == len(idx) == p['num_edges'] and int(tm.sum()) == p['num_train']\n"
      "    total += p['num_nodes']\n"
      "assert total == c['num_nodes']\n"
      "print('ok')\n";
  auto py = RunProcess({"/usr/bin/python3", "-c", script, dir / "data"});
  INFO(py.err);
  CHECK(py.exit_code == 0);
  CHECK(py.out == "ok\n");
}

TEST_CASE("gnn-partition on Cora and CiteSeer matches their README counts", "[e2e]") {
  struct Want {
    std::string name;
    int64_t nodes, directed_edges, feat, classes, train;
  };
  for (const Want& w :
       {Want{"cora", 2708, 10556, 1433, 7, 140}, Want{"citeseer", 3327, 9104, 3703, 6, 120}}) {
    std::string path = test::SharedDataset(w.name);
    if (path.empty()) {
      WARN("SKIPPED: ../shared/datasets/" << w.name << " not found");
      continue;
    }
    test::TempDir dir;
    const std::string shared_before = test::TreeState(path);
    auto r =
        RunProcess({Bin("gnn-partition"), "--dataset", path, "--num_parts", "4", "--balance_train",
                    "--cache_dir", dir / "cache", "--output", dir / "data", "--quiet"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.empty());  // --quiet
    PartitionConfig c = LoadPartitionConfig(dir / ("data/" + w.name + ".json"));
    CHECK(c.num_nodes == w.nodes);
    CHECK(c.num_edges == w.directed_edges);
    CHECK(c.feature_dim == w.feat);
    CHECK(c.num_classes == w.classes);
    CHECK(c.undirected);
    int64_t train = 0;
    for (int p = 0; p < c.num_parts; ++p) {
      train += c.parts[p].num_train;
      VerifyPartFiles(c, p);
    }
    CHECK(train == w.train);
    // The cache went where we asked, never into ../shared.
    CHECK(PathExists(dir / "cache"));
    CHECK(test::TreeState(path) == shared_before);
  }
}

TEST_CASE("DGL's spellings work as typed: ogb-product, hyphenated flags, missing output folders",
          "[e2e]") {
  test::TempDir dir;
  // DGL's example: partition_graph.py --dataset ogb-product ... --output data
  // (here the OGB folder is a tiny stand-in under --root).
  WriteTinyOgb(dir / "root/ogbn_products");
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", "ogb-product", "--root", dir / "root",
                       "--num-parts", "2", "--balance-train", "--balance-edges", "--output",
                       dir / "ws/not/yet/data"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // DGL names the graph after --dataset: train_dist.py --graph-name ogb-product.
  PartitionConfig c = LoadPartitionConfig(dir / "ws/not/yet/data/ogb-product.json");
  CHECK(c.graph_name == "ogb-product");
  CHECK(c.num_parts == 2);
  CHECK(c.balance_train);

  auto t = RunProcess({Bin("gnn-train"), "--standalone", "--graph-name=ogb-product",
                       "--part-config", dir / "one/ogb-product.json", "--num-epochs", "1"});
  CHECK(t.exit_code != 0);  // no such file yet: the flags parsed, the file is named
  CHECK(t.err.find(dir / "one/ogb-product.json") != std::string::npos);
  r = RunProcess({Bin("gnn-partition"), "--dataset", "ogb-product", "--root", dir / "root",
                  "--num-parts", "1", "--output", dir / "one"});
  REQUIRE(r.exit_code == 0);
  t = RunProcess({Bin("gnn-train"), "--standalone", "--graph-name=ogb-product", "--part-config",
                  dir / "one/ogb-product.json", "--num-epochs", "1", "--batch-size", "2",
                  "--fan-out", "2,2", "--eval-every", "1"});
  INFO(t.err);
  CHECK(t.exit_code == 0);
  CHECK(t.out.find("\"epochs\":1") != std::string::npos);
  // A hyphenated flag that does not exist is still an error naming it.
  t = RunProcess({Bin("gnn-train"), "--standalone", "--num-epochz", "1"});
  CHECK(t.exit_code == kExitConfig);
  CHECK(t.err.find("--num-epochz") != std::string::npos);
}

TEST_CASE("gnn-partition bad input: one error line, non-zero exit, nothing written", "[e2e]") {
  test::TempDir dir;
  const std::string out = dir / "out";
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), Bin("gnn-partition"));
    args.insert(args.end(), {"--output", out, "--no_cache"});
    return RunProcess(args);
  };

  SECTION("missing dataset folder: the path and errno's words") {
    ExpectCleanFailure(run({"--dataset", dir / "nope"}),
                       "cannot open " + (dir / "nope/raw") + ": No such file or directory");
  }
  SECTION("a dataset path under a file: Not a directory") {
    WriteFileAtomic(dir / "afile", "x");
    ExpectCleanFailure(run({"--dataset", dir / "afile/g"}),
                       "cannot open " + (dir / "afile/g/raw") + ": Not a directory");
  }
  SECTION("unknown preset") { ExpectCleanFailure(run({"--dataset", "synthetic:huge"}), "huge"); }
  SECTION("num_parts 0") {
    ExpectCleanFailure(run({"--dataset", "synthetic:tiny", "--num_parts", "0"}), "--num_parts");
  }
  SECTION("num_parts above node count") {
    ExpectCleanFailure(run({"--dataset", "synthetic:tiny", "--num_parts", "5000"}), "exceeds");
  }
  SECTION("unknown flag") {
    ExpectCleanFailure(run({"--dataset", "synthetic:tiny", "--num_partz", "2"}), "--num_partz");
  }
  SECTION("--sparsify without METIS, or below 0") {
    ExpectCleanFailure(
        run({"--dataset", "synthetic:tiny", "--part_method", "random", "--sparsify", "8"}),
        "--sparsify thins the graph METIS sees");
    ExpectCleanFailure(run({"--dataset", "synthetic:tiny", "--sparsify", "-3"}),
                       "--sparsify must be >= 0");
  }
  SECTION("missing file") {
    WriteTinyOgb(dir / "g");
    std::filesystem::remove(dir / "g/raw/node-label.csv.gz");
    ExpectCleanFailure(run({"--dataset", dir / "g"}), "node-label.csv.gz");
  }
  SECTION("malformed csv line names file and line") {
    WriteTinyOgb(dir / "g");
    test::WriteGz(dir / "g/raw/edge.csv.gz", "0,1\n1,2\n2;3\n3,0\n");
    ExpectCleanFailure(run({"--dataset", dir / "g"}), "edge.csv.gz:3:");
  }
  SECTION("node id out of range") {
    WriteTinyOgb(dir / "g");
    test::WriteGz(dir / "g/raw/edge.csv.gz", "0,1\n1,2\n2,9\n3,0\n");
    ExpectCleanFailure(run({"--dataset", dir / "g"}), "9");
  }
  SECTION("label count differs from node count") {
    WriteTinyOgb(dir / "g");
    test::WriteGz(dir / "g/raw/node-label.csv.gz", "0\n1\n0\n");
    ExpectCleanFailure(run({"--dataset", dir / "g"}), "node-label.csv.gz");
  }
  SECTION("truncated gzip") {
    WriteTinyOgb(dir / "g");
    std::string gz = ReadFile(dir / "g/raw/node-feat.csv.gz");
    std::ofstream(dir / "g/raw/node-feat.csv.gz", std::ios::binary) << gz.substr(0, gz.size() - 10);
    ExpectCleanFailure(run({"--dataset", dir / "g"}), "node-feat.csv.gz");
  }
  SECTION("a node count beyond 2^62") {
    WriteTinyOgb(dir / "g");
    test::WriteGz(dir / "g/raw/num-node-list.csv.gz", "4611686018427387905\n");
    ExpectCleanFailure(run({"--dataset", dir / "g"}), "num-node-list.csv.gz:1: count");
  }
  SECTION("a label of 1e30") {
    WriteTinyOgb(dir / "g");
    test::WriteGz(dir / "g/raw/node-label.csv.gz", "0\n1e30\n0\n1\n");
    ExpectCleanFailure(run({"--dataset", dir / "g"}), "node-label.csv.gz:2: label 1e30");
  }
  SECTION("unwritable output") {
    WriteFileAtomic(dir / "afile", "x");
    auto r = RunProcess(
        {Bin("gnn-partition"), "--dataset", "synthetic:tiny", "--output", dir / "afile/out"});
    ExpectCleanFailure(r, "cannot create its folder " + (dir / "afile") + ": Not a directory");
    CHECK(r.exit_code == kExitData);
  }
  CHECK_FALSE(PathExists(out));
  // No temporary folders left beside the output either.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);
  }
}

TEST_CASE("gnn-partition keeps METIS within --max_memory_gb, or says why it cannot", "[e2e]") {
  test::TempDir dir;
  // METIS would take about 320 MiB for this graph's 8M adjacency entries.
  const std::vector<std::string> base = {
      Bin("gnn-partition"), "--dataset", "synthetic:nodes=200000,edges=4000000,feat=2,classes=4",
      "--num_parts",        "2",         "--no_cache"};
  auto with = [&](std::vector<std::string> extra, const std::string& out) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--output", dir / out});
    return RunProcess(args);
  };
  auto thin = with({"--max_memory_gb", "0.4"}, "thin");
  INFO(thin.err);
  REQUIRE(thin.exit_code == 0);
  CHECK(thin.err.find("METIS partitions a sparsified view of the graph instead") !=
        std::string::npos);
  const PartitionConfig c = LoadPartitionConfig(dir / "thin/synthetic-n200000-e4000000.json");
  CHECK(c.report.at("sparsify").get<int64_t>() > 0);
  for (int p = 0; p < 2; ++p) CHECK_NOTHROW(VerifyPartFiles(c, p));
  // A --sparsify of the user's is kept (it fits: no warning).
  auto kept = with({"--max_memory_gb", "0.4", "--sparsify", "4"}, "kept");
  INFO(kept.err);
  REQUIRE(kept.exit_code == 0);
  CHECK(kept.err.find("it may run out of memory") == std::string::npos);
  CHECK(LoadPartitionConfig(dir / "kept/synthetic-n200000-e4000000.json")
            .report.at("sparsify")
            .get<int64_t>() == 4);
  // Too little for any sparsified view: one line, nothing written.
  ExpectCleanFailure(with({"--max_memory_gb", "0.05"}, "none"), "even --sparsify 1");
  CHECK_FALSE(PathExists(dir / "none"));
}

// The cache is disposable: a poisoned one (here consistent with itself, for
// a 4-node graph whose feat.npy claims 4 x 2^62 floats in 128 bytes, which
// an unchecked product wrapped to 0) is refused naming the file, and the
// partitions come from the raw files.
TEST_CASE("gnn-partition refuses a poisoned .npy cache and uses the raw files", "[e2e]") {
  test::TempDir dir;
  const std::string g = dir / "g";
  WriteTinyOgb(g);
  test::WriteGz(g + "/raw/num-node-list.csv.gz", "5\n");
  test::WriteGz(g + "/raw/node-feat.csv.gz", "1,0\n0,1\n1,1\n0,0\n2,2\n");
  test::WriteGz(g + "/raw/node-label.csv.gz", "0\n1\n0\n1\n1\n");
  auto run = [&](const std::string& out) {
    return RunProcess({Bin("gnn-partition"), "--dataset", g, "--num_parts", "2", "--output", out});
  };
  REQUIRE(run(dir / "first").exit_code == 0);
  const std::string cache = g + "/processed";
  REQUIRE(PathExists(cache + "/meta.json"));

  nlohmann::json meta = nlohmann::json::parse(ReadFile(cache + "/meta.json"));
  meta["num_nodes"] = 4;
  meta["feature_dim"] = int64_t{1} << 62;
  WriteFileAtomic(cache + "/meta.json", meta.dump());
  WriteNpy(cache + "/label.npy", std::vector<int64_t>{0, 1, 0, 1});
  std::string feat("\x93NUMPY\x01\x00\x76\x00", 10);
  feat += "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 4611686018427387904), }";
  feat.resize(127, ' ');
  feat += '\n';
  REQUIRE(feat.size() == 128);
  std::ofstream(cache + "/feat.npy", std::ios::binary | std::ios::trunc) << feat;

  auto r = run(dir / "second");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("ignoring the cache") != std::string::npos);
  CHECK(r.err.find(cache + "/feat.npy: shape (4, 4611686018427387904) has more than 2^63") !=
        std::string::npos);
  PartitionConfig c = LoadPartitionConfig(dir / "second/g.json");
  CHECK(c.num_nodes == 5);
  CHECK(c.feature_dim == 2);
}

TEST_CASE(
    "gnn-partition partitions synthetic:mag-small in DGL's heterogeneous format, numpy "
    "checks every array",
    "[e2e][python]") {
  test::TempDir dir;
  // The dataset as OGB files too, so numpy can compare against the input.
  auto w = RunProcess({Bin("gnn-dataset"), "--dataset", "synthetic:mag-small", "--undirected",
                       "--write_ogb", dir / "mag", "--quiet"});
  INFO(w.err);
  REQUIRE(w.exit_code == 0);
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", dir / "mag", "--num_parts", "3",
                       "--balance_train", "--balance_edges", "--output", dir / "out", "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string config = dir / "out/mag.json";
  const PartitionConfig c = LoadPartitionConfig(config);
  REQUIRE(c.hetero());
  CHECK(c.ntypes == std::vector<std::string>{"author", "field_of_study", "institution", "paper"});
  CHECK(c.etypes.size() == 8);
  CHECK(c.target_ntype == "paper");
  for (int p = 0; p < 3; ++p) CHECK_NOTHROW(VerifyPartFiles(c, p));
  // Per node type, METIS kept the parts within 10% of each other.
  for (const auto& [key, value] : c.report.at("imbalance").items()) {
    INFO(key);
    CHECK(value.get<double>() < 1.1);
  }
  // Servers and trainers say what they cannot do yet.
  CHECK_THROWS_WITH(c.RequireHomogeneous("gnn-server"), Catch::Contains("heterogeneous"));
  {
    // --sparsify: METIS sees fewer edges, the files are as valid.
    auto thin = RunProcess({Bin("gnn-partition"), "--dataset", dir / "mag", "--num_parts", "3",
                            "--balance_train", "--sparsify", "4", "--output", dir / "thin"});
    INFO(thin.err);
    REQUIRE(thin.exit_code == 0);
    CHECK(thin.err.find("METIS partitions ") != std::string::npos);
    CHECK(thin.err.find("(--sparsify 4)") != std::string::npos);
    const PartitionConfig t = LoadPartitionConfig(dir / "thin/mag.json");
    for (int p = 0; p < 3; ++p) CHECK_NOTHROW(VerifyPartFiles(t, p));
    CHECK(t.report.at("sparsify").get<int64_t>() == 4);
    CHECK(t.report.at("undirected_edges") == c.report.at("undirected_edges"));
  }

  if (RunProcess({"/usr/bin/python3", "-c", "import numpy"}).exit_code != 0) {
    GNN_SKIP("python3-numpy not installed: arrays not checked");
  }
  const char* script = R"(import gzip, json, sys
import numpy as np
root, out = sys.argv[1], sys.argv[2]
c = json.load(open(out + "/mag.json"))
ntypes = sorted(c["ntypes"], key=c["ntypes"].get)
etypes = sorted(c["etypes"], key=c["etypes"].get)
counts = dict(zip(*[l.split(",") for l in gzip.open(root + "/raw/num-node-dict.csv.gz", "rt").read().split()]))
labels = np.loadtxt(gzip.open(root + "/raw/node-label/paper/node-label.csv.gz"), dtype=np.int64)
train = np.loadtxt(gzip.open(root + "/split/random/paper/train.csv.gz"), dtype=np.int64)
feat = np.loadtxt(gzip.open(root + "/raw/node-feat/paper/node-feat.csv.gz"), delimiter=",", dtype=np.float32)
seen = {t: [] for t in ntypes}
edges = {e: 0 for e in etypes}
trained = []
for p in range(c["num_parts"]):
    d = out + "/" + c["part-%d" % p]["part_dir"]
    indptr, indices, etype = (np.load(d + f) for f in ("/indptr.npy", "/indices.npy", "/etype.npy"))
    orig = np.load(d + "/orig_nids.npy")
    start = c["node_map"][ntypes[0]][p][0]
    assert indptr[0] == 0 and indptr[-1] == len(indices) == len(etype)
    assert (indices >= 0).all() and (indices < c["num_nodes"]).all()
    # Each node's in-edges are sorted by relation (typed sampling reads runs).
    row_of = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    assert (np.diff(etype)[np.diff(row_of) == 0] >= 0).all()
    for e, name in enumerate(etypes):
        s, t = c["edge_map"][name][p]
        assert (etype == e).sum() == t - s, (name, p)
        edges[name] += t - s
    for t in ntypes:
        s, e = c["node_map"][t][p]
        seen[t].extend(orig[s - start:e - start])
    s, e = c["node_map"]["paper"][p]
    ids = orig[s - start:e - start]
    assert (np.load(d + "/paper-label.npy") == labels[ids]).all()
    assert np.array_equal(np.load(d + "/paper-feat.npy"), feat[ids])
    trained.extend(ids[np.load(d + "/paper-train_mask.npy") == 1])
for t in ntypes:
    assert sorted(seen[t]) == list(range(int(counts[t]))), t
assert sorted(trained) == sorted(train)
for name, n in edges.items():
    src, rel, dst = name.split(":")
    m = int(gzip.open(root + "/raw/relations/%s___%s___%s/num-edge-list.csv.gz" % (src, rel, dst), "rt").read())
    assert n == m, (name, n, m)
print("ok")
)";
  auto py = RunProcess({"/usr/bin/python3", "-c", script, dir / "mag", dir / "out"}, 300);
  INFO(py.err);
  CHECK(py.exit_code == 0);
  CHECK(py.out == "ok\n");
}

TEST_CASE(
    "gnn-partition --part_method stream, and the fallback when METIS's 32-bit index is too small",
    "[e2e]") {
  test::TempDir dir;
  auto run = [&](const std::vector<std::string>& env, const std::string& method,
                 const std::string& out) {
    std::vector<std::string> argv = {"/usr/bin/env"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(),
                {Bin("gnn-partition"), "--dataset", "synthetic:small", "--num_parts", "4",
                 "--balance_train", "--part_method", method, "--output", dir / out});
    return RunProcess(argv, 300);
  };
  auto cut = [&](const std::string& out) {
    const PartitionConfig c = LoadPartitionConfig(dir / (out + "/synthetic-small.json"));
    for (int p = 0; p < 4; ++p) CHECK_NOTHROW(VerifyPartFiles(c, p));
    return c;
  };
  REQUIRE(run({}, "stream", "stream").exit_code == 0);
  REQUIRE(run({}, "random", "random").exit_code == 0);
  const PartitionConfig s = cut("stream"), r = cut("random");
  CHECK(s.part_method == "stream");
  // A one-pass greedy: far better than random, balanced within its slack.
  CHECK(s.report.at("edge_cut_fraction").get<double>() <
        0.85 * r.report.at("edge_cut_fraction").get<double>());
  CHECK(s.report.at("imbalance").at("nodes").get<double>() <= 1.06);
  CHECK(s.report.at("imbalance").at("train_nodes").get<double>() <= 1.06);
  // METIS asked for, but the adjacency exceeds its index (lowered here):
  // one warning, the streaming assignment, the same partitions as asking for it.
  const auto fb = run({"GNN_METIS_MAX_ADJACENCY=1000"}, "metis", "fallback");
  INFO(fb.err);
  REQUIRE(fb.exit_code == 0);
  CHECK(fb.err.find("exceed METIS's 32-bit index (at most 1000 entries): using the streaming "
                    "assignment") != std::string::npos);
  const PartitionConfig f = cut("fallback");
  CHECK(f.part_method == "stream");
  for (int p = 0; p < 4; ++p) {
    for (const auto& [name, file] : s.parts[p].files)
      CHECK(f.parts[p].files.at(name).sha256 == file.sha256);
  }
}

namespace {

// A 4-node OGB folder whose edges all run from the lower to the higher id,
// as OGB and Planetoid store an undirected graph (each pair once).
void WriteOneWayOgb(const std::string& root) {
  WriteTinyOgb(root);
  test::WriteGz(root + "/raw/edge.csv.gz", "0,1\n1,2\n2,3\n0,3\n");
}

// The stored in-edges of a 1-partition output and gnn-partition's stderr.
std::pair<int64_t, std::string> Stored(const test::TempDir& dir, const std::string& dataset,
                                       std::vector<std::string> flags) {
  std::vector<std::string> argv = {
      Bin("gnn-partition"), "--dataset", dataset,      "--num_parts", "1", "--split", "s",
      "--output",           dir / "out", "--overwrite"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  auto r = RunProcess(argv);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return {LoadPartitionConfig(dir / "out" + "/" +
                              std::filesystem::path(dataset).filename().string() + ".json")
              .num_edges,
          r.err};
}

}  // namespace

TEST_CASE("gnn-partition says whether it treats a graph as directed, and why", "[e2e]") {
  test::TempDir dir;
  // An unknown graph stored one way: directed (as listed), with the hint.
  WriteOneWayOgb(dir / "mygraph");
  auto [edges, err] = Stored(dir, dir / "mygraph", {});
  CHECK(edges == 4);
  CHECK(err.find("treating mygraph as directed (not known to be undirected") != std::string::npos);
  CHECK(err.find("every edge runs from the lower to the higher id") != std::string::npos);
  CHECK(err.find("pass --undirected") != std::string::npos);
  std::tie(edges, err) = Stored(dir, dir / "mygraph", {"--undirected"});
  CHECK(edges == 8);
  CHECK(err.find("treating mygraph as undirected (--undirected)") != std::string::npos);
  // A known name: undirected unless --directed says otherwise.
  WriteOneWayOgb(dir / "cora");
  std::tie(edges, err) = Stored(dir, dir / "cora", {});
  CHECK(edges == 8);
  CHECK(err.find("treating cora as undirected (cora is a known undirected dataset") !=
        std::string::npos);
  std::tie(edges, err) = Stored(dir, dir / "cora", {"--directed"});
  CHECK(edges == 4);
  CHECK(err.find("treating cora as directed (--directed, although cora is a known") !=
        std::string::npos);
  CHECK(err.find("pass --undirected") == std::string::npos);  // the flag decided
  // Both flags: one line, nothing written.
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", dir / "cora", "--num_parts", "1",
                       "--undirected", "--directed", "--output", dir / "both"});
  ExpectCleanFailure(r, "--undirected and --directed contradict");
  CHECK(r.exit_code == 2);
  CHECK_FALSE(PathExists(dir / "both"));
}

TEST_CASE("Cora in a folder of another name gets the --undirected hint", "[e2e]") {
  const std::string cora = test::SharedDataset("cora");
  if (cora.empty()) GNN_SKIP("../shared/datasets/cora is absent");
  test::TempDir dir;
  // The real files under another name (links; the parse cache lands here).
  MakeDirs(dir / "planetoid-c");
  std::filesystem::create_directory_symlink(cora + "/raw", dir / "planetoid-c/raw");
  std::filesystem::create_directory_symlink(cora + "/split", dir / "planetoid-c/split");
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", dir / "planetoid-c", "--num_parts", "1",
                       "--output", dir / "out"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("treating planetoid-c as directed") != std::string::npos);
  CHECK(r.err.find("pass --undirected") != std::string::npos);
  CHECK(r.out.find("5278 listed edges treated as directed") != std::string::npos);
  r = RunProcess({Bin("gnn-partition"), "--dataset", dir / "planetoid-c", "--num_parts", "1",
                  "--output", dir / "out", "--overwrite", "--undirected"});
  REQUIRE(r.exit_code == 0);
  CHECK(LoadPartitionConfig(dir / "out/planetoid-c.json").num_edges == 10556);
  CHECK(r.out.find("5278 listed edges treated as undirected") != std::string::npos);
}

TEST_CASE("gnn-partition --overwrite replaces only its own output, checked first", "[e2e]") {
  test::TempDir dir;
  const std::vector<std::string> base = {Bin("gnn-partition"), "--dataset", "synthetic:tiny",
                                         "--num_parts", "2"};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunProcess(argv);
  };
  REQUIRE(run({"--output", dir / "data"}).exit_code == 0);
  REQUIRE(run({"--output", dir / "data", "--overwrite"}).exit_code == 0);  // its own: replaced
  WriteFileAtomic(dir / "data/notes.md", "mine");
  WriteFileAtomic(dir / "data/part1/extra.npy", "mine too");
  const std::string before = test::TreeState(dir.path());
  auto r = run({"--output", dir / "data", "--overwrite"});
  ExpectCleanFailure(r, "did not write: notes.md, part1/extra.npy");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("metis") == std::string::npos);  // refused before the work
  CHECK(test::TreeState(dir.path()) == before);     // nothing deleted, no temp folder left
  // The working folder (or one above it) cannot be renamed away.
  r = RunProcess({"/bin/sh", "-c",
                  "cd '" + (dir / "data/part0") + "' && exec '" + Bin("gnn-partition") +
                      "' --dataset synthetic:tiny --num_parts 2 --output .. --overwrite"});
  ExpectCleanFailure(r, "is the current folder or holds it");
  CHECK(test::TreeState(dir.path()) == before);
}

TEST_CASE("every binary says its version and build, and cmake --install puts them in PREFIX/bin",
          "[e2e]") {
  std::vector<std::string> binaries = {"gnn-partition", "gnn-dataset", "gnn-server",
                                       "gnn-sampler",   "gnn-launch",  "gnn-copy"};
  if (PathExists(Bin("gnn-train"))) binaries.push_back("gnn-train");
  for (const std::string& b : binaries) {
    auto r = RunProcess({Bin(b), "--version"});
    INFO(b << ": " << r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind(b + " (gnn ", 0) == 0);
    CHECK(r.out.find(", commit ") != std::string::npos);
    CHECK(r.out.find(" build; METIS") != std::string::npos);
    CHECK(r.out.find("CUDA") != std::string::npos);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  }
  test::TempDir dir;
  const std::string build = std::filesystem::path(Bin("gnn-partition")).parent_path().parent_path();
  auto r = RunProcess({GNN_CMAKE_COMMAND, "--install", build, "--prefix", dir / "prefix"}, 120);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  for (const std::string& b : binaries) {
    CHECK(RunProcess({dir / ("prefix/bin/" + b), "--version"}).exit_code == 0);
  }
}

TEST_CASE("gnn-partition takes DGL's --dataset_dir for --root", "[e2e]") {
  test::TempDir dir;
  WriteTinyOgb(dir / "datasets/ogbn_tiny");
  auto r =
      RunProcess({Bin("gnn-partition"), "--dataset", "ogbn-tiny", "--dataset_dir", dir / "datasets",
                  "--split", "s", "--num_parts", "1", "--output", dir / "out"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(PathExists(dir / "out/ogbn-tiny.json"));
}

TEST_CASE(
    "edge data is never dropped silently: refused naming it, or dropped by --ignore_edge_data",
    "[e2e]") {
  test::TempDir dir;
  auto partition = [&](const std::string& dataset, const std::string& out, bool ignore) {
    std::vector<std::string> args = {
        Bin("gnn-partition"), "--dataset", dataset, "--num_parts", "1", "--output", out, "--quiet"};
    if (ignore) args.push_back("--ignore_edge_data");
    return RunProcess(args, 120);
  };
  SECTION("OGB edge files beside edge-feat.csv.gz, before and after a cache exists") {
    WriteTinyOgb(dir / "g");
    REQUIRE(partition(dir / "g", dir / "first", false).exit_code == 0);  // writes the cache
    test::WriteGz(dir / "g/raw/edge-feat.csv.gz", "0.5\n0.1\n0.2\n0.3\n");
    test::WriteGz(dir / "g/raw/edge_weight.csv.gz", "1\n1\n1\n1\n");
    test::WriteGz(dir / "g/raw/edge-label.csv.gz", "1\n0\n1\n0\n");
    // edge-feat.csv.gz and edge-label.csv.gz are carried (edge_data_test.cc,
    // edge_tasks_test.cc); the others are not.
    const auto r = partition(dir / "g", dir / "out", false);
    ExpectCleanFailure(r, "has edge data (" + (dir / "g/raw/edge_weight.csv.gz") + "),");
    CHECK(r.err.find("--ignore_edge_data") != std::string::npos);
    CHECK(!std::filesystem::exists(dir / "out"));
    const auto ok = partition(dir / "g", dir / "out", true);
    INFO(ok.err);
    REQUIRE(ok.exit_code == 0);
    CHECK(ok.err.find("dropping the edge data") != std::string::npos);
    CHECK(ok.err.find("edge_weight.csv.gz") != std::string::npos);
    CHECK(ok.err.find("edge-feat.csv.gz") != std::string::npos);   // dropped too
    CHECK(ok.err.find("edge-label.csv.gz") != std::string::npos);  // and the labels
    CHECK(std::filesystem::exists(dir / "out/g.json"));
    CHECK(LoadPartitionConfig(dir / "out/g.json").edge_feature_dim == 0);
  }
  SECTION("a typed graph's per-relation edge file") {
    REQUIRE(RunProcess({Bin("gnn-dataset"), "--dataset", "synthetic:mag-small", "--write_ogb",
                        dir / "mag", "--quiet"},
                       120)
                .exit_code == 0);
    const std::string rel = dir / "mag/raw/relations/paper___cites___paper";
    REQUIRE(std::filesystem::exists(rel + "/edge_reltype.csv.gz"));  // structure, not data
    // Features are carried (typed_edge_data_test.cc); edge labels are not.
    test::WriteGz(rel + "/edge-label.csv.gz", "1\n");
    ExpectCleanFailure(partition(dir / "mag", dir / "out", false),
                       "has edge data (" + rel +
                           "/edge-label.csv.gz), which gnn does not carry for typed graphs yet");
    CHECK(!std::filesystem::exists(dir / "out"));
    // A relation's edge-feat.csv.gz of the wrong length: one line naming it.
    std::filesystem::remove(rel + "/edge-label.csv.gz");
    test::WriteGz(rel + "/edge-feat.csv.gz", "0.5\n");
    ExpectCleanFailure(partition(dir / "mag", dir / "out", false),
                       rel + "/edge-feat.csv.gz is too small");
    CHECK(!std::filesystem::exists(dir / "out"));
  }
  SECTION("chunked edge_data in metadata.json: an edge label") {
    REQUIRE(RunProcess({Bin("gnn-dataset"), "--dataset", "synthetic:tiny", "--write_chunked", "2",
                        "--output", dir / "c", "--quiet"},
                       60)
                .exit_code == 0);
    auto meta = nlohmann::json::parse(ReadFile(dir / "c/metadata.json"));
    meta["edge_data"]["_N:_E:_N"]["label"] = {{"format", {{"name", "numpy"}}},
                                              {"data", {"w0.npy", "w1.npy"}}};
    WriteFileAtomic(dir / "c/metadata.json", meta.dump());
    ExpectCleanFailure(partition(dir / "c", dir / "out", false),
                       "metadata.json: edge_data._N:_E:_N.label needs train_mask beside it");
    CHECK(!std::filesystem::exists(dir / "out"));
    const auto ok = partition(dir / "c", dir / "out", true);
    INFO(ok.err);
    CHECK(ok.exit_code == 0);
    // gnn-dataset reads through the same check.
    const auto d = RunProcess({Bin("gnn-dataset"), "--dataset", dir / "c", "--quiet"}, 60);
    CHECK(d.exit_code > 0);
    CHECK(d.err.find("edge_data._N:_E:_N.label") != std::string::npos);
  }
}
