// gnn-train's models beyond GraphSAGE (--model gat, gcn) as processes:
// their recipes' accuracy on Cora and CiteSeer, exact resume, --save_model
// under DGL's parameter names read back by PyTorch, a 2-machine job
// through gnn-launch with sampler processes, and bad flag combinations.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cluster_util.h"
#include "common/fs.h"
#include "launch_util.h"
#include "process_util.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::Bin;
using test::RunProcess;

namespace {

std::string Partition(const test::TempDir& dir, const std::string& dataset, int parts,
                      const std::string& name, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {Bin("gnn-partition"),  "--dataset", dataset,    "--num_parts",
                                   std::to_string(parts), "--output",  dir / name, "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = RunProcess(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::string out = r.out.substr(r.out.rfind("partition config: ") + 18);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

json Train(std::vector<std::string> args) {
  args.insert(args.begin(), {Bin("gnn-train"), "--standalone", "--quiet"});
  auto r = RunProcess(args, 600);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(test::LastLine(r.out));
}

bool HaveTorchPython() {
  return PathExists("/usr/bin/python3") &&
         RunProcess({"/usr/bin/python3", "-c", "import torch"}).exit_code == 0;
}

}  // namespace

TEST_CASE("GAT and GCN reach their recipes' accuracy on Cora and CiteSeer", "[e2e]") {
  struct Bar {
    std::string graph, model;
    double min_mean;  // the recipe's measured 3-seed mean less about 1.5 points
  };
  for (const Bar& bar : {Bar{"cora", "gat", 0.80}, Bar{"cora", "gcn", 0.785},
                         Bar{"citeseer", "gat", 0.675}, Bar{"citeseer", "gcn", 0.66}}) {
    std::string path = test::SharedDataset(bar.graph);
    if (path.empty()) {
      WARN("SKIPPED: ../shared/datasets/" << bar.graph << " not found");
      continue;
    }
    test::TempDir dir;
    const std::string config = Partition(dir, path, 1, "data");
    double sum = 0;
    for (int seed = 0; seed < 3; ++seed) {
      json s =
          Train({"--part_config", config, "--config",
                 std::string(GNN_SOURCE_DIR) + "/configs/" + bar.graph + "_" + bar.model + ".toml",
                 "--seed", std::to_string(seed)});
      CHECK(s.at("model") == bar.model);
      CHECK(s.at("epochs").get<int>() == 40);
      sum += s.at("test_acc").get<double>();
    }
    INFO(bar.graph << " " << bar.model << " mean test accuracy over 3 seeds: " << sum / 3);
    CHECK(sum / 3 >= bar.min_mean);
  }
}

TEST_CASE("GAT and GCN resume to the same model and save DGL-named weights torch.load reads",
          "[e2e]") {
  test::TempDir dir;
  const std::string config = Partition(dir, "synthetic:tiny", 1, "data");
  for (const std::string model : {"gat", "gcn"}) {
    INFO(model);
    std::vector<std::string> base = {"--part_config", config, "--model",      model,
                                     "--batch_size",  "100",  "--seed",       "3",
                                     "--num_hidden",  "8",    "--eval_every", "1"};
    if (model == "gat") base.insert(base.end(), {"--num_heads", "2", "--residual"});
    auto straight = base;
    straight.insert(straight.end(), {"--num_epochs", "3", "--save_model", dir / (model + "1.pt")});
    json a = Train(straight);
    auto first = base;
    first.insert(first.end(), {"--num_epochs", "1", "--checkpoint_dir", dir / (model + "-ck")});
    Train(first);
    auto second = base;
    second.insert(second.end(), {"--num_epochs", "3", "--checkpoint_dir", dir / (model + "-ck"),
                                 "--resume", "--save_model", dir / (model + "2.pt")});
    json b = Train(second);
    CHECK(b.at("epochs_run").get<int>() == 2);
    CHECK(a.at("param_checksum") == b.at("param_checksum"));
    CHECK(a.at("final_test_acc") == b.at("final_test_acc"));
    CHECK(ReadFile(dir / (model + "1.pt")) == ReadFile(dir / (model + "2.pt")));
    // A checkpoint of one model is not resumed as another.
    auto other = base;
    other[3] = model == "gat" ? "gcn" : "gat";
    if (model == "gat") other.resize(other.size() - 3);  // GAT's own flags
    other.insert(other.end(),
                 {"--num_epochs", "4", "--checkpoint_dir", dir / (model + "-ck"), "--resume"});
    other.insert(other.begin(), {Bin("gnn-train"), "--standalone", "--quiet"});
    auto r = RunProcess(other, 300);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("checkpoint") != std::string::npos);
  }
  if (!HaveTorchPython()) GNN_SKIP("python3-torch not installed: --save_model not read back");
  // The state dicts load into modules shaped as DGL's GATConv / GraphConv
  // stacks (synthetic:tiny: 16 features, 4 classes), with torch.load's
  // weights_only=True.
  const std::string script =
      "import sys, torch\n"
      "gat = torch.load(sys.argv[1], weights_only=True)\n"
      "m = gat._metadata['gnn']\n"
      "assert m['model'] == 'gat' and m['num_heads'] == 2 and m['residual'] is True, m\n"
      "assert m['parameter_names'] == 'dgl.nn.GATConv' and m['self_loops'] is True, m\n"
      "want = {'layers.0.fc.weight': (8, 16), 'layers.0.attn_l': (1, 2, 4),\n"
      "        'layers.0.attn_r': (1, 2, 4), 'layers.0.res_fc.weight': (8, 16),\n"
      "        'layers.0.bias': (8,), 'layers.1.fc.weight': (4, 8),\n"
      "        'layers.1.attn_l': (1, 1, 4), 'layers.1.attn_r': (1, 1, 4),\n"
      "        'layers.1.res_fc.weight': (4, 8), 'layers.1.bias': (4,)}\n"
      "assert {k: tuple(v.shape) for k, v in gat.items()} == want, gat.keys()\n"
      "gcn = torch.load(sys.argv[2], weights_only=True)\n"
      "assert gcn._metadata['gnn']['norm'] == 'both'\n"
      "want = {'layers.0.weight': (16, 8), 'layers.0.bias': (8,),\n"
      "        'layers.1.weight': (8, 4), 'layers.1.bias': (4,)}\n"
      "assert {k: tuple(v.shape) for k, v in gcn.items()} == want, gcn.keys()\n"
      "class Conv(torch.nn.Module):\n"
      "  def __init__(s, i, o):\n"
      "    super().__init__(); s.weight = torch.nn.Parameter(torch.empty(i, o))\n"
      "    s.bias = torch.nn.Parameter(torch.empty(o))\n"
      "net = torch.nn.Module(); net.layers = torch.nn.ModuleList([Conv(16, 8), Conv(8, 4)])\n"
      "net.load_state_dict(gcn)\n"
      "print('ok')\n";
  auto py = RunProcess({"/usr/bin/python3", "-c", script, dir / "gat1.pt", dir / "gcn1.pt"});
  INFO(py.err);
  CHECK(py.out == "ok\n");
}

TEST_CASE("gnn-launch trains GAT and GCN on 2 machines with sampler processes", "[e2e]") {
  for (const std::string model : {"gat", "gcn"}) {
    INFO(model);
    test::Setup s(model);
    test::ChildProcess launcher(
        s.Args(s.Train("--num_epochs 3 --model " + model +
                       " --num_hidden 16 --num_heads 2 --lr 0.02 --dropout 0.1 --attn_drop 0")),
        s.dir / "launcher");
    auto code = launcher.Wait(std::chrono::seconds(240));
    REQUIRE(code.has_value());
    INFO(launcher.Stderr());
    REQUIRE(*code == 0);
    json summary = json::parse(test::LastLine(launcher.Stdout()));
    CHECK(summary.at("model") == model);
    CHECK(summary.at("num_trainers").get<int>() == 2);
    // synthetic:tiny's 4 classes: chance is 0.25; one process with these
    // flags reaches 0.70 (GAT) and 0.80 (GCN) in 3 epochs.
    CHECK(summary.at("test_acc").get<double>() > 0.5);
    s.RequireNothingLeft(launcher.pid());
  }
}

TEST_CASE("bad model flag combinations: one line each, before any work", "[e2e]") {
  test::TempDir dir;
  const std::string one = Partition(dir, "synthetic:tiny", 1, "one");
  auto fails = [&](std::vector<std::string> args, const std::string& needle) {
    args.insert(args.begin(), {Bin("gnn-train"), "--standalone"});
    auto r = RunProcess(args, 120);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(needle) != std::string::npos);
    CHECK(r.err.find("epoch") == std::string::npos);  // nothing trained
  };
  fails({"--part_config", one, "--model", "gat", "--num_hidden", "10", "--num_heads", "4"},
        "--num_hidden 10 is the 4 heads' concatenated width: it must be a multiple of --num_heads");
  fails({"--part_config", one, "--model", "gat", "--attn_drop", "1"}, "--attn_drop");
  fails({"--part_config", one, "--model", "gat", "--num_out_heads", "0"}, "--num_out_heads");
  fails({"--part_config", one, "--model", "gin"},
        "--model must be graphsage, gat, gcn, rgcn or rgat");
  const std::string typed = Partition(dir, "synthetic:mag-small", 1, "mag", {"--undirected"});
  fails({"--part_config", typed, "--model", "gat"},
        "gnn-train --model gat (use --model rgcn or rgat)");
  fails({"--part_config", one, "--model", "rgcn"}, "needs a heterogeneous partitioning");
}

TEST_CASE("gnn-train uses OpenBLAS's AVX kernels where OpenBLAS does not know the CPU", "[e2e]") {
  test::TempDir dir;
  const std::string one = Partition(dir, "synthetic:tiny", 1, "one");
  const std::vector<std::string> check = {Bin("gnn-train"), "--standalone", "--part_config", one,
                                          "--check_only"};
  // What OpenBLAS picks by itself (the marker keeps gnn-train from
  // re-executing), and whether this CPU has AVX2.
  auto probe = RunProcess({"/usr/bin/env", "GNN_BLAS_KERNELS_SET=", "OPENBLAS_VERBOSE=2", check[0],
                           check[1], check[2], check[3], check[4]});
  const bool fallback = probe.out.find("Core: Prescott") != std::string::npos ||
                        probe.err.find("Core: Prescott") != std::string::npos;
  const bool avx2 = ReadFile("/proc/cpuinfo").find(" avx2") != std::string::npos;
  auto plain = RunProcess(check);
  INFO(plain.err);
  CHECK(plain.exit_code == 0);  // the re-executed process got every argument
  CHECK(plain.out.find("check out") != std::string::npos);
  const bool noted = plain.err.find("fell back to its Prescott") != std::string::npos;
  CHECK(noted == (fallback && avx2));
  // Re-executed, the process keeps its name (ps, pkill, gnn-launch's checks).
  // It runs far more epochs than a second holds, on any machine, and is
  // stopped once its name is read.
  auto named = RunProcess({"/bin/sh", "-c",
                           "\"$0\" \"$@\" >/dev/null 2>&1 & p=$!; sleep 1; "
                           "cat /proc/$p/comm; kill $p; wait",
                           Bin("gnn-train"), "--standalone", "--part_config", one, "--num_epochs",
                           "1000000", "--quiet"});
  CHECK(named.out == "gnn-train\n");
  // A core type the user chose is left alone.
  auto chosen = RunProcess({"/usr/bin/env", "OPENBLAS_CORETYPE=PRESCOTT", check[0], check[1],
                            check[2], check[3], check[4]});
  CHECK(chosen.exit_code == 0);
  CHECK(chosen.err.find("fell back") == std::string::npos);
}
