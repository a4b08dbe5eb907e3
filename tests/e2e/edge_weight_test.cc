// Edge weights end to end (#52 items 2-3) as processes: a graph whose edges
// carry one number is partitioned with it; gnn-train's gcn (DGL's
// EdgeWeightNorm('both') recipe) and graphsage (DGL's weighted mean) read
// it standalone, from the sampled edges' rows, and on 2 machines, where the
// servers send the rows with each sample and gnn-sampler carries them to
// the trainer; the saved model says so and --inference uses the weights;
// asking for weights a graph does not have is one line. Edge features in
// graphsage's and gat's messages (--edge_feat_mp_op) the same way.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "cluster_util.h"
#include "common/fs.h"
#include "common/npy.h"
#include "launch_util.h"
#include "partition/config.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::Bin;
using test::RunProcess;

namespace {

// The synthetic generator's edge data carries signal: an edge between two
// nodes of one class weighs more.
constexpr const char* kWeighted =
    "synthetic:nodes=2000,edges=16000,feat=8,classes=4,train=0.2,valid=0.1,efeat=1";
constexpr const char* kFeatured =
    "synthetic:nodes=2000,edges=16000,feat=8,classes=4,train=0.2,valid=0.1,efeat=4";

}  // namespace

TEST_CASE(
    "edge weights: gcn and graphsage weigh messages standalone, in inference and on 2 "
    "machines",
    "[e2e]") {
  test::Setup s("edgeweight");
  const std::string one = test::MakePartitions(s.dir, kWeighted, 1, "one");
  REQUIRE(LoadPartitionConfig(one).edge_feature_dim == 1);
  for (const std::string model : {"gcn", "graphsage"}) {
    INFO(model);
    const std::vector<std::string> base = {
        "--part_config", one,   "--model", model, "--num_epochs", "12", "--lr",      "0.01",
        "--batch_size",  "100", "--seed",  "3",   "--eval_every", "1",  "--fan_out", "5,10"};
    auto weighted = base;
    const std::string saved = s.dir / (model + ".pt");
    weighted.insert(weighted.end(), {"--save_model", saved});
    const json w = test::RunStandaloneTrainer(weighted);
    auto plain = base;
    plain.insert(plain.end(), {"--edge_weight", "none"});
    const json p = test::RunStandaloneTrainer(plain);
    // The weights are read: another model, and (they carry the class
    // signal) a better one.
    CHECK(w.at("param_checksum") != p.at("param_checksum"));
    CHECK(w.at("test_acc").get<double>() > p.at("test_acc").get<double>());
    CHECK(w.at("test_acc").get<double>() > 0.6);
    // The model file says it weighs messages; inference weighs them too
    // (every neighbour, layer by layer, as the trainer's evaluation).
    const std::string file = ReadFile(saved);
    CHECK(file.find("edge_weight") != std::string::npos);  // a key of the pickled metadata
    const json inferred =
        test::RunStandaloneTrainer({"--part_config", one, "--inference", "--restore_model_path",
                                    saved, "--save_prediction_path", s.dir / ("pred-" + model)});
    CHECK(inferred.at("test_acc").get<double>() ==
          Approx(w.at("test_acc").get<double>()).epsilon(1e-12));
  }

  // 2 machines: the servers send each sampled edge's weight, gnn-sampler
  // carries them to the trainer; as accurate as standalone within spread.
  s.config = test::MakePartitions(s.dir, kWeighted, 2, "two");
  s.graph_name = LoadPartitionConfig(s.config).graph_name;
  const json two = s.Launch(
      "--model gcn --num_epochs 12 --lr 0.01 --seed 3 --eval_every 1 --fan_out 5,10", "launch");
  CHECK(two.at("test_acc").get<double>() > 0.6);
  CHECK(ReadFile(s.dir / "launch.err").find("edge weights: gcn") != std::string::npos);

  // --edge_weight on where there is none, or for a model that takes none:
  // one line, before anything runs.
  const std::string plain = test::MakePartitions(s.dir, "synthetic:tiny", 1, "plain");
  test::ExpectOneLine(RunProcess({Bin("gnn-train"), "--standalone", "--part_config", plain,
                                  "--edge_weight", "on", "--num_epochs", "1"}),
                      "gnn-train", "has no edge data");
  test::ExpectOneLine(RunProcess({Bin("gnn-train"), "--standalone", "--part_config", one,
                                  "--edge_weight", "on", "--model", "gat", "--num_epochs", "1"}),
                      "gnn-train", "--model gat takes no edge weights");
}

TEST_CASE(
    "edge features: graphsage's and gat's messages take them by --edge_feat_mp_op, standalone, in "
    "inference and on 2 machines",
    "[e2e]") {
  test::Setup s("edgefeat");
  const std::string one = test::MakePartitions(s.dir, kFeatured, 1, "one");
  REQUIRE(LoadPartitionConfig(one).edge_feature_dim == 4);
  const std::vector<std::string> base = {
      "--part_config", one, "--num_epochs", "12", "--lr",      "0.01", "--batch_size", "100",
      "--seed",        "3", "--eval_every", "1",  "--fan_out", "5,10"};
  const json plain = test::RunStandaloneTrainer(base);
  double concat_acc = 0;
  for (const std::string op : {"concat", "mul"}) {
    INFO(op);
    auto args = base;
    const std::string saved = s.dir / (op + ".pt");
    args.insert(args.end(), {"--edge_feat_mp_op", op, "--save_model", saved});
    const json trained = test::RunStandaloneTrainer(args);
    CHECK(trained.at("param_checksum") != plain.at("param_checksum"));
    // Above chance (0.25); whether edge features help depends on the graph.
    CHECK(trained.at("test_acc").get<double>() > 0.45);
    if (op == "concat") concat_acc = trained.at("test_acc").get<double>();
    // The file holds the projection beside DGL's keys and says how it is
    // used; --inference reads the edges' features too.
    const std::string file = ReadFile(saved);
    CHECK(file.find("fc_edge") != std::string::npos);
    CHECK(file.find("edge_feat_mp_op") != std::string::npos);
    const json inferred =
        test::RunStandaloneTrainer({"--part_config", one, "--inference", "--restore_model_path",
                                    saved, "--save_prediction_path", s.dir / ("pred-" + op)});
    CHECK(inferred.at("test_acc").get<double>() ==
          Approx(trained.at("test_acc").get<double>()).epsilon(1e-12));
  }

  // gat: the edge's projected features combined with each message's
  // projected row, under the same attention.
  auto gat = base;
  const std::string gat_model = s.dir / "gat.pt";
  gat.insert(gat.end(), {"--model", "gat", "--edge_feat_mp_op", "mul", "--save_model", gat_model});
  const json gat_trained = test::RunStandaloneTrainer(gat);
  CHECK(gat_trained.at("test_acc").get<double>() > 0.45);
  CHECK(ReadFile(gat_model).find("fc_edge") != std::string::npos);
  const json gat_inferred =
      test::RunStandaloneTrainer({"--part_config", one, "--inference", "--restore_model_path",
                                  gat_model, "--save_prediction_path", s.dir / "pred-gat"});
  CHECK(gat_inferred.at("test_acc").get<double>() ==
        Approx(gat_trained.at("test_acc").get<double>()).epsilon(1e-12));

  s.config = test::MakePartitions(s.dir, kFeatured, 2, "two");
  s.graph_name = LoadPartitionConfig(s.config).graph_name;
  const json two = s.Launch(
      "--num_epochs 24 --lr 0.01 --seed 3 --eval_every 1 --fan_out 5,10 --edge_feat_mp_op concat",
      "launch");
  INFO("standalone concat " << concat_acc);
  CHECK(two.at("test_acc").get<double>() > concat_acc - 0.1);
  CHECK(ReadFile(s.dir / "launch.err").find("edge features: graphsage") != std::string::npos);
  // The gat model on 2 machines: the servers send each sampled edge's
  // features; the same predictions as on 1 partition (the exact wire).
  s.Launch("--inference --restore_model_path " + gat_model + " --save_prediction_path " +
               (s.dir / "pred-gat2") + " --wire_dtype float32",
           "launch-gat");
  const auto logits_of = [](const std::string& dir) {
    const json m = json::parse(ReadFile(dir + "/manifest.json"));
    std::map<int64_t, std::vector<float>> rows;
    for (const json& sh : m.at("shards")) {
      std::vector<int64_t> shape;
      const auto ids = ReadNpy<int64_t>(dir + "/" + sh.at("ids").get<std::string>());
      const auto logits =
          ReadNpy<float>(dir + "/" + sh.at("logits").get<std::string>(), {}, &shape);
      for (size_t i = 0; i < ids.size(); ++i) {
        rows[ids[i]].assign(logits.begin() + i * shape[1], logits.begin() + (i + 1) * shape[1]);
      }
    }
    return rows;
  };
  const auto gat1 = logits_of(s.dir / "pred-gat"), gat2 = logits_of(s.dir / "pred-gat2");
  REQUIRE(gat1.size() == 2000);
  REQUIRE(gat2.size() == 2000);
  double worst = 0;
  for (const auto& [id, row] : gat1) {
    for (size_t k = 0; k < row.size(); ++k)
      worst = std::max(worst, static_cast<double>(std::abs(row[k] - gat2.at(id)[k])));
  }
  CHECK(worst < 1e-5);

  // Bad combinations: one line each.
  const std::string tiny = test::MakePartitions(s.dir, "synthetic:tiny", 1, "plain");
  test::ExpectOneLine(RunProcess({Bin("gnn-train"), "--standalone", "--part_config", tiny,
                                  "--edge_feat_mp_op", "concat", "--num_epochs", "1"}),
                      "gnn-train", "has no edge features");
  test::ExpectOneLine(
      RunProcess({Bin("gnn-train"), "--standalone", "--part_config", one, "--edge_feat_mp_op",
                  "add", "--model", "gcn", "--num_epochs", "1"}),
      "gnn-train", "--model gcn does not read edge features");
  test::ExpectOneLine(
      RunProcess({Bin("gnn-train"), "--standalone", "--part_config", one, "--edge_feat_mp_op",
                  "concat", "--model", "gat", "--num_epochs", "1"}),
      "gnn-train", "concat is graphsage's");
}

TEST_CASE(
    "gnn-partition --edge_weight keeps one number per edge: a column, the mean, or a named "
    "chunked array",
    "[e2e]") {
  test::TempDir dir;
  const std::string spec = "synthetic:nodes=300,edges=1500,feat=4,classes=3,efeat=3";
  auto partition = [&](const std::string& dataset, const std::string& out,
                       std::vector<std::string> extra) {
    std::vector<std::string> argv = {Bin("gnn-partition"), "--quiet", "--dataset", dataset,
                                     "--num_parts",        "1",       "--output",  out};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunProcess(argv, 120);
  };
  REQUIRE(partition(spec, dir / "all", {}).exit_code == 0);
  const std::string name = "synthetic-n300-e1500";
  std::vector<int64_t> shape;
  const std::vector<float> all =
      ReadNpy<float>(dir / ("all/part0/" + std::string(kEdgeFeatFile)), {}, &shape);
  REQUIRE(shape.size() == 2);
  REQUIRE(shape[1] == 3);
  const int64_t edges = shape[0];
  for (const std::string pick : {"2", "mean"}) {
    INFO(pick);
    const auto r = partition(spec, dir / pick, {"--edge_weight", pick});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(LoadPartitionConfig(dir / (pick + "/" + name + ".json")).edge_feature_dim == 1);
    const std::vector<float> w =
        ReadNpy<float>(dir / (pick + "/part0/" + std::string(kEdgeFeatFile)), {edges, 1});
    for (int64_t e = 0; e < edges; ++e) {
      const float* row = all.data() + e * 3;
      const float want = pick == "2" ? row[2] : (row[0] + row[1] + row[2]) / 3.0f;
      REQUIRE(w[e] == Approx(want).margin(1e-6));
    }
  }
  test::ExpectOneLine(partition(spec, dir / "bad", {"--edge_weight", "3"}), "gnn-partition",
                      "--edge_weight 3: not a column of " + name + "'s 3 edge features");
  test::ExpectOneLine(partition("synthetic:tiny", dir / "bad", {"--edge_weight", "0"}),
                      "gnn-partition", "has no edge features");

  // A chunked dataset's edge_data arrays by name: "w" (one column) is the
  // weight; "feat" (two) is refused.
  const auto written = RunProcess({Bin("gnn-dataset"), "--quiet", "--dataset",
                                   "synthetic:nodes=100,edges=300,feat=2,classes=2,efeat=2",
                                   "--write_chunked", "2", "--output", dir / "c"},
                                  60);
  REQUIRE(written.exit_code == 0);
  std::vector<float> input_w(300);
  for (size_t i = 0; i < input_w.size(); ++i) input_w[i] = 0.25f + static_cast<float>(i) / 300.0f;
  WriteNpy(dir / "c/edge_data/_N:_E:_N/w-0.npy", input_w.data(), {150});
  WriteNpy(dir / "c/edge_data/_N:_E:_N/w-1.npy", input_w.data() + 150, {150});
  json meta = json::parse(ReadFile(dir / "c/metadata.json"));
  meta["edge_data"]["_N:_E:_N"]["w"] = {
      {"format", {{"name", "numpy"}}},
      {"data", {"edge_data/_N:_E:_N/w-0.npy", "edge_data/_N:_E:_N/w-1.npy"}}};
  WriteFileAtomic(dir / "c/metadata.json", meta.dump());
  const auto r = partition(dir / "c", dir / "cw", {"--edge_weight", "w"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const PartitionConfig c = LoadPartitionConfig(dir / "cw/synthetic-n100-e300.json");
  REQUIRE(c.edge_feature_dim == 1);
  const int64_t stored = c.parts[0].num_edges();
  const std::vector<float> w = ReadNpy<float>(c.FilePath(0, kEdgeFeatFile), {stored, 1});
  const std::vector<int64_t> eids = ReadNpy<int64_t>(c.FilePath(0, kOrigEidsFile), {stored});
  for (int64_t k = 0; k < stored; ++k) REQUIRE(w[k] == input_w[eids[k]]);
  test::ExpectOneLine(partition(dir / "c", dir / "bad", {"--edge_weight", "feat"}), "gnn-partition",
                      "edge_data feat has 2 columns");
}
