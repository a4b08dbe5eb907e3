// Edge classification and edge regression (#54 items 2 and 3) as
// processes: labelled edges carried by gnn-partition with the stored edges
// they belong to (edge_label.npy, edge_split.npy beside orig_eids.npy), the
// same per input edge for 1 and 2 partitions and through an OGB folder
// written by gnn-dataset; trained standalone and on 2 machines with an MLP
// decoder over both ends' embeddings, the target edges kept out of their
// batches' neighbourhoods; exact resume; inference keyed by input edge
// id; bad input one line, nothing written.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
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

constexpr const char* kEdgeClass = "synthetic:edges-small";
constexpr const char* kEdgeRegression =
    "synthetic:nodes=3000,edges=20000,feat=16,classes=8,train=0.2,valid=0.1,etask=regression";

// Input edge id -> (label, split) over every partition of `config`, for
// the stored in-edges that carry a split (each labelled input edge once).
std::map<int64_t, std::pair<double, int>> LabelledEdges(const std::string& config) {
  const PartitionConfig c = LoadPartitionConfig(config);
  std::map<int64_t, std::pair<double, int>> out;
  for (int p = 0; p < c.num_parts; ++p) {
    const int64_t m = c.parts[p].num_edges();
    const std::vector<int64_t> eids = ReadNpy<int64_t>(c.FilePath(p, kOrigEidsFile), {m});
    const std::vector<uint8_t> split = ReadNpy<uint8_t>(c.FilePath(p, kEdgeSplitFile), {m});
    std::vector<double> label(static_cast<size_t>(m));
    if (c.edge_label_kind == LabelKind::kClass) {
      const std::vector<int64_t> l = ReadNpy<int64_t>(c.FilePath(p, kEdgeLabelFile), {m});
      label.assign(l.begin(), l.end());
    } else {
      const std::vector<float> l = ReadNpy<float>(c.FilePath(p, kEdgeLabelFile), {m});
      label.assign(l.begin(), l.end());
    }
    int64_t counted[3] = {0, 0, 0};
    for (int64_t e = 0; e < m; ++e) {
      if (split[e] == 0 || split[e] == 4) continue;  // a reverse; an edge in no split
      ++counted[split[e] - 1];
      REQUIRE(out.emplace(eids[e], std::make_pair(label[e], int{split[e]})).second);
    }
    for (int k = 0; k < 3; ++k) CHECK(counted[k] == c.parts[p].num_split_edges[k]);
  }
  return out;
}

}  // namespace

TEST_CASE("edge classification: labelled edges partitioned, trained standalone and on 2 machines",
          "[e2e]") {
  test::Setup s("edgeclass");
  const std::string one = test::MakePartitions(s.dir, kEdgeClass, 1, "one");
  const PartitionConfig c = LoadPartitionConfig(one);
  REQUIRE(c.edge_labels);
  CHECK(c.edge_label_kind == LabelKind::kClass);
  CHECK(c.num_edge_classes == 4);
  CHECK(c.edge_feature_dim == 0);
  CHECK_FALSE(PathExists(c.FilePath(0, kEdgeFeatFile)));
  // Each of the 40,000 undirected input edges is stored both ways; its
  // split marks one of them, the one that runs as the input lists it.
  CHECK(c.num_edges == 80000);
  const auto labelled = LabelledEdges(one);
  CHECK(labelled.size() == 40000);
  std::map<int64_t, int64_t> count;
  for (const auto& [eid, ls] : labelled) ++count[static_cast<int64_t>(ls.first)];
  const double majority =
      static_cast<double>(std::max({count[0], count[1], count[2], count[3]})) / 40000.0;

  // The same label and split for every input edge with 2 partitions, and
  // through an OGB folder (raw/edge-label.csv.gz, split/*/edge_*.csv.gz).
  s.config = test::MakePartitions(s.dir, kEdgeClass, 2, "two");
  s.graph_name = LoadPartitionConfig(s.config).graph_name;
  CHECK(LabelledEdges(s.config) == labelled);
  auto ogb =
      RunProcess({Bin("gnn-dataset"), "--dataset", kEdgeClass, "--write_ogb", s.dir / "ogb_edges"});
  INFO(ogb.err);
  REQUIRE(ogb.exit_code == 0);
  CHECK(json::parse(ogb.out).at("train_edges").get<int64_t>() > 0);
  CHECK(PathExists(s.dir / "ogb_edges/raw/edge-label.csv.gz"));
  const std::string from_ogb = test::MakePartitions(s.dir, s.dir / "ogb_edges", 1, "ogb");
  CHECK(LabelledEdges(from_ogb) == labelled);
  // And through DGL's chunked format (edge_data label, train/val/test_mask).
  auto chunked = RunProcess({Bin("gnn-dataset"), "--dataset", kEdgeClass, "--write_chunked", "3",
                             "--output", s.dir / "chunked_edges"});
  INFO(chunked.err);
  REQUIRE(chunked.exit_code == 0);
  const json meta = json::parse(ReadFile(s.dir / "chunked_edges/metadata.json"));
  CHECK(meta.at("edge_data").at("_N:_E:_N").contains("train_mask"));
  const std::string from_chunked =
      test::MakePartitions(s.dir, s.dir / "chunked_edges", 1, "chunked");
  CHECK(LabelledEdges(from_chunked) == labelled);

  const std::vector<std::string> base = {
      "--part_config", one,  "--task", "edge_class", "--batch_size", "500", "--lr",      "0.01",
      "--num_hidden",  "32", "--seed", "5",          "--eval_every", "1",   "--fan_out", "10,5"};
  auto straight = base;
  straight.insert(straight.end(), {"--num_epochs", "6", "--checkpoint_dir", s.dir / "ck1",
                                   "--save_model", s.dir / "m.pt"});
  const json trained = test::RunStandaloneTrainer(straight);
  CHECK(trained.at("task") == "edge_class");
  const double acc = trained.at("test_acc").get<double>();
  // Classes follow both ends' hidden classes (10 % noise): well above the
  // majority class, which is what a decoder that ignored the graph and the
  // features would reach at best.
  CHECK(acc > majority + 0.15);
  CHECK(acc > 0.6);
  CHECK(trained.at("edges_per_s").get<double>() > 0);
  CHECK(trained.at("exclude_target_edges") == true);

  // Exact resume: 3 epochs, then --resume to 6 ends where the straight run did.
  auto first = base;
  first.insert(first.end(), {"--num_epochs", "3", "--checkpoint_dir", s.dir / "ck2"});
  test::RunStandaloneTrainer(first);
  auto second = base;
  second.insert(second.end(), {"--num_epochs", "6", "--checkpoint_dir", s.dir / "ck2", "--resume",
                               "--save_model", s.dir / "m2.pt"});
  const json resumed = test::RunStandaloneTrainer(second);
  CHECK(resumed.at("epochs_run").get<int>() == 3);
  CHECK(resumed.at("final_test_acc") == trained.at("final_test_acc"));
  CHECK(ReadFile(s.dir / "m2.pt") == ReadFile(s.dir / "m.pt"));

  // Inference writes a prediction per labelled edge, keyed by input edge
  // id, and scores the saved (best validation) epoch as training did.
  const json inferred =
      test::RunStandaloneTrainer({"--part_config", one, "--inference", "--restore_model_path",
                                  s.dir / "m.pt", "--save_prediction_path", s.dir / "pred"});
  CHECK(inferred.at("edges_written") == 40000);
  CHECK(inferred.at("test_acc").get<double>() == Approx(acc).epsilon(1e-12));
  CHECK(inferred.at("val_acc").get<double>() ==
        Approx(trained.at("best_val_acc").get<double>()).epsilon(1e-12));
  const std::vector<int64_t> eids = ReadNpy<int64_t>(s.dir / "pred/part0/edge_ids.npy", {40000});
  const std::vector<int64_t> pred = ReadNpy<int64_t>(s.dir / "pred/part0/pred.npy", {40000});
  ReadNpy<float>(s.dir / "pred/part0/logits.npy", {40000, 4});
  int64_t right = 0, tested = 0;
  for (size_t i = 0; i < eids.size(); ++i) {
    const auto& [label, split] = labelled.at(eids[i]);  // every id a labelled input edge
    if (split != 3) continue;
    ++tested;
    right += pred[i] == static_cast<int64_t>(label);
  }
  CHECK(static_cast<double>(right) / tested == Approx(acc).epsilon(1e-12));
  const json manifest = json::parse(ReadFile(s.dir / "pred/manifest.json"));
  CHECK(manifest.at("kind") == "edge_predictions");
  CHECK(manifest.at("shards")[0].at("edge_ids") == "part0/edge_ids.npy");
  // --edge_ids: predictions for listed edges, labelled or not. Without
  // its test split file the OGB folder's test edges are in no split.
  std::filesystem::remove(s.dir / "ogb_edges/split/random/edge_test.csv.gz");
  // (--undirected: as the synthetic graph, whose reverses the OGB layout
  // does not list.)
  auto part = RunProcess({Bin("gnn-partition"), "--dataset", s.dir / "ogb_edges", "--num_parts",
                          "1", "--undirected", "--output", s.dir / "notest", "--quiet"});
  INFO(part.err);
  REQUIRE(part.exit_code == 0);
  const std::string no_test = s.dir / "notest/ogb-edges.json";
  std::vector<int64_t> listed;
  for (const auto& [eid, ls] : labelled) {
    if (ls.second == 3 && listed.size() < 100) listed.push_back(eid);
  }
  WriteNpy(s.dir / "listed.npy", listed);
  const json some = test::RunStandaloneTrainer(
      {"--part_config", no_test, "--inference", "--restore_model_path", s.dir / "m.pt",
       "--save_prediction_path", s.dir / "pred_listed", "--edge_ids", s.dir / "listed.npy"});
  CHECK(some.at("edges_written") == 100);
  CHECK_FALSE(some.contains("test_acc"));  // no longer labelled test edges
  std::vector<int64_t> written = ReadNpy<int64_t>(s.dir / "pred_listed/part0/edge_ids.npy", {100});
  std::sort(written.begin(), written.end());
  CHECK(written == listed);
  // The same edges' predictions as when they were labelled.
  const std::vector<int64_t> listed_pred =
      ReadNpy<int64_t>(s.dir / "pred_listed/part0/pred.npy", {100});
  const std::vector<int64_t> listed_ids =
      ReadNpy<int64_t>(s.dir / "pred_listed/part0/edge_ids.npy", {100});
  std::map<int64_t, int64_t> before;
  for (size_t i = 0; i < eids.size(); ++i) before[eids[i]] = pred[i];
  for (size_t i = 0; i < listed_ids.size(); ++i) CHECK(listed_pred[i] == before.at(listed_ids[i]));
  WriteNpy(s.dir / "bad_ids.npy", std::vector<int64_t>{3, 40000});
  auto bad_ids =
      RunProcess({Bin("gnn-train"), "--standalone", "--part_config", no_test, "--inference",
                  "--restore_model_path", s.dir / "m.pt", "--save_prediction_path",
                  s.dir / "pred_bad", "--edge_ids", s.dir / "bad_ids.npy"});
  test::ExpectOneLine(bad_ids, "gnn-train", "1 of its 2 ids are not edges of");
  CHECK_FALSE(PathExists(s.dir / "pred_bad"));

  // Node outputs are not what an edge model predicts: one line.
  auto infer =
      RunProcess({Bin("gnn-train"), "--standalone", "--part_config", one, "--inference",
                  "--restore_model_path", s.dir / "m.pt", "--save_embed_path", s.dir / "emb"});
  test::ExpectOneLine(infer, "gnn-train", "a prediction per labelled edge");
  CHECK_FALSE(PathExists(s.dir / "emb"));

  // 2 machines: each partition's labelled edges split among its trainers,
  // labels from the trainer's own partition files, evaluation summed over
  // ranks: as good within seed spread.
  const json two = s.Launch(
      "--task edge_class --num_epochs 6 --eval_every 1 --batch_size 500 --lr 0.01 --num_hidden 32 "
      "--seed 5 --fan_out 10,5",
      "launch");
  CHECK(two.at("task") == "edge_class");
  CHECK(two.at("test_acc").get<double>() > acc - 0.05);
  CHECK(two.at("wire_bytes_per_step").get<double>() > 0);

  // The standalone model on 2 machines: each machine writes the labelled
  // edges its partition stores; together they are every labelled edge,
  // scored as on one.
  const json inferred_two = s.Launch("--inference --restore_model_path " + (s.dir / "m.pt") +
                                         " --save_prediction_path " + (s.dir / "pred2"),
                                     "infer");
  CHECK(inferred_two.at("edges_written") == 40000);
  CHECK(std::abs(inferred_two.at("test_acc").get<double>() - acc) < 0.002);
}

TEST_CASE("edge regression: MSE, RMSE judged, standalone and 2 machines", "[e2e]") {
  test::Setup s("edgereg");
  const std::string one = test::MakePartitions(s.dir, kEdgeRegression, 1, "one");
  const PartitionConfig c = LoadPartitionConfig(one);
  REQUIRE(c.edge_labels);
  CHECK(c.edge_label_kind == LabelKind::kRegression);
  const auto labelled = LabelledEdges(one);
  double mean = 0, var = 0;
  for (const auto& [eid, ls] : labelled) mean += ls.first / labelled.size();
  for (const auto& [eid, ls] : labelled) var += (ls.first - mean) * (ls.first - mean);
  var /= labelled.size();

  const json trained =
      test::RunStandaloneTrainer({"--part_config", one,    "--task",       "edge_regression",
                                  "--num_epochs",  "6",    "--eval_every", "1",
                                  "--batch_size",  "500",  "--lr",         "0.01",
                                  "--num_hidden",  "32",   "--seed",       "5",
                                  "--fan_out",     "10,5", "--save_model", s.dir / "m.pt"});
  CHECK(trained.at("task") == "edge_regression");
  const double rmse = trained.at("test_rmse").get<double>();
  CHECK(rmse < 0.9 * std::sqrt(var));  // a constant guess: the labels' sd
  CHECK(trained.contains("best_val_rmse"));
  CHECK_FALSE(trained.contains("test_acc"));
  const json inferred = test::RunStandaloneTrainer(
      {"--part_config", one, "--inference", "--restore_model_path", s.dir / "m.pt",
       "--save_prediction_path", s.dir / "pred", "--node_mask", "test"});
  CHECK(inferred.at("test_rmse").get<double>() == Approx(rmse).epsilon(1e-9));
  CHECK_FALSE(inferred.contains("val_rmse"));  // only the test edges were written
  std::vector<int64_t> shape;
  ReadNpy<float>(s.dir / "pred/part0/pred.npy", {}, &shape);
  CHECK(shape == std::vector<int64_t>{inferred.at("edges_written").get<int64_t>()});

  s.config = test::MakePartitions(s.dir, kEdgeRegression, 2, "two");
  s.graph_name = LoadPartitionConfig(s.config).graph_name;
  const json two = s.Launch(
      "--task edge_regression --num_epochs 6 --eval_every 1 --batch_size 500 --lr 0.01 "
      "--num_hidden 32 --seed 5 --fan_out 10,5",
      "launch");
  CHECK(two.at("test_rmse").get<double>() < rmse + 0.1 * std::sqrt(var));
}

TEST_CASE("edge tasks: bad input is one line, nothing written", "[e2e]") {
  test::TempDir dir;
  // A task the partitioning cannot give.
  const std::string plain = test::MakePartitions(dir, "synthetic:tiny", 1, "plain");
  auto r = RunProcess({Bin("gnn-train"), "--standalone", "--part_config", plain, "--task",
                       "edge_class", "--num_epochs", "1"});
  test::ExpectOneLine(r, "gnn-train", "has no edge labels");
  const std::string labelled = test::MakePartitions(dir, kEdgeClass, 1, "labelled");
  r = RunProcess({Bin("gnn-train"), "--standalone", "--part_config", labelled, "--task",
                  "edge_regression", "--num_epochs", "1"});
  test::ExpectOneLine(r, "gnn-train", "--task edge_class");
  r = RunProcess({Bin("gnn-train"), "--standalone", "--part_config", plain,
                  "--exclude_target_edges", "false", "--num_epochs", "1"});
  test::ExpectOneLine(r, "gnn-train", "--exclude_target_edges applies only");
  r = RunProcess({Bin("gnn-train"), "--standalone", "--part_config", plain, "--decoder_edge_feat",
                  "false", "--num_epochs", "1"});
  test::ExpectOneLine(r, "gnn-train", "--decoder_edge_feat applies only");
  // An edge model's inference takes every neighbour: --fan_out is refused.
  const std::string model = dir / "edge.pt";
  REQUIRE(RunProcess({Bin("gnn-train"), "--standalone", "--part_config", labelled, "--task",
                      "edge_class", "--num_epochs", "1", "--save_model", model, "--quiet"})
              .exit_code == 0);
  r = RunProcess({Bin("gnn-train"), "--standalone", "--part_config", labelled, "--inference",
                  "--restore_model_path", model, "--fan_out", "5,5", "--save_prediction_path",
                  dir / "sampled"});
  test::ExpectOneLine(r, "gnn-train", "leave --fan_out unset");
  CHECK_FALSE(PathExists(dir / "sampled"));
  r = RunProcess({Bin("gnn-partition"), "--dataset", kEdgeClass, "--num_parts", "1", "--val_edges",
                  "0.1", "--output", dir / "held"});
  test::ExpectOneLine(r, "gnn-partition", "--val_edges");
  CHECK_FALSE(PathExists(dir / "held"));

  // The chunked format: a label without its train mask.
  auto c = RunProcess({Bin("gnn-dataset"), "--dataset", kEdgeClass, "--write_chunked", "2",
                       "--output", dir / "chunked"});
  REQUIRE(c.exit_code == 0);
  json meta = json::parse(ReadFile(dir / "chunked/metadata.json"));
  meta["edge_data"]["_N:_E:_N"].erase("train_mask");
  WriteFileAtomic(dir / "chunked/metadata.json", meta.dump());
  r = RunProcess({Bin("gnn-partition"), "--dataset", dir / "chunked", "--num_parts", "1",
                  "--output", dir / "pc"});
  test::ExpectOneLine(r, "gnn-partition", "label needs train_mask beside it");
  CHECK_FALSE(PathExists(dir / "pc"));

  // OGB folders: an edge id outside edge.csv.gz, an edge in two splits, a
  // label file without its train split.
  auto w = RunProcess({Bin("gnn-dataset"), "--dataset", kEdgeClass, "--write_ogb", dir / "ogb"});
  REQUIRE(w.exit_code == 0);
  const std::string split = dir / "ogb/split/random/";
  test::WriteGz(split + "edge_valid.csv.gz", "7\n40000\n");
  r = RunProcess(
      {Bin("gnn-partition"), "--dataset", dir / "ogb", "--num_parts", "1", "--output", dir / "p1"});
  test::ExpectOneLine(r, "gnn-partition", "edge_valid.csv.gz");
  CHECK_FALSE(PathExists(dir / "p1"));
  test::WriteGz(split + "edge_valid.csv.gz", "0\n1\n");
  test::WriteGz(split + "edge_test.csv.gz", "1\n");
  r = RunProcess(
      {Bin("gnn-partition"), "--dataset", dir / "ogb", "--num_parts", "1", "--output", dir / "p2"});
  // Edge 0 or 1 is a train edge too, or edge 1 is in valid and test.
  test::ExpectOneLine(r, "gnn-partition", "in another split");
  CHECK_FALSE(PathExists(dir / "p2"));
  std::filesystem::remove(split + "edge_train.csv.gz");
  r = RunProcess(
      {Bin("gnn-partition"), "--dataset", dir / "ogb", "--num_parts", "1", "--output", dir / "p3"});
  test::ExpectOneLine(r, "gnn-partition", "edge_train.csv.gz");
  CHECK_FALSE(PathExists(dir / "p3"));
}

TEST_CASE(
    "edge classification: the decoder reads each edge's own features, standalone and 2 machines",
    "[e2e]") {
  test::Setup s("edgefeat");
  constexpr const char* kWithFeatures =
      "synthetic:nodes=3000,edges=20000,feat=16,classes=8,train=0.2,valid=0.1,etask=class,efeat=4";
  const std::string one = test::MakePartitions(s.dir, kWithFeatures, 1, "one");
  const PartitionConfig c = LoadPartitionConfig(one);
  REQUIRE(c.edge_feature_dim == 4);
  REQUIRE(c.edge_labels);
  const std::vector<std::string> base = {
      "--part_config", one,    "--task",       "edge_class", "--num_epochs", "6",
      "--eval_every",  "1",    "--lr",         "0.01",       "--seed",       "5",
      "--fan_out",     "10,5", "--batch_size", "500",        "--num_hidden", "32"};
  auto with = base;
  with.insert(with.end(), {"--save_model", s.dir / "m.pt"});
  auto r = RunProcess([&] {
    std::vector<std::string> argv = {Bin("gnn-train"), "--standalone"};
    argv.insert(argv.end(), with.begin(), with.end());
    return argv;
  }());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("the decoder reads each edge's 4 features") != std::string::npos);
  const json trained = json::parse(r.out.substr(r.out.rfind('{')));
  const double acc = trained.at("test_acc").get<double>();
  CHECK(acc > 0.5);
  auto without = base;
  without.insert(without.end(), {"--decoder_edge_feat", "false"});
  const json plain = test::RunStandaloneTrainer(without);
  // Different decoders (68 vs 64 inputs): both learn.
  CHECK(plain.at("test_acc").get<double>() > 0.5);

  // Inference feeds the same features to the decoder: the same figures.
  const json inferred =
      test::RunStandaloneTrainer({"--part_config", one, "--inference", "--restore_model_path",
                                  s.dir / "m.pt", "--save_prediction_path", s.dir / "pred"});
  CHECK(inferred.at("test_acc").get<double>() == Approx(acc).epsilon(1e-12));
  // A graph without those edge features cannot feed it: one line.
  const std::string bare = test::MakePartitions(
      s.dir, "synthetic:nodes=3000,edges=20000,feat=16,classes=8,train=0.2,valid=0.1,etask=class",
      1, "bare");
  auto refused = RunProcess({Bin("gnn-train"), "--standalone", "--part_config", bare, "--inference",
                             "--restore_model_path", s.dir / "m.pt", "--save_prediction_path",
                             s.dir / "pred_bare"});
  test::ExpectOneLine(refused, "gnn-train", "decoder reads 4 features per edge");
  CHECK_FALSE(PathExists(s.dir / "pred_bare"));

  // 2 machines: each trainer feeds its partition's edge features.
  s.config = test::MakePartitions(s.dir, kWithFeatures, 2, "two");
  s.graph_name = LoadPartitionConfig(s.config).graph_name;
  const json two = s.Launch(
      "--task edge_class --num_epochs 6 --eval_every 1 --lr 0.01 --seed 5 --fan_out 10,5 "
      "--batch_size 500 --num_hidden 32",
      "launch");
  CHECK(two.at("test_acc").get<double>() > acc - 0.05);
}
