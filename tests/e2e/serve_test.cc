// gnn-serve as processes, over real sockets: answers equal to gnn-train
// --inference's (standalone and through gnn-launch on 2 machines, JSON and
// Triton's binary tensors), new nodes equal to an offline run on the graph
// rebuilt with them, every bad request answered alone, the queue's and
// deadline's refusals, tokens and HTTPS, readiness across a killed and
// restarted server, nothing left after gnn-launch is interrupted, the
// user's own node ids (gnn-partition --node_ids) in and out,
// multi-label and regression models' outputs as the inference files',
// edge models' predictions of asked edges as gnn-train --inference's, and
// a link model's embeddings and pair scores as its offline rows give.
#include <httplib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster_util.h"
#include "common/fs.h"
#include "common/gzip.h"
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

// Input id -> logits row of a --save_prediction_path folder.
std::map<int64_t, std::vector<float>> ReadLogits(const std::string& dir) {
  const json m = json::parse(ReadFile(dir + "/manifest.json"));
  std::map<int64_t, std::vector<float>> out;
  for (const json& s : m.at("shards")) {
    const std::vector<int64_t> ids = ReadNpy<int64_t>(dir + "/" + s.at("ids").get<std::string>());
    std::vector<int64_t> shape;
    const std::vector<float> logits =
        ReadNpy<float>(dir + "/" + s.at("logits").get<std::string>(), {}, &shape);
    const size_t c = static_cast<size_t>(shape.at(1));
    for (size_t i = 0; i < ids.size(); ++i) {
      out[ids[i]].assign(logits.begin() + i * c, logits.begin() + (i + 1) * c);
    }
  }
  return out;
}

int FreePort() { return test::FreeLoopbackPortRanges(1, 1).at(0); }

// One gnn-serve's HTTP endpoint.
struct Endpoint {
  int port = 0;
  std::string token;

  httplib::Headers Auth() const {
    return token.empty() ? httplib::Headers{}
                         : httplib::Headers{{"Authorization", "Bearer " + token}};
  }
  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(5);
    c.set_read_timeout(30);
    return c;
  }
  int Status(const std::string& path) const {
    auto r = Client().Get(path.c_str(), Auth());
    return r ? r->status : -1;
  }
  // POST of a JSON body; the status and the parsed answer.
  std::pair<int, json> Post(const std::string& path, const std::string& body) const {
    auto r = Client().Post(path.c_str(), Auth(), body, "application/json");
    if (!r) return {-1, json()};
    json j = json::parse(r->body, nullptr, false);
    return {r->status, j};
  }
  bool WaitReady(std::chrono::seconds timeout = std::chrono::seconds(60)) const {
    return test::WaitUntil([&] { return Status("/v2/health/ready") == 200; }, timeout);
  }
};

json NodeIdsInput(const std::vector<int64_t>& ids) {
  return {{"name", "node_ids"},
          {"datatype", "INT64"},
          {"shape", {static_cast<int64_t>(ids.size())}},
          {"data", ids}};
}

// The answer's output `name` ([k, c] or [k]) as rows.
std::vector<std::vector<float>> RowsOf(const json& answer, const std::string& name) {
  for (const json& o : answer.at("outputs")) {
    if (o.at("name") != name) continue;
    const int64_t rows = o.at("shape")[0];
    const int64_t cols = o.at("shape").size() > 1 ? o.at("shape")[1].get<int64_t>() : 1;
    const std::vector<float> data = o.at("data").get<std::vector<float>>();
    REQUIRE(static_cast<int64_t>(data.size()) == rows * cols);
    std::vector<std::vector<float>> out(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      out[static_cast<size_t>(r)].assign(data.begin() + r * cols, data.begin() + (r + 1) * cols);
    }
    return out;
  }
  FAIL("no " << name << " in " << answer.dump().substr(0, 300));
  return {};
}

// The logits output of an infer answer, row per node.
std::vector<std::vector<float>> LogitsOf(const json& answer) { return RowsOf(answer, "logits"); }

float MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

// Every listed node's served logits against the offline ones.
float MaxDiffOver(const Endpoint& e, const std::string& graph, const std::vector<int64_t>& ids,
                  const std::map<int64_t, std::vector<float>>& offline) {
  const auto [status, answer] =
      e.Post("/v2/models/" + graph + "/infer", json{{"inputs", {NodeIdsInput(ids)}}}.dump());
  INFO(answer.dump().substr(0, 300));
  REQUIRE(status == 200);
  const auto rows = LogitsOf(answer);
  REQUIRE(rows.size() == ids.size());
  float worst = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    worst = std::max(worst, MaxDiff(rows[i], offline.at(ids[i])));
  return worst;
}

std::unique_ptr<test::ChildProcess> StartServe(const test::TempDir& dir,
                                               std::vector<std::string> args,
                                               const std::string& log) {
  args.insert(args.begin(), Bin("gnn-serve"));
  return std::make_unique<test::ChildProcess>(args, dir / log);
}

// gnn-serve on the Setup's 2 machines through gnn-launch (`launch_flags`
// its own), with `flags`, each at a free port + its index on the shared
// host; both answer ready.
struct ServeJob {
  int port;
  std::unique_ptr<test::ChildProcess> launcher;
  Endpoint m0, m1;

  ServeJob(const test::Setup& s, const std::string& model, const std::string& flags,
           const std::string& log, std::vector<std::string> launch_flags = {})
      : port(test::FreeLoopbackPortRanges(1, 2).at(0)),
        launcher(std::make_unique<test::ChildProcess>(
            s.Args(Bin("gnn-serve") + " --restore_model_path " + model + " --http_port " +
                       std::to_string(port) + " " + flags,
                   std::move(launch_flags)),
            s.dir / log)),
        m0{port, ""},
        m1{port + 1, ""} {
    INFO(launcher->Stderr());
    REQUIRE(m0.WaitReady());
    REQUIRE(m1.WaitReady());
  }
  // Ctrl-C of gnn-launch: every process of the job (of its `runs` runs)
  // stops, nothing is left.
  void Stop(const test::Setup& s, int runs = 1) {
    launcher->Signal(SIGINT);
    REQUIRE(launcher->Wait(std::chrono::seconds(30)).has_value());
    s.RequireNothingLeft(launcher->pid(), std::chrono::seconds(5), runs);
  }
};

// A small OGB-layout graph (n nodes, 4 features, 3 classes), optionally
// with one more node joined to `extra_to`: the graph "rebuilt with the new
// node" of a new-node request.
void WriteSmallGraph(const std::string& root, int n, const std::vector<int>& extra_to,
                     const std::vector<float>& extra_feat) {
  std::string edges, feats, labels, train, valid, test_ids;
  int m = 0;
  for (int v = 0; v < n; ++v) {
    for (int k : {1, 7, 31}) {
      edges += std::to_string(v) + "," + std::to_string((v * 3 + k) % n) + "\n";
      ++m;
    }
    for (int f = 0; f < 4; ++f) {
      feats += (f ? "," : "") + std::to_string(std::sin(0.7 * v + 1.3 * f));
    }
    feats += "\n";
    labels += std::to_string((v * 7) % 3) + "\n";
    (v % 5 < 3 ? train : v % 5 == 3 ? valid : test_ids) += std::to_string(v) + "\n";
  }
  const int total = extra_to.empty() ? n : n + 1;
  if (!extra_to.empty()) {
    for (int u : extra_to) {
      edges += std::to_string(n) + "," + std::to_string(u) + "\n";
      ++m;
    }
    for (size_t f = 0; f < extra_feat.size(); ++f) {
      feats += (f ? "," : "") + std::to_string(extra_feat[f]);
    }
    feats += "\n";
    labels += "0\n";
    test_ids += std::to_string(n) + "\n";
  }
  test::WriteGz(root + "/raw/edge.csv.gz", edges);
  test::WriteGz(root + "/raw/num-node-list.csv.gz", std::to_string(total) + "\n");
  test::WriteGz(root + "/raw/num-edge-list.csv.gz", std::to_string(m) + "\n");
  test::WriteGz(root + "/raw/node-feat.csv.gz", feats);
  test::WriteGz(root + "/raw/node-label.csv.gz", labels);
  test::WriteGz(root + "/split/s/train.csv.gz", train);
  test::WriteGz(root + "/split/s/valid.csv.gz", valid);
  test::WriteGz(root + "/split/s/test.csv.gz", test_ids);
}

std::string Partition(const test::TempDir& dir, const std::string& root, const std::string& out) {
  auto r = RunProcess({Bin("gnn-partition"), "--dataset", root, "--num_parts", "1", "--undirected",
                       "--output", dir / out, "--no_cache", "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return dir / (out + "/" + std::filesystem::path(root).filename().string() + ".json");
}

}  // namespace

TEST_CASE("gnn-serve answers as gnn-train --inference does, standalone and on 2 machines",
          "[e2e]") {
  test::Setup s("serve");  // synthetic:tiny in 2 parts, 2 machines on loopback
  const std::string one = test::MakePartitions(s.dir, "synthetic:tiny", 1, "one");
  const std::string model = s.dir / "m.pt";
  RunTrainer({"--part_config", one, "--num_epochs", "3", "--batch_size", "100", "--lr", "0.01",
              "--save_model", model});
  RunTrainer({"--part_config", one, "--inference", "--restore_model_path", model,
              "--save_prediction_path", s.dir / "p1"});
  const auto offline = ReadLogits(s.dir / "p1");
  REQUIRE(offline.size() == 2000);
  std::vector<int64_t> all;
  for (const auto& [id, row] : offline) all.push_back(id);
  const std::string infer = "/v2/models/" + s.graph_name + "/infer";

  {  // Standalone: every node, and the model's metadata.
    Endpoint e{FreePort(), ""};
    auto serve = StartServe(s.dir,
                            {"--standalone", "--part_config", one, "--restore_model_path", model,
                             "--http_port", std::to_string(e.port), "--num_omp_threads", "1"},
                            "serve-alone");
    REQUIRE(e.WaitReady());
    CHECK(MaxDiffOver(e, s.graph_name, all, offline) < 1e-5);
    auto meta = e.Client().Get(("/v2/models/" + s.graph_name).c_str());
    REQUIRE(meta);
    const json m = json::parse(meta->body);
    CHECK(m.at("outputs")[0].at("shape") == json::array({-1, 4}));
    CHECK(m.at("inputs")[1].at("shape") == json::array({-1, 16}));
    CHECK(e.Status("/v2/models/" + s.graph_name + "/ready") == 200);
    CHECK(e.Status("/v2/models/nope") == 404);

    // Triton's binary tensor extension both ways, with the request's id
    // echoed; repeats of a node answer the same row.
    const std::vector<int64_t> ids = {7, 1999, 0, 7};
    const json head = {{"id", "req-42"},
                       {"inputs",
                        {{{"name", "node_ids"},
                          {"datatype", "INT64"},
                          {"shape", {4}},
                          {"parameters", {{"binary_data_size", 32}}}}}},
                       {"outputs",
                        {{{"name", "pred"}, {"parameters", {{"binary_data", true}}}},
                         {{"name", "logits"}, {"parameters", {{"binary_data", true}}}},
                         {{"name", "embedding"}}}}};
    std::string body = head.dump();
    const size_t json_len = body.size();
    body.append(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int64_t));
    httplib::Headers h = {{"Inference-Header-Content-Length", std::to_string(json_len)}};
    auto r = e.Client().Post(infer.c_str(), h, body, "application/octet-stream");
    REQUIRE(r);
    INFO(r->body.substr(0, 300));
    REQUIRE(r->status == 200);
    const size_t out_len = std::stoul(r->get_header_value("Inference-Header-Content-Length"));
    const json answer = json::parse(r->body.substr(0, out_len));
    CHECK(answer.at("id") == "req-42");
    REQUIRE(answer.at("outputs").size() == 3);
    CHECK(answer.at("outputs")[0].at("parameters").at("binary_data_size") == 32);
    CHECK(answer.at("outputs")[1].at("parameters").at("binary_data_size") == 4 * 4 * 4);
    CHECK(answer.at("outputs")[2].at("shape") == json::array({4, 16}));  // the last hidden layer
    const char* bin = r->body.data() + out_len;
    std::vector<int64_t> pred(4);
    std::vector<float> logits(16);
    REQUIRE(r->body.size() == out_len + 32 + 64);
    std::memcpy(pred.data(), bin, 32);
    std::memcpy(logits.data(), bin + 32, 64);
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::vector<float> row(logits.begin() + i * 4, logits.begin() + (i + 1) * 4);
      CHECK(MaxDiff(row, offline.at(ids[i])) < 1e-5);
      CHECK(pred[i] == std::max_element(row.begin(), row.end()) - row.begin());
    }
    serve->Signal(SIGINT);
    auto code = serve->Wait(std::chrono::seconds(15));
    REQUIRE(code.has_value());
    CHECK(*code == 0);
  }

  // Through gnn-launch on 2 machines: one gnn-serve per machine, each at
  // --http_port + its index on the shared host, the exact wire.
  ServeJob job(s, model, "--wire_dtype float32 --num_omp_threads 1", "launch-serve");
  const Endpoint &m0 = job.m0, &m1 = job.m1;
  INFO(job.launcher->Stderr());
  CHECK(MaxDiffOver(m0, s.graph_name, all, offline) < 1e-5);
  CHECK(MaxDiffOver(m1, s.graph_name, {0, 3, 980, 1500, 1999}, offline) < 1e-5);
  // Concurrent requests are batched and each gets its own rows.
  std::vector<std::thread> clients;
  std::vector<float> worst(8, 1);
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      std::vector<int64_t> ids;
      for (int64_t v = c; v < 2000; v += 8 * (c + 1)) ids.push_back(v);
      const auto [status, answer] = m0.Post(infer, json{{"inputs", {NodeIdsInput(ids)}}}.dump());
      if (status != 200) return;
      const auto rows = LogitsOf(answer);
      float w = 0;
      for (size_t i = 0; i < ids.size(); ++i) w = std::max(w, MaxDiff(rows[i], offline.at(ids[i])));
      worst[static_cast<size_t>(c)] = w;
    });
  }
  for (auto& t : clients) t.join();
  for (float w : worst) CHECK(w < 1e-5);
  auto metrics = m0.Client().Get("/metrics");
  REQUIRE(metrics);
  CHECK_THAT(metrics->body,
             Catch::Contains("gnn_serve_requests_total{route=\"infer\",code=\"200\"}"));
  CHECK_THAT(metrics->body,
             Catch::Contains("gnn_serve_infer_duration_seconds_bucket{le=\"+Inf\"}"));
  CHECK_THAT(metrics->body, Catch::Contains("gnn_serve_ready 1"));

  job.Stop(s);
  CHECK(m0.Status("/v2/health/live") == -1);
}

TEST_CASE(
    "gnn-serve --fan_out answers as gnn-train --inference --fan_out, first-layer cache or not",
    "[e2e]") {
  test::Setup s("serve-sampled");  // synthetic:tiny in 2 parts, 2 machines on loopback
  const std::string one = test::MakePartitions(s.dir, "synthetic:tiny", 1, "one");
  for (const std::string model : {"graphsage", "gat"}) {
    DYNAMIC_SECTION(model) {
      const std::string file = s.dir / (model + ".pt");
      RunTrainer({"--part_config", one, "--model", model, "--num_epochs", "2", "--batch_size",
                  "100", "--save_model", file});
      // Each node from its own sample (the node, the layer and --seed
      // decide it), whichever batch asks.
      RunTrainer({"--part_config", one, "--inference", "--restore_model_path", file, "--fan_out",
                  "4,3", "--save_prediction_path", s.dir / (model + "-p")});
      const auto offline = ReadLogits(s.dir / (model + "-p"));
      std::vector<int64_t> all, some = {5, 1999, 5, 0, 640};
      for (const auto& [id, row] : offline) all.push_back(id);
      for (const std::string cache : {"256", "0"}) {
        Endpoint e{FreePort(), ""};
        auto serve = StartServe(s.dir,
                                {"--standalone", "--part_config", one, "--restore_model_path", file,
                                 "--fan_out", "4,3", "--layer_cache_mb", cache, "--http_port",
                                 std::to_string(e.port), "--num_omp_threads", "1"},
                                "serve-" + model + "-" + cache);
        REQUIRE(e.WaitReady());
        INFO("--layer_cache_mb " << cache);
        // A few nodes, then every node (most first-layer rows cached by
        // then), then the few again.
        CHECK(MaxDiffOver(e, s.graph_name, some, offline) < 1e-5);
        CHECK(MaxDiffOver(e, s.graph_name, all, offline) < 1e-5);
        CHECK(MaxDiffOver(e, s.graph_name, some, offline) < 1e-5);
        serve->Signal(SIGINT);
        REQUIRE(serve->Wait(std::chrono::seconds(15)).has_value());
      }
      if (model != "graphsage") continue;
      // 2 machines through gnn-launch, the exact wire: the same answers.
      ServeJob job(s, file, "--fan_out 4,3 --wire_dtype float32 --num_omp_threads 1",
                   "launch-sampled");
      INFO(job.launcher->Stderr());
      CHECK(MaxDiffOver(job.m0, s.graph_name, all, offline) < 1e-5);
      CHECK(MaxDiffOver(job.m1, s.graph_name, some, offline) < 1e-5);
      CHECK(MaxDiffOver(job.m0, s.graph_name, some, offline) < 1e-5);
      job.Stop(s);
    }
  }
}

TEST_CASE("gnn-serve answers new nodes as an offline run on the graph rebuilt with them", "[e2e]") {
  test::TempDir dir;
  const std::vector<float> feat = {0.25f, -0.5f, 0.75f, 0.125f};
  const std::vector<int> to = {3, 17, 42};
  WriteSmallGraph(dir / "g", 120, {}, {});
  WriteSmallGraph(dir / "gplus", 120, to, feat);
  const std::string g = Partition(dir, dir / "g", "pg");
  const std::string gplus = Partition(dir, dir / "gplus", "pgplus");
  for (const std::string model_name : {"graphsage", "gat"}) {
    DYNAMIC_SECTION(model_name) {
      const std::string model = dir / (model_name + ".pt");
      std::vector<std::string> train = {"--part_config", g,   "--model",      model_name,
                                        "--num_epochs",  "2", "--batch_size", "20",
                                        "--num_hidden",  "8", "--save_model", model};
      if (model_name == "gat") train.insert(train.end(), {"--num_heads", "2"});
      RunTrainer(train);
      // The model applies to the rebuilt graph (same schema): its logits
      // are the reference for the new node and its neighbours.
      const std::string pred = dir / (model_name + "-pred");
      RunTrainer({"--part_config", gplus, "--inference", "--restore_model_path", model,
                  "--save_prediction_path", pred});
      const auto rebuilt = ReadLogits(pred);
      REQUIRE(rebuilt.size() == 121);

      Endpoint e{FreePort(), ""};
      auto serve = StartServe(dir,
                              {"--standalone", "--part_config", g, "--restore_model_path", model,
                               "--http_port", std::to_string(e.port), "--num_omp_threads", "1"},
                              "serve-new-" + model_name);
      REQUIRE(e.WaitReady());
      const std::string infer = "/v2/models/g/infer";
      json edges = json::array();
      for (int u : to) edges.push_back({-1, u});
      const json request = {
          {"inputs",
           {NodeIdsInput({3, 5}),
            {{"name", "new_features"}, {"datatype", "FP32"}, {"shape", {1, 4}}, {"data", {feat}}},
            {{"name", "new_edges"}, {"datatype", "INT64"}, {"shape", {3, 2}}, {"data", edges}}}}};
      const auto [status, answer] = e.Post(infer, request.dump());
      INFO(answer.dump().substr(0, 400));
      REQUIRE(status == 200);
      const auto rows = LogitsOf(answer);
      REQUIRE(rows.size() == 3);                      // node_ids in order, then -1
      CHECK(MaxDiff(rows[0], rebuilt.at(3)) < 1e-5);  // a neighbour of the new node
      CHECK(MaxDiff(rows[1], rebuilt.at(5)) < 1e-5);
      CHECK(MaxDiff(rows[2], rebuilt.at(120)) < 1e-5);  // the new node

      // Nothing was written: node 3 alone is as on the graph without it.
      const std::string pg = dir / (model_name + "-pg");
      RunTrainer({"--part_config", g, "--inference", "--restore_model_path", model,
                  "--save_prediction_path", pg});
      const auto before = ReadLogits(pg);
      CHECK(MaxDiffOver(e, "g", {3, 42}, before) < 1e-5);
      // node_ids may be empty when new nodes are asked.
      json only_new = request;
      only_new["inputs"][0] = NodeIdsInput({});
      const auto [s2, a2] = e.Post(infer, only_new.dump());
      REQUIRE(s2 == 200);
      CHECK(MaxDiff(LogitsOf(a2).at(0), rebuilt.at(120)) < 1e-5);
      serve->Signal(SIGTERM);
      CHECK(serve->Wait(std::chrono::seconds(15)) == std::optional<int>(0));
    }
  }
}

TEST_CASE("gnn-serve answers a model that reads edge weights as gnn-train --inference does",
          "[e2e]") {
  test::TempDir dir;
  const std::string one = test::MakePartitions(
      dir, "synthetic:nodes=600,edges=4000,feat=8,classes=4,train=0.2,valid=0.1,efeat=1", 1, "w");
  const std::string graph = LoadPartitionConfig(one).graph_name;
  for (const std::string model_name : {"gcn", "graphsage"}) {
    DYNAMIC_SECTION(model_name) {
      const std::string model = dir / (model_name + ".pt");
      RunTrainer({"--part_config", one, "--model", model_name, "--num_epochs", "3", "--batch_size",
                  "50", "--lr", "0.01", "--save_model", model});
      const std::string pred = dir / (model_name + "-pred");
      RunTrainer({"--part_config", one, "--inference", "--restore_model_path", model,
                  "--save_prediction_path", pred});
      const auto offline = ReadLogits(pred);
      REQUIRE(offline.size() == 600);
      std::vector<int64_t> all;
      for (const auto& [id, row] : offline) all.push_back(id);
      Endpoint e{FreePort(), ""};
      auto serve = StartServe(dir,
                              {"--standalone", "--part_config", one, "--restore_model_path", model,
                               "--http_port", std::to_string(e.port), "--num_omp_threads", "1"},
                              "serve-weighted-" + model_name);
      REQUIRE(e.WaitReady());
      // Every neighbour, weighed as offline (a model without its weights
      // answers other logits).
      CHECK(MaxDiffOver(e, graph, all, offline) < 1e-5);
      // New nodes bring edges without weights: refused in one answer.
      const json request = {
          {"inputs",
           {NodeIdsInput({3}),
            {{"name", "new_features"},
             {"datatype", "FP32"},
             {"shape", {1, 8}},
             {"data", std::vector<float>(8, 0.5f)}},
            {{"name", "new_edges"}, {"datatype", "INT64"}, {"shape", {1, 2}}, {"data", {-1, 3}}}}}};
      const auto [status, answer] = e.Post("/v2/models/" + graph + "/infer", request.dump());
      CHECK(status == 400);
      CHECK(answer.dump().find("edges' data") != std::string::npos);
      serve->Signal(SIGTERM);
      CHECK(serve->Wait(std::chrono::seconds(15)) == std::optional<int>(0));
    }
  }
}

TEST_CASE("gnn-serve answers multi-label and regression models as gnn-train --inference does",
          "[e2e]") {
  test::TempDir dir;
  for (const std::string task : {"multilabel", "node_regression"}) {
    DYNAMIC_SECTION(task) {
      const std::string spec =
          task == "multilabel" ? "synthetic:nodes=500,edges=3000,feat=8,classes=4,task=multilabel"
                               : "synthetic:nodes=500,edges=3000,feat=8,classes=4,"
                                 "task=regression,labels=2";
      const std::string one = test::MakePartitions(dir, spec, 1, task);
      const std::string graph = LoadPartitionConfig(one).graph_name;
      const std::string model = dir / (task + ".pt");
      RunTrainer({"--part_config", one, "--task", task, "--num_epochs", "2", "--batch_size", "50",
                  "--save_model", model});
      const std::string pred = dir / (task + "-pred");
      RunTrainer({"--part_config", one, "--inference", "--restore_model_path", model,
                  "--save_prediction_path", pred});
      // The offline rows by input id: pred (and logits) of every shard.
      const json m = json::parse(ReadFile(pred + "/manifest.json"));
      std::map<int64_t, std::vector<float>> offline_pred, offline_logits;
      int64_t width = 0;
      for (const json& sh : m.at("shards")) {
        const std::vector<int64_t> ids =
            ReadNpy<int64_t>(pred + "/" + sh.at("ids").get<std::string>());
        std::vector<int64_t> shape;
        std::vector<float> p;
        if (task == "multilabel") {
          const std::vector<uint8_t> labels =
              ReadNpy<uint8_t>(pred + "/" + sh.at("pred").get<std::string>(), {}, &shape);
          p.assign(labels.begin(), labels.end());
          const std::vector<float> l =
              ReadNpy<float>(pred + "/" + sh.at("logits").get<std::string>(), shape);
          for (size_t i = 0; i < ids.size(); ++i)
            offline_logits[ids[i]].assign(l.begin() + i * shape[1], l.begin() + (i + 1) * shape[1]);
        } else {
          p = ReadNpy<float>(pred + "/" + sh.at("pred").get<std::string>(), {}, &shape);
        }
        width = shape.at(1);
        for (size_t i = 0; i < ids.size(); ++i)
          offline_pred[ids[i]].assign(p.begin() + i * width, p.begin() + (i + 1) * width);
      }
      REQUIRE(offline_pred.size() == 500);
      std::vector<int64_t> all;
      for (const auto& [id, row] : offline_pred) all.push_back(id);
      Endpoint e{FreePort(), ""};
      auto serve = StartServe(dir,
                              {"--standalone", "--part_config", one, "--restore_model_path", model,
                               "--http_port", std::to_string(e.port), "--num_omp_threads", "1"},
                              "serve-" + task);
      REQUIRE(e.WaitReady());
      const auto [status, answer] =
          e.Post("/v2/models/" + graph + "/infer", json{{"inputs", {NodeIdsInput(all)}}}.dump());
      INFO(answer.dump().substr(0, 300));
      REQUIRE(status == 200);
      std::map<std::string, json> outputs;
      for (const json& o : answer.at("outputs")) outputs[o.at("name")] = o;
      if (task == "multilabel") {
        REQUIRE(outputs.size() == 3);
        CHECK(outputs.at("pred").at("datatype") == "UINT8");
        const auto logits = LogitsOf(answer);
        float worst = 0;
        for (size_t i = 0; i < all.size(); ++i)
          worst = std::max(worst, MaxDiff(logits[i], offline_logits.at(all[i])));
        CHECK(worst < 1e-5f);
      } else {
        REQUIRE(outputs.size() == 1);
        CHECK(outputs.at("pred").at("datatype") == "FP32");
      }
      const json& p = outputs.at("pred");
      CHECK(p.at("shape") == json::array({static_cast<int64_t>(all.size()), width}));
      const std::vector<float> served = p.at("data").get<std::vector<float>>();
      int64_t differ = 0;
      float worst = 0;
      for (size_t i = 0; i < all.size(); ++i) {
        const std::vector<float> row(served.begin() + i * width, served.begin() + (i + 1) * width);
        worst = std::max(worst, MaxDiff(row, offline_pred.at(all[i])));
        differ += row != offline_pred.at(all[i]);
      }
      // Values within float rounding; 0/1 labels equal but where a logit
      // sits on 0 within rounding.
      if (task == "multilabel") {
        CHECK(differ <= 2);
      } else {
        CHECK(worst < 1e-5f);
      }
      serve->Signal(SIGTERM);
      CHECK(serve->Wait(std::chrono::seconds(15)) == std::optional<int>(0));
    }
  }
}

TEST_CASE("gnn-serve refuses bad requests alone, and a full queue, a deadline, a token, HTTPS",
          "[e2e]") {
  test::TempDir dir;
  const std::string one = test::MakePartitions(dir, "synthetic:tiny", 1, "one");
  const std::string model = dir / "m.pt";
  RunTrainer({"--part_config", one, "--num_epochs", "1", "--save_model", model});
  std::ofstream(dir / "token") << "s3cret-token\n";
  Endpoint e{FreePort(), "s3cret-token"};
  // A long batching wait makes the queue and deadline observable.
  auto serve = StartServe(dir,
                          {"--standalone", "--part_config", one, "--restore_model_path", model,
                           "--http_port", std::to_string(e.port), "--token_file", dir / "token",
                           "--max_request_nodes", "50", "--max_queue", "1", "--max_wait_ms", "400",
                           "--deadline_ms", "3000", "--num_omp_threads", "1"},
                          "serve-bad");
  REQUIRE(e.WaitReady());
  const std::string infer = "/v2/models/synthetic-tiny/infer";
  const std::string good = json{{"inputs", {NodeIdsInput({1, 2})}}}.dump();

  // Health needs no token; everything else does.
  Endpoint anonymous{e.port, ""};
  CHECK(anonymous.Status("/v2/health/live") == 200);
  CHECK(anonymous.Post(infer, good).first == 401);
  CHECK(Endpoint{e.port, "wrong"}.Post(infer, good).first == 401);
  CHECK(anonymous.Status("/metrics") == 401);

  auto bad = [&](const std::string& body, const std::string& needle) {
    const auto [status, answer] = e.Post(infer, body);
    INFO(body.substr(0, 200) << " -> " << answer.dump());
    CHECK(status == 400);
    CHECK_THAT(answer.value("error", ""), Catch::Contains(needle));
  };
  bad("{not json", "not valid JSON");
  bad(json{{"inputs",
            {{{"name", "node_ids"}, {"datatype", "FP32"}, {"shape", {1}}, {"data", {1.0}}}}}}
          .dump(),
      "must be INT64");
  bad(json{{"inputs",
            {{{"name", "node_ids"}, {"datatype", "INT64"}, {"shape", {2}}, {"data", {1}}}}}}
          .dump(),
      "has 2 elements; data has 1");
  bad(json{{"inputs", {NodeIdsInput({1, 2000})}}}.dump(), "2000 is not a node of synthetic-tiny");
  bad(json{{"inputs", {NodeIdsInput(std::vector<int64_t>(51, 1))}}}.dump(), "at most 50");
  bad(json{{"inputs",
            {{{"name", "new_features"},
              {"datatype", "FP32"},
              {"shape", {1, 3}},
              {"data", {1, 2, 3}}}}}}
          .dump(),
      "shape [n, 16]");
  bad(
      json{
          {"inputs",
           {{{"name", "new_features"},
             {"datatype", "FP32"},
             {"shape", {1, 16}},
             {"data", std::vector<float>(16, 0.f)}},
            {{"name", "new_edges"}, {"datatype", "INT64"}, {"shape", {1, 2}}, {"data", {{1, 2}}}}}}}
          .dump(),
      "joins two existing nodes");
  bad(json{{"inputs", {NodeIdsInput({1})}}, {"outputs", {{{"name", "probabilities"}}}}}.dump(),
      "unknown output 'probabilities'");
  CHECK(e.Post("/v2/models/other/infer", good).first == 404);

  // One request in flight fills --max_queue 1: the next is refused at once.
  std::pair<int, json> first;
  std::thread waiting([&] { first = e.Post(infer, good); });
  REQUIRE(test::WaitUntil(
      [&] {
        auto m = e.Client().Get("/metrics", e.Auth());
        return m && m->body.find("gnn_serve_in_flight 1") != std::string::npos;
      },
      std::chrono::seconds(10)));
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(e.Post(infer, good).first == 503);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(300));
  waiting.join();
  CHECK(first.first == 200);  // and nothing else changed
  serve->Signal(SIGTERM);
  REQUIRE(serve->Wait(std::chrono::seconds(15)).has_value());

  // A deadline shorter than the batching wait: 504.
  Endpoint d{FreePort(), ""};
  auto late = StartServe(
      dir,
      {"--standalone", "--part_config", one, "--restore_model_path", model, "--http_port",
       std::to_string(d.port), "--max_wait_ms", "1000", "--deadline_ms", "100"},
      "serve-late");
  REQUIRE(d.WaitReady());
  CHECK(d.Post(infer, good).first == 504);
  late->Signal(SIGTERM);
  REQUIRE(late->Wait(std::chrono::seconds(15)).has_value());

  // Flags and files are checked before it listens: one line each.
  auto fails = [&](std::vector<std::string> args, const std::string& needle) {
    args.insert(args.begin(), {Bin("gnn-serve"), "--standalone", "--part_config", one});
    auto run = RunProcess(args, 60);
    INFO(run.err);
    CHECK(run.exit_code > 0);
    CHECK_THAT(test::LastLine(run.err),
               Catch::StartsWith("gnn-serve: error: ") && Catch::Contains(needle));
  };
  fails({"--restore_model_path", dir / "missing.pt"}, "missing.pt: No such file");
  fails({}, "--restore_model_path");
  fails({"--restore_model_path", model, "--tls_cert", dir / "cert.pem"}, "--tls_key");
  fails({"--restore_model_path", model, "--fan_out", "5"}, "has 1 layers; the model has 2");
  // A busy port.
  httplib::Server holder;
  const int busy = holder.bind_to_any_port("127.0.0.1");
  fails({"--restore_model_path", model, "--http_port", std::to_string(busy)},
        "cannot listen on 127.0.0.1:" + std::to_string(busy));
  // HTTPS with a certificate and its key.
  auto cert = RunProcess(
      {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir / "key.pem",
       "-out", dir / "cert.pem", "-days", "1", "-subj", "/CN=127.0.0.1"},
      60);
  if (cert.exit_code != 0) {
    WARN("openssl could not make a certificate: HTTPS is not checked");
    return;
  }
  const int tls_port = FreePort();
  auto tls = StartServe(
      dir,
      {"--standalone", "--part_config", one, "--restore_model_path", model, "--http_port",
       std::to_string(tls_port), "--tls_cert", dir / "cert.pem", "--tls_key", dir / "key.pem"},
      "serve-tls");
  httplib::SSLClient c("127.0.0.1", tls_port);
  c.enable_server_certificate_verification(false);
  REQUIRE(test::WaitUntil(
      [&] {
        auto r = c.Get("/v2/health/ready");
        return r && r->status == 200;
      },
      std::chrono::seconds(30)));
  auto r = c.Post(infer.c_str(), good, "application/json");
  REQUIRE(r);
  CHECK(r->status == 200);
  tls->Signal(SIGTERM);
  REQUIRE(tls->Wait(std::chrono::seconds(15)).has_value());
}

TEST_CASE("gnn-serve is not ready while a server is down and serves again when it is back",
          "[e2e]") {
  test::TempDir dir;
  test::InstallTestSecret();
  const std::string config = test::MakePartitions(dir, "synthetic:tiny", 2, "two");
  const std::string one = test::MakePartitions(dir, "synthetic:tiny", 1, "one");
  const std::string model = dir / "m.pt";
  RunTrainer({"--part_config", one, "--num_epochs", "1", "--save_model", model});
  RunTrainer({"--part_config", one, "--inference", "--restore_model_path", model,
              "--save_prediction_path", dir / "p1"});
  const auto offline = ReadLogits(dir / "p1");
  const std::vector<int> ports = test::FreeLoopbackPortRanges(2, 1);
  const std::string ip = dir / "ip.txt";
  std::ofstream(ip) << "127.0.0.1 " << ports[0] << "\n127.0.0.1 " << ports[1] << "\n";
  const std::string job = "serve-ready-" + std::to_string(getpid());
  auto server = [&](int machine) {
    return std::make_unique<test::ChildProcess>(
        std::vector<std::string>{Bin("gnn-server"), "--ip_config", ip, "--part_config", config,
                                 "--machine_id", std::to_string(machine), "--job_id", job,
                                 "--secret_file", test::TestSecretFile()},
        dir / ("server" + std::to_string(machine)));
  };
  auto s0 = server(0);
  auto s1 = server(1);
  Endpoint e{FreePort(), ""};
  auto serve = StartServe(
      dir,
      {"--ip_config", ip, "--part_config", config, "--machine_id", "0", "--job_id", job,
       "--secret_file", test::TestSecretFile(), "--restore_model_path", model, "--http_port",
       std::to_string(e.port), "--wire_dtype", "float32", "--request_timeout_ms", "2000"},
      "serve-dist");
  INFO(serve->Stderr());
  REQUIRE(e.WaitReady());
  CHECK(MaxDiffOver(e, "synthetic-tiny", {0, 1, 500, 1999}, offline) < 1e-5);

  s1->Kill();  // machine 1's server is lost
  REQUIRE(test::WaitUntil([&] { return e.Status("/v2/health/ready") == 503; },
                          std::chrono::seconds(20)));
  CHECK(e.Status("/v2/health/live") == 200);
  const std::string good = json{{"inputs", {NodeIdsInput({0, 1999})}}}.dump();
  CHECK(e.Post("/v2/models/synthetic-tiny/infer", good).first == 503);

  s1 = server(1);  // back, as a restart brings it
  REQUIRE(e.WaitReady(std::chrono::seconds(30)));
  CHECK(MaxDiffOver(e, "synthetic-tiny", {0, 1, 500, 1999}, offline) < 1e-5);
  serve->Signal(SIGTERM);
  CHECK(serve->Wait(std::chrono::seconds(15)) == std::optional<int>(0));
  // Clean stops: the last holder of each partition's shared memory removes it.
  for (auto* srv : {s0.get(), s1.get()}) srv->Signal(SIGTERM);
  for (auto* srv : {s0.get(), s1.get()}) CHECK(srv->Wait(std::chrono::seconds(20)).has_value());
}

TEST_CASE("gnn-launch --max_restarts brings serving back after a server is lost", "[e2e]") {
  test::Setup s("serve-restart");
  const std::string model = s.dir / "m.pt";
  const std::string one = test::MakePartitions(s.dir, "synthetic:tiny", 1, "one");
  RunTrainer({"--part_config", one, "--num_epochs", "1", "--save_model", model});
  ServeJob job(s, model, "--num_omp_threads 1", "launch-restart",
               {"--max_restarts", "1", "--restart_backoff_s", "0.5"});
  const Endpoint& m0 = job.m0;
  test::ChildProcess& launcher = *job.launcher;
  INFO(launcher.Stderr());
  const std::string good = json{{"inputs", {NodeIdsInput({0, 1999})}}}.dump();
  REQUIRE(m0.Post("/v2/models/" + s.graph_name + "/infer", good).first == 200);
  // Every process of the job restarts (servers and gnn-serve, new keys):
  // serving resumes with no one involved.
  const std::vector<pid_t> servers = test::JobProcesses(s.job, 0, "gnn-server");
  REQUIRE(!servers.empty());
  REQUIRE(kill(servers.back(), SIGKILL) == 0);
  REQUIRE(
      test::WaitUntil([&] { return launcher.Stderr().find("restart 1 of 1") != std::string::npos; },
                      std::chrono::seconds(30)));
  REQUIRE(m0.WaitReady());
  CHECK(m0.Post("/v2/models/" + s.graph_name + "/infer", good).first == 200);
  job.Stop(s, 2);
}

namespace {

// One 50-node graph as plain files twice: named by rows 0..49 and by the
// user's own ids (5000 - 3 * row, not in row order), the same rows.
int64_t MyId(int row) { return 5000 - 3 * static_cast<int64_t>(row); }

std::vector<std::string> PlainGraph(const test::TempDir& dir, bool own_ids) {
  constexpr int n = 50;
  const std::string tag = own_ids ? "own" : "rows";
  auto id = [&](int row) { return own_ids ? MyId(row) : row; };
  std::ofstream edges(dir / (tag + "-edges.csv"));
  edges << "src,dst\n";
  std::vector<float> feat;
  std::vector<int64_t> labels, ids, train;
  std::vector<uint8_t> valid(n, 0), test_mask(n, 0);
  for (int v = 0; v < n; ++v) {
    for (int k : {1, 7, 19}) edges << id(v) << "," << id((v * 3 + k) % n) << "\n";
    for (int f = 0; f < 4; ++f) feat.push_back(static_cast<float>(std::sin(0.7 * v + 1.3 * f)));
    labels.push_back((v * 7) % 3);
    ids.push_back(MyId(v));
    if (v % 5 < 3) train.push_back(id(v));
    (v % 5 == 3 ? valid : test_mask)[static_cast<size_t>(v)] = v % 5 >= 3;
  }
  auto write = [&](const std::string& name, DType t, const auto& v, std::vector<int64_t> shape) {
    NpyWriter w(dir / (tag + "-" + name), t, std::move(shape));
    w.Append(v.data(), static_cast<int64_t>(v.size()));
    w.Commit();
  };
  write("feat.npy", DType::kFloat32, feat, {n, 4});
  write("labels.npy", DType::kInt64, labels, {n});
  write("train.npy", DType::kInt64, train, {static_cast<int64_t>(train.size())});
  write("valid.npy", DType::kUInt8, valid, {n});
  write("test.npy", DType::kUInt8, test_mask, {n});
  std::vector<std::string> flags = {"--edges",      dir / (tag + "-edges.csv"),
                                    "--node_feat",  dir / (tag + "-feat.npy"),
                                    "--labels",     dir / (tag + "-labels.npy"),
                                    "--train_ids",  dir / (tag + "-train.npy"),
                                    "--valid_ids",  dir / (tag + "-valid.npy"),
                                    "--test_ids",   dir / (tag + "-test.npy"),
                                    "--graph_name", "mine",
                                    "--undirected"};
  if (own_ids) {
    write("ids.npy", DType::kInt64, ids, {n});
    flags.insert(flags.end(), {"--node_ids", dir / (tag + "-ids.npy")});
  }
  return flags;
}

std::string PartitionPlain(const test::TempDir& dir, bool own_ids, int parts) {
  const std::string out = dir / ((own_ids ? "p-own-" : "p-rows-") + std::to_string(parts));
  std::vector<std::string> argv = {Bin("gnn-partition"),  "--quiet",  "--num_parts",
                                   std::to_string(parts), "--output", out};
  for (const std::string& f : PlainGraph(dir, own_ids)) argv.push_back(f);
  auto r = RunProcess(argv, 120);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return out + "/mine.json";
}

}  // namespace

TEST_CASE("inference files and gnn-serve speak the user's ids of gnn-partition --node_ids",
          "[e2e]") {
  test::TempDir dir;
  const std::string rows = PartitionPlain(dir, false, 1);
  const std::string own = PartitionPlain(dir, true, 1);
  const std::string own2 = PartitionPlain(dir, true, 2);
  // Each partition keeps its nodes' ids, aligned with orig_nids.
  CHECK(json::parse(ReadFile(own2)).at("user_node_ids") == true);
  for (int p = 0; p < 2; ++p) {
    const std::string part = dir / ("p-own-2/part" + std::to_string(p));
    const auto orig = ReadNpy<int64_t>(part + "/orig_nids.npy");
    const auto mine = ReadNpy<int64_t>(part + "/node_ids.npy");
    REQUIRE(mine.size() == orig.size());
    for (size_t i = 0; i < orig.size(); ++i) CHECK(mine[i] == MyId(static_cast<int>(orig[i])));
  }

  // A model trained on the graph named by rows, applied to both namings.
  const std::string model = dir / "m.pt";
  RunTrainer({"--part_config", rows, "--num_epochs", "3", "--batch_size", "10", "--lr", "0.01",
              "--save_model", model});
  RunTrainer({"--part_config", rows, "--inference", "--restore_model_path", model,
              "--save_prediction_path", dir / "by-rows"});
  RunTrainer({"--part_config", own, "--inference", "--restore_model_path", model,
              "--save_prediction_path", dir / "by-own"});
  const auto by_rows = ReadLogits(dir / "by-rows");
  const auto by_own = ReadLogits(dir / "by-own");
  REQUIRE(by_rows.size() == 50);
  REQUIRE(by_own.size() == 50);
  for (int v = 0; v < 50; ++v) {
    REQUIRE(by_own.count(MyId(v)));
    CHECK(MaxDiff(by_own.at(MyId(v)), by_rows.at(v)) < 1e-6);
  }
  CHECK(json::parse(ReadFile(dir / "by-own/manifest.json")).at("ids") == "node_ids");

  // --nodes in the user's ids; an id that is not one is one line, nothing written.
  NpyWriter w(dir / "some.npy", DType::kInt64, {2});
  const std::vector<int64_t> some = {MyId(9), MyId(4)};
  w.Append(some.data(), 2);
  w.Commit();
  RunTrainer({"--part_config", own, "--inference", "--restore_model_path", model, "--nodes",
              dir / "some.npy", "--save_prediction_path", dir / "some"});
  std::vector<int64_t> got = ReadNpy<int64_t>(dir / "some/part0/ids.npy");
  std::sort(got.begin(), got.end());  // in the partition's order
  CHECK(got == std::vector<int64_t>{MyId(9), MyId(4)});
  NpyWriter bad(dir / "bad.npy", DType::kInt64, {2});
  const std::vector<int64_t> rows_ids = {MyId(1), 4};
  bad.Append(rows_ids.data(), 2);
  bad.Commit();
  auto r = RunProcess({Bin("gnn-train"), "--standalone", "--quiet", "--part_config", own,
                       "--inference", "--restore_model_path", model, "--nodes", dir / "bad.npy",
                       "--save_prediction_path", dir / "bad"});
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("1 of its 2 ids are not nodes of mine"));
  CHECK_FALSE(std::filesystem::exists(dir / "bad/manifest.json"));

  // gnn-serve answers in the user's ids and names the ones that are not.
  Endpoint e{FreePort(), ""};
  auto serve = StartServe(dir,
                          {"--standalone", "--part_config", own, "--restore_model_path", model,
                           "--http_port", std::to_string(e.port), "--num_omp_threads", "1"},
                          "serve-own");
  REQUIRE(e.WaitReady());
  std::map<int64_t, std::vector<float>> want;
  for (int v = 0; v < 50; ++v) want[MyId(v)] = by_rows.at(v);
  CHECK(MaxDiffOver(e, "mine", {MyId(3), MyId(0), MyId(49)}, want) < 1e-5);
  const auto [status, answer] =
      e.Post("/v2/models/mine/infer", json{{"inputs", {NodeIdsInput({MyId(3), 3})}}}.dump());
  CHECK(status == 400);
  CHECK_THAT(answer.dump(), Catch::Contains("3 is not a node of mine (ids are those of "
                                            "gnn-partition --node_ids)"));
  serve.reset();

  // gnn-copy ships every partition's ids to every machine (its own
  // partition's other files only to it) ...
  std::ofstream(dir / "ip.txt") << "127.0.0.1 30050\n127.0.0.1 30060\n";
  auto copy = RunProcess({Bin("gnn-copy"), "--ip_config", dir / "ip.txt", "--workspace",
                          dir / "ws{machine}", "--rel_data_path", "data", "--part_config", own2});
  INFO(copy.err);
  REQUIRE(copy.exit_code == 0);
  for (const std::string ws : {"ws0", "ws1"}) {
    for (int p = 0; p < 2; ++p) {
      CHECK(
          std::filesystem::exists(dir / (ws + "/data/part" + std::to_string(p) + "/node_ids.npy")));
    }
  }
  CHECK_FALSE(std::filesystem::exists(dir / "ws1/data/part0/feat.npy"));

  // ... and each machine's gnn-serve answers any partition's nodes by them.
  test::Setup s("serve-own");
  s.config = own2;
  s.graph_name = "mine";
  ServeJob job(s, model, "--wire_dtype float32 --num_omp_threads 1", "launch-serve");
  INFO(job.launcher->Stderr());
  std::vector<int64_t> every;
  for (int v = 0; v < 50; ++v) every.push_back(MyId(v));
  CHECK(MaxDiffOver(job.m1, "mine", every, want) < 1e-5);
  job.Stop(s);
}

namespace {

// Rows of a gzip CSV of numbers (an OGB raw file), each line's values.
template <class T>
std::vector<std::vector<T>> ReadCsvGz(const std::string& path) {
  std::vector<std::vector<T>> rows;
  ForEachGzipChunk(path, [&](const char* b, const char* e, int64_t) {
    std::string text(b, e);
    size_t at = 0;
    while (at < text.size()) {
      const size_t end = std::min(text.find('\n', at), text.size());
      std::vector<T> row;
      size_t p = at;
      while (p < end) {
        const size_t comma = std::min(text.find(',', p), end);
        row.push_back(static_cast<T>(std::stod(text.substr(p, comma - p))));
        p = comma + 1;
      }
      if (!row.empty()) rows.push_back(std::move(row));
      at = end + 1;
    }
  });
  return rows;
}

// An edge prediction folder's rows by input edge id: its logits (a class
// model) or its value (a regression model).
std::map<int64_t, std::vector<float>> ReadEdgeRows(const std::string& dir) {
  const json m = json::parse(ReadFile(dir + "/manifest.json"));
  std::map<int64_t, std::vector<float>> out;
  for (const json& s : m.at("shards")) {
    const std::vector<int64_t> ids =
        ReadNpy<int64_t>(dir + "/" + s.at("edge_ids").get<std::string>());
    const bool logits = s.contains("logits");
    std::vector<int64_t> shape;
    const std::vector<float> v =
        ReadNpy<float>(dir + "/" + s.at(logits ? "logits" : "pred").get<std::string>(), {}, &shape);
    const size_t c = logits ? static_cast<size_t>(shape.at(1)) : 1;
    for (size_t i = 0; i < ids.size(); ++i) {
      out[ids[i]].assign(v.begin() + i * c, v.begin() + (i + 1) * c);
    }
  }
  return out;
}

// An edge model's request for every listed input edge, by its ends (and
// its own features when the decoder reads them).
json EdgesRequest(const std::vector<std::vector<int64_t>>& ends,
                  const std::vector<std::vector<float>>& features) {
  json inputs = {{{"name", "edges"},
                  {"datatype", "INT64"},
                  {"shape", {static_cast<int64_t>(ends.size()), 2}},
                  {"data", ends}}};
  if (!features.empty()) {
    inputs.push_back(
        {{"name", "edge_features"},
         {"datatype", "FP32"},
         {"shape",
          {static_cast<int64_t>(features.size()), static_cast<int64_t>(features.at(0).size())}},
         {"data", features}});
  }
  return {{"inputs", inputs}};
}

// Every input edge's served row against the offline one.
float EdgesMaxDiff(const Endpoint& e, const std::string& graph,
                   const std::vector<std::vector<int64_t>>& ends,
                   const std::vector<std::vector<float>>& features,
                   const std::map<int64_t, std::vector<float>>& offline,
                   const std::string& output) {
  const auto [status, answer] =
      e.Post("/v2/models/" + graph + "/infer", EdgesRequest(ends, features).dump());
  INFO(answer.dump().substr(0, 300));
  REQUIRE(status == 200);
  const auto rows = RowsOf(answer, output);
  REQUIRE(rows.size() == ends.size());
  float worst = 0;
  for (size_t i = 0; i < ends.size(); ++i) {
    worst = std::max(worst, MaxDiff(rows[i], offline.at(static_cast<int64_t>(i))));
  }
  return worst;
}

}  // namespace

TEST_CASE(
    "gnn-serve answers edge models as gnn-train --inference does, standalone and on 2 "
    "machines",
    "[e2e]") {
  test::Setup s("serve-edges");
  for (const std::string task : {"edge_class", "edge_regression"}) {
    DYNAMIC_SECTION(task) {
      // Edge labels and 2 features per edge, which the class model's
      // decoder reads; the ends of every input edge from edge.csv.gz.
      const std::string spec = "synthetic:nodes=600,edges=3000,feat=8,classes=3,etask=" +
                               std::string(task == "edge_class" ? "class,efeat=2" : "regression");
      const std::string root = s.dir / (task + "-ogb");
      auto made = RunProcess({Bin("gnn-dataset"), "--dataset", spec, "--write_ogb", root});
      INFO(made.err);
      REQUIRE(made.exit_code == 0);
      const auto ends = ReadCsvGz<int64_t>(root + "/raw/edge.csv.gz");
      REQUIRE(ends.size() == 3000);
      std::vector<std::vector<float>> features;
      if (task == "edge_class") features = ReadCsvGz<float>(root + "/raw/edge-feat.csv.gz");
      const std::string one = test::MakePartitions(s.dir, root, 1, task + "-one");
      const std::string graph = LoadPartitionConfig(one).graph_name;
      const std::string model = s.dir / (task + ".pt");
      RunTrainer({"--part_config", one, "--task", task, "--num_epochs", "2", "--batch_size", "200",
                  "--num_hidden", "16", "--save_model", model});
      const std::string pred = s.dir / (task + "-pred");
      RunTrainer({"--part_config", one, "--inference", "--restore_model_path", model, "--node_mask",
                  "all", "--save_prediction_path", pred});
      const auto offline = ReadEdgeRows(pred);
      REQUIRE(offline.size() == 3000);
      const std::string output = task == "edge_class" ? "logits" : "pred";

      Endpoint e{FreePort(), ""};
      auto serve = StartServe(s.dir,
                              {"--standalone", "--part_config", one, "--restore_model_path", model,
                               "--http_port", std::to_string(e.port), "--num_omp_threads", "1"},
                              "serve-" + task);
      REQUIRE(e.WaitReady());
      CHECK(EdgesMaxDiff(e, graph, ends, features, offline, output) < 1e-5);
      const std::string infer = "/v2/models/" + graph + "/infer";
      const auto [status, answer] = e.Post(infer, EdgesRequest({{4, 9}, {4, 9}}, {}).dump());
      if (task == "edge_class") {
        // The decoder's edge features are the request's to give.
        CHECK(status == 400);
        CHECK_THAT(answer.dump(), Catch::Contains("edge_features"));
        const auto [ok, two] =
            e.Post(infer, EdgesRequest({{4, 9}, {4, 9}}, {{0.5f, 0.25f}, {0.5f, 0.25f}}).dump());
        REQUIRE(ok == 200);
        REQUIRE(two.at("outputs").size() == 2);
        CHECK(two.at("outputs")[1].at("name") == "pred");
        CHECK(two.at("outputs")[1].at("shape") == json::array({2}));
        const auto rows = RowsOf(two, "logits");
        CHECK(rows.at(0) == rows.at(1));
        CHECK(two.at("outputs")[1].at("data")[0].get<int64_t>() ==
              std::max_element(rows[0].begin(), rows[0].end()) - rows[0].begin());
      } else {
        REQUIRE(status == 200);
        CHECK(answer.at("outputs").size() == 1);
        CHECK(answer.at("outputs")[0].at("shape") == json::array({2}));
      }
      // A node query, and an end that is no node, are the caller's mistakes.
      auto wrong = e.Post(infer, json{{"inputs", {NodeIdsInput({1, 2})}}}.dump());
      CHECK(wrong.first == 400);
      CHECK_THAT(wrong.second.dump(), Catch::Contains("unknown input 'node_ids'"));
      const std::vector<std::vector<float>> one_row =
          task == "edge_class" ? std::vector<std::vector<float>>{{0.1f, 0.2f}}
                               : std::vector<std::vector<float>>{};
      wrong = e.Post(infer, EdgesRequest({{4, 600}}, one_row).dump());
      CHECK(wrong.first == 400);
      CHECK_THAT(wrong.second.dump(), Catch::Contains("600 is not a node"));
      wrong = e.Post(infer, EdgesRequest({{4, -1}}, one_row).dump());
      CHECK(wrong.first == 400);
      CHECK_THAT(wrong.second.dump(), Catch::Contains("-1 is not a new node"));
      // Edges to and between new nodes: their features and edges in the
      // request; a repeated pair answers the same row.
      std::vector<std::vector<float>> four_rows;
      if (task == "edge_class") four_rows.assign(4, {0.1f, 0.2f});
      json fresh = EdgesRequest({{-1, -2}, {4, -1}, {-2, -1}, {4, -1}}, four_rows);
      fresh["inputs"].push_back(
          {{"name", "new_features"},
           {"datatype", "FP32"},
           {"shape", {2, 8}},
           {"data",
            {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1}}});
      fresh["inputs"].push_back({{"name", "new_edges"},
                                 {"datatype", "INT64"},
                                 {"shape", {2, 2}},
                                 {"data", {4, -1, -1, -2}}});
      auto answered = e.Post(infer, fresh.dump());
      INFO(answered.second.dump());
      REQUIRE(answered.first == 200);
      const auto fresh_rows = RowsOf(answered.second, output);
      REQUIRE(fresh_rows.size() == 4);
      CHECK(fresh_rows[1] == fresh_rows[3]);
      CHECK(fresh_rows[0] != fresh_rows[2]);
      // No edges at all: empty outputs.
      json none = {{"inputs",
                    {{{"name", "edges"},
                      {"datatype", "INT64"},
                      {"shape", {0, 2}},
                      {"data", json::array()}}}}};
      if (task == "edge_class") {
        none["inputs"].push_back({{"name", "edge_features"},
                                  {"datatype", "FP32"},
                                  {"shape", {0, 2}},
                                  {"data", json::array()}});
      }
      const auto empty = e.Post(infer, none.dump());
      INFO(empty.second.dump());
      REQUIRE(empty.first == 200);
      CHECK(empty.second.at("outputs")[0].at("shape")[0] == 0);
      const auto meta = e.Client().Get(("/v2/models/" + graph).c_str());
      REQUIRE(meta);
      const json m = json::parse(meta->body);
      CHECK(m.at("inputs")[0].at("name") == "edges");
      CHECK(m.at("parameters").at("task") == task);
      serve->Signal(SIGINT);
      REQUIRE(serve->Wait(std::chrono::seconds(15)) == std::optional<int>(0));
      // An edge model has no embeddings to give: one line.
      auto embed =
          RunProcess({Bin("gnn-serve"), "--standalone", "--part_config", one,
                      "--restore_model_path", model, "--embed_layer", "1", "--check_only"});
      CHECK(embed.exit_code > 0);
      CHECK_THAT(test::LastLine(embed.err), Catch::StartsWith("gnn-serve: error: --embed_layer") &&
                                                Catch::Contains("not embeddings"));
      if (task != "edge_class") continue;

      // 2 machines through gnn-launch, the exact wire: the same answers
      // from either machine.
      s.config = test::MakePartitions(s.dir, root, 2, task + "-two");
      s.graph_name = graph;
      ServeJob job(s, model, "--wire_dtype float32 --num_omp_threads 1", "launch-serve-edges");
      const Endpoint &m0 = job.m0, &m1 = job.m1;
      INFO(job.launcher->Stderr());
      CHECK(EdgesMaxDiff(m0, graph, ends, features, offline, output) < 1e-5);
      CHECK(EdgesMaxDiff(m1, graph, ends, features, offline, output) < 1e-5);
      // Concurrent edge queries are batched and each gets its own rows.
      std::vector<std::thread> clients;
      std::vector<float> worst(6, 1);
      for (int c = 0; c < 6; ++c) {
        clients.emplace_back([&, c] {
          std::vector<std::vector<int64_t>> mine;
          std::vector<std::vector<float>> mine_features;
          std::vector<int64_t> ids;
          for (size_t i = static_cast<size_t>(c); i < ends.size(); i += 7 * (c + 1)) {
            mine.push_back(ends[i]);
            mine_features.push_back(features[i]);
            ids.push_back(static_cast<int64_t>(i));
          }
          const auto [code, answer] = m0.Post(infer, EdgesRequest(mine, mine_features).dump());
          if (code != 200) return;
          const auto rows = RowsOf(answer, output);
          float w = 0;
          for (size_t i = 0; i < ids.size(); ++i)
            w = std::max(w, MaxDiff(rows[i], offline.at(ids[i])));
          worst[static_cast<size_t>(c)] = w;
        });
      }
      for (auto& t : clients) t.join();
      for (float w : worst) CHECK(w < 1e-5);
      job.Stop(s);
    }
  }
}

TEST_CASE("gnn-serve answers a link model: nodes' embeddings and pairs' scores, as offline",
          "[e2e]") {
  test::Setup s("serve-link");  // synthetic:tiny in 2 parts, 2 machines on loopback
  const std::string one = test::MakePartitions(s.dir, "synthetic:tiny", 1, "one");
  const std::string model = s.dir / "link.pt";
  RunTrainer({"--part_config", one, "--task", "link", "--num_epochs", "1", "--batch_size", "200",
              "--num_hidden", "16", "--save_model", model});
  // The scoring rows offline: the last layer's output of every node.
  RunTrainer({"--part_config", one, "--inference", "--restore_model_path", model, "--embed_layer",
              "2", "--save_embed_path", s.dir / "emb"});
  const std::vector<int64_t> ids = ReadNpy<int64_t>(s.dir / "emb/part0/ids.npy");
  std::vector<int64_t> shape;
  const std::vector<float> rows = ReadNpy<float>(s.dir / "emb/part0/emb.npy", {}, &shape);
  REQUIRE(shape == std::vector<int64_t>{2000, 16});
  std::map<int64_t, std::vector<float>> offline;
  for (size_t i = 0; i < ids.size(); ++i)
    offline[ids[i]].assign(rows.begin() + i * 16, rows.begin() + (i + 1) * 16);
  const std::vector<std::vector<int64_t>> pairs = {{0, 5}, {7, 1999}, {1999, 7}, {3, 3}};
  auto dot = [&](int64_t a, int64_t b) {
    float d = 0;
    for (size_t j = 0; j < 16; ++j) d += offline.at(a)[j] * offline.at(b)[j];
    return d;
  };
  const std::string infer = "/v2/models/" + s.graph_name + "/infer";
  // Scores of the pairs (and their probabilities) against the offline rows.
  auto check_scores = [&](const Endpoint& e) {
    const auto [status, answer] = e.Post(infer, EdgesRequest(pairs, {}).dump());
    INFO(answer.dump().substr(0, 300));
    REQUIRE(status == 200);
    const auto score = RowsOf(answer, "score"), prob = RowsOf(answer, "prob");
    REQUIRE(score.size() == pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
      CHECK(score[i][0] == Approx(dot(pairs[i][0], pairs[i][1])).margin(1e-4));
      CHECK(prob[i][0] == Approx(1 / (1 + std::exp(-score[i][0]))).margin(1e-6));
    }
    CHECK(score[1] == score[2]);  // the dot product is symmetric
  };

  Endpoint e{FreePort(), ""};
  auto serve = StartServe(
      s.dir,
      {"--standalone", "--part_config", one, "--restore_model_path", model, "--embed_layer", "2",
       "--http_port", std::to_string(e.port), "--num_omp_threads", "1"},
      "serve-link");
  REQUIRE(e.WaitReady());
  check_scores(e);
  // node_ids: their embeddings (layer --embed_layer), as --save_embed_path.
  const std::vector<int64_t> some = {0, 1999, 42};
  const auto [status, answer] = e.Post(infer, json{{"inputs", {NodeIdsInput(some)}}}.dump());
  INFO(answer.dump().substr(0, 300));
  REQUIRE(status == 200);
  REQUIRE(answer.at("outputs").size() == 1);
  const auto emb = RowsOf(answer, "embedding");
  for (size_t i = 0; i < some.size(); ++i) CHECK(MaxDiff(emb[i], offline.at(some[i])) < 1e-5);
  json both = EdgesRequest(pairs, {});
  both["inputs"].push_back(NodeIdsInput(some));
  auto wrong = e.Post(infer, both.dump());
  CHECK(wrong.first == 400);
  CHECK_THAT(wrong.second.dump(), Catch::Contains("not both"));
  json embed_of_edges = EdgesRequest(pairs, {});
  embed_of_edges["outputs"] = {{{"name", "embedding"}}};
  wrong = e.Post(infer, embed_of_edges.dump());
  CHECK(wrong.first == 400);
  CHECK_THAT(wrong.second.dump(), Catch::Contains("unknown output 'embedding' (score, prob)"));
  const auto meta = e.Client().Get(("/v2/models/" + s.graph_name).c_str());
  REQUIRE(meta);
  CHECK(json::parse(meta->body).at("parameters").at("task") == "link");
  serve->Signal(SIGINT);
  REQUIRE(serve->Wait(std::chrono::seconds(15)) == std::optional<int>(0));

  // 2 machines through gnn-launch, the exact wire: the same scores.
  ServeJob job(s, model, "--embed_layer 2 --wire_dtype float32 --num_omp_threads 1",
               "launch-serve-link");
  INFO(job.launcher->Stderr());
  check_scores(job.m0);
  check_scores(job.m1);
  job.Stop(s);
}
