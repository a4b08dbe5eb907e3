// gnn-train --model rgcn on a heterogeneous partitioning (synthetic:mag-small:
// papers with features, authors, institutions and fields of study without),
// run as real processes: accuracy, learnt embeddings, exact resume, errors,
// gnn-sampler processes making the typed batches.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

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

// synthetic:mag-small with DGL's reverse relations, in one partition.
std::string MagSmall(const test::TempDir& dir) {
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", "synthetic:mag-small", "--undirected",
                       "--num_parts", "1", "--output", dir / "mag", "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return dir / "mag/synthetic-mag-small.json";
}

json Rgcn(const std::string& config, std::vector<std::string> extra,
          const std::string& fan_out = "10,10", const std::string& model = "rgcn") {
  std::vector<std::string> args = {
      Bin("gnn-train"), "--standalone", "--quiet", "--model",      model, "--part_config",
      config,           "--num_hidden", "32",      "--batch_size", "256", "--fan_out",
      fan_out,          "--lr",         "0.01"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = RunProcess(args, 900);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return json::parse(out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1));
}

// synthetic:mag-small in `parts` partitions under dir/name.
std::string MagParts(const test::TempDir& dir, int parts, const std::string& name) {
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", "synthetic:mag-small", "--undirected",
                       "--num_parts", std::to_string(parts), "--output", dir / name, "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return dir / (name + "/synthetic-mag-small.json");
}

// The trainer command gnn-launch runs (the binary by its full path).
std::string Trainer(const std::string& flags, const std::string& model = "rgcn") {
  return Bin("gnn-train") + " --model " + model +
         " --num_hidden 32 --batch_size 256 --fan_out 10,10 --lr 0.01 "
         "--num_omp_threads 1 " +
         flags;
}

// gnn-launch's arguments for `machines` loopback machines (2 servers
// each: embedding rows live at server 0, the others serve samples).
std::vector<std::string> LaunchArgs(const test::TempDir& dir, const std::string& config,
                                    int machines, const std::string& train,
                                    const std::vector<std::string>& extra = {}) {
  const std::vector<int> ports = test::FreeLoopbackPortRanges(machines + 1, 2);
  const std::string ip = dir / ("ip-" + std::to_string(ports[0]) + ".txt");
  {
    std::ofstream out(ip);
    for (int m = 0; m < machines; ++m) out << "127.0.0.1 " << ports[static_cast<size_t>(m)] << "\n";
  }
  std::vector<std::string> a = {Bin("gnn-launch"),
                                "--workspace",
                                dir.path(),
                                "--num_trainers",
                                "1",
                                "--num_samplers",
                                "0",
                                "--num_servers",
                                "2",
                                "--part_config",
                                config,
                                "--ip_config",
                                ip,
                                "--master_port",
                                std::to_string(ports[static_cast<size_t>(machines)]),
                                "--grace_s",
                                "3"};
  a.insert(a.end(), extra.begin(), extra.end());
  a.push_back(train);
  return a;
}

json Launch(const test::TempDir& dir, const std::string& config, int machines,
            const std::string& train, const std::vector<std::string>& extra = {}) {
  auto r = RunProcess(LaunchArgs(dir, config, machines, train, extra), 900);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(test::LastLine(r.out));
}

// An inference run's predictions by input id: id -> (logits, pred).
std::map<int64_t, std::pair<std::vector<float>, int64_t>> Predictions(const std::string& dir) {
  const json m = json::parse(ReadFile(dir + "/manifest.json"));
  std::map<int64_t, std::pair<std::vector<float>, int64_t>> out;
  for (const json& s : m.at("shards")) {
    std::vector<int64_t> shape;
    const auto ids = ReadNpy<int64_t>(dir + "/" + s.at("ids").get<std::string>(), {-1});
    const auto logits =
        ReadNpy<float>(dir + "/" + s.at("logits").get<std::string>(), {-1, -1}, &shape);
    const auto pred = ReadNpy<int64_t>(dir + "/" + s.at("pred").get<std::string>(), {-1});
    REQUIRE(ids.size() == pred.size());
    REQUIRE(shape[0] == static_cast<int64_t>(ids.size()));
    for (size_t i = 0; i < ids.size(); ++i) {
      const float* row = logits.data() + i * shape[1];
      CHECK(out.count(ids[i]) == 0);
      out[ids[i]] = {std::vector<float>(row, row + shape[1]), pred[i]};
    }
  }
  return out;
}

}  // namespace

TEST_CASE("distributed RGCN: one machine equals standalone, two machines learn as well", "[e2e]") {
  test::TempDir dir;
  const std::string one = MagParts(dir, 1, "one"), two = MagParts(dir, 2, "two");
  const json alone = Rgcn(one, {"--num_epochs", "2", "--num_omp_threads", "1"});
  // Typed sampling over sockets, features pulled by type, embedding rows at
  // the server with their sparse optimizer: the same model, bit for bit.
  // (Every source row summed by the trainer, --aggregate_at_owner 0, and
  // embedding rows and gradients in float32 on the wire.)
  const json dist1 =
      Launch(dir, one, 1, Trainer("--num_epochs 2 --aggregate_at_owner 0 --wire_dtype float32"));
  INFO(alone.dump() << "\n" << dist1.dump());
  CHECK(dist1["param_checksum"] == alone["param_checksum"]);
  CHECK(dist1["embedding_checksum"] == alone["embedding_checksum"]);
  CHECK(dist1["final_test_acc"] == alone["final_test_acc"]);
  CHECK(dist1["wire_bytes_per_step"].get<double>() > 0);
  // The first layer's means summed where the rows live, embedding rows and
  // gradients as bfloat16 (the defaults): the same model up to rounding,
  // fewer bytes (embedding rows summed at their server, half as wide).
  const json sums1 = Launch(dir, one, 1, Trainer("--num_epochs 2"));
  INFO(sums1.dump());
  CHECK(std::abs(sums1["final_test_acc"].get<double>() - alone["final_test_acc"].get<double>()) <
        0.01);
  CHECK(sums1["wire_bytes_per_step"].get<double>() <
        0.6 * dist1["wire_bytes_per_step"].get<double>());
  // Two partitions, two trainers: each row updated once per step from both
  // trainers' gradients; accuracy as one machine's, with sums or rows.
  const json dist2 = Launch(dir, two, 2, Trainer("--num_epochs 2"));
  const json rows2 = Launch(dir, two, 2, Trainer("--num_epochs 2 --aggregate_at_owner 0"));
  INFO(dist2.dump() << "\n" << rows2.dump());
  CHECK(dist2["num_trainers"] == 2);
  CHECK(std::abs(dist2["final_test_acc"].get<double>() - alone["final_test_acc"].get<double>()) <
        0.03);
  CHECK(std::abs(rows2["final_test_acc"].get<double>() - alone["final_test_acc"].get<double>()) <
        0.03);
  CHECK(dist2["wire_bytes_per_step"].get<double>() <
        0.9 * rows2["wire_bytes_per_step"].get<double>());
  // A checkpoint holds the servers' embedding tables: a relaunch resumes
  // them onto fresh servers and ends where an uninterrupted run does.
  const std::string ckpt = dir / "ckpt";
  Launch(dir, two, 2, Trainer("--num_epochs 1 --checkpoint_dir " + ckpt));
  const json resumed =
      Launch(dir, two, 2, Trainer("--num_epochs 2 --resume --checkpoint_dir " + ckpt));
  CHECK(resumed["param_checksum"] == dist2["param_checksum"]);
  CHECK(resumed["embedding_checksum"] == dist2["embedding_checksum"]);
  CHECK(resumed["epochs_run"] == 1);
}

TEST_CASE("RGCN and RGAT with gnn-sampler processes train exactly as with in-process sampling",
          "[e2e]") {
  test::TempDir dir;
  const std::string two = MagParts(dir, 2, "two");
  const std::vector<std::string> samplers = {"--num_samplers", "2"};
  for (const std::string model : {"rgcn", "rgat"}) {
    INFO(model);
    // Two machines, each trainer with two gnn-sampler children that sample
    // typed blocks (its machine's partition read in place, the other's over
    // sockets) and pull features and labels; the trainer pulls embedding
    // rows. The batches are the in-process ones, so is everything learnt.
    const std::string train =
        Trainer(model == "rgat" ? "--num_epochs 2 --num_heads 4" : "--num_epochs 2", model);
    const json in_process = Launch(dir, two, 2, train);
    const json spawned = Launch(dir, two, 2, train, samplers);
    INFO(in_process.dump() << "\n" << spawned.dump());
    CHECK(spawned["num_trainers"] == 2);
    CHECK(spawned["param_checksum"] == in_process["param_checksum"]);
    CHECK(spawned["embedding_checksum"] == in_process["embedding_checksum"]);
    CHECK(spawned["final_test_acc"] == in_process["final_test_acc"]);
    // RGCN's 2 epochs reach ~0.87 (as standalone); RGAT's are still far
    // from converged (0.45 to 0.75 by seed), so only equality is checked.
    if (model == "rgcn") CHECK(spawned["final_test_acc"].get<double>() > 0.8);
    CHECK(spawned["wire_bytes_per_step"].get<double>() > 0);
  }
  // Resumed at an epoch's end with samplers: as the run never stopped.
  const std::string ckpt = dir / "ckpt";
  const json straight = Launch(dir, two, 2, Trainer("--num_epochs 2"), samplers);
  Launch(dir, two, 2, Trainer("--num_epochs 1 --checkpoint_dir " + ckpt), samplers);
  const json resumed =
      Launch(dir, two, 2, Trainer("--num_epochs 2 --resume --checkpoint_dir " + ckpt), samplers);
  CHECK(resumed["param_checksum"] == straight["param_checksum"]);
  CHECK(resumed["embedding_checksum"] == straight["embedding_checksum"]);
  CHECK(resumed["epochs_run"] == 1);
}

TEST_CASE("standalone RGCN learns from typed neighbours and learnt embeddings", "[e2e]") {
  test::TempDir dir;
  const std::string config = MagSmall(dir);
  // Relations carry the planted signal: sampling them beats the paper's
  // own features alone (no neighbours: only the self-loop weight learns).
  const json with = Rgcn(config, {"--num_epochs", "4"});
  const json alone = Rgcn(config, {"--num_epochs", "4"}, "0,0");
  INFO(with.dump() << "\n" << alone.dump());
  CHECK(with["model"] == "rgcn");
  CHECK(with["steps"].get<int>() > 0);
  CHECK(with["final_test_acc"].get<double>() > alone["final_test_acc"].get<double>() + 0.05);
  // Both sparse optimizers move the embeddings (different tables after
  // the same dense training).
  const json adagrad = Rgcn(config, {"--num_epochs", "1", "--sparse_optimizer", "adagrad"});
  const json adam = Rgcn(config, {"--num_epochs", "1", "--save_model", dir / "rgcn.pt"});
  CHECK(adagrad["embedding_checksum"] != adam["embedding_checksum"]);
  // Batches are sampled ahead on a thread of their own: how many wait
  // ready changes nothing in what is trained.
  const json one_ahead = Rgcn(config, {"--num_epochs", "1", "--prefetch", "1"});
  const json four_ahead = Rgcn(config, {"--num_epochs", "1", "--prefetch", "4"});
  CHECK(one_ahead["param_checksum"] == adam["param_checksum"]);
  CHECK(four_ahead["param_checksum"] == adam["param_checksum"]);
  CHECK(four_ahead["embedding_checksum"] == adam["embedding_checksum"]);
  // --save_model: PyTorch reads RelGraphConv's parameters by name.
  if (RunProcess({"/usr/bin/python3", "-c", "import torch"}).exit_code != 0) {
    GNN_SKIP("python3-torch not installed: --save_model not read back");
  }
  auto py =
      RunProcess({"/usr/bin/python3", "-c",
                  "import sys, torch\n"
                  "d = torch.load(sys.argv[1], weights_only=True)\n"
                  "m = d._metadata['gnn']\n"
                  "assert m['model'] == 'rgcn' and m['num_bases'] == 2, m\n"
                  "assert len(m['etypes']) == d['layers.0.linear_r.coeff'].shape[0], m\n"
                  "w = d['layers.0.linear_r.W']; c = d['layers.0.linear_r.coeff']\n"
                  "assert w.shape == (2, 32, 32) and c.shape == (8, 2), (w.shape, c.shape)\n"
                  "assert d['layers.1.loop_weight'].shape[1] == d['layers.1.h_bias'].shape[0]\n"
                  "assert 'embed.proj_3' in d\n"
                  "print('ok')",
                  dir / "rgcn.pt"},
                 120);
  INFO(py.err);
  CHECK(py.out == "ok\n");
}

TEST_CASE("RGCN resumes exactly: model, Adam state, embeddings and their optimizer", "[e2e]") {
  test::TempDir dir;
  const std::string config = MagSmall(dir);
  for (const std::string opt : {"adam", "adagrad"}) {
    INFO(opt);
    const json whole = Rgcn(config, {"--num_epochs", "2", "--sparse_optimizer", opt});
    const std::string ckpt = dir / ("ckpt-" + opt);
    Rgcn(config, {"--num_epochs", "1", "--sparse_optimizer", opt, "--checkpoint_dir", ckpt,
                  "--checkpoint_every", "7"});
    const json resumed = Rgcn(config, {"--num_epochs", "2", "--sparse_optimizer", opt,
                                       "--checkpoint_dir", ckpt, "--resume"});
    CHECK(resumed["param_checksum"] == whole["param_checksum"]);
    CHECK(resumed["embedding_checksum"] == whole["embedding_checksum"]);
    CHECK(resumed["steps"] == whole["steps"]);
    CHECK(resumed["epochs_run"] == 1);
  }
}

TEST_CASE("gnn-train --model rgcn bad input: one error line, non-zero exit", "[e2e]") {
  test::TempDir dir;
  const std::string config = MagSmall(dir);
  auto expect = [&](std::vector<std::string> args, const std::string& needle) {
    args.insert(args.begin(), Bin("gnn-train"));
    auto r = RunProcess(args, 120);
    INFO(r.err);
    CHECK(r.exit_code > 0);
    CHECK(r.err.find("gnn-train: error: ") != std::string::npos);
    CHECK(r.err.find(needle) != std::string::npos);
    CHECK(r.out.empty());
  };
  expect({"--standalone", "--part_config", config}, "use --model rgcn");
  expect({"--standalone", "--model", "rgcn", "--part_config", config, "--fan_out", "cites:5,3"},
         "gives no fan-out for relation");
  expect({"--standalone", "--model", "rgcn", "--part_config", config, "--fan_out", "likes:5,3"},
         "no relation 'likes'");
  expect({"--standalone", "--model", "rgcn", "--part_config", config, "--fan_out", "5,5,5"},
         "--num_layers is 2");
  expect(
      {"--standalone", "--model", "rgcn", "--part_config", config, "--predict_category", "author"},
      "labels on 'paper'");
  expect({"--standalone", "--model", "rgcn", "--part_config", config, "--sparse_optimizer", "sgd"},
         "--sparse_optimizer must be adagrad or adam");
  expect({"--standalone", "--model", "rgcn", "--part_config", config, "--save_embeddings", "e.npy"},
         "--model rgcn has --save_model");
  // --standalone takes one partition (checked once, for every model).
  expect({"--standalone", "--model", "rgcn", "--part_config", MagParts(dir, 2, "two")},
         "--standalone needs a 1-partition config");
  // A homogeneous partitioning is not for RGCN.
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", "synthetic:tiny", "--num_parts", "1",
                       "--output", dir / "tiny", "--quiet"});
  REQUIRE(r.exit_code == 0);
  expect({"--standalone", "--model", "rgcn", "--part_config", dir / "tiny/synthetic-tiny.json"},
         "needs a heterogeneous partitioning");
}

TEST_CASE(
    "a launched RGCN job whose server dies restarts with its embeddings and ends as if "
    "uninterrupted",
    "[e2e]") {
  test::TempDir dir;
  const std::string two = MagParts(dir, 2, "two");
  const std::string train =
      Trainer("--num_epochs 12 --eval_every 12 --checkpoint_every 3 --checkpoint_dir ");
  const json want = Launch(dir, two, 2, train + "ck-straight");
  const std::string job = "rgcn-kill-" + std::to_string(::getpid());
  test::ChildProcess launcher(
      LaunchArgs(dir, two, 2, train + "ck-kill",
                 {"--max_restarts", "1", "--restart_backoff_s", "0.5", "--job_id", job}),
      dir / "kill");
  REQUIRE(test::WaitUntil(
      [&] {
        return !launcher.Running() || access((dir / "ck-kill/checkpoint.pt").c_str(), F_OK) == 0;
      },
      std::chrono::seconds(120)));
  REQUIRE(launcher.Running());
  // Mid-run: one more checkpoint written after the first.
  REQUIRE(test::WaitForRewrites(dir / "ck-kill/checkpoint.pt", 1, std::chrono::seconds(120),
                                [&] { return launcher.Running(); }));
  // Server 0 of a machine: it holds that partition's embedding rows.
  const std::vector<pid_t> servers = test::JobProcesses(job, 0, "gnn-server");
  REQUIRE(!servers.empty());
  REQUIRE(kill(servers[0], SIGKILL) == 0);
  const auto code = launcher.Wait(std::chrono::seconds(300));
  INFO(launcher.Stderr());
  REQUIRE(code.has_value());
  REQUIRE(*code == 0);
  const json got = json::parse(test::LastLine(launcher.Stdout()));
  CHECK(got["restarts"] == 1);
  CHECK(got["param_checksum"] == want["param_checksum"]);
  CHECK(got["embedding_checksum"] == want["embedding_checksum"]);
  CHECK(got["final_test_acc"] == want["final_test_acc"]);
}

TEST_CASE("RGAT: standalone learns from typed neighbours, one machine equals it, two learn as well",
          "[e2e]") {
  test::TempDir dir;
  const std::string one = MagParts(dir, 1, "one"), two = MagParts(dir, 2, "two");
  auto rgat = [](const std::string& epochs) {
    return std::vector<std::string>{"--num_heads",       "4", "--num_epochs", epochs,
                                    "--num_omp_threads", "1"};
  };
  // Per-relation attention over sockets: the same model, bit for bit.
  const json alone = Rgcn(one, rgat("2"), "10,10", "rgat");
  // (Embedding rows in float32 on the wire, as standalone reads them.)
  const json dist1 =
      Launch(dir, one, 1, Trainer("--num_epochs 2 --num_heads 4 --wire_dtype float32", "rgat"));
  INFO(alone.dump() << "\n" << dist1.dump());
  CHECK(alone["model"] == "rgat");
  CHECK(dist1["param_checksum"] == alone["param_checksum"]);
  CHECK(dist1["embedding_checksum"] == alone["embedding_checksum"]);
  // After 4 epochs (at 2, seeds still differ by 0.3: 0.45 to 0.75), the
  // relations' attention beats the paper's own features alone, and two
  // trainers of 128 seeds per step (one trainer of 256's steps) learn as
  // well as one.
  const json four = Rgcn(one, rgat("4"), "10,10", "rgat");
  const json no_neighbours = Rgcn(one, rgat("4"), "0,0", "rgat");
  const json dist2 = Launch(dir, two, 2,
                            Bin("gnn-train") +
                                " --model rgat --num_hidden 32 --batch_size 128 --fan_out 10,10 "
                                "--lr 0.01 --num_omp_threads 1 --num_epochs 4 --num_heads 4");
  INFO(four.dump() << "\n" << no_neighbours.dump() << "\n" << dist2.dump());
  CHECK(four["final_test_acc"].get<double>() >
        no_neighbours["final_test_acc"].get<double>() + 0.05);
  CHECK(dist2["num_trainers"] == 2);
  CHECK(std::abs(dist2["final_test_acc"].get<double>() - four["final_test_acc"].get<double>()) <
        0.05);
  // --save_model: DGL's GATConv names under HeteroGraphConv's mods.
  Rgcn(one, {"--num_heads", "4", "--num_epochs", "1", "--save_model", dir / "rgat.pt"}, "10,10",
       "rgat");
  if (!PathExists("/usr/bin/python3") ||
      RunProcess({"/usr/bin/python3", "-c", "import torch"}).exit_code != 0) {
    GNN_SKIP("python3-torch not installed: --save_model not read back");
  }
  auto py = RunProcess({"/usr/bin/python3", "-c",
                        "import sys, torch\n"
                        "sd = torch.load(sys.argv[1], weights_only=True)\n"
                        "m = sd._metadata['gnn']\n"
                        "assert m['model'] == 'rgat' and m['num_heads'] == 4, m\n"
                        "assert tuple(sd['layers.0.mods.0.attn_l'].shape) == (1, 4, 8)\n"
                        "assert tuple(sd['layers.1.mods.0.fc.weight'].shape[1:]) == (32,)\n"
                        "assert 'layers.0.loop_weight' in sd and 'layers.0.h_bias' in sd\n"
                        "print('ok')\n",
                        dir / "rgat.pt"});
  INFO(py.err);
  CHECK(py.out == "ok\n");
}

TEST_CASE(
    "RGCN and RGAT inference: by input id on any partitioning, learned embeddings in the file",
    "[e2e]") {
  test::TempDir dir;
  const std::string one = MagParts(dir, 1, "one"), two = MagParts(dir, 2, "two");
  // Trained on 2 machines; the file holds each featureless type's learned
  // rows by input id.
  const std::string model = dir / "m.pt";
  Launch(dir, two, 2, Trainer("--num_epochs 2 --save_model " + model));
  auto infer = [&](const std::string& config, const std::string& out,
                   std::vector<std::string> extra = {}, const std::string& file = "") {
    std::vector<std::string> args = {Bin("gnn-train"),
                                     "--standalone",
                                     "--quiet",
                                     "--inference",
                                     "--part_config",
                                     config,
                                     "--restore_model_path",
                                     file.empty() ? model : file,
                                     "--save_prediction_path",
                                     out};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = RunProcess(args, 300);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(test::LastLine(r.out));
  };
  // Every paper, standalone on 1 partition and over 2 machines (the
  // learned rows put in the servers' tables by input id): the same logits.
  const json alone = infer(one, dir / "p1", {"--save_embed_path", dir / "e1"});
  const json dist = Launch(dir, two, 2,
                           Bin("gnn-train") + " --inference --restore_model_path " + model +
                               " --save_prediction_path " + (dir / "p2") + " --save_embed_path " +
                               (dir / "e2") + " --wire_dtype float32 --num_omp_threads 1");
  INFO(alone.dump() << "\n" << dist.dump());
  const json cfg = json::parse(ReadFile(one));
  int64_t papers = 0, tests = 0;
  for (int p = 0; p < cfg.at("num_parts").get<int>(); ++p)
    tests += cfg.at("part-" + std::to_string(p)).at("num_test").get<int64_t>();
  const auto p1 = Predictions(dir / "p1"), p2 = Predictions(dir / "p2");
  papers = static_cast<int64_t>(p1.size());
  CHECK(alone["nodes_written"] == papers);
  CHECK(dist["nodes_written"] == papers);
  CHECK(alone["ntype"] == "paper");
  REQUIRE(p2.size() == p1.size());
  CHECK(p1.begin()->first == 0);
  CHECK(p1.rbegin()->first == papers - 1);
  double worst = 0;
  for (const auto& [id, row] : p1) {
    const auto& other = p2.at(id);
    REQUIRE(other.first.size() == row.first.size());
    for (size_t j = 0; j < row.first.size(); ++j)
      worst = std::max(worst, static_cast<double>(std::abs(row.first[j] - other.first[j])));
    CHECK(row.second == other.second);
    CHECK(row.second == std::max_element(row.first.begin(), row.first.end()) - row.first.begin());
  }
  CHECK(worst < 1e-5);
  CHECK(alone["test_acc"] == dist["test_acc"]);
  CHECK(alone["test_acc"].get<double>() > 0.6);
  const json manifest = json::parse(ReadFile(dir / "p2/manifest.json"));
  CHECK(manifest["ntype"] == "paper");
  CHECK(manifest["shards"].size() == 2);
  CHECK(manifest["fan_out"] == "every neighbour");
  // Every node of every type's hidden layer, by type and partition: the
  // same rows from 1 partition and from 2 machines.
  const json e1 = json::parse(ReadFile(dir / "e1/manifest.json"));
  const json e2 = json::parse(ReadFile(dir / "e2/manifest.json"));
  CHECK(e1["kind"] == "embeddings");
  CHECK(e1["embed_layer"] == 1);
  CHECK(e1["emb_dim"] == 32);
  CHECK(e2["shards"].size() == 8);  // 4 types x 2 partitions
  for (const std::string type : {"paper", "author", "institution", "field_of_study"}) {
    auto rows = [&](const std::string& d, const json& m) {
      std::map<int64_t, std::vector<float>> out;
      for (const json& sh : m.at("shards")) {
        if (sh.at("ntype") != type) continue;
        std::vector<int64_t> shape;
        const auto ids = ReadNpy<int64_t>(d + "/" + sh.at("ids").get<std::string>(), {-1});
        const auto emb =
            ReadNpy<float>(d + "/" + sh.at("emb").get<std::string>(), {-1, 32}, &shape);
        for (size_t i = 0; i < ids.size(); ++i)
          out[ids[i]].assign(emb.begin() + i * 32, emb.begin() + (i + 1) * 32);
      }
      return out;
    };
    const auto a = rows(dir / "e1", e1), b = rows(dir / "e2", e2);
    INFO(type);
    REQUIRE(!a.empty());
    REQUIRE(a.size() == b.size());
    CHECK(a.rbegin()->first == static_cast<int64_t>(a.size()) - 1);  // the type's input ids
    double diff = 0;
    for (const auto& [id, row] : a) {
      for (size_t j = 0; j < row.size(); ++j)
        diff = std::max(diff, static_cast<double>(std::abs(row[j] - b.at(id)[j])));
    }
    CHECK(diff < 1e-5);
  }
  // --nodes (the papers' input ids) and --node_mask; sampled with --fan_out.
  WriteNpy(dir / "ids.npy", std::vector<int64_t>{7, 3, 3});
  const json some = infer(one, dir / "some", {"--nodes", dir / "ids.npy"});
  CHECK(some["nodes_written"] == 2);
  const auto picked = Predictions(dir / "some");
  // The same logits up to the last bits: two nodes' GEMMs may take another
  // BLAS kernel than 7,364 nodes' (seen on an AVX2-only CPU).
  const std::vector<float>&got = picked.at(3).first, &all = p1.at(3).first;
  REQUIRE(got.size() == all.size());
  for (size_t j = 0; j < got.size(); ++j) CHECK(got[j] == Approx(all[j]).margin(1e-5));
  CHECK(picked.at(3).second == p1.at(3).second);
  const json test = infer(one, dir / "test", {"--node_mask", "test", "--fan_out", "5,5"});
  CHECK(test["nodes_written"] == tests);
  // The saved model is the best validation's epoch, its embedding rows
  // included: inferring the test papers with the training fan-outs draws
  // the evaluation's neighbourhoods and scores the summary's test_acc.
  // (6 epochs: the 5th is the best validation's.) A run resumed from a
  // checkpoint after the best epoch saves the same model.
  const json trained = Rgcn(one, {"--num_epochs", "6", "--save_model", dir / "best.pt"});
  INFO(trained.dump());
  REQUIRE(trained["best_epoch"].get<int>() < trained["epochs"].get<int>());
  CHECK(trained["saved_model_epoch"] == trained["best_epoch"]);
  Rgcn(one, {"--num_epochs", "5", "--checkpoint_dir", dir / "ckpt"});
  const json resumed = Rgcn(one, {"--num_epochs", "6", "--resume", "--checkpoint_dir", dir / "ckpt",
                                  "--save_model", dir / "resumed.pt"});
  CHECK(resumed["saved_model_epoch"] == trained["best_epoch"]);
  for (const std::string file : {"best.pt", "resumed.pt"}) {
    INFO(file);
    const json best = infer(one, dir / ("out-" + file),
                            {"--node_mask", "test", "--fan_out", "10,10"}, dir / file);
    CHECK(best["saved_model_epoch"] == trained["best_epoch"]);
    CHECK(best["test_acc"] == trained["test_acc"]);
    CHECK(best["test_acc"] != trained["final_test_acc"]);
  }
  // RGAT the same way (its per-relation attention over every neighbour).
  Rgcn(one, {"--num_heads", "4", "--num_epochs", "1", "--save_model", dir / "rgat.pt"}, "10,10",
       "rgat");
  auto r =
      RunProcess({Bin("gnn-train"), "--standalone", "--quiet", "--inference", "--part_config", one,
                  "--restore_model_path", dir / "rgat.pt", "--save_prediction_path", dir / "rgat"},
                 300);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(test::LastLine(r.out))["model"] == "rgat");
  // Bad input: one line, nothing written.
  auto fails = [&](std::vector<std::string> extra, const std::string& needle, int code) {
    std::vector<std::string> args = {Bin("gnn-train"),
                                     "--standalone",
                                     "--inference",
                                     "--part_config",
                                     one,
                                     "--restore_model_path",
                                     model,
                                     "--save_prediction_path",
                                     dir / "bad"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto b = RunProcess(args, 120);
    INFO(b.err);
    CHECK(b.exit_code == code);
    CHECK(b.err.find(needle) != std::string::npos);
    CHECK(!PathExists(dir / "bad/manifest.json"));
    CHECK(!PathExists(dir / "bad/part0"));
  };
  WriteNpy(dir / "bad_ids.npy", std::vector<int64_t>{1, papers});
  fails({"--nodes", dir / "bad_ids.npy"}, "id " + std::to_string(papers) + " is not a paper node",
        3);
  fails({"--save_embeddings", dir / "emb.npy"}, "written per node type and partition", 2);
  fails({"--save_embed_path", dir / "emb", "--embed_layer", "3"}, "the model has 2 layers", 2);
  fails({"--fan_out", "5,5,5"}, "has 3 layers", 2);
  // The file read by PyTorch: each featureless type's rows by input id.
  if (!PathExists("/usr/bin/python3") ||
      RunProcess({"/usr/bin/python3", "-c", "import torch"}).exit_code != 0) {
    GNN_SKIP("python3-torch not installed: node_embeddings not read back");
  }
  auto py = RunProcess({"/usr/bin/python3", "-c",
                        "import sys, torch\n"
                        "sd = torch.load(sys.argv[1], weights_only=True)\n"
                        "m = sd._metadata['gnn']\n"
                        "assert set(m['node_embeddings']) == {'author', 'institution', "
                        "'field_of_study'}, m\n"
                        "for t, k in m['node_embeddings'].items():\n"
                        "  assert sd[k].shape[1] == 32 and sd[k].shape[0] > 0, (k, sd[k].shape)\n"
                        "  assert sd[k].abs().sum() > 0\n"
                        "print('ok')\n",
                        model});
  INFO(py.err);
  CHECK(py.out == "ok\n");
}

TEST_CASE(
    "RGCN with typed edge features over servers: one machine equals standalone, samplers and two "
    "machines as in process, inference on any partitioning",
    "[e2e]") {
  test::TempDir dir;
  auto part = [&](int parts, const std::string& name) {
    auto r = RunProcess({Bin("gnn-partition"), "--dataset", "synthetic:mag-small,efeat=3",
                         "--undirected", "--num_parts", std::to_string(parts), "--output",
                         dir / name, "--quiet"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return dir / (name + "/synthetic-mag-small-efeat3.json");
  };
  const std::string one = part(1, "one"), two = part(2, "two");
  // Each sampled edge's features travel with the typed sample (float32):
  // the same model, bit for bit, as standalone.
  const json alone =
      Rgcn(one, {"--num_epochs", "1", "--num_omp_threads", "1", "--edge_feat_mp_op", "concat"});
  const json dist1 =
      Launch(dir, one, 1, Trainer("--num_epochs 1 --wire_dtype float32 --edge_feat_mp_op concat"));
  INFO(alone.dump() << "\n" << dist1.dump());
  CHECK(dist1["param_checksum"] == alone["param_checksum"]);
  CHECK(dist1["embedding_checksum"] == alone["embedding_checksum"]);
  // Two machines: gnn-sampler processes make the batches the trainer
  // makes in process (edge rows in the typed mini-batch), and it learns.
  const std::string model = dir / "m.pt";
  const std::string train = Trainer("--num_epochs 2 --edge_feat_mp_op mul --save_model " + model);
  const json in_process = Launch(dir, two, 2, train);
  const json spawned = Launch(dir, two, 2, train, {"--num_samplers", "2"});
  INFO(in_process.dump() << "\n" << spawned.dump());
  CHECK(spawned["param_checksum"] == in_process["param_checksum"]);
  CHECK(spawned["embedding_checksum"] == in_process["embedding_checksum"]);
  CHECK(in_process["final_test_acc"].get<double>() > 0.8);
  // Inference reads the op from the file, on 2 machines and standalone on
  // 1 partition: the same predictions.
  auto r = RunProcess({Bin("gnn-train"), "--standalone", "--quiet", "--inference", "--part_config",
                       one, "--restore_model_path", model, "--save_prediction_path", dir / "p1"},
                      300);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json inf1 = json::parse(test::LastLine(r.out));
  const json inf2 = Launch(dir, two, 2,
                           Bin("gnn-train") + " --inference --restore_model_path " + model +
                               " --save_prediction_path " + (dir / "p2") +
                               " --wire_dtype float32 --num_omp_threads 1");
  // And with gnn-sampler processes, started before the model file says its
  // messages read edge rows (they are started again, asking for them).
  const json inf3 = Launch(dir, two, 2,
                           Bin("gnn-train") + " --inference --restore_model_path " + model +
                               " --save_prediction_path " + (dir / "p3") +
                               " --wire_dtype float32 --num_omp_threads 1",
                           {"--num_samplers", "1"});
  INFO(inf1.dump() << "\n" << inf2.dump() << "\n" << inf3.dump());
  CHECK(inf1["test_acc"] == inf2["test_acc"]);
  CHECK(inf3["test_acc"] == inf2["test_acc"]);
  const auto p1 = Predictions(dir / "p1"), p2 = Predictions(dir / "p2"),
             p3 = Predictions(dir / "p3");
  REQUIRE(p1.size() == p2.size());
  for (const auto& [id, row] : p1) CHECK(row.second == p2.at(id).second);
  REQUIRE(p3.size() == p2.size());
  for (const auto& [id, row] : p3) CHECK(row.second == p2.at(id).second);
}
