// The real gnn-partition + gnn-train --standalone binaries, run as processes.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/fs.h"
#include "common/npy.h"
#include "process_util.h"
#include "tensorboard_util.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::Bin;
using test::RunProcess;

namespace {

std::string Partition(const test::TempDir& dir, const std::string& dataset, int parts,
                      const std::string& name) {
  auto r =
      RunProcess({Bin("gnn-partition"), "--dataset", dataset, "--num_parts", std::to_string(parts),
                  "--output", dir / name, "--cache_dir", dir / "cache", "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out.substr(r.out.rfind("partition config: ") + 18, std::string::npos);
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

json Train(std::vector<std::string> args) {
  args.insert(args.begin(), {Bin("gnn-train"), "--standalone", "--quiet"});
  auto r = RunProcess(args, 600);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::string out = Trim(r.out);
  return json::parse(out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1));
}

// Runs `body` with `python` after loading the event files of `dir` into
// TensorBoard's own EventAccumulator `acc`.
test::ProcessResult TensorBoardScript(const std::string& python, const std::string& body,
                                      const std::string& dir) {
  const std::string script =
      "import sys\n"
      "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator\n"
      "acc = EventAccumulator(sys.argv[1])\n"
      "acc.Reload()\n" +
      body;
  return RunProcess({python, "-c", script, dir}, 120);
}

void ExpectFailure(std::vector<std::string> args, const std::string& needle) {
  args.insert(args.begin(), Bin("gnn-train"));
  auto r = RunProcess(args, 120);
  INFO(r.err);
  CHECK(r.exit_code > 0);
  CHECK(r.err.find("gnn-train: error: ") != std::string::npos);
  CHECK(r.err.find(needle) != std::string::npos);
  CHECK(r.out.empty());
}

}  // namespace

TEST_CASE("standalone GraphSAGE reaches the accuracy bars on Cora and CiteSeer", "[e2e]") {
  struct Bar {
    std::string name;
    double min_mean;
  };
  for (const Bar& bar : {Bar{"cora", 0.79}, Bar{"citeseer", 0.68}}) {
    std::string path = test::SharedDataset(bar.name);
    if (path.empty()) {
      WARN("SKIPPED: ../shared/datasets/" << bar.name << " not found");
      continue;
    }
    test::TempDir dir;
    std::string config = Trim(Partition(dir, path, 1, "data"));
    double sum = 0;
    for (int seed = 0; seed < 3; ++seed) {
      json s = Train({"--part_config", config, "--config",
                      std::string(GNN_SOURCE_DIR) + "/configs/" + bar.name + ".toml", "--seed",
                      std::to_string(seed)});
      for (const char* key : {"best_val_acc", "test_acc", "final_test_acc", "epochs",
                              "mean_epoch_time_s", "seeds_per_s"}) {
        CHECK(s.contains(key));
      }
      CHECK(s.at("epochs").get<int>() == 40);
      // test_acc comes from the best validation epoch, an evaluated one
      // (every 2nd, configs/*.toml); final_test_acc from the last.
      const int at = s.at("test_acc_epoch").get<int>();
      CHECK(at == s.at("best_epoch").get<int>());
      CHECK((at >= 2 && at <= 40 && at % 2 == 0));
      CHECK(s.at("final_test_acc_epoch").get<int>() == 40);
      sum += s.at("test_acc").get<double>();
    }
    INFO(bar.name << " mean test accuracy over 3 seeds: " << sum / 3);
    CHECK(sum / 3 >= bar.min_mean);
  }
}

TEST_CASE("neighbours matter: 2-layer SAGE beats the no-neighbour model on synthetic:small",
          "[e2e][slow]") {
  test::TempDir dir;
  std::string config = Trim(Partition(dir, "synthetic:small", 1, "data"));
  std::vector<std::string> common = {"--part_config", config, "--num_epochs", "6",
                                     "--lr",          "0.01", "--num_hidden", "32"};
  auto with = common, without = common;
  with.insert(with.end(), {"--fan_out", "10,25"});
  without.insert(without.end(), {"--fan_out", "0,0"});
  double gnn = Train(with).at("test_acc").get<double>();
  double mlp = Train(without).at("test_acc").get<double>();
  INFO("fan_out 10,25: " << gnn << ", fan_out 0,0: " << mlp);
  CHECK(gnn >= mlp + 0.2);
}

TEST_CASE("resume after an interruption ends with the same model", "[e2e]") {
  test::TempDir dir;
  std::string config = Trim(Partition(dir, "synthetic:tiny", 1, "data"));
  std::vector<std::string> base = {"--part_config", config, "--batch_size", "100", "--seed", "7",
                                   "--num_hidden",  "8",    "--eval_every", "1"};
  auto straight = base;
  straight.insert(straight.end(),
                  {"--num_epochs", "4", "--checkpoint_dir", dir / "ck1", "--save_embeddings",
                   dir / "emb1.npy", "--save_model", dir / "m1.pt"});
  json a = Train(straight);

  auto first = base;
  first.insert(first.end(), {"--num_epochs", "2", "--checkpoint_dir", dir / "ck2"});
  Train(first);
  auto second = base;
  second.insert(second.end(), {"--num_epochs", "4", "--checkpoint_dir", dir / "ck2", "--resume",
                               "--save_embeddings", dir / "emb2.npy", "--save_model", dir / "m2.pt",
                               "--metrics_file", dir / "m.jsonl"});
  json b = Train(second);
  CHECK(b.at("epochs_run").get<int>() == 2);
  CHECK(a.at("final_test_acc") == b.at("final_test_acc"));
  // The outputs are of the best validation's epoch, the checkpoint carries
  // its parameters, so the resumed run saves the same files.
  CHECK(a.at("saved_model_epoch") == a.at("best_epoch"));
  CHECK(b.at("saved_model_epoch") == a.at("best_epoch"));
  CHECK(ReadFile(dir / "m1.pt") == ReadFile(dir / "m2.pt"));
  CHECK(ReadFile(dir / "emb1.npy") == ReadFile(dir / "emb2.npy"));
  CHECK(ReadFile(dir / "m1.pt").size() > 0);
  CHECK(ReadFile(dir / "m.jsonl").find("\"type\":\"eval\"") != std::string::npos);

  if (!PathExists("/usr/bin/python3") ||
      RunProcess({"/usr/bin/python3", "-c", "import torch, numpy"}).exit_code != 0) {
    GNN_SKIP("python3-torch not installed: cannot check torch.load");
  }
  // torch.load opens the weights as a state dict of named tensors (DGL
  // SAGEConv names) with torch >= 2.6's default weights_only=True, with
  // what the model is in _metadata["gnn"]; a module of that shape loads it.
  std::string script =
      "import sys, torch, numpy as np\n"
      "a = torch.load(sys.argv[1], weights_only=True); b = torch.load(sys.argv[2])\n"
      "assert sorted(a) == ['layers.0.fc_neigh.weight', 'layers.0.fc_self.bias',"
      " 'layers.0.fc_self.weight', 'layers.1.fc_neigh.weight', 'layers.1.fc_self.bias',"
      " 'layers.1.fc_self.weight'], sorted(a)\n"
      "assert tuple(a['layers.0.fc_self.weight'].shape) == (8, 16)\n"
      "assert all(torch.equal(a[k], b[k]) for k in a)\n"
      "m = a._metadata['gnn']\n"
      "assert m['model'] == 'graphsage' and m['in_feats'] == 16 and m['num_hidden'] == 8, m\n"
      "assert m['num_layers'] == 2 and m['fan_out'] == [10, 25] and m['epochs'] == 4, m\n"
      "assert m['saved_epoch'] == int(sys.argv[4]), m\n"
      "class Conv(torch.nn.Module):  # DGL 2.x's SAGEConv('mean') parameters\n"
      "  def __init__(s, i, o):\n"
      "    super().__init__(); s.fc_neigh = torch.nn.Linear(i, o, bias=False)\n"
      "    s.fc_self = torch.nn.Linear(i, o, bias=True)\n"
      "class Sage(torch.nn.Module):\n"
      "  def __init__(s, m):\n"
      "    super().__init__(); w = [m['in_feats']] + [m['num_hidden']] * (m['num_layers'] - 1)\n"
      "    s.layers = torch.nn.ModuleList(Conv(i, o) for i, o in zip(w, w[1:] + "
      "[m['out_feats']]))\n"
      "net = Sage(m); net.load_state_dict(a)\n"
      "assert torch.equal(net.layers[1].fc_neigh.weight, a['layers.1.fc_neigh.weight'])\n"
      "e = np.load(sys.argv[3]); assert e.shape == (2000, 4) and e.dtype == np.float32\n"
      "print('ok')\n";
  auto py = RunProcess({"/usr/bin/python3", "-c", script, dir / "m1.pt", dir / "m2.pt",
                        dir / "emb1.npy", std::to_string(a.at("saved_model_epoch").get<int>())});
  INFO(py.err);
  CHECK(py.out == "ok\n");
}

TEST_CASE("gnn-train --tensorboard_dir writes the run's curves, readable by TensorBoard",
          "[e2e][python]") {
  test::TempDir dir;
  const std::string config = Trim(Partition(dir, "synthetic:tiny", 1, "data"));
  Train({"--part_config", config, "--num_epochs", "3", "--eval_every", "1", "--log_every", "1",
         "--batch_size", "100", "--tensorboard_dir", dir / "tb"});
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir / "tb")) {
    files.push_back(e.path().string());
  }
  REQUIRE(files.size() == 1);
  CHECK(files[0].find("events.out.tfevents.") != std::string::npos);
  const std::string bytes = test::ReadFileOrEmpty(files[0]);
  for (const char* tag :
       {"train/loss", "train/acc", "epoch/time_s", "eval/val_acc", "eval/test_acc"}) {
    CHECK(bytes.find(tag) != std::string::npos);
  }
  std::string why;
  const std::string python = test::TensorBoardPython(&why);
  if (python.empty()) GNN_SKIP("no Python tensorboard package: " << why);
  const char* script = R"(ev = acc.Scalars("eval/val_acc")
ep = acc.Scalars("epoch/time_s")
loss = acc.Scalars("train/loss")
assert len(ev) == 3 and len(ep) == 3, (len(ev), len(ep))
assert all(0 <= e.value <= 1 for e in ev)
assert [e.step for e in ev] == sorted(e.step for e in ev) and ev[0].step < ev[-1].step
assert len(loss) >= 3 and all(e.value > 0 for e in loss)
print("ok", len(loss))
)";
  auto r = TensorBoardScript(python, script, dir / "tb");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("ok ", 0) == 0);
}

TEST_CASE("gnn-train bad input: one error line, non-zero exit", "[e2e]") {
  test::TempDir dir;
  std::string one = Trim(Partition(dir, "synthetic:tiny", 1, "one"));
  std::string two = Trim(Partition(dir, "synthetic:tiny", 2, "two"));
  SECTION("multi-partition config in standalone mode") {
    ExpectFailure({"--standalone", "--part_config", two}, "--num_parts 1");
  }
  SECTION("fan_out count differs from num_layers") {
    ExpectFailure({"--standalone", "--part_config", one, "--fan_out", "5,5,5"}, "--num_layers");
  }
  SECTION("non-positive batch size") {
    ExpectFailure({"--standalone", "--part_config", one, "--batch_size", "0"}, "--batch_size");
  }
  SECTION("missing config") {
    ExpectFailure({"--standalone", "--part_config", dir / "nope.json"}, "nope.json");
  }
  SECTION("graph name mismatch") {
    ExpectFailure({"--standalone", "--part_config", one, "--graph_name", "cora"}, "cora");
  }
  SECTION("checksum mismatch") {
    std::string feat = dir / "one/part0/feat.npy";
    std::string bytes = ReadFile(feat);
    bytes[bytes.size() - 1] ^= 1;
    std::ofstream(feat, std::ios::binary) << bytes;
    ExpectFailure({"--standalone", "--part_config", one}, "checksum mismatch");
  }
  SECTION("truncated file") {
    std::string feat = dir / "one/part0/feat.npy";
    const std::string full = std::to_string(std::filesystem::file_size(feat));
    std::filesystem::resize_file(feat, 100);
    ExpectFailure({"--standalone", "--part_config", one},
                  "feat.npy: truncated: 100 of " + full + " bytes; copy it again (gnn-copy)");
  }
  SECTION("unreadable checkpoint") {
    MakeDirs(dir / "ck");
    std::ofstream(dir / "ck/checkpoint.pt") << "garbage";
    ExpectFailure(
        {"--standalone", "--part_config", one, "--checkpoint_dir", dir / "ck", "--resume"},
        "checkpoint");
  }
  SECTION("GPU requested on a CPU-only build") {
    // One line: what is missing and what to do (the GPU path compiles with
    // scripts/build-cuda.sh; it has not run on a GPU yet).
    ExpectFailure({"--standalone", "--part_config", one, "--num_gpus", "1"},
                  "--num_gpus 1: this gnn-train was built without CUDA (a CPU LibTorch); the GPU "
                  "build is scripts/build-cuda.sh; use --num_gpus -1 for CPU");
  }
  SECTION("a GPU feature cache without a GPU") {
    ExpectFailure({"--standalone", "--part_config", one, "--gpu_cache_mb", "64"},
                  "--gpu_cache_mb 64 keeps feature rows on a GPU: it needs --num_gpus >= 1");
    ExpectFailure({"--standalone", "--part_config", one, "--gpu_cache_mb", "-2"},
                  "--gpu_cache_mb must be >= 0 (or -1: half the GPU's free memory)");
  }
}

TEST_CASE("gnn-train --task link: summary keys and embeddings file and bad input", "[e2e]") {
  test::TempDir dir;
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", "synthetic:tiny", "--num_parts", "1",
                       "--val_edges", "0.1", "--output", dir / "held", "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string held = dir / "held/synthetic-tiny.json";
  const std::string plain = Trim(Partition(dir, "synthetic:tiny", 1, "plain"));
  const std::vector<std::string> quick = {"--task",
                                          "link",
                                          "--remove_edge",
                                          "--num_epochs",
                                          "1",
                                          "--batch_size",
                                          "2000",
                                          "--num_hidden",
                                          "8",
                                          "--eval_every",
                                          "1",
                                          "--num_omp_threads",
                                          "1"};

  SECTION("held-out edges give AUC and MRR; embeddings are saved in input order") {
    std::vector<std::string> args = {"--part_config", held, "--save_embeddings", dir / "emb.npy"};
    args.insert(args.end(), quick.begin(), quick.end());
    json s = Train(args);
    CHECK(s.at("task") == "link");
    for (const char* key :
         {"embedding_lr_val_acc", "embedding_lr_test_acc", "link_auc", "link_mrr", "edges_per_s"}) {
      INFO(key);
      REQUIRE(s.at(key).is_number());
      CHECK(s.at(key).get<double>() > 0);
    }
    CHECK(s.at("link_auc").get<double>() <= 1);
    CHECK(s.at("link_mrr").get<double>() <= 1);
    NpyHeader h = ReadNpyHeader(dir / "emb.npy");
    CHECK(h.shape == std::vector<int64_t>{2000, 8});
  }
  SECTION("without --val_edges the link metrics are null, the rest is reported") {
    std::vector<std::string> args = {"--part_config", plain};
    args.insert(args.end(), quick.begin(), quick.end());
    json s = Train(args);
    CHECK(s.at("link_auc").is_null());
    CHECK(s.at("link_mrr").is_null());
    CHECK(s.at("embedding_lr_test_acc").get<double>() > 0);
  }
  SECTION("bad flags") {
    ExpectFailure({"--standalone", "--part_config", held, "--task", "edges"}, "--task");
    ExpectFailure({"--standalone", "--part_config", held, "--task", "link", "--num_negs", "0"},
                  "--num_negs");
    ExpectFailure({"--standalone", "--part_config", held, "--remove_edge"}, "only to --task link");
    ExpectFailure({"--standalone", "--part_config", held, "--num_negs", "3"},
                  "only to --task link");
    auto p = RunProcess({Bin("gnn-partition"), "--dataset", "synthetic:tiny", "--val_edges", "1.5",
                         "--output", dir / "bad"});
    CHECK(p.exit_code == 2);
    CHECK(p.err.find("--val_edges") != std::string::npos);
  }
}

namespace {

// gnn-train --standalone with gnn-launch's restart environment.
test::ProcessResult Restarted(const std::vector<std::string>& args, int64_t resume_step) {
  std::vector<std::string> argv = {"/usr/bin/env", "GNN_RESTART=1",
                                   "GNN_RESUME_STEP=" + std::to_string(resume_step),
                                   Bin("gnn-train"), "--standalone"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, 300);
}

json LastJson(const test::ProcessResult& r) {
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::string out = Trim(r.out);
  return json::parse(out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1));
}

}  // namespace

TEST_CASE("a restart takes only a checkpoint its job wrote, at least as far as the launcher saw",
          "[e2e]") {
  test::TempDir dir;
  const std::string config = Trim(Partition(dir, "synthetic:tiny", 1, "data"));
  const std::vector<std::string> base = {"--part_config",    config,     "--batch_size", "100",
                                         "--num_hidden",     "8",        "--eval_every", "0",
                                         "--checkpoint_dir", dir / "ck", "--seed",       "1"};
  // An earlier job leaves a checkpoint after 2 epochs (4 steps each).
  auto first = base;
  first.insert(first.end(), {"--num_epochs", "2"});
  REQUIRE(Train(first).at("steps") == 8);
  auto next = base;
  next.insert(next.end(), {"--num_epochs", "3"});
  // The launcher saw no checkpoint of this job: the file is someone else's.
  test::ProcessResult r = Restarted(next, -1);
  CHECK(LastJson(r).at("epochs_run") == 3);
  CHECK(r.err.find("ignoring") != std::string::npos);
  CHECK(r.err.find("not written by this job (it wrote none yet)") != std::string::npos);
  // It saw step 8 (or earlier): the file at step 8 (now 12) is this job's.
  r = Restarted(next, 8);
  CHECK(r.err.find("ignoring") == std::string::npos);
  CHECK(LastJson(r).at("epochs_run") == 0);  // the checkpoint above ended epoch 3
  // It saw a newer one than the file: the file is older than this job's.
  r = Restarted(next, 13);
  CHECK(r.err.find("its newest is step 13") != std::string::npos);
  CHECK(LastJson(r).at("epochs_run") == 3);
}

TEST_CASE("a mid-epoch checkpoint cut for another batch count restarts that epoch at batch 0",
          "[e2e]") {
  test::TempDir dir;
  const std::string config = Trim(Partition(dir, "synthetic:tiny", 1, "data"));
  const std::vector<std::string> base = {Bin("gnn-train"),     "--standalone",
                                         "--part_config",      config,
                                         "--num_hidden",       "8",
                                         "--eval_every",       "0",
                                         "--checkpoint_dir",   dir / "ck",
                                         "--checkpoint_every", "1"};
  // Killed after a checkpoint; one inside an epoch is the usual case (40
  // batches per epoch), an epoch end is retried.
  std::string resumed;
  for (int attempt = 0; attempt < 5 && resumed.empty(); ++attempt) {
    std::filesystem::remove_all(dir / "ck");
    auto args = base;
    args.insert(args.end(), {"--batch_size", "10", "--num_epochs", "400"});
    test::ChildProcess run(args, dir / ("run" + std::to_string(attempt)));
    REQUIRE(test::WaitUntil([&] { return !run.Running() || PathExists(dir / "ck/checkpoint.pt"); },
                            std::chrono::seconds(60)));
    // A few steps on (a checkpoint every step), most likely inside an epoch.
    REQUIRE(test::WaitForRewrites(dir / "ck/checkpoint.pt", 3, std::chrono::seconds(60),
                                  [&] { return run.Running(); }));
    run.Kill();
    // The warning comes with the resume; no epoch needs to run after it.
    auto again = base;
    again.insert(again.end(), {"--batch_size", "20", "--resume", "--num_epochs", "1"});
    const test::ProcessResult r = RunProcess(again, 300);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const size_t at = r.err.find(" batch ", r.err.find("resumed from"));
    REQUIRE(at != std::string::npos);
    if (std::stoll(r.err.substr(at + 7)) > 0) resumed = r.err;
  }
  REQUIRE(!resumed.empty());
  CHECK(resumed.find("cut for 1 trainers in 40 batches, now 1 in 20") != std::string::npos);
  CHECK(resumed.find("starts again at batch 0") != std::string::npos);
}

TEST_CASE("after a resume the metrics file and TensorBoard hold every step once", "[e2e][python]") {
  test::TempDir dir;
  const std::string config = Trim(Partition(dir, "synthetic:tiny", 1, "data"));
  const std::vector<std::string> base = {Bin("gnn-train"),     "--standalone",
                                         "--part_config",      config,
                                         "--num_hidden",       "8",
                                         "--eval_every",       "0",
                                         "--log_every",        "1",
                                         "--batch_size",       "10",
                                         "--num_epochs",       "20",
                                         "--checkpoint_dir",   dir / "ck",
                                         "--checkpoint_every", "25",
                                         "--metrics_file",     dir / "m.jsonl",
                                         "--tensorboard_dir",  dir / "tb"};
  auto read_steps = [&] {
    std::vector<int64_t> steps;
    std::ifstream in(dir / "m.jsonl");
    for (std::string line; std::getline(in, line);) {
      const json j = json::parse(line);
      if (j.at("type") == "step") steps.push_back(j.at("global_step").get<int64_t>());
    }
    return steps;
  };
  // Killed some steps after a checkpoint (800 steps in all, one checkpoint
  // every 25 and at each epoch's end): those steps are in both files. A
  // kill that lands between a checkpoint and its step's metrics line leaves
  // nothing to drop: that attempt is done again.
  bool replayed = false;
  for (int attempt = 0; attempt < 5 && !replayed; ++attempt) {
    std::filesystem::remove_all(dir / "ck");
    std::filesystem::remove_all(dir / "tb");
    std::filesystem::remove(dir / "m.jsonl");
    {
      test::ChildProcess run(base, dir / ("run" + std::to_string(attempt)));
      REQUIRE(
          test::WaitUntil([&] { return !run.Running() || PathExists(dir / "ck/checkpoint.pt"); },
                          std::chrono::seconds(60)));
      REQUIRE(test::WaitForRewrites(dir / "ck/checkpoint.pt", 1, std::chrono::seconds(60),
                                    [&] { return run.Running(); }));
      run.Kill();
    }
    const std::vector<int64_t> before = read_steps();
    auto again = base;
    again.push_back("--resume");
    const test::ProcessResult r = RunProcess(again, 300);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const size_t at = r.err.find("(step ", r.err.find("resumed from"));
    REQUIRE(at != std::string::npos);
    const int64_t resumed = std::stoll(r.err.substr(at + 6));
    replayed = !before.empty() && before.back() > resumed;
  }
  REQUIRE(replayed);  // the interrupted run went past its checkpoint
  // Every "step" record's global step once, and no gap, to the end.
  const std::vector<int64_t> steps = read_steps();
  REQUIRE(steps.size() == 800);
  for (size_t i = 0; i < steps.size(); ++i) CHECK(steps[i] == static_cast<int64_t>(i) + 1);

  std::string why;
  const std::string python = test::TensorBoardPython(&why);
  if (python.empty()) GNN_SKIP("no Python tensorboard package: " << why);
  const char* script = R"(steps = [e.step for e in acc.Scalars("train/loss")]
breaks = [(a, b) for a, b in zip(steps, steps[1:]) if b != a + 1]
assert steps[:1] == [1] and not breaks, (len(steps), breaks[:5], sorted(__import__("os").listdir(sys.argv[1])))
print("ok", len(steps))
)";
  auto py = TensorBoardScript(python, script, dir / "tb");
  INFO(py.err);
  CHECK(py.exit_code == 0);
  CHECK(py.out == "ok 800\n");
}

TEST_CASE("an unknown key in a --config file fails as an unknown flag does, with a suggestion",
          "[e2e]") {
  test::TempDir dir;
  auto last_line = [](std::string err) {
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return err.substr(err.rfind('\n') == std::string::npos ? 0 : err.rfind('\n') + 1);
  };
  auto train = [&](std::vector<std::string> args) {
    args.insert(args.begin(), Bin("gnn-train"));
    return RunProcess(args);
  };
  WriteFileAtomic(dir / "typo.toml", "num_epoch = 3\nbatch_size = 10\n");
  auto r = train({"--config", dir / "typo.toml", "--standalone"});
  CHECK(r.exit_code == 2);
  CHECK(last_line(r.err) == "gnn-train: error: " + (dir / "typo.toml") +
                                ": unknown key 'num_epoch' (did you mean num_epochs?)");
  WriteFileAtomic(dir / "section.toml", "[train]\nnum_epochs = 3\n");
  r = train({"--config", dir / "section.toml", "--standalone"});
  CHECK(r.exit_code == 2);
  CHECK(last_line(r.err) == "gnn-train: error: " + (dir / "section.toml") +
                                ": a [train] section is not read: put its keys at the top, "
                                "before any section");
  r = train({"--standalone", "--num_epoch", "3"});
  CHECK(r.exit_code == 2);
  CHECK(last_line(r.err) ==
        "gnn-train: error: unknown flag --num_epoch (did you mean --num_epochs?) (see --help)");
  r = train({"--standalone", "--num-epoch=3", "--fanout", "5,5"});
  CHECK(last_line(r.err).find("unknown flag --num-epoch (did you mean --num_epochs?); also "
                              "unknown: --fanout (did you mean --fan_out?)") != std::string::npos);
  // Every config the project ships parses (it reaches the missing partition).
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(GNN_SOURCE_DIR) + "/configs")) {
    r = train({"--config", e.path().string(), "--part_config", dir / "none.json", "--standalone"});
    INFO(e.path() << ": " << r.err);
    CHECK(last_line(r.err).find("none.json") != std::string::npos);
  }
}

TEST_CASE(
    "the folders of --save_model and --save_embeddings are checked before training, and a failed "
    "final write still prints the summary",
    "[e2e]") {
  test::TempDir dir;
  const std::string config = Trim(Partition(dir, "synthetic:tiny", 1, "data"));
  auto last_line = [](std::string err) {
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return err.substr(err.rfind('\n') == std::string::npos ? 0 : err.rfind('\n') + 1);
  };
  for (const std::string flag : {"--save_model", "--save_embeddings"}) {
    auto r = RunProcess({Bin("gnn-train"), "--standalone", "--part_config", config, "--num_epochs",
                         "2", flag, dir / "missing/out.bin"});
    INFO(r.err);
    CHECK(r.exit_code == 3);
    CHECK(last_line(r.err) == "gnn-train: error: " + flag + " " + (dir / "missing/out.bin") +
                                  ": its folder " + (dir / "missing") +
                                  " does not exist (create it first)");
    CHECK(r.err.find("Epoch Time") == std::string::npos);  // before any epoch
    CHECK(r.out.empty());
  }
  // The write fails at the end (files above 512 bytes refused: EFBIG): the
  // summary comes first, then the one error line, and no file is left.
  auto r = RunProcess({"/bin/sh", "-c",
                       "trap '' XFSZ; ulimit -f 1; exec '" + Bin("gnn-train") +
                           "' --standalone --quiet --part_config '" + config +
                           "' --num_epochs 1 --save_model '" + (dir / "m.pt") + "'"});
  INFO(r.err);
  CHECK(r.exit_code == 3);
  const json summary = json::parse(Trim(r.out));
  CHECK(summary.at("epochs").get<int>() == 1);
  CHECK(summary.at("output_error").get<std::string>().find(dir / "m.pt") != std::string::npos);
  CHECK(last_line(r.err).rfind("gnn-train: error: ", 0) == 0);
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    CHECK(e.path().filename().string().rfind("m.pt", 0) != 0);
  }
}

TEST_CASE("DGL's train_dist.py flags are accepted with their meaning", "[e2e]") {
  test::TempDir dir;
  const std::string config = Trim(Partition(dir, "synthetic:tiny", 1, "data"));
  auto train = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {Bin("gnn-train"), "--standalone",
                                     "--part_config",  config,
                                     "--num_epochs",   "1",
                                     "--eval_every",   "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunProcess(args, 300);
  };
  // synthetic:tiny has 4 classes.
  auto r = train({"--n_classes", "4", "--backend", "gloo", "--local-rank", "0", "--pad-data"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("--local_rank 0 is ignored: gnn-launch gives each trainer its rank") !=
        std::string::npos);
  r = train({"--n_classes", "7"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--n_classes 7, but ") != std::string::npos);
  CHECK(r.err.find(" has 4 classes") != std::string::npos);
  r = train({"--backend", "nccl"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--backend nccl needs the GPU path") != std::string::npos);
  CHECK(r.out.empty());
}
