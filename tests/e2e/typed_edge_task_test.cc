// Typed graphs' edge tasks (#54 item 2, --target_etype): one relation's
// edge labels carried by gnn-partition (synthetic ",etask=", chunked
// edge_data label and masks) with the stored edges they belong to, and
// RGCN with the edge decoder trained on them as real processes:
// standalone, one machine equal to it, two machines, gnn-sampler
// processes, exact resume, and bad input as one line.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/npy.h"
#include "graph/hetero.h"
#include "graph/synthetic_hetero.h"
#include "launch_util.h"
#include "partition/config.h"
#include "process_util.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::Bin;
using test::RunProcess;

namespace {

std::string PartitionTyped(const test::TempDir& dir, const std::string& dataset, int parts,
                           const std::string& name) {
  auto r = RunProcess({Bin("gnn-partition"), "--quiet", "--dataset", dataset, "--undirected",
                       "--num_parts", std::to_string(parts), "--output", dir / name},
                      180);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const auto& entry : std::filesystem::directory_iterator(dir / name)) {
    if (entry.path().extension() == ".json") return entry.path().string();
  }
  FAIL("no config in " << (dir / name));
  return "";
}

json Train(const std::string& config, std::vector<std::string> extra) {
  std::vector<std::string> args = {
      Bin("gnn-train"), "--standalone", "--quiet", "--model",      "rgcn",      "--part_config",
      config,           "--num_hidden", "32",      "--batch_size", "256",       "--fan_out",
      "10,10",          "--lr",         "0.01",    "--task",       "edge_class"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = RunProcess(args, 900);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(test::LastLine(r.out));
}

std::string Trainer(const std::string& flags) {
  return Bin("gnn-train") +
         " --model rgcn --task edge_class --num_hidden 32 --batch_size 256 --fan_out 10,10 "
         "--lr 0.01 --num_omp_threads 1 " +
         flags;
}

json Launch(const test::TempDir& dir, const std::string& config, int machines,
            const std::string& train, int samplers = 0) {
  const std::vector<int> ports = test::FreeLoopbackPortRanges(machines + 1, 2);
  const std::string ip = dir / ("ip-" + std::to_string(ports[0]) + ".txt");
  {
    std::ofstream out(ip);
    for (int m = 0; m < machines; ++m) out << "127.0.0.1 " << ports[static_cast<size_t>(m)] << "\n";
  }
  auto r =
      RunProcess({Bin("gnn-launch"), "--workspace", dir.path(), "--num_trainers", "1",
                  "--num_samplers", std::to_string(samplers), "--num_servers", "2", "--part_config",
                  config, "--ip_config", ip, "--master_port",
                  std::to_string(ports[static_cast<size_t>(machines)]), "--grace_s", "3", train},
                 900);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(test::LastLine(r.out));
}

}  // namespace

TEST_CASE(
    "typed edge labels reach every partition with their stored edges, from synthetic and chunked "
    "inputs",
    "[e2e]") {
  test::TempDir dir;
  HeteroDataset d =
      GenerateHeteroSynthetic(ParseHeteroSyntheticSpec("mag-small,etask=class"), 0, 1);
  REQUIRE(d.edge_labeled());
  const size_t rel = static_cast<size_t>(d.edge_task.relation);
  REQUIRE(d.relations[rel].Key() == "paper:cites:paper");
  const std::string config = PartitionTyped(dir, "synthetic:mag-small,etask=class", 2, "two");
  const PartitionConfig c = LoadPartitionConfig(config);
  CHECK(c.edge_labels);
  CHECK(c.target_etype == "paper:cites:paper");
  CHECK(c.num_edge_classes == 4);
  // Every labelled edge is stored once in its relation, with its class and
  // split (4: in none); the reverse relation's copies have split 0.
  std::vector<int> seen(d.relations[rel].src.size(), 0);
  int64_t splits[3] = {0, 0, 0};
  for (int p = 0; p < c.num_parts; ++p) {
    const auto etypes = ReadNpy<int64_t>(c.FilePath(p, kEtypeFile));
    const auto eids = ReadNpy<int64_t>(c.FilePath(p, kOrigEidsFile));
    const auto labels = ReadNpy<int64_t>(c.FilePath(p, kEdgeLabelFile));
    const auto split = ReadNpy<uint8_t>(c.FilePath(p, kEdgeSplitFile));
    REQUIRE(eids.size() == etypes.size());
    REQUIRE(labels.size() == etypes.size());
    REQUIRE(split.size() == etypes.size());
    for (size_t k = 0; k < etypes.size(); ++k) {
      if (static_cast<size_t>(etypes[k]) != rel) {
        REQUIRE(split[k] == 0);
        continue;
      }
      const size_t e = static_cast<size_t>(eids[k]);
      REQUIRE(e < seen.size());
      ++seen[e];
      const uint8_t want = d.edge_task.split[e];
      REQUIRE(split[k] == (want == 0 ? 4 : want));
      REQUIRE(labels[k] == d.edge_task.labels[e]);
      if (want > 0) ++splits[want - 1];
    }
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<int64_t>(seen.size()));
  int64_t want[3] = {0, 0, 0};
  for (uint8_t s : d.edge_task.split) {
    if (s > 0) ++want[s - 1];
  }
  for (int k = 0; k < 3; ++k) {
    CHECK(splits[k] == want[k]);
    CHECK(c.parts[0].num_split_edges[k] + c.parts[1].num_split_edges[k] == want[k]);
  }

  // The chunked form (gnn-dataset --write_chunked) partitions into the same
  // edge files.
  auto w =
      RunProcess({Bin("gnn-dataset"), "--quiet", "--dataset", "synthetic:mag-small,etask=class",
                  "--write_chunked", "2", "--output", dir / "chunks"},
                 180);
  INFO(w.err);
  REQUIRE(w.exit_code == 0);
  const json stats = json::parse(test::LastLine(w.out));
  CHECK(stats["target_etype"] == "paper:cites:paper");
  CHECK(stats["train_edges"] == want[0]);
  const PartitionConfig a = LoadPartitionConfig(
      PartitionTyped(dir, "synthetic:mag-small,etask=class", 1, "from-synthetic"));
  const PartitionConfig b =
      LoadPartitionConfig(PartitionTyped(dir, dir / "chunks", 1, "from-chunks"));
  CHECK(b.target_etype == "paper:cites:paper");
  for (const char* f : {kEdgeLabelFile, kEdgeSplitFile, kOrigEidsFile, "indices.npy"}) {
    INFO(f);
    CHECK(a.parts[0].files.at(f).sha256 == b.parts[0].files.at(f).sha256);
  }
}

TEST_CASE(
    "typed edge classification and regression learn standalone, one machine equals it, two "
    "machines learn as well, gnn-sampler processes change nothing",
    "[e2e]") {
  test::TempDir dir;
  const std::string one = PartitionTyped(dir, "synthetic:mag-small,etask=class", 1, "one");
  const std::string two = PartitionTyped(dir, "synthetic:mag-small,etask=class", 2, "two");
  // The class is both ends' home classes' parity (one edge in ten random):
  // 0.925 at best, 0.25 by chance.
  const json alone = Train(one, {"--num_epochs", "2", "--num_omp_threads", "1"});
  INFO(alone.dump());
  CHECK(alone["task"] == "edge_class");
  CHECK(alone["target_etype"] == "paper:cites:paper");
  CHECK(alone["exclude_target_edges"] == true);
  CHECK(alone["test_acc"].get<double>() > 0.85);
  CHECK(alone["edges_per_s"].get<double>() > 0);
  // Keeping the batch's edges in its neighbourhoods trains another model.
  const json kept = Train(one, {"--num_epochs", "2", "--exclude_target_edges", "false"});
  CHECK(kept["param_checksum"] != alone["param_checksum"]);

  // Every source row summed by the trainer and float32 rows on the wire:
  // the same model, bit for bit.
  const json single =
      Launch(dir, one, 1, Trainer("--num_epochs 2 --aggregate_at_owner 0 --wire_dtype float32"));
  INFO(single.dump());
  CHECK(single["param_checksum"] == alone["param_checksum"]);
  CHECK(single["embedding_checksum"] == alone["embedding_checksum"]);
  CHECK(single["test_acc"] == alone["test_acc"]);

  const json pair = Launch(dir, two, 2, Trainer("--num_epochs 2"));
  INFO(pair.dump());
  CHECK(pair["num_trainers"] == 2);
  CHECK(std::abs(pair["test_acc"].get<double>() - alone["test_acc"].get<double>()) < 0.03);
  const json spawned = Launch(dir, two, 2, Trainer("--num_epochs 2"), 1);
  CHECK(spawned["param_checksum"] == pair["param_checksum"]);
  CHECK(spawned["test_acc"] == pair["test_acc"]);

  // Values: 0.5 (source's class mod 4) - 0.25 (destination's mod 4) +-
  // 0.1; the mean alone is off by about 0.62.
  const std::string values =
      PartitionTyped(dir, "synthetic:mag-small,etask=regression", 1, "values");
  const json reg = Train(values, {"--num_epochs", "2", "--task", "edge_regression"});
  INFO(reg.dump());
  CHECK(reg["task"] == "edge_regression");
  CHECK(reg["test_rmse"].get<double>() < 0.35);
  CHECK(reg.contains("best_val_rmse"));
}

TEST_CASE("typed edge task resumes exactly: model, decoder, embeddings", "[e2e]") {
  test::TempDir dir;
  const std::string config = PartitionTyped(dir, "synthetic:mag-small,etask=class", 1, "one");
  const json whole = Train(config, {"--num_epochs", "2"});
  const std::string ckpt = dir / "ckpt";
  Train(config, {"--num_epochs", "1", "--checkpoint_dir", ckpt, "--checkpoint_every", "7"});
  const json resumed = Train(config, {"--num_epochs", "2", "--checkpoint_dir", ckpt, "--resume"});
  CHECK(resumed["param_checksum"] == whole["param_checksum"]);
  CHECK(resumed["embedding_checksum"] == whole["embedding_checksum"]);
  CHECK(resumed["steps"] == whole["steps"]);
}

TEST_CASE(
    "typed edge inference writes a prediction per chosen edge keyed by its input id, on any "
    "partitioning",
    "[e2e]") {
  test::TempDir dir;
  const HeteroDataset d =
      GenerateHeteroSynthetic(ParseHeteroSyntheticSpec("mag-small,etask=class"), 0, 1);
  const std::string one = PartitionTyped(dir, "synthetic:mag-small,etask=class", 1, "one");
  const std::string two = PartitionTyped(dir, "synthetic:mag-small,etask=class", 2, "two");
  const json trained = Train(one, {"--num_epochs", "1", "--save_model", dir / "m.pt"});
  auto infer = [&](const std::string& config, const std::string& out,
                   std::vector<std::string> extra) {
    std::vector<std::string> args = {Bin("gnn-train"),
                                     "--standalone",
                                     "--quiet",
                                     "--inference",
                                     "--part_config",
                                     config,
                                     "--restore_model_path",
                                     dir / "m.pt",
                                     "--save_prediction_path",
                                     dir / out};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = RunProcess(args, 600);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(test::LastLine(r.out));
  };
  // With the training fan-outs and evaluation batches the test edges are
  // drawn as the training run's evaluation drew them: the same figure.
  const json same = infer(
      one, "same", {"--node_mask", "test", "--fan_out", "10,10", "--batch_size_eval", "1024"});
  INFO(same.dump() << "\n" << trained.dump());
  CHECK(same["test_acc"].get<double>() == Approx(trained["test_acc"].get<double>()).margin(1e-12));
  CHECK(same["target_etype"] == "paper:cites:paper");
  // Every neighbour, on two partitions through two machines: each test
  // edge once, keyed by its line in paper:cites:paper's input.
  const std::vector<int> ports = test::FreeLoopbackPortRanges(3, 2);
  const std::string ip = dir / "ip.txt";
  {
    std::ofstream f(ip);
    for (int m = 0; m < 2; ++m) f << "127.0.0.1 " << ports[static_cast<size_t>(m)] << "\n";
  }
  auto r = RunProcess(
      {Bin("gnn-launch"), "--workspace", dir.path(), "--num_trainers", "1", "--num_samplers", "0",
       "--num_servers", "2", "--part_config", two, "--ip_config", ip, "--master_port",
       std::to_string(ports[2]), "--grace_s", "3",
       Bin("gnn-train") + " --inference --num_omp_threads 1 --restore_model_path " +
           (dir / "m.pt") + " --save_prediction_path " + (dir / "dist") + " --node_mask test"},
      600);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json dist = json::parse(test::LastLine(r.out));
  CHECK(std::abs(dist["test_acc"].get<double>() - same["test_acc"].get<double>()) < 0.02);
  const json m = json::parse(std::ifstream(dir / "dist/manifest.json"));
  CHECK(m["kind"] == "edge_predictions");
  CHECK(m["etype"] == "paper:cites:paper");
  std::vector<int> seen(d.edge_task.split.size(), 0);
  for (const json& sh : m["shards"]) {
    const auto ids = ReadNpy<int64_t>(dir / ("dist/" + sh["edge_ids"].get<std::string>()));
    const auto pred = ReadNpy<int64_t>(dir / ("dist/" + sh["pred"].get<std::string>()));
    REQUIRE(ids.size() == pred.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      REQUIRE((ids[i] >= 0 && ids[i] < static_cast<int64_t>(seen.size())));
      ++seen[static_cast<size_t>(ids[i])];
      CHECK((pred[i] >= 0 && pred[i] < 4));
    }
  }
  for (size_t e = 0; e < seen.size(); ++e) {
    INFO("edge " << e);
    REQUIRE(seen[e] == (d.edge_task.split[e] == 3 ? 1 : 0));
  }
  // --edge_ids: the listed input edges, labelled for a split or not.
  WriteNpy(dir / "ids.npy", std::vector<int64_t>{5, 0, 7, 5});
  const json listed = infer(one, "listed", {"--edge_ids", dir / "ids.npy"});
  CHECK(listed["edges_written"] == 3);
}

TEST_CASE(
    "a typed edge decoder reads the labelled relation's own features, in training and inference",
    "[e2e]") {
  test::TempDir dir;
  // Every relation's edges carry 2 features; paper:cites:paper's labels.
  const std::string config = PartitionTyped(dir, "synthetic:mag-small,efeat=2,etask=class", 1, "f");
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {Bin("gnn-train"), "--standalone",
                                     "--model",        "rgcn",
                                     "--task",         "edge_class",
                                     "--part_config",  config,
                                     "--num_hidden",   "16",
                                     "--fan_out",      "5,5",
                                     "--num_epochs",   "1",
                                     "--batch_size",   "512"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = RunProcess(args, 600);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r;
  };
  const auto with = run({"--save_model", dir / "m.pt"});
  CHECK(with.err.find("the decoder reads each edge's 2 features") != std::string::npos);
  const auto without = run({"--decoder_edge_feat", "false"});
  CHECK(without.err.find("the decoder reads the ends' embeddings only") != std::string::npos);
  const json a = json::parse(test::LastLine(with.out)),
             b = json::parse(test::LastLine(without.out));
  CHECK(a["param_checksum"] != b["param_checksum"]);
  // The file keeps the decoder's width; inference feeds each edge's
  // features, drawing the test edges as the evaluation did.
  auto infer = RunProcess(
      {Bin("gnn-train"), "--standalone", "--quiet", "--inference", "--part_config", config,
       "--restore_model_path", dir / "m.pt", "--save_prediction_path", dir / "preds", "--node_mask",
       "test", "--fan_out", "5,5", "--batch_size_eval", "1024"},
      600);
  INFO(infer.err);
  REQUIRE(infer.exit_code == 0);
  const json m = json::parse(std::ifstream(dir / "preds/manifest.json"));
  CHECK(m["model"]["decoder_edge_feat_dim"] == 2);
  CHECK(json::parse(test::LastLine(infer.out))["test_acc"].get<double>() ==
        Approx(a["test_acc"].get<double>()).margin(1e-12));
}

TEST_CASE("typed edge task bad input: one error line, non-zero exit, nothing written", "[e2e]") {
  test::TempDir dir;
  const std::string config = PartitionTyped(dir, "synthetic:mag-small,etask=class", 1, "one");
  auto train = [&](const std::string& part_config, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        Bin("gnn-train"), "--standalone", "--model", "rgcn",         "--part_config",
        part_config,      "--fan_out",    "5,5",     "--num_epochs", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunProcess(args, 300);
  };
  test::ExpectOneLine(train(config, {"--task", "edge_class", "--target_etype", "writes"}),
                      "gnn-train", "--target_etype writes");
  test::ExpectOneLine(train(config, {"--task", "edge_regression"}), "gnn-train", "edge_class");
  test::ExpectOneLine(train(config, {"--task", "link"}), "gnn-train", "--task");
  const std::string plain = PartitionTyped(dir, "synthetic:mag-small", 1, "plain");
  test::ExpectOneLine(train(plain, {"--task", "edge_class"}), "gnn-train", "no edge labels");

  // Inference of the saved edge model: --nodes is a node model's, an
  // --edge_ids entry that is no edge of the relation is one line.
  auto saved = train(config, {"--task", "edge_class", "--save_model", dir / "m.pt"});
  INFO(saved.err);
  REQUIRE(saved.exit_code == 0);
  auto infer = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {
        Bin("gnn-train"), "--standalone",         "--inference", "--part_config",
        config,           "--restore_model_path", dir / "m.pt",  "--save_prediction_path",
        dir / "preds"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunProcess(args, 300);
  };
  WriteNpy(dir / "ids.npy", std::vector<int64_t>{0, 1});
  test::ExpectOneLine(infer({"--nodes", dir / "ids.npy"}), "gnn-train", "--node_mask");
  WriteNpy(dir / "bad.npy", std::vector<int64_t>{0, 1 << 30});
  test::ExpectOneLine(infer({"--edge_ids", dir / "bad.npy"}), "gnn-train", "1 of its 2 ids");
  CHECK_FALSE(std::filesystem::exists(dir / "preds"));

  // The partitioner: a bad option of the preset.
  auto part = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {Bin("gnn-partition"), "--num_parts", "1", "--output",
                                     dir / "out"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunProcess(args, 180);
  };
  test::ExpectOneLine(part({"--dataset", "synthetic:mag-small,etask=bogus"}), "gnn-partition",
                      "etask=bogus");
  test::ExpectOneLine(part({"--dataset", "synthetic:mag-small,etask=class,etask=class"}),
                      "gnn-partition", "etask=class");
  CHECK_FALSE(std::filesystem::exists(dir / "out"));
  auto ogb = RunProcess({Bin("gnn-dataset"), "--dataset", "synthetic:mag-small,etask=class",
                         "--write_ogb", dir / "ogb"},
                        180);
  test::ExpectOneLine(ogb, "gnn-dataset", "--write_ogb");
  CHECK_FALSE(std::filesystem::exists(dir / "ogb"));
}
