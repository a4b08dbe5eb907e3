// Sparse features end to end (#53 items 1 and 3) as processes: a
// bag-of-words graph is partitioned into CSR files (chosen by
// --feature_format auto, said in the report and the config) at a small
// fraction of the dense files' bytes; gnn-train reads them standalone with
// a sparse first layer and trains as the dense partition of the same graph
// does (same batches: accuracy within rounding, and one model's logits on
// both partitions within 1e-5); servers serve them on 2 machines as they
// are stored (the dense partitioning's accuracy, a tenth of its bytes) and
// gnn-serve answers from them as offline inference does; a
// corrupt CSR file is one line before any work.
#include <httplib.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "cluster_util.h"
#include "common/fs.h"
#include "common/npy.h"
#include "common/sha256.h"
#include "launch_util.h"
#include "partition/config.h"
#include "process_util.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::Bin;
using test::RunProcess;

namespace {

// 0.75 % of the entries set; words carry the class.
constexpr const char* kBow =
    "synthetic:nodes=3000,edges=15000,feat=2000,classes=6,train=0.3,valid=0.1,bow=15";

test::ProcessResult Partition(const std::string& out, std::vector<std::string> extra,
                              const std::string& parts = "1") {
  std::vector<std::string> argv = {
      Bin("gnn-partition"), "--dataset", kBow, "--num_parts", parts, "--output", out,
      "--balance_train"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunProcess(argv, 300);
}

int64_t FileBytes(const PartitionConfig& c, int part) {
  int64_t total = 0;
  for (const auto& [name, f] : c.parts[static_cast<size_t>(part)].files) {
    if (name.rfind("feat", 0) == 0) total += static_cast<int64_t>(f.bytes);
  }
  return total;
}

}  // namespace

TEST_CASE(
    "sparse features: CSR partition files, a sparse first layer standalone as the dense path "
    "trains, 2 machines, and corrupt files one line",
    "[e2e]") {
  test::Setup s("sparsefeat");
  const std::string name = "synthetic-n3000-e15000-bow";
  // auto picks sparse for this graph and says why.
  const auto auto_run = Partition(s.dir / "sparse", {});
  INFO(auto_run.err);
  REQUIRE(auto_run.exit_code == 0);
  CHECK(auto_run.out.find("node features sparse (0.7") != std::string::npos);
  CHECK(auto_run.err.find("at most 10 %") != std::string::npos);
  const std::string sparse_json = s.dir / ("sparse/" + name + ".json");
  const PartitionConfig sc = LoadPartitionConfig(sparse_json);
  CHECK(sc.sparse_features);
  CHECK(sc.feature_binary);
  CHECK(!PathExists(s.dir / "sparse/part0/feat.npy"));
  CHECK(PathExists(s.dir / "sparse/part0/feat_indices.npy"));
  CHECK(sc.report.at("feature_format") == "sparse");

  const auto dense_run = Partition(s.dir / "dense", {"--feature_format", "dense"});
  REQUIRE(dense_run.exit_code == 0);
  const std::string dense_json = s.dir / ("dense/" + name + ".json");
  const PartitionConfig dc = LoadPartitionConfig(dense_json);
  CHECK(!dc.sparse_features);
  // The feature files take at most 5 % of the dense one's bytes.
  INFO("sparse " << FileBytes(sc, 0) << " bytes, dense " << FileBytes(dc, 0));
  CHECK(FileBytes(sc, 0) * 20 <= FileBytes(dc, 0));

  // Standalone: the same batches through a sparse and a dense first layer.
  for (const std::string model : {"graphsage", "gcn", "gat"}) {
    INFO(model);
    const std::vector<std::string> base = {
        "--model", model, "--num_epochs", "6",    "--lr",         "0.01", "--batch_size", "200",
        "--seed",  "5",   "--fan_out",    "5,10", "--eval_every", "1"};
    auto sparse_args = base;
    const std::string saved = s.dir / (model + ".pt");
    sparse_args.insert(sparse_args.end(), {"--part_config", sparse_json, "--save_model", saved});
    const json sp = test::RunStandaloneTrainer(sparse_args);
    auto dense_args = base;
    dense_args.insert(dense_args.end(), {"--part_config", dense_json});
    const json de = test::RunStandaloneTrainer(dense_args);
    CHECK(sp.at("test_acc").get<double>() > 0.6);
    CHECK(std::abs(sp.at("test_acc").get<double>() - de.at("test_acc").get<double>()) <= 0.01);
    CHECK(std::abs(sp.at("best_val_acc").get<double>() - de.at("best_val_acc").get<double>()) <=
          0.01);
    // One model's logits over either partition (layer-wise inference):
    // equal within float rounding.
    for (const std::string& which : {std::string("sparse"), std::string("dense")}) {
      test::RunStandaloneTrainer({"--part_config", which == "sparse" ? sparse_json : dense_json,
                                  "--inference", "--restore_model_path", saved,
                                  "--save_prediction_path", s.dir / ("pred-" + model + which)});
    }
    std::vector<int64_t> shape;
    const std::vector<float> a =
        ReadNpy<float>(s.dir / ("pred-" + model + "sparse/part0/logits.npy"), {}, &shape);
    const std::vector<float> b =
        ReadNpy<float>(s.dir / ("pred-" + model + "dense/part0/logits.npy"), shape);
    REQUIRE(a.size() == b.size());
    float worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    CHECK(worst <= 1e-5f * 8);
  }

  // 2 machines: the servers read the CSR files.
  const auto two = Partition(s.dir / "two", {}, "2");
  REQUIRE(two.exit_code == 0);
  s.config = s.dir / ("two/" + name + ".json");
  s.graph_name = name;
  REQUIRE(LoadPartitionConfig(s.config).sparse_features);
  const std::string args = "--num_epochs 6 --lr 0.01 --batch_size 200 --seed 5 --fan_out 5,10";
  const json launched = s.Launch(args, "launch");
  CHECK(launched.at("test_acc").get<double>() > 0.6);
  // The dense partitioning of the same graph over 2 machines: the same
  // batches (its first layer summed at the owners), at least 10x the bytes
  // on the wire (#53 item 2: sparse rows travel as they are stored).
  const auto two_dense = Partition(s.dir / "two-dense", {"--feature_format", "dense"}, "2");
  REQUIRE(two_dense.exit_code == 0);
  s.config = s.dir / ("two-dense/" + name + ".json");
  const json launched_dense = s.Launch(args, "launch-dense");
  CHECK(std::abs(launched.at("test_acc").get<double>() -
                 launched_dense.at("test_acc").get<double>()) <= 0.01);
  const double sparse_wire = launched.at("wire_bytes_per_step").get<double>();
  const double dense_wire = launched_dense.at("wire_bytes_per_step").get<double>();
  INFO("bytes per step: sparse " << sparse_wire << ", dense " << dense_wire);
  CHECK(sparse_wire > 0);
  CHECK(sparse_wire * 10 <= dense_wire);

  // gnn-serve on the 2 sparse machines (its batches carry sparse rows
  // from both servers) answers as the 1-part offline inference does.
  {
    s.config = s.dir / ("two/" + name + ".json");
    const std::vector<int64_t> ids = ReadNpy<int64_t>(s.dir / "pred-graphsagesparse/part0/ids.npy");
    std::vector<int64_t> shape;
    const std::vector<float> logits =
        ReadNpy<float>(s.dir / "pred-graphsagesparse/part0/logits.npy", {}, &shape);
    const int port = test::FreeLoopbackPortRanges(1, 2).at(0);
    test::ChildProcess launcher(
        s.Args(Bin("gnn-serve") + " --restore_model_path " + (s.dir / "graphsage.pt") +
               " --http_port " + std::to_string(port) +
               " --wire_dtype float32 --num_omp_threads 1"),
        s.dir / "launch-serve");
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60);
    INFO(launcher.Stderr());
    REQUIRE(test::WaitUntil(
        [&] {
          auto r = c.Get("/v2/health/ready");
          return r && r->status == 200;
        },
        std::chrono::seconds(60)));
    const json request = {{"inputs",
                           {{{"name", "node_ids"},
                             {"datatype", "INT64"},
                             {"shape", {static_cast<int64_t>(ids.size())}},
                             {"data", ids}}}},
                          {"outputs", {{{"name", "logits"}}}}};
    auto r = c.Post(("/v2/models/" + name + "/infer").c_str(), request.dump(), "application/json");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    const std::vector<float> served =
        json::parse(r->body).at("outputs")[0].at("data").get<std::vector<float>>();
    REQUIRE(served.size() == logits.size());
    float worst = 0;
    for (size_t i = 0; i < served.size(); ++i)
      worst = std::max(worst, std::abs(served[i] - logits[i]));
    CHECK(worst <= 1e-5f * 8);
    launcher.Signal(SIGINT);
    REQUIRE(launcher.Wait(std::chrono::seconds(30)).has_value());
    s.RequireNothingLeft(launcher.pid());
  }

  // A column id out of range, in a file whose checksum the config agrees
  // with: one line naming the file and row, before any training.
  std::vector<int64_t> shape;
  std::vector<int32_t> idx = ReadNpy<int32_t>(s.dir / "sparse/part0/feat_indices.npy", {}, &shape);
  idx[5] = 2000;
  const std::string bad = s.dir / "sparse/part0/feat_indices.npy";
  const WrittenFile w = WriteNpy(bad, idx.data(), shape);
  json cj = json::parse(ReadFile(sparse_json));
  cj["part-0"]["files"]["feat_indices.npy"] = {{"bytes", w.bytes}, {"sha256", w.sha256}};
  WriteFileAtomic(sparse_json, cj.dump(2));
  test::ExpectOneLine(RunProcess({Bin("gnn-train"), "--standalone", "--part_config", sparse_json,
                                  "--num_epochs", "1"}),
                      "gnn-train", "column id 2000 is outside 0..1999");
  // Typed graphs and the distributed partitioner keep dense features.
  test::ExpectOneLine(
      RunProcess({Bin("gnn-partition"), "--dataset", "synthetic:mag-small", "--num_parts", "1",
                  "--output", s.dir / "typed", "--feature_format", "sparse"}),
      "gnn-partition", "typed graphs keep dense node features");
  test::ExpectOneLine(RunProcess({Bin("gnn-partition"), "--dataset", kBow, "--output", s.dir / "x",
                                  "--feature_format", "csr"}),
                      "gnn-partition", "--feature_format must be auto, dense or sparse");
}
