// gnn-train --inference as processes: a model saved by --save_model applied
// standalone and through gnn-launch on another partitioning of the graph,
// its shards and manifest, the training run's evaluation reproduced, the
// narrow wire's predictions, --nodes / --node_mask, sampled inference
// (--fan_out), and bad inputs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "cluster_util.h"
#include "common/fs.h"
#include "common/npy.h"
#include "launch_util.h"
#include "process_util.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::Bin;
using test::RunProcess;

namespace {

json RunTrainer(const std::vector<std::string>& args) { return test::RunStandaloneTrainer(args); }

// Every shard of a prediction folder: input id -> (logits row, pred).
struct Predictions {
  std::map<int64_t, std::vector<float>> logits;
  std::map<int64_t, int64_t> pred;
};

Predictions ReadPredictions(const std::string& dir) {
  const json m = json::parse(ReadFile(dir + "/manifest.json"));
  REQUIRE(m.at("kind") == "predictions");
  Predictions p;
  int64_t total = 0;
  for (const json& s : m.at("shards")) {
    const std::vector<int64_t> ids = ReadNpy<int64_t>(dir + "/" + s.at("ids").get<std::string>());
    std::vector<int64_t> shape;
    const std::vector<float> logits =
        ReadNpy<float>(dir + "/" + s.at("logits").get<std::string>(), {}, &shape);
    const std::vector<int64_t> pred = ReadNpy<int64_t>(dir + "/" + s.at("pred").get<std::string>());
    REQUIRE(shape.size() == 2);
    REQUIRE(shape[0] == static_cast<int64_t>(ids.size()));
    REQUIRE(pred.size() == ids.size());
    CHECK(s.at("num_nodes").get<int64_t>() == static_cast<int64_t>(ids.size()));
    const size_t c = static_cast<size_t>(shape[1]);
    for (size_t i = 0; i < ids.size(); ++i) {
      std::vector<float> row(logits.begin() + i * c, logits.begin() + (i + 1) * c);
      // pred is the argmax of the row.
      CHECK(std::max_element(row.begin(), row.end()) - row.begin() == pred[i]);
      p.logits[ids[i]] = row;
      p.pred[ids[i]] = pred[i];
    }
    total += static_cast<int64_t>(ids.size());
  }
  CHECK(static_cast<int64_t>(p.logits.size()) == total);  // no id twice
  CHECK(m.at("num_nodes").get<int64_t>() == total);
  return p;
}

double MaxDiff(const Predictions& a, const Predictions& b) {
  double worst = 0;
  for (const auto& [id, row] : a.logits) {
    const auto& other = b.logits.at(id);
    for (size_t k = 0; k < row.size(); ++k)
      worst = std::max(worst, static_cast<double>(std::abs(row[k] - other[k])));
  }
  return worst;
}

}  // namespace

TEST_CASE("inference applies a saved model on any partitioning and reproduces its evaluation",
          "[e2e]") {
  test::Setup s("infer");  // synthetic:tiny in 2 parts, 2 machines on loopback
  const std::string one = test::MakePartitions(s.dir, "synthetic:tiny", 1, "one");
  const std::string model = s.dir / "m.pt";
  const json trained =
      RunTrainer({"--part_config", one, "--num_epochs", "6", "--eval_every", "1", "--batch_size",
                  "100", "--lr", "0.01", "--seed", "4", "--save_model", model});
  // The saved model is the one the headline test_acc is from.
  CHECK(trained.at("saved_model_epoch") == trained.at("best_epoch"));

  // Standalone on the 1-part copy: every node, its embeddings too.
  const json alone =
      RunTrainer({"--part_config", one, "--inference", "--restore_model_path", model,
                  "--save_prediction_path", s.dir / "p1", "--save_embed_path", s.dir / "e1"});
  CHECK(alone.at("mode") == "inference");
  CHECK(alone.at("nodes_written").get<int64_t>() == 2000);
  CHECK(alone.at("saved_model_epoch") == trained.at("best_epoch"));
  // The training run's evaluation of the saved epoch, exactly.
  CHECK(alone.at("val_acc").get<double>() == trained.at("best_val_acc").get<double>());
  CHECK(alone.at("test_acc").get<double>() == trained.at("test_acc").get<double>());
  const Predictions p1 = ReadPredictions(s.dir / "p1");
  REQUIRE(p1.logits.size() == 2000);
  CHECK(p1.logits.begin()->first == 0);  // the input's ids, 0..N-1
  CHECK(p1.logits.rbegin()->first == 1999);
  const json em = json::parse(ReadFile(s.dir / "e1/manifest.json"));
  CHECK(em.at("embed_layer") == 1);  // the last hidden layer of 2
  std::vector<int64_t> shape;
  ReadNpy<float>(s.dir / "e1/part0/emb.npy", {}, &shape);
  CHECK(shape == std::vector<int64_t>{2000, 16});  // --num_hidden

  // The math, against plain torch: GraphSAGE over the partition's own
  // arrays with the saved state dict (DGL 2.x SAGEConv names), full
  // neighbourhoods, rows matched by input id.
  if (PathExists("/usr/bin/python3") &&
      RunProcess({"/usr/bin/python3", "-c", "import torch, numpy"}).exit_code == 0) {
    const std::string script =
        "import sys, numpy as np, torch\n"
        "part, model, pred = sys.argv[1:4]\n"
        "indptr = np.load(part + '/indptr.npy'); src = torch.from_numpy(np.load(part + "
        "'/indices.npy'))\n"
        "h = torch.from_numpy(np.load(part + '/feat.npy')); orig = np.load(part + "
        "'/orig_nids.npy')\n"
        "sd = torch.load(model, weights_only=True); m = sd._metadata['gnn']\n"
        "n = len(indptr) - 1; deg = torch.from_numpy(np.diff(indptr)).float().clamp(min=1)\n"
        "dst = torch.from_numpy(np.repeat(np.arange(n), np.diff(indptr)))\n"
        "for l in range(m['num_layers']):\n"
        "  p = 'layers.%d.' % l\n"
        "  mean = torch.zeros(n, h.shape[1]).index_add_(0, dst, h[src]) / deg.unsqueeze(1)\n"
        "  h = h @ sd[p + 'fc_self.weight'].T + sd[p + 'fc_self.bias'] + mean @ sd[p + "
        "'fc_neigh.weight'].T\n"
        "  if l + 1 < m['num_layers']: h = torch.relu(h)\n"
        "ids = np.load(pred + '/part0/ids.npy'); got = np.load(pred + '/part0/logits.npy')\n"
        "want = h.numpy()[np.argsort(orig)[ids]]\n"
        "err = float(np.abs(want - got).max()); assert err < 1e-4, err\n"
        "print('ok')\n";
    auto py = RunProcess(
        {"/usr/bin/python3", "-c", script, s.dir / "one/part0", model, s.dir / "p1"}, 120);
    INFO(py.err);
    CHECK(py.out == "ok\n");
  } else {
    WARN("python3-torch not installed: the logits are not checked against plain torch");
  }

  // On 2 machines over the 2-part partitioning: the same logits on the
  // exact wire, each machine writing its partition's shard.
  const json two =
      s.Launch("--inference --restore_model_path " + model + " --save_prediction_path " +
                   (s.dir / "p2") + " --wire_dtype float32",
               "launch-exact");
  CHECK(two.at("nodes_written").get<int64_t>() == 2000);
  // gnn-launch told each trainer that both machines share this host.
  CHECK_THAT(ReadFile(s.dir / "launch-exact.err"),
             Catch::Contains("shared by the job's 2 machines on this host"));
  const Predictions p2 = ReadPredictions(s.dir / "p2");
  REQUIRE(p2.logits.size() == 2000);
  CHECK(MaxDiff(p1, p2) < 1e-5);
  const json m2 = json::parse(ReadFile(s.dir / "p2/manifest.json"));
  REQUIRE(m2.at("shards").size() == 2);
  CHECK(m2.at("shards")[1].at("machine") == 1);
  CHECK(m2.at("shards")[0].at("logits") == "part0/logits.npy");

  // A model trained on the 2 parts applies to the 1-part copy: the same
  // logits as on the 2 parts it was trained on.
  const std::string model2 = s.dir / "m2.pt";
  s.Launch(
      "--num_epochs 2 --eval_every 1 --lr 0.01 --save_model " + model2 + " --wire_dtype float32",
      "launch-train");
  RunTrainer({"--part_config", one, "--inference", "--restore_model_path", model2,
              "--save_prediction_path", s.dir / "q1"});
  s.Launch("--inference --restore_model_path " + model2 + " --save_prediction_path " +
               (s.dir / "q2") + " --wire_dtype float32",
           "launch-exact2");
  CHECK(MaxDiff(ReadPredictions(s.dir / "q1"), ReadPredictions(s.dir / "q2")) < 1e-5);

  // The narrow wire: the same class for at least 99.5% of the nodes.
  s.Launch(
      "--inference --restore_model_path " + model + " --save_prediction_path " + (s.dir / "p3"),
      "launch-narrow");
  const Predictions p3 = ReadPredictions(s.dir / "p3");
  int same = 0;
  for (const auto& [id, c] : p1.pred) same += p3.pred.at(id) == c;
  CHECK(same >= 0.995 * 2000);

  // Only some nodes: the test split, or a list of input ids.
  RunTrainer({"--part_config", one, "--inference", "--restore_model_path", model,
              "--save_prediction_path", s.dir / "p4", "--node_mask", "test"});
  const Predictions p4 = ReadPredictions(s.dir / "p4");
  CHECK(p4.logits.size() > 0);
  CHECK(p4.logits.size() < 2000);
  for (const auto& [id, row] : p4.logits) CHECK(row == p1.logits.at(id));
  const std::vector<int64_t> wanted = {5, 17, 1999, 5};
  WriteNpy(s.dir / "ids.npy", wanted);
  RunTrainer({"--part_config", one, "--inference", "--restore_model_path", model,
              "--save_prediction_path", s.dir / "p5", "--nodes", s.dir / "ids.npy"});
  const Predictions p5 = ReadPredictions(s.dir / "p5");
  CHECK(p5.logits.size() == 3);
  CHECK(p5.logits.count(1999) == 1);
}

TEST_CASE(
    "inference --fan_out samples each node's neighbourhood, alike for any batch or partitioning",
    "[e2e]") {
  test::Setup s("infer-sampled");  // synthetic:tiny in 2 parts, 2 machines on loopback
  const std::string one = test::MakePartitions(s.dir, "synthetic:tiny", 1, "one");
  const std::string model = s.dir / "m.pt";
  RunTrainer({"--part_config", one, "--num_epochs", "3", "--batch_size", "100", "--lr", "0.01",
              "--save_model", model});
  auto infer = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> a = {
        "--part_config",          one,         "--inference",       "--restore_model_path", model,
        "--save_prediction_path", s.dir / out, "--save_embed_path", s.dir / (out + "-emb")};
    a.insert(a.end(), extra.begin(), extra.end());
    return RunTrainer(a);
  };
  infer("full", {});
  infer("s1", {"--fan_out", "2,2"});
  infer("s2", {"--fan_out", "2,2", "--batch_size_eval", "37"});
  infer("big", {"--fan_out", "1000,1000"});
  const Predictions full = ReadPredictions(s.dir / "full"), s1 = ReadPredictions(s.dir / "s1"),
                    s2 = ReadPredictions(s.dir / "s2"), big = ReadPredictions(s.dir / "big");
  REQUIRE(s1.logits.size() == 2000);
  // Sampling 2 of each node's neighbours changes the answers; a fan-out
  // above every degree is every neighbour again.
  CHECK(MaxDiff(full, s1) > 1e-3);
  CHECK(MaxDiff(full, big) < 1e-5);
  // A node's sample depends on the node, not on its batch.
  CHECK(MaxDiff(s1, s2) < 1e-5);
  std::vector<int64_t> shape;
  ReadNpy<float>(s.dir / "s1-emb/part0/emb.npy", {}, &shape);
  CHECK(shape == std::vector<int64_t>{2000, 16});
  // On 2 machines over the 2-part partitioning, the same samples (the
  // exact wire).
  s.Launch("--inference --restore_model_path " + model + " --save_prediction_path " +
               (s.dir / "d1") + " --wire_dtype float32 --fan_out 2,2",
           "launch-sampled");
  CHECK(MaxDiff(s1, ReadPredictions(s.dir / "d1")) < 1e-5);
  // A fan-out per layer of the model, or one line.
  auto r = RunProcess({Bin("gnn-train"), "--standalone", "--quiet", "--part_config", one,
                       "--inference", "--restore_model_path", model, "--save_prediction_path",
                       s.dir / "bad", "--fan_out", "2,2,2"});
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("--fan_out '2,2,2' has 3 entries; the model in"));
  CHECK_FALSE(std::filesystem::exists(s.dir / "bad/manifest.json"));
}

TEST_CASE("inference: bad inputs are one line, before anything is written", "[e2e]") {
  test::TempDir dir;
  const std::string one = test::MakePartitions(dir, "synthetic:tiny", 1, "one");
  const std::string model = dir / "m.pt";
  RunTrainer(
      {"--part_config", one, "--num_epochs", "1", "--batch_size", "200", "--save_model", model});
  const std::string out = dir / "out";
  auto fails = [&](std::vector<std::string> args, const std::string& needle) {
    args.insert(args.begin(), {Bin("gnn-train"), "--standalone", "--part_config", one});
    auto r = RunProcess(args, 120);
    INFO(r.err);
    CHECK(r.exit_code > 0);
    CHECK(r.err.find(needle) != std::string::npos);
    CHECK(!PathExists(out + "/manifest.json"));
    CHECK(!PathExists(out + "/part0"));
  };
  fails({"--inference", "--save_prediction_path", out}, "--inference needs --restore_model_path");
  fails({"--restore_model_path", model}, "--restore_model_path applies only with --inference");
  fails({"--inference", "--restore_model_path", model}, "give at least one");
  fails({"--inference", "--restore_model_path", dir / "nope.pt", "--save_prediction_path", out},
        "nope.pt: No such file or directory");
  // A truncated file, and a file that is not a model.
  const std::string bytes = ReadFile(model);
  WriteFileAtomic(dir / "cut.pt", bytes.substr(0, bytes.size() / 2));
  fails({"--inference", "--restore_model_path", dir / "cut.pt", "--save_prediction_path", out},
        "cut.pt: not a model file");
  WriteFileAtomic(dir / "text.pt", "hello");
  fails({"--inference", "--restore_model_path", dir / "text.pt", "--save_prediction_path", out},
        "text.pt: not a model file");
  // A model of another graph's shape (32 features, not 16).
  const std::string wide =
      test::MakePartitions(dir, "synthetic:nodes=500,edges=2000,feat=32,classes=4", 1, "wide");
  RunTrainer({"--part_config", wide, "--num_epochs", "1", "--save_model", dir / "wide.pt"});
  fails({"--inference", "--restore_model_path", dir / "wide.pt", "--save_prediction_path", out},
        "takes 32 input features");
  // Another graph of the same schema (GraphStorm's inference on new data):
  // synthetic:tiny drawn with another seed.
  const std::string other = dir / "other";
  REQUIRE(RunProcess({Bin("gnn-partition"), "--dataset", "synthetic:tiny", "--seed", "11",
                      "--num_parts", "1", "--output", other, "--quiet"})
              .exit_code == 0);
  const json fresh =
      RunTrainer({"--part_config", other + "/synthetic-tiny.json", "--inference",
                  "--restore_model_path", model, "--save_prediction_path", dir / "fresh"});
  CHECK(fresh.at("nodes_written").get<int64_t>() == 2000);
  // A typed graph takes RGCN and RGAT models, not this one.
  const std::string typed = test::MakePartitions(dir, "synthetic:mag-small", 1, "mag");
  {
    auto r = RunProcess({Bin("gnn-train"), "--standalone", "--part_config", typed, "--inference",
                         "--restore_model_path", model, "--save_prediction_path", out},
                        120);
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("holds a --model graphsage model (one node type)") != std::string::npos);
    CHECK(!PathExists(out + "/manifest.json"));
  }
  // An id that is not a node.
  WriteNpy(dir / "ids.npy", std::vector<int64_t>{3, 2000});
  fails({"--inference", "--restore_model_path", model, "--save_prediction_path", out, "--nodes",
         dir / "ids.npy"},
        "id 2000 is not a node");
  fails({"--inference", "--restore_model_path", model, "--save_prediction_path", out, "--node_mask",
         "some"},
        "--node_mask must be train, valid, test or all");
  fails({"--inference", "--restore_model_path", model, "--save_prediction_path", out,
         "--embed_layer", "3", "--save_embed_path", dir / "emb"},
        "--embed_layer 3: the model has 2 layers");
}
