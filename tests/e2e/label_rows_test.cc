// Multi-label node classification (#52 item 4) and node regression (#54
// item 1) as processes: label rows detected (or named by --task) by
// gnn-partition, stored as float32 label.npy, served from shared memory and
// over the wire (PullTargets), trained standalone and on 2 machines with
// binary cross-entropy or MSE, judged by OGB's proteins evaluator (ROC-AUC
// per label, averaged over labels with both classes) or RMSE, written by
// --inference; bad labels are one line with nothing written.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cluster_util.h"
#include "common/fs.h"
#include "common/npy.h"
#include "launch_util.h"
#include "partition/config.h"
#include "process_util.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::Bin;
using test::RunProcess;

namespace {

constexpr const char* kMultilabel =
    "synthetic:nodes=2000,edges=10000,feat=16,classes=4,train=0.2,valid=0.1,task=multilabel,"
    "labels=6";
constexpr const char* kRegression =
    "synthetic:nodes=2000,edges=10000,feat=16,classes=4,train=0.2,valid=0.1,task=regression";

// The test figure of written predictions (multi-label: from the logits,
// whose order the sigmoid can tie) recomputed in NumPy from the
// partition's own label rows and test mask: OGB's evaluator for
// multi-label (ROC-AUC per column with both classes, ties at mean rank),
// RMSE for regression. Empty when Debian's python3-numpy is missing.
std::string NumpyFigure(const std::string& part, const std::string& pred_dir, bool multilabel) {
  if (!PathExists("/usr/bin/python3") ||
      RunProcess({"/usr/bin/python3", "-c", "import numpy"}).exit_code != 0) {
    return "";
  }
  const std::string script =
      "import sys, numpy as np\n"
      "part, pred, multi = sys.argv[1], sys.argv[2], sys.argv[3] == '1'\n"
      "y = np.load(part + '/label.npy'); mask = np.load(part + '/test_mask.npy').astype(bool)\n"
      "orig = np.load(part + '/orig_nids.npy'); ids = np.load(pred + '/part0/ids.npy')\n"
      "out = np.load(pred + ('/part0/logits.npy' if multi else '/part0/pred.npy'))\n"
      "row = np.empty(len(orig), dtype=np.int64); row[orig] = np.arange(len(orig))\n"
      "r = row[ids]; keep = mask[r]; y = y[r][keep]; s = out[keep]\n"
      "def auc(sc, lab):\n"
      "  order = np.argsort(sc, kind='mergesort'); ss = sc[order]\n"
      "  ranks = np.empty(len(sc)); i = 0\n"
      "  while i < len(ss):\n"
      "    j = i\n"
      "    while j < len(ss) and ss[j] == ss[i]: j += 1\n"
      "    ranks[order[i:j]] = (i + 1 + j) / 2.0; i = j\n"
      "  p = lab.sum(); n = len(lab) - p\n"
      "  return (ranks[lab == 1].sum() - p * (p + 1) / 2) / (p * n)\n"
      "if multi:\n"
      "  cols = [auc(s[:, c].astype(np.float64), y[:, c]) for c in range(y.shape[1]) if 0 < "
      "y[:, c].sum() < len(y)]\n"
      "  print('%.12f' % np.mean(cols))\n"
      "else:\n"
      "  print('%.12f' % np.sqrt(np.mean((s.astype(np.float64) - y) ** 2)))\n";
  auto py = RunProcess({"/usr/bin/python3", "-c", script, part, pred_dir, multilabel ? "1" : "0"});
  INFO(py.err);
  REQUIRE(py.exit_code == 0);
  return py.out;
}

}  // namespace

TEST_CASE("multi-label node classification: ROC-AUC as OGB's evaluator, standalone and 2 machines",
          "[e2e]") {
  test::Setup s("multilabel");
  const std::string one = test::MakePartitions(s.dir, kMultilabel, 1, "one");
  const PartitionConfig c = LoadPartitionConfig(one);
  CHECK(c.label_kind == LabelKind::kMultilabel);
  CHECK(c.label_width == 6);
  std::vector<int64_t> shape;
  ReadNpy<float>(c.FilePath(0, "label.npy"), {}, &shape);
  CHECK(shape == std::vector<int64_t>{2000, 6});

  const std::string model = s.dir / "m.pt";
  const json trained = test::RunStandaloneTrainer(
      {"--part_config", one, "--num_epochs", "10", "--eval_every", "1", "--batch_size", "100",
       "--lr", "0.03", "--seed", "3", "--save_model", model});
  CHECK(trained.at("task") == "multilabel");
  CHECK_FALSE(trained.contains("test_acc"));
  const double auc = trained.at("test_rocauc").get<double>();
  CHECK(auc > 0.8);  // labels follow the hidden classes, which features and edges follow
  // (0.5 is chance; a model that knew each node's class would reach ~0.94)
  CHECK(trained.at("best_val_rocauc").get<double>() > 0.8);
  CHECK(trained.at("saved_model_epoch") == trained.at("best_epoch"));

  // Inference writes logits, prob and pred (uint8) and reproduces the
  // training run's evaluation of the saved epoch.
  const json inferred =
      test::RunStandaloneTrainer({"--part_config", one, "--inference", "--restore_model_path",
                                  model, "--save_prediction_path", s.dir / "p1"});
  CHECK(inferred.at("val_rocauc").get<double>() ==
        Approx(trained.at("best_val_rocauc").get<double>()).epsilon(1e-12));
  CHECK(inferred.at("test_rocauc").get<double>() == Approx(auc).epsilon(1e-12));
  std::vector<int64_t> prob_shape, pred_shape;
  const std::vector<float> prob = ReadNpy<float>(s.dir / "p1/part0/prob.npy", {}, &prob_shape);
  const std::vector<uint8_t> pred = ReadNpy<uint8_t>(s.dir / "p1/part0/pred.npy", {}, &pred_shape);
  CHECK(prob_shape == std::vector<int64_t>{2000, 6});
  CHECK(pred_shape == std::vector<int64_t>{2000, 6});
  for (size_t i = 0; i < prob.size(); ++i) REQUIRE(pred[i] == (prob[i] >= 0.5f ? 1 : 0));
  const json manifest = json::parse(ReadFile(s.dir / "p1/manifest.json"));
  CHECK(manifest.at("shards")[0].at("prob") == "part0/prob.npy");

  // The figure recomputed independently from the written probabilities.
  const std::string numpy = NumpyFigure(s.dir / "one/part0", s.dir / "p1", true);
  if (numpy.empty()) {
    WARN("python3-numpy not installed: the ROC-AUC is not recomputed in NumPy");
  } else {
    CHECK(std::stod(numpy) == Approx(auc).epsilon(1e-9));
  }

  // 2 machines (2 partitions, label rows over the wire from the other
  // machine's server): as good within seed spread.
  s.config = test::MakePartitions(s.dir, kMultilabel, 2, "two");
  s.graph_name = LoadPartitionConfig(s.config).graph_name;
  const json two =
      s.Launch("--num_epochs 10 --eval_every 1 --lr 0.03 --seed 3 --task multilabel", "launch");
  CHECK(two.at("task") == "multilabel");
  CHECK(two.at("test_rocauc").get<double>() > auc - 0.05);
  CHECK(two.at("wire_bytes_per_step").get<double>() > 0);
}

TEST_CASE("node regression: MSE, the lowest validation RMSE's epoch, standalone and 2 machines",
          "[e2e]") {
  test::Setup s("regression");
  const std::string one = test::MakePartitions(s.dir, kRegression, 1, "one");
  const PartitionConfig c = LoadPartitionConfig(one);
  CHECK(c.label_kind == LabelKind::kRegression);
  CHECK(c.num_classes == 0);
  const std::vector<float> y = ReadNpy<float>(c.FilePath(0, "label.npy"), {2000, 1});
  // The spread a model that knows nothing has: the labels' standard deviation.
  double mean = 0, var = 0;
  for (float v : y) mean += v / 2000.0;
  for (float v : y) var += (v - mean) * (v - mean) / 2000.0;

  const std::string model = s.dir / "m.pt";
  const std::vector<std::string> base = {"--part_config", one,   "--eval_every", "1",
                                         "--batch_size",  "100", "--lr",         "0.03",
                                         "--num_hidden",  "32",  "--seed",       "3"};
  auto straight = base;
  straight.insert(straight.end(), {"--num_epochs", "10", "--save_model", model, "--metrics_file",
                                   s.dir / "metrics.jsonl", "--checkpoint_dir", s.dir / "ck1"});
  const json trained = test::RunStandaloneTrainer(straight);
  CHECK(trained.at("task") == "node_regression");
  const double rmse = trained.at("test_rmse").get<double>();
  CHECK(rmse < 0.8 * std::sqrt(var));
  // The best epoch is the one of the lowest validation RMSE.
  double lowest = 1e9;
  int lowest_epoch = 0;
  std::ifstream lines(s.dir / "metrics.jsonl");
  std::string line;
  while (std::getline(lines, line)) {
    const json j = json::parse(line);
    if (j.at("type") == "step") CHECK(j.contains("train_rmse"));
    if (j.at("type") != "eval") continue;
    if (j.at("val_rmse").get<double>() < lowest) {
      lowest = j.at("val_rmse").get<double>();
      lowest_epoch = j.at("epoch").get<int>();
    }
  }
  CHECK(trained.at("best_epoch").get<int>() == lowest_epoch);
  CHECK(trained.at("best_val_rmse").get<double>() == lowest);

  // Exact resume: 5 epochs, then --resume to 10 ends with the same model
  // (the lowest validation RMSE's parameters travel in the checkpoint).
  auto first = base;
  first.insert(first.end(), {"--num_epochs", "5", "--checkpoint_dir", s.dir / "ck2"});
  test::RunStandaloneTrainer(first);
  auto second = base;
  second.insert(second.end(), {"--num_epochs", "10", "--checkpoint_dir", s.dir / "ck2", "--resume",
                               "--save_model", s.dir / "m2.pt"});
  const json resumed = test::RunStandaloneTrainer(second);
  CHECK(resumed.at("epochs_run").get<int>() == 5);
  CHECK(resumed.at("final_test_rmse") == trained.at("final_test_rmse"));
  CHECK(resumed.at("best_epoch") == trained.at("best_epoch"));
  CHECK(ReadFile(s.dir / "m2.pt") == ReadFile(model));

  const json inferred =
      test::RunStandaloneTrainer({"--part_config", one, "--inference", "--restore_model_path",
                                  model, "--save_prediction_path", s.dir / "p1"});
  CHECK(inferred.at("test_rmse").get<double>() == Approx(rmse).epsilon(1e-12));
  std::vector<int64_t> shape;
  ReadNpy<float>(s.dir / "p1/part0/pred.npy", {}, &shape);
  CHECK(shape == std::vector<int64_t>{2000, 1});
  const std::string numpy = NumpyFigure(s.dir / "one/part0", s.dir / "p1", false);
  if (!numpy.empty()) CHECK(std::stod(numpy) == Approx(rmse).epsilon(1e-6));

  s.config = test::MakePartitions(s.dir, kRegression, 2, "two");
  s.graph_name = LoadPartitionConfig(s.config).graph_name;
  const json two =
      s.Launch("--num_epochs 10 --eval_every 1 --lr 0.03 --num_hidden 32 --seed 3", "launch");
  CHECK(two.at("task") == "node_regression");
  CHECK(two.at("test_rmse").get<double>() < 0.8 * std::sqrt(var));
}

TEST_CASE("label rows: files of each kind are detected, and bad labels are one line", "[e2e]") {
  test::TempDir dir;
  // Plain files: 6 nodes on a ring, labels of several kinds.
  std::vector<int64_t> edges;
  for (int64_t i = 0; i < 6; ++i) {
    edges.push_back(i);
    edges.push_back((i + 1) % 6);
  }
  WriteNpy(dir / "edges.npy", edges.data(), {6, 2});
  std::vector<float> feat(6 * 3, 0.5f);
  WriteNpy(dir / "feat.npy", feat.data(), {6, 3});
  std::vector<int64_t> train = {0, 1, 2, 3};
  WriteNpy(dir / "train.npy", train);
  auto partition = [&](const std::string& labels, const std::string& out,
                       std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {Bin("gnn-partition"),
                                     "--edges",
                                     dir / "edges.npy",
                                     "--node_feat",
                                     dir / "feat.npy",
                                     "--labels",
                                     labels,
                                     "--train_ids",
                                     dir / "train.npy",
                                     "--graph_name",
                                     "ring",
                                     "--num_parts",
                                     "1",
                                     "--output",
                                     dir / out};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunProcess(argv);
  };
  std::vector<float> multi = {0, 1, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1};  // [6, 2] of 0/1
  WriteNpy(dir / "multi.npy", multi.data(), {6, 2});
  auto r = partition(dir / "multi.npy", "multi");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("multi-label node classification") != std::string::npos);
  CHECK(LoadPartitionConfig(dir / "multi/ring.json").label_kind == LabelKind::kMultilabel);

  std::vector<float> values = {0.5f, 1.25f, -2, 3, 0.125f, 7};
  WriteNpy(dir / "values.npy", values);
  r = partition(dir / "values.npy", "values");
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("node regression") != std::string::npos);
  const PartitionConfig reg = LoadPartitionConfig(dir / "values/ring.json");
  CHECK(reg.label_kind == LabelKind::kRegression);
  CHECK(json::parse(ReadFile(dir / "values/ring.json")).at("label_dtype") == "float32");

  // Integers are class ids unless --task (or --label_dtype float) says otherwise.
  std::vector<int64_t> ints = {0, 1, 2, 0, 1, 2};
  WriteNpy(dir / "ints.npy", ints);
  r = partition(dir / "ints.npy", "ints-float", {"--label_dtype", "float"});
  REQUIRE(r.exit_code == 0);
  CHECK(LoadPartitionConfig(dir / "ints-float/ring.json").label_kind == LabelKind::kRegression);

  // Fractions as class ids, values other than 0/1 as multi-label, NaN.
  r = partition(dir / "values.npy", "bad1", {"--task", "node"});
  test::ExpectOneLine(r, "gnn-partition", "does not fit its regression labels");
  CHECK_FALSE(PathExists(dir / "bad1"));
  r = partition(dir / "values.npy", "bad2", {"--task", "multilabel"});
  test::ExpectOneLine(r, "gnn-partition", "--task multilabel");
  CHECK_FALSE(PathExists(dir / "bad2"));
  values[2] = std::nanf("");
  WriteNpy(dir / "nan.npy", values);
  r = partition(dir / "nan.npy", "bad3");
  test::ExpectOneLine(r, "gnn-partition", "not a finite number");
  CHECK_FALSE(PathExists(dir / "bad3"));
  r = partition(dir / "multi.npy", "bad4", {"--task", "regresion"});
  test::ExpectOneLine(r, "gnn-partition",
                      "--task must be auto, node, multilabel or node_regression");

  // An OGB folder whose node-label.csv.gz has 3 columns of 0/1.
  const std::string ogb = dir / "ogbn-three";
  test::WriteGz(ogb + "/raw/num-node-list.csv.gz", "4\n");
  test::WriteGz(ogb + "/raw/num-edge-list.csv.gz", "3\n");
  test::WriteGz(ogb + "/raw/edge.csv.gz", "0,1\n1,2\n2,3\n");
  test::WriteGz(ogb + "/raw/node-feat.csv.gz", "1,0\n0,1\n1,1\n0,0\n");
  test::WriteGz(ogb + "/raw/node-label.csv.gz", "1,0,1\n0,0,1\n1,1,0\n0,1,0\n");
  test::WriteGz(ogb + "/split/s/train.csv.gz", "0\n1\n");
  test::WriteGz(ogb + "/split/s/valid.csv.gz", "2\n");
  test::WriteGz(ogb + "/split/s/test.csv.gz", "3\n");
  r = RunProcess({Bin("gnn-partition"), "--dataset", ogb, "--num_parts", "1", "--output",
                  dir / "ogb", "--no_cache"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const PartitionConfig three = LoadPartitionConfig(dir / "ogb/ogbn-three.json");
  CHECK(three.label_kind == LabelKind::kMultilabel);
  CHECK(three.label_width == 3);
  CHECK(three.num_classes == 3);

  // gnn-train: a task the labels cannot give.
  r = RunProcess({Bin("gnn-train"), "--standalone", "--part_config", dir / "ogb/ogbn-three.json",
                  "--task", "node_regression", "--num_epochs", "1"});
  test::ExpectOneLine(r, "gnn-train", "--task multilabel");
  r = RunProcess({Bin("gnn-train"), "--standalone", "--part_config", dir / "ogb/ogbn-three.json",
                  "--task", "link", "--num_epochs", "1"});
  test::ExpectOneLine(r, "gnn-train", "--task multilabel");
  r = partition(dir / "ints.npy", "ints");
  REQUIRE(r.exit_code == 0);
  r = RunProcess({Bin("gnn-train"), "--standalone", "--part_config", dir / "ints/ring.json",
                  "--task", "multilabel", "--num_epochs", "1"});
  test::ExpectOneLine(r, "gnn-train", "one class id per node");
}

TEST_CASE("synthetic:proteins-small: node features from edges, 112 labels, ROC-AUC in 2 epochs",
          "[e2e]") {
  test::TempDir dir;
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", "synthetic:proteins-small", "--num_parts",
                       "1", "--output", dir / "p", "--no_cache"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("112 multilabel label columns per node") != std::string::npos);
  CHECK(r.err.find("node features are the mean of each node") != std::string::npos);
  const PartitionConfig c = LoadPartitionConfig(dir / "p/synthetic-proteins-small.json");
  CHECK(c.label_kind == LabelKind::kMultilabel);
  CHECK(c.label_width == 112);
  CHECK(c.edge_feature_dim == 8);
  CHECK(c.feature_dim == 8);  // each node's mean in-edge features
  // 2 epochs of batches of 100 (75 steps; ogbn-proteins' 86,619 train
  // nodes make 174 of DGL's batches of 1000 in 2 epochs).
  const json trained = test::RunStandaloneTrainer(
      {"--part_config", dir / "p/synthetic-proteins-small.json", "--num_epochs", "2",
       "--eval_every", "1", "--batch_size", "100", "--lr", "0.01", "--seed", "1"});
  CHECK(trained.at("task") == "multilabel");
  CHECK(trained.at("test_rocauc").get<double>() >= 0.65);
}
