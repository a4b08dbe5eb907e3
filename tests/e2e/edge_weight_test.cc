// Edge weights end to end (#52 items 2-3) as processes: a graph whose edges
// carry one number is partitioned with it; gnn-train's gcn (DGL's
// EdgeWeightNorm('both') recipe) and graphsage (DGL's weighted mean) read
// it standalone, from the sampled edges' rows, and on 2 machines, where the
// servers send the rows with each sample and gnn-sampler carries them to
// the trainer; the saved model says so and --inference uses the weights;
// asking for weights a graph does not have is one line. Edge features in
// graphsage's messages (--edge_feat_mp_op) the same way.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cluster_util.h"
#include "common/fs.h"
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
    "edge features: graphsage's messages take them by --edge_feat_mp_op, standalone, in "
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

  s.config = test::MakePartitions(s.dir, kFeatured, 2, "two");
  s.graph_name = LoadPartitionConfig(s.config).graph_name;
  const json two = s.Launch(
      "--num_epochs 24 --lr 0.01 --seed 3 --eval_every 1 --fan_out 5,10 --edge_feat_mp_op concat",
      "launch");
  INFO("standalone concat " << concat_acc);
  CHECK(two.at("test_acc").get<double>() > concat_acc - 0.1);
  CHECK(ReadFile(s.dir / "launch.err").find("edge features: graphsage") != std::string::npos);

  // Bad combinations: one line each.
  const std::string tiny = test::MakePartitions(s.dir, "synthetic:tiny", 1, "plain");
  test::ExpectOneLine(RunProcess({Bin("gnn-train"), "--standalone", "--part_config", tiny,
                                  "--edge_feat_mp_op", "concat", "--num_epochs", "1"}),
                      "gnn-train", "has no edge features");
  test::ExpectOneLine(
      RunProcess({Bin("gnn-train"), "--standalone", "--part_config", one, "--edge_feat_mp_op",
                  "add", "--model", "gcn", "--num_epochs", "1"}),
      "gnn-train", "--model gcn does not read edge features");
}
