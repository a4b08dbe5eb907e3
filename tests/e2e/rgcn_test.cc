// gnn-train --model rgcn on a heterogeneous partitioning (synthetic:mag-small:
// papers with features, authors, institutions and fields of study without),
// run as real processes: accuracy, learnt embeddings, exact resume, errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

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
          const std::string& fan_out = "10,10") {
  std::vector<std::string> args = {
      Bin("gnn-train"), "--standalone", "--quiet", "--model",      "rgcn", "--part_config",
      config,           "--num_hidden", "32",      "--batch_size", "256",  "--fan_out",
      fan_out,          "--lr",         "0.01"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = RunProcess(args, 900);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return json::parse(out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1));
}

}  // namespace

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
  const json adam = Rgcn(config, {"--num_epochs", "1"});
  CHECK(adagrad["embedding_checksum"] != adam["embedding_checksum"]);
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
  expect({"--model", "rgcn", "--part_config", config, "--ip_config", dir / "none.txt"},
         "--standalone only so far");
  // A homogeneous partitioning is not for RGCN.
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", "synthetic:tiny", "--num_parts", "1",
                       "--output", dir / "tiny", "--quiet"});
  REQUIRE(r.exit_code == 0);
  expect({"--standalone", "--model", "rgcn", "--part_config", dir / "tiny/synthetic-tiny.json"},
         "needs a heterogeneous partitioning");
}
