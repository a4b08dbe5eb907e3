// Edge features carried by gnn-partition (#52 item 2, the partition half):
// every partitioning stores each in-edge's input edge id and features, the
// same for 1, 2 and 4 parts and for every way the input gives them (OGB
// edge-feat.csv.gz, synthetic efeat=, CSV columns, --edge_feat, chunked
// edge_data); a graph with edge features only gets node features from its
// edges' means; bad edge data is one error line with nothing written.
#include <array>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/fs.h"
#include "common/npy.h"
#include "graph/synthetic.h"
#include "partition/config.h"
#include "process_util.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::Bin;
using test::RunProcess;

namespace {

// The input a partitioning came from: edge i is (src[i], dst[i]) with
// features feat[i * width ...].
struct Input {
  std::vector<int64_t> src, dst;
  std::vector<float> feat;
  int64_t width = 0;
};

// Every stored in-edge of every partition of `config_path`, checked against
// the input: its ends are the input edge's (either way when undirected),
// its features are that edge's, and each input edge is stored once (twice,
// once per direction, for an undirected graph's non-loop edges).
void CheckStoredEdges(const std::string& config_path, const Input& in, bool undirected) {
  const PartitionConfig c = LoadPartitionConfig(config_path);
  REQUIRE(c.edge_feature_dim == in.width);
  // New id -> input id, over all partitions.
  std::vector<int64_t> orig(static_cast<size_t>(c.num_nodes), -1);
  for (int p = 0; p < c.num_parts; ++p) {
    const std::vector<int64_t> o = ReadNpy<int64_t>(c.FilePath(p, "orig_nids.npy"));
    REQUIRE(static_cast<int64_t>(o.size()) == c.parts[p].num_nodes());
    for (size_t i = 0; i < o.size(); ++i) orig[c.parts[p].node_start + i] = o[i];
  }
  std::vector<int> seen(in.src.size(), 0);
  int64_t stored = 0;
  for (int p = 0; p < c.num_parts; ++p) {
    const std::vector<int64_t> indptr = ReadNpy<int64_t>(c.FilePath(p, "indptr.npy"));
    const std::vector<int64_t> indices = ReadNpy<int64_t>(c.FilePath(p, "indices.npy"));
    const std::vector<int64_t> eids = ReadNpy<int64_t>(c.FilePath(p, kOrigEidsFile));
    std::vector<int64_t> shape;
    const std::vector<float> feat = ReadNpy<float>(c.FilePath(p, kEdgeFeatFile), {}, &shape);
    REQUIRE(eids.size() == indices.size());
    REQUIRE(shape == std::vector<int64_t>{static_cast<int64_t>(indices.size()), in.width});
    stored += static_cast<int64_t>(indices.size());
    for (size_t row = 0; row + 1 < indptr.size(); ++row) {
      const int64_t to = orig[c.parts[p].node_start + row];
      for (int64_t k = indptr[row]; k < indptr[row + 1]; ++k) {
        const int64_t e = eids[k], from = orig[indices[k]];
        REQUIRE((e >= 0 && e < static_cast<int64_t>(in.src.size())));
        const bool forward = in.src[e] == from && in.dst[e] == to;
        const bool backward = undirected && in.src[e] == to && in.dst[e] == from;
        INFO("part " << p << " row " << row << " edge " << e);
        REQUIRE((forward || backward));
        ++seen[e];
        for (int64_t j = 0; j < in.width; ++j)
          REQUIRE(feat[k * in.width + j] == in.feat[e * in.width + j]);
      }
    }
  }
  for (size_t e = 0; e < in.src.size(); ++e) {
    INFO("input edge " << e);
    CHECK(seen[e] == (undirected && in.src[e] != in.dst[e] ? 2 : 1));
  }
  CHECK(stored == c.num_edges);
}

std::string Sha(const std::string& config_path, int part, const std::string& file) {
  const PartitionConfig c = LoadPartitionConfig(config_path);
  return c.parts.at(part).files.at(file).sha256;
}

// gnn-partition's one error line naming `needle`.
void ExpectOneLine(const test::ProcessResult& r, const std::string& needle) {
  test::ExpectOneLine(r, "gnn-partition", needle);
}

test::ProcessResult Partition(std::vector<std::string> args) {
  std::vector<std::string> argv = {Bin("gnn-partition"), "--quiet"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, 180);
}

}  // namespace

TEST_CASE(
    "edge features reach every partitioning: each stored in-edge has its input edge's id "
    "and features, for 1, 2 and 4 parts",
    "[e2e]") {
  test::TempDir dir;
  const std::string spec = "nodes=400,edges=2400,feat=4,classes=3,efeat=3";
  const Dataset d = GenerateSynthetic(ParseSyntheticSpec(spec), 0, 1);
  REQUIRE(d.edge_feature_dim == 3);
  const Input in{d.src, d.dst, d.edge_features, 3};
  // The first feature carries the class signal: higher when the ends agree.
  double same = 0, other = 0;
  int64_t n_same = 0;
  for (int64_t e = 0; e < d.num_edges(); ++e) {
    const bool s = d.labels[d.src[e]] == d.labels[d.dst[e]];
    (s ? same : other) += d.edge_features[e * 3];
    n_same += s;
  }
  CHECK(same / n_same > 0.5);
  CHECK(other / (d.num_edges() - n_same) < 0.5);

  for (const std::string parts : {"1", "2", "4"}) {
    const std::string out = dir / ("syn" + parts);
    auto r = Partition({"--dataset", "synthetic:" + spec, "--num_parts", parts, "--output", out});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CheckStoredEdges(out + "/synthetic-n400-e2400.json", in, /*undirected=*/true);
  }

  // The same graph through OGB's layout (edge-feat.csv.gz), parsed and then
  // from the cache: the same partition files, byte for byte.
  auto w = RunProcess(
      {Bin("gnn-dataset"), "--quiet", "--dataset", "synthetic:" + spec, "--write_ogb", dir / "ogb"},
      120);
  INFO(w.err);
  REQUIRE(w.exit_code == 0);
  REQUIRE(std::filesystem::exists(dir / "ogb/raw/edge-feat.csv.gz"));
  for (const char* run : {"parsed", "cached"}) {
    const std::string out = dir / (std::string("ogb-") + run);
    auto r = Partition({"--dataset", dir / "ogb", "--undirected", "--num_parts", "2", "--output",
                        out, "--graph_name", "synthetic-n400-e2400"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    for (const char* f : {kEdgeFeatFile, kOrigEidsFile, "indices.npy", "feat.npy"}) {
      for (int p = 0; p < 2; ++p) {
        CHECK(Sha(out + "/synthetic-n400-e2400.json", p, f) ==
              Sha(dir / "syn2/synthetic-n400-e2400.json", p, f));
      }
    }
  }
  CHECK(std::filesystem::exists(dir / "ogb/processed/edge_feat.npy"));

  // And through DGL's chunked format (edge_data), written by gnn-dataset.
  w = RunProcess({Bin("gnn-dataset"), "--quiet", "--dataset", "synthetic:" + spec,
                  "--write_chunked", "3", "--output", dir / "chunks"},
                 120);
  INFO(w.err);
  REQUIRE(w.exit_code == 0);
  auto r = Partition({"--dataset", dir / "chunks", "--num_parts", "4", "--output", dir / "ch"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CheckStoredEdges(dir / "ch/synthetic-n400-e2400.json", in, /*undirected=*/true);
}

TEST_CASE(
    "edge features from CSV columns or --edge_feat: repeated edges stay separate, a "
    "directed graph stores each edge once, held-out edges leave with their features",
    "[e2e]") {
  test::TempDir dir;
  Input in;
  in.width = 2;
  std::ofstream csv(dir / "edges.csv");
  csv << "src,dst,w,t\n";
  const int n = 30;
  for (int v = 0; v < n; ++v) {
    for (int k : {1, 4, 4, 0}) {  // (v, v+4) twice, and a self-loop
      const int u = (v + k) % n;
      const float a = static_cast<float>(in.src.size()) * 0.25f, b = -1.5f + v;
      csv << v << "," << u << "," << a << "," << b << "\n";
      in.src.push_back(v);
      in.dst.push_back(u);
      in.feat.insert(in.feat.end(), {a, b});
    }
  }
  csv.close();
  std::vector<float> feat;
  std::vector<int64_t> labels, train;
  for (int v = 0; v < n; ++v) {
    feat.insert(feat.end(), {1.0f * v, 2.0f});
    labels.push_back(v % 2);
    if (v % 2 == 0) train.push_back(v);
  }
  WriteNpy(dir / "feat.npy", feat.data(), {n, 2});
  WriteNpy(dir / "labels.npy", labels);
  WriteNpy(dir / "train.npy", train);
  WriteNpy(dir / "efeat.npy", in.feat.data(), {static_cast<int64_t>(in.src.size()), 2});
  const std::vector<std::string> files = {
      "--node_feat", dir / "feat.npy",  "--labels",     dir / "labels.npy",
      "--train_ids", dir / "train.npy", "--graph_name", "g"};
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.end(), files.begin(), files.end());
    return Partition(args);
  };
  for (const char* parts : {"1", "2"}) {
    const std::string out = dir / (std::string("directed") + parts);
    auto r = run({"--edges", dir / "edges.csv", "--num_parts", parts, "--output", out});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CheckStoredEdges(out + "/g.json", in, /*undirected=*/false);
    CHECK(LoadPartitionConfig(out + "/g.json").num_edges == 4 * n);  // repeats and loops kept
  }
  auto r = run({"--edges", dir / "edges.csv", "--undirected", "--num_parts", "2", "--output",
                dir / "undirected"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CheckStoredEdges(dir / "undirected/g.json", in, /*undirected=*/true);

  // The two ends alone as .npy, the features as --edge_feat: the same files.
  std::vector<int64_t> pairs;
  for (size_t e = 0; e < in.src.size(); ++e) pairs.insert(pairs.end(), {in.src[e], in.dst[e]});
  WriteNpy(dir / "edges.npy", pairs.data(), {static_cast<int64_t>(in.src.size()), 2});
  r = run({"--edges", dir / "edges.npy", "--edge_feat", dir / "efeat.npy", "--undirected",
           "--num_parts", "2", "--output", dir / "npy"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (int p = 0; p < 2; ++p) {
    for (const char* f : {kEdgeFeatFile, kOrigEidsFile, "indices.npy"})
      CHECK(Sha(dir / "npy/g.json", p, f) == Sha(dir / "undirected/g.json", p, f));
  }

  // Held-out edges (--val_edges) leave the stored graph with their ids.
  r = run({"--edges", dir / "edges.csv", "--undirected", "--num_parts", "2", "--val_edges", "0.3",
           "--output", dir / "held"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const PartitionConfig held = LoadPartitionConfig(dir / "held/g.json");
  REQUIRE(held.num_val_edges > 0);
  int64_t kept = 0;
  for (int p = 0; p < 2; ++p) {
    const std::vector<int64_t> eids = ReadNpy<int64_t>(held.FilePath(p, kOrigEidsFile));
    kept += static_cast<int64_t>(eids.size());
    CHECK(ReadNpy<float>(held.FilePath(p, kEdgeFeatFile)).size() == 2 * eids.size());
  }
  CHECK(kept == held.num_edges);
  CHECK(kept < LoadPartitionConfig(dir / "undirected/g.json").num_edges);

  // --ignore_edge_data drops the columns, in one warning line.
  r = run({"--edges", dir / "edges.csv", "--num_parts", "1", "--output", dir / "dropped",
           "--ignore_edge_data"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("dropping the edge data") != std::string::npos);
  CHECK(LoadPartitionConfig(dir / "dropped/g.json").edge_feature_dim == 0);
  CHECK_FALSE(std::filesystem::exists(dir / "dropped/part0/edge_feat.npy"));
}

TEST_CASE(
    "a graph with edge features only gets node features from its edges' means, and "
    "trains",
    "[e2e]") {
  test::TempDir dir;
  const std::string g = dir / "g";
  test::WriteGz(g + "/raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,0\n0,2\n");
  test::WriteGz(g + "/raw/num-node-list.csv.gz", "5\n");
  test::WriteGz(g + "/raw/num-edge-list.csv.gz", "5\n");
  test::WriteGz(g + "/raw/edge-feat.csv.gz", "1,0\n2,4\n3,8\n4,16\n5,32\n");
  test::WriteGz(g + "/raw/node-label.csv.gz", "0\n1\n0\n1\n0\n");
  test::WriteGz(g + "/split/s/train.csv.gz", "0\n1\n");
  test::WriteGz(g + "/split/s/valid.csv.gz", "2\n");
  test::WriteGz(g + "/split/s/test.csv.gz", "3\n4\n");
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", g, "--undirected", "--num_parts", "1",
                       "--output", dir / "out"},
                      60);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("the mean of each node's edges' 2 features") != std::string::npos);
  const PartitionConfig c = LoadPartitionConfig(dir / "out/g.json");
  CHECK(c.feature_dim == 2);
  CHECK(c.edge_feature_dim == 2);
  const std::vector<int64_t> orig = ReadNpy<int64_t>(c.FilePath(0, "orig_nids.npy"));
  const std::vector<float> feat = ReadNpy<float>(c.FilePath(0, "feat.npy"));
  // Node 0: edges 0 (0,1), 3 (3,0), 4 (0,2); node 4: none.
  const std::map<int64_t, std::pair<float, float>> want = {{0, {10.0f / 3, 48.0f / 3}},
                                                           {1, {1.5f, 2.0f}},
                                                           {2, {10.0f / 3, 44.0f / 3}},
                                                           {3, {3.5f, 12.0f}},
                                                           {4, {0.0f, 0.0f}}};
  for (size_t i = 0; i < orig.size(); ++i) {
    INFO("node " << orig[i]);
    CHECK(feat[2 * i] == Approx(want.at(orig[i]).first));
    CHECK(feat[2 * i + 1] == Approx(want.at(orig[i]).second));
  }

  // Edges held out by --val_edges do not reach the means: each node's
  // features are the mean over the edges left in the graph.
  r = RunProcess({Bin("gnn-partition"), "--dataset", g, "--undirected", "--num_parts", "1",
                  "--val_edges", "0.5", "--output", dir / "held"},
                 60);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const PartitionConfig h = LoadPartitionConfig(dir / "held/g.json");
  REQUIRE(h.num_val_edges > 0);
  const std::vector<int64_t> horig = ReadNpy<int64_t>(h.FilePath(0, "orig_nids.npy"));
  const std::vector<int64_t> held = ReadNpy<int64_t>(h.FilePath(0, "val_edges.npy"));
  const std::vector<float> hfeat = ReadNpy<float>(h.FilePath(0, "feat.npy"));
  const std::vector<std::array<int64_t, 2>> edges = {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 2}};
  const std::vector<std::array<float, 2>> efeat = {{1, 0}, {2, 4}, {3, 8}, {4, 16}, {5, 32}};
  auto is_held = [&](int64_t a, int64_t b) {
    for (size_t k = 0; k < held.size(); k += 2) {
      const int64_t x = horig[held[k]], y = horig[held[k + 1]];
      if ((x == a && y == b) || (x == b && y == a)) return true;
    }
    return false;
  };
  for (size_t i = 0; i < horig.size(); ++i) {
    const int64_t v = horig[i];
    float sum[2] = {0, 0};
    int count = 0;
    for (size_t e = 0; e < edges.size(); ++e) {
      if ((edges[e][0] != v && edges[e][1] != v) || is_held(edges[e][0], edges[e][1])) continue;
      sum[0] += efeat[e][0];
      sum[1] += efeat[e][1];
      ++count;
    }
    INFO("node " << v);
    CHECK(hfeat[2 * i] == Approx(count ? sum[0] / count : 0.0f));
    CHECK(hfeat[2 * i + 1] == Approx(count ? sum[1] / count : 0.0f));
  }

  // --node_feat_from_edges none refuses such a graph; mean on a graph with
  // node features appends the columns.
  ExpectOneLine(Partition({"--dataset", g, "--num_parts", "1", "--output", dir / "none",
                           "--node_feat_from_edges", "none"}),
                "has no node features (edge features only)");
  CHECK_FALSE(std::filesystem::exists(dir / "none"));

  auto t = RunProcess(
      {Bin("gnn-train"), "--standalone", "--part_config", dir / "out/g.json", "--num_epochs", "2",
       "--batch_size", "2", "--fan_out", "2,2", "--num_hidden", "8"},
      120);
  INFO(t.err);
  CHECK(t.exit_code == 0);
  CHECK(t.err.find("2 features per edge, which --model graphsage does not read") !=
        std::string::npos);
  CHECK(t.err.find("--edge_feat_mp_op") != std::string::npos);
}

TEST_CASE(
    "bad edge data, and multi-column labels that do not fit the task, are one error line, "
    "with nothing written",
    "[e2e]") {
  test::TempDir dir;
  auto tiny = [&](const std::string& g, const std::string& edge_feat) {
    test::WriteGz(g + "/raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,0\n");
    test::WriteGz(g + "/raw/num-node-list.csv.gz", "4\n");
    test::WriteGz(g + "/raw/num-edge-list.csv.gz", "4\n");
    test::WriteGz(g + "/raw/node-feat.csv.gz", "1,0\n0,1\n1,1\n0,0\n");
    test::WriteGz(g + "/raw/node-label.csv.gz", "0\n1\n0\n1\n");
    test::WriteGz(g + "/split/s/train.csv.gz", "0\n1\n");
    test::WriteGz(g + "/split/s/valid.csv.gz", "2\n");
    test::WriteGz(g + "/split/s/test.csv.gz", "3\n");
    test::WriteGz(g + "/raw/edge-feat.csv.gz", edge_feat);
  };
  SECTION("OGB labels of several columns (ogbn-proteins' multi-label) as class ids") {
    // Multi-label, which --task node says they are not.
    tiny(dir / "g", "1\n2\n3\n4\n");
    test::WriteGz(dir / "g/raw/node-label.csv.gz", "0,1,1\n1,0,0\n0,0,1\n1,1,0\n");
    ExpectOneLine(Partition({"--dataset", dir / "g", "--num_parts", "1", "--output", dir / "o",
                             "--task", "node"}),
                  "--task node does not fit its multilabel labels");
  }
  SECTION("chunked labels of several columns that are not 0/1, as class ids") {
    auto w = RunProcess({Bin("gnn-dataset"), "--quiet", "--dataset",
                         "synthetic:nodes=100,edges=300,feat=2,classes=2", "--write_chunked", "2",
                         "--output", dir / "c"},
                        60);
    REQUIRE(w.exit_code == 0);
    for (int c = 0; c < 2; ++c) {
      std::vector<int64_t> two(100, 2);
      WriteNpy(dir / ("c/node_data/_N/label-" + std::to_string(c) + ".npy"), two.data(), {50, 2});
    }
    ExpectOneLine(Partition({"--dataset", dir / "c", "--num_parts", "1", "--output", dir / "o",
                             "--task", "multilabel"}),
                  "--task multilabel does not fit its regression labels");
  }
  SECTION("OGB edge-feat.csv.gz with a row missing") {
    tiny(dir / "g", "1\n2\n3\n");
    ExpectOneLine(Partition({"--dataset", dir / "g", "--num_parts", "1", "--output", dir / "o"}),
                  "edge-feat.csv.gz has 3 rows for 4 edges");
  }
  SECTION("OGB edge-feat.csv.gz with NaN") {
    tiny(dir / "g", "1\n2\nnan\n4\n");
    ExpectOneLine(Partition({"--dataset", dir / "g", "--num_parts", "1", "--output", dir / "o"}),
                  "edge 2 has a feature that is not a finite number");
    CHECK_FALSE(std::filesystem::exists(dir / "g/processed/meta.json"));  // not cached
  }
  SECTION("chunked edge_data: widths differ across chunks, or an edge label") {
    auto w = RunProcess({Bin("gnn-dataset"), "--quiet", "--dataset",
                         "synthetic:nodes=100,edges=300,feat=2,classes=2,efeat=2",
                         "--write_chunked", "2", "--output", dir / "c"},
                        60);
    REQUIRE(w.exit_code == 0);
    std::vector<float> one(150, 0.5f);
    WriteNpy(dir / "c/edge_data/_N:_E:_N/feat-1.npy", one.data(), {150, 1});
    ExpectOneLine(Partition({"--dataset", dir / "c", "--num_parts", "1", "--output", dir / "o"}),
                  "feat-1.npy: 1 columns, earlier chunks of feat have 2");
    std::vector<float> two(300, 0.5f);
    WriteNpy(dir / "c/edge_data/_N:_E:_N/feat-1.npy", two.data(), {150, 2});
    auto meta = json::parse(ReadFile(dir / "c/metadata.json"));
    meta["edge_data"]["_N:_E:_N"]["label"] = meta["edge_data"]["_N:_E:_N"]["feat"];
    WriteFileAtomic(dir / "c/metadata.json", meta.dump());
    ExpectOneLine(Partition({"--dataset", dir / "c", "--num_parts", "1", "--output", dir / "o"}),
                  "edge_data._N:_E:_N.label needs train_mask beside it");
    meta["edge_data"].erase("_N:_E:_N");
    meta["edge_data"]["_N:_X:_N"]["w"] = meta["node_data"]["_N"]["label"];
    WriteFileAtomic(dir / "c/metadata.json", meta.dump());
    ExpectOneLine(Partition({"--dataset", dir / "c", "--num_parts", "1", "--output", dir / "o"}),
                  "edge_data._N:_X:_N.w names a relation that is not one of edge_type");
    auto dropped = Partition({"--dataset", dir / "c", "--num_parts", "1", "--output",
                              dir / "dropped", "--ignore_edge_data"});
    INFO(dropped.err);
    CHECK(dropped.exit_code == 0);
    CHECK(dropped.err.find("edge_data._N:_X:_N.w") != std::string::npos);
    std::filesystem::remove_all(dir / "dropped");
  }
  SECTION("a CSV column that is not a number, or --edge_feat of another length") {
    std::ofstream(dir / "e.csv") << "src,dst,w\n0,1,0.5\n1,2,x\n2,3,1\n";
    std::vector<float> feat(8, 1.0f), efeat(3, 1.0f);
    WriteNpy(dir / "f.npy", feat.data(), {4, 2});
    WriteNpy(dir / "l.npy", std::vector<int64_t>{0, 1, 0, 1});
    WriteNpy(dir / "t.npy", std::vector<int64_t>{0, 1});
    WriteNpy(dir / "ef.npy", efeat.data(), {3, 1});
    const std::vector<std::string> rest = {
        "--node_feat",  dir / "f.npy", "--labels",    dir / "l.npy", "--train_ids", dir / "t.npy",
        "--graph_name", "g",           "--num_parts", "1",           "--output",    dir / "o"};
    std::vector<std::string> a = {"--edges", dir / "e.csv"};
    a.insert(a.end(), rest.begin(), rest.end());
    ExpectOneLine(Partition(a), "e.csv:3: 'x' in column 'w' is not a number");
    std::ofstream(dir / "e2.csv") << "0,1\n1,2\n2,3\n3,0\n";
    a = {"--edges", dir / "e2.csv", "--edge_feat", dir / "ef.npy"};
    a.insert(a.end(), rest.begin(), rest.end());
    ExpectOneLine(Partition(a), "--edge_feat " + (dir / "ef.npy") + ": 3 rows");
  }
  CHECK_FALSE(std::filesystem::exists(dir / "o"));
}
