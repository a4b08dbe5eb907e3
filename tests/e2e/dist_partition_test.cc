// gnn-partition --distributed end to end: real gnn-partition processes under
// mpirun, talking over TCP (Open MPI's tcp transport, loopback), each
// reading only its chunks of a chunked dataset and writing its own
// partition. Checked against the single-machine partitioner on the same
// chunks, by the partition checks every binary runs, and by a training job.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "common/npy.h"
#include "common/sha256.h"
#include "launch_util.h"
#include "partition/config.h"
#include "partition/hetero_local.h"
#include "process_util.h"
#include "test_util.h"

namespace fs = std::filesystem;
namespace test = gnn::test;
using gnn::test::Bin;
using gnn::test::RunProcess;
using nlohmann::json;

namespace {

// Open MPI for the tests: as root if the suite is root, more ranks than
// cores, and TCP between ranks (real sockets, not shared memory).
bool MpiReady(std::string* why) {
#ifndef GNN_TEST_PTSCOTCH
  *why = "gnn-partition was built without MPI and PT-Scotch";
  return false;
#else
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) {
    *why = "mpirun is not installed";
    return false;
  }
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
  setenv("OMPI_MCA_hwloc_base_binding_policy", "none", 1);
  setenv("OMPI_MCA_btl", "tcp,self", 1);
  setenv("OMPI_MCA_btl_tcp_if_include", "lo", 1);
  setenv("OMPI_MCA_oob_tcp_if_include", "lo", 1);
  return true;
#endif
}

#define REQUIRE_MPI()                   \
  do {                                  \
    std::string why;                    \
    if (!MpiReady(&why)) GNN_SKIP(why); \
  } while (0)

// gnn-partition --distributed over `ranks` processes (`env`: NAME=value
// entries for them).
test::ProcessResult Distributed(int ranks, std::vector<std::string> args, double timeout = 180,
                                const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {"/usr/bin/env"};
  argv.insert(argv.end(), env.begin(), env.end());
  for (const std::string& w :
       {std::string("mpirun"), std::string("--quiet"), std::string("-np"), std::to_string(ranks),
        Bin("gnn-partition"), std::string("--distributed")}) {
    argv.push_back(w);
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, timeout);
}

std::string Chunked(const test::TempDir& dir, const std::string& dataset, int chunks,
                    const std::string& name) {
  const auto r = RunProcess({Bin("gnn-dataset"), "--dataset", dataset, "--write_chunked",
                             std::to_string(chunks), "--output", dir / name, "--quiet"},
                            120);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return dir / name;
}

// Each partition's files with their sha256s, from the config.
std::map<std::string, std::string> Files(const gnn::PartitionConfig& c) {
  std::map<std::string, std::string> out;
  for (const gnn::PartInfo& p : c.parts) {
    for (const auto& [name, f] : p.files) out[p.dir + "/" + name] = f.sha256;
  }
  return out;
}

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

json Report(const std::string& config) {
  std::ifstream in(config);
  return json::parse(in).at("partition_report");
}

// The config without its report (times, memory, machines differ by run).
json ConfigWithoutReport(const std::string& config) {
  json j = json::parse(std::ifstream(config));
  j.erase("partition_report");
  return j;
}

}  // namespace

TEST_CASE("gnn-partition --distributed writes the single-machine partitions (random assignment)",
          "[e2e]") {
  REQUIRE_MPI();
  test::TempDir dir;
  const std::string chunks = Chunked(dir, "synthetic:tiny", 5, "tiny");
  // The same graph as a directed one (metadata.json's own key): in-edges
  // then keep duplicates and self-loops, and the symmetric adjacency is
  // built apart from them.
  const std::string directed = Chunked(dir, "synthetic:tiny", 4, "tiny-directed");
  {
    json meta = json::parse(std::ifstream(directed + "/metadata.json"));
    meta["gnn"]["known_undirected"] = false;
    std::ofstream(directed + "/metadata.json") << meta.dump(2);
  }
  // The last case moves features in slices of 1000 bytes (15 rows), so
  // chunks cross many slices and ranks take part in slices they have no
  // rows for.
  for (const auto& [input, ranks, slice] :
       {std::tuple<std::string, int, std::string>{chunks, 2, ""},
        {chunks, 3, ""},
        {directed, 3, ""},
        {chunks, 3, "1000"}}) {
    INFO(input << " on " << ranks << " machines, slice " << slice);
    const std::string tag = std::to_string(ranks) + fs::path(input).filename().string() + slice;
    const auto single =
        RunProcess({Bin("gnn-partition"), "--dataset", input, "--num_parts", std::to_string(ranks),
                    "--part_method", "random", "--output", dir / ("single" + tag), "--quiet"},
                   120);
    REQUIRE(single.exit_code == 0);
    std::vector<std::string> env;
    if (!slice.empty()) env.push_back("GNN_FEATURE_SLICE_BYTES=" + slice);
    const auto dist = Distributed(ranks,
                                  {"--dataset", input, "--part_method", "random", "--output",
                                   dir / ("dist" + tag), "--quiet"},
                                  180, env);
    INFO(dist.err);
    REQUIRE(dist.exit_code == 0);
    CHECK(dist.out.find("Partitioned synthetic-tiny into " + std::to_string(ranks) +
                        " parts (random)") != std::string::npos);
    const gnn::PartitionConfig a =
        gnn::LoadPartitionConfig(dir / ("single" + tag) + "/synthetic-tiny.json");
    const gnn::PartitionConfig b =
        gnn::LoadPartitionConfig(dir / ("dist" + tag) + "/synthetic-tiny.json");
    CHECK(Files(a) == Files(b));
    CHECK(a.num_edges == b.num_edges);
    CHECK(a.num_classes == b.num_classes);
    CHECK(a.undirected == b.undirected);
    for (int p = 0; p < ranks; ++p) {
      CHECK(a.parts[p].edge_start == b.parts[p].edge_start);
      CHECK(a.parts[p].num_train == b.parts[p].num_train);
    }
    const json ra = Report(dir / ("single" + tag) + "/synthetic-tiny.json");
    const json rb = Report(dir / ("dist" + tag) + "/synthetic-tiny.json");
    CHECK(ra.at("edge_cut") == rb.at("edge_cut"));
    CHECK(ra.at("undirected_edges") == rb.at("undirected_edges"));
    CHECK(rb.at("machines").size() == static_cast<size_t>(ranks));
    // Nothing but the output is left beside it.
    for (const auto& e : fs::directory_iterator(dir.path())) {
      CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
    }
  }
}

namespace {

// Chunk `c` of `name` in `relation`'s edge_data (or its edges) of `chunks`.
std::string EdgeFile(const std::string& chunks, const std::string& key, const std::string& name,
                     int c) {
  const json meta = json::parse(std::ifstream(chunks + "/metadata.json"));
  const json& files = name.empty() ? meta["edges"]["_N:_E:_N"] : meta[key]["_N:_E:_N"][name];
  return chunks + "/" + files["data"][c].get<std::string>();
}

}  // namespace

TEST_CASE("gnn-partition --distributed carries edge data: the single-machine partitions", "[e2e]") {
  REQUIRE_MPI();
  test::TempDir dir;
  const std::string feats =
      Chunked(dir, "synthetic:nodes=2000,edges=10000,feat=16,classes=4,efeat=3", 5, "ef");
  // Repeated edges, an edge listed both ways and self-loops in chunk 1 (read
  // by machine 0 of 2 and of 3): with edge data they stay separate edges.
  {
    const std::string file = EdgeFile(feats, "edges", "", 1);
    std::vector<int64_t> shape;
    std::vector<int64_t> e = gnn::ReadNpy<int64_t>(file, {}, &shape);
    e[2] = e[0], e[3] = e[1];  // edge 1 repeats edge 0
    e[4] = e[1], e[5] = e[0];  // edge 2 is edge 0 reversed
    e[7] = e[6];               // edge 3 is a self-loop
    e[9] = e[8];               // and edge 4
    gnn::WriteNpy(file, e.data(), shape);
  }
  // The same graph directed and without node features: node features are
  // each node's in-edges' mean (--node_feat_from_edges auto).
  const std::string bare = dir / "ef-bare";
  fs::copy(feats, bare, fs::copy_options::recursive);
  {
    json meta = json::parse(std::ifstream(bare + "/metadata.json"));
    meta["gnn"]["known_undirected"] = false;
    meta["node_data"]["_N"].erase("feat");
    std::ofstream(bare + "/metadata.json") << meta.dump(2);
  }
  const std::string labels = Chunked(dir, "synthetic:edges-small", 4, "el");
  const std::string values = Chunked(
      dir, "synthetic:nodes=2000,edges=10000,feat=16,classes=4,efeat=2,etask=regression", 3, "er");
  struct Case {
    std::string input;
    int ranks;
    std::vector<std::string> flags;
    std::string slice;
  };
  // The slices of 1000 bytes move edge rows in many rounds.
  for (const Case& c :
       {Case{feats, 2, {}, ""}, Case{feats, 3, {}, "1000"}, Case{bare, 3, {}, "1000"},
        Case{feats, 2, {"--edge_weight", "mean"}, ""}, Case{bare, 2, {"--edge_weight", "2"}, ""},
        Case{labels, 3, {}, ""}, Case{values, 2, {}, "1000"}}) {
    std::string tag = fs::path(c.input).filename().string() + std::to_string(c.ranks) + c.slice;
    for (const std::string& f : c.flags) tag += f;
    INFO(tag);
    std::vector<std::string> args = {"--dataset", c.input, "--part_method", "random"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    std::vector<std::string> single = {
        Bin("gnn-partition"), "--num_parts",         std::to_string(c.ranks), "--quiet",
        "--output",           dir / ("single" + tag)};
    single.insert(single.end(), args.begin(), args.end());
    const auto s = RunProcess(single, 120);
    INFO(s.err);
    REQUIRE(s.exit_code == 0);
    args.insert(args.end(), {"--output", dir / ("dist" + tag)});
    std::vector<std::string> env;
    if (!c.slice.empty()) env.push_back("GNN_FEATURE_SLICE_BYTES=" + c.slice);
    const auto d = Distributed(c.ranks, args, 180, env);
    INFO(d.err);
    REQUIRE(d.exit_code == 0);
    const std::string name = c.input == labels   ? "synthetic-edges-small"
                             : c.input == values ? "synthetic-n2000-e10000-edgeregression"
                                                 : "synthetic-n2000-e10000";
    const std::string a = dir / ("single" + tag) + "/" + name + ".json";
    const std::string b = dir / ("dist" + tag) + "/" + name + ".json";
    const gnn::PartitionConfig ca = gnn::LoadPartitionConfig(a);
    const gnn::PartitionConfig cb = gnn::LoadPartitionConfig(b);
    CHECK(Files(ca) == Files(cb));
    CHECK(ConfigWithoutReport(a) == ConfigWithoutReport(b));
    CHECK(Report(a).value("edge_feature_dim", 0) == Report(b).value("edge_feature_dim", 0));
    // What each case carries.
    const int64_t width = c.input == labels ? 0 : c.input == values ? 2 : 3;
    CHECK(cb.edge_feature_dim == (c.flags.empty() ? width : 1));
    CHECK(cb.edge_labels == (c.input == labels || c.input == values));
    if (c.input == bare) CHECK(cb.feature_dim == 3);
    if (c.input == feats && c.flags.empty()) {
      CHECK(d.err.find("stored in-edges repeat the (source, destination) pair of another") !=
            std::string::npos);
    }
  }
}

TEST_CASE("gnn-partition --distributed with PT-Scotch: valid partitions, METIS-like cut, training",
          "[e2e]") {
  REQUIRE_MPI();
  test::TempDir dir;
  const std::string chunks = Chunked(dir, "synthetic:tiny", 6, "tiny");
  const auto metis = RunProcess({Bin("gnn-partition"), "--dataset", chunks, "--num_parts", "2",
                                 "--output", dir / "metis", "--quiet"},
                                120);
  REQUIRE(metis.exit_code == 0);
  const int64_t metis_cut = Report(dir / "metis/synthetic-tiny.json").at("edge_cut");
  for (int ranks : {2, 3}) {
    INFO(ranks << " machines");
    const std::string out = dir / ("scotch" + std::to_string(ranks));
    const auto r = Distributed(ranks, {"--dataset", chunks, "--output", out, "--quiet"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const gnn::PartitionConfig c = gnn::LoadPartitionConfig(out + "/synthetic-tiny.json");
    CHECK(c.part_method == "ptscotch");
    CHECK(c.num_parts == ranks);
    std::set<int64_t> seen;
    for (int p = 0; p < ranks; ++p) {
      CHECK_NOTHROW(gnn::VerifyPartFiles(c, p));
      const auto orig = gnn::ReadNpy<int64_t>(c.FilePath(p, "orig_nids.npy"));
      CHECK(static_cast<int64_t>(orig.size()) == c.parts[p].num_nodes());
      seen.insert(orig.begin(), orig.end());
    }
    CHECK(static_cast<int64_t>(seen.size()) == c.num_nodes);
    const json rep = Report(out + "/synthetic-tiny.json");
    CHECK(rep.at("imbalance").at("nodes").get<double>() < 1.05);
    // --sparsify 16 (the default): hubs bring ~16 edges to PT-Scotch.
    CHECK(rep.at("sparsify") == 16);
    CHECK(rep.at("engine_edges").get<int64_t>() < rep.at("undirected_edges").get<int64_t>());
    if (ranks == 2) {
      // The engine's cut is METIS's class (issue 17: within 1.3x).
      INFO("PT-Scotch cut " << rep.at("edge_cut") << ", METIS " << metis_cut);
      CHECK(rep.at("edge_cut").get<double>() <= 1.3 * static_cast<double>(metis_cut));
      // Every edge to PT-Scotch (--sparsify 0): a cut of the same class.
      const auto all = Distributed(
          2, {"--dataset", chunks, "--output", dir / "all", "--sparsify", "0", "--quiet"});
      REQUIRE(all.exit_code == 0);
      const json every = Report(dir / "all/synthetic-tiny.json");
      CHECK(every.at("engine_edges") == every.at("undirected_edges"));
      CHECK(every.at("edge_cut").get<double>() <= 1.3 * static_cast<double>(metis_cut));
      // The same input, seed and machine count give the same partitions.
      const auto again =
          Distributed(2, {"--dataset", chunks, "--output", dir / "again", "--quiet"});
      REQUIRE(again.exit_code == 0);
      CHECK(Files(gnn::LoadPartitionConfig(dir / "again/synthetic-tiny.json")) == Files(c));
    }
  }

  // A 2-machine training job runs on the distributed output.
  test::Setup s("dist-partition");
  s.config = dir / "scotch2/synthetic-tiny.json";
  test::ChildProcess launcher(s.Args(s.Train("--num_epochs 1")), s.dir / "launcher");
  const auto code = launcher.Wait(std::chrono::seconds(180));
  REQUIRE(code.has_value());
  INFO(launcher.Stderr());
  CHECK(*code == 0);
  const json summary = json::parse(test::LastLine(launcher.Stdout()));
  CHECK(summary.contains("test_acc"));
}

TEST_CASE("gnn-partition --distributed: bad input is one error line, nothing written", "[e2e]") {
  REQUIRE_MPI();
  test::TempDir dir;
  const std::string chunks = Chunked(dir, "synthetic:tiny", 4, "tiny");
  auto check = [&](const test::ProcessResult& r, int code, const std::string& text) {
    INFO(r.err);
    CHECK(r.exit_code != 0);
    if (code) CHECK(r.exit_code == code);
    CHECK(r.err.find(text) != std::string::npos);
    CHECK(CountOf(r.err, "gnn-partition: error:") == 1);
    CHECK_FALSE(fs::exists(dir / "out"));
    for (const auto& e : fs::directory_iterator(dir.path())) {
      CHECK(e.path().filename().string().find("out.tmp.") == std::string::npos);
    }
  };
  // Not a chunked dataset.
  check(Distributed(2, {"--dataset", "synthetic:tiny", "--output", dir / "out"}), 2,
        "--distributed reads a chunked dataset");
  // Parts and machines disagree.
  check(Distributed(2, {"--dataset", chunks, "--num_parts", "3", "--output", dir / "out"}), 2,
        "--num_parts 3 must equal the number of machines (2)");
  // More machines than chunks.
  check(Distributed(5, {"--dataset", chunks, "--output", dir / "out"}), 2,
        "has 4 chunks; --distributed needs at least one per machine (5)");
  // The streaming assignment is single-machine.
  check(Distributed(2, {"--dataset", chunks, "--part_method", "stream", "--output", dir / "out"}),
        2, "--part_method stream runs on one machine");
  // A corrupt edge chunk that only machine 1 reads: machine 0 reports it.
  {
    json meta = json::parse(std::ifstream(chunks + "/metadata.json"));
    const std::string file = chunks + "/" + meta["edges"]["_N:_E:_N"]["data"][2].get<std::string>();
    std::vector<int64_t> shape;
    std::vector<int64_t> edges = gnn::ReadNpy<int64_t>(file, {}, &shape);
    edges[1] = 99999;
    fs::rename(file, file + ".good");
    gnn::WriteNpy(file, edges.data(), shape);
    check(Distributed(2, {"--dataset", chunks, "--output", dir / "out"}), 3,
          "machine 1: " + chunks + ": edge chunk 2 has edge (");
    fs::remove(file);
    fs::rename(file + ".good", file);
  }
  // A mask that is not one value per node (2 columns), on machine 1.
  {
    json meta = json::parse(std::ifstream(chunks + "/metadata.json"));
    const std::string file =
        chunks + "/" + meta["node_data"]["_N"]["train_mask"]["data"][3].get<std::string>();
    const std::vector<uint8_t> mask = gnn::ReadNpy<uint8_t>(file);
    std::vector<uint8_t> wide(mask.size() * 2, 0);
    fs::rename(file, file + ".good");
    gnn::WriteNpy(file, wide.data(), {static_cast<int64_t>(mask.size()), 2});
    check(Distributed(2, {"--dataset", chunks, "--output", dir / "out"}), 3,
          "machine 1: " + chunks + ": train_mask chunk 3 is not one value per node");
    fs::remove(file);
    fs::rename(file + ".good", file);
  }
  // The user's ids and edge features are kept on one machine only so far.
  {
    json meta = json::parse(std::ifstream(chunks + "/metadata.json"));
    const json saved = meta;
    meta["node_data"]["_N"]["node_ids"] = meta["node_data"]["_N"]["label"];
    std::ofstream(chunks + "/metadata.json") << meta.dump();
    check(Distributed(2, {"--dataset", chunks, "--output", dir / "out"}), 3,
          "node_data._N.node_ids (the user's node ids) is not carried by --distributed yet");
    // Edge data of one value per node, not per edge.
    meta = saved;
    meta["edge_data"]["_N:_E:_N"]["feat"] = meta["node_data"]["_N"]["label"];
    std::ofstream(chunks + "/metadata.json") << meta.dump();
    check(Distributed(2, {"--dataset", chunks, "--output", dir / "out"}), 3,
          chunks + "/" + meta["node_data"]["_N"]["label"]["data"][0].get<std::string>() +
              ": shape does not match the chunk's");
    std::ofstream(chunks + "/metadata.json") << saved.dump();
  }
  // --ip_config: the processes must match its machines.
  {
    std::ofstream(dir / "ip3.txt") << "127.0.0.1 30050\n127.0.0.1 30060\n127.0.0.1 30070\n";
    check(Distributed(
              2, {"--dataset", chunks, "--ip_config", dir / "ip3.txt", "--output", dir / "out"}),
          2, "--ip_config lists 3 machines but 2 processes were started");
  }
  // --ip_config alone is for --distributed.
  const auto r = RunProcess({Bin("gnn-partition"), "--dataset", chunks, "--ip_config",
                             dir / "ip3.txt", "--output", dir / "out"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--ip_config is for --distributed") != std::string::npos);
}

TEST_CASE("gnn-partition --distributed carries label rows: the single-machine partitions",
          "[e2e]") {
  REQUIRE_MPI();
  test::TempDir dir;
  // ogbn-proteins' shape: 112 binary labels, 8 edge features and node
  // features from their means; regression targets of 2 columns; and class
  // ids made values with --task node_regression.
  const std::string proteins = Chunked(dir, "synthetic:proteins-small", 3, "proteins");
  const std::string values =
      Chunked(dir, "synthetic:nodes=2000,edges=10000,feat=16,classes=4,task=regression,labels=2", 4,
              "values");
  const std::string classes = Chunked(dir, "synthetic:tiny", 4, "tiny");
  struct Case {
    std::string input, name;
    int ranks;
    std::string task, slice;
    gnn::LabelKind kind;
    int64_t width;
  };
  for (const Case& c : {Case{proteins, "synthetic-proteins-small", 3, "auto", "5000",
                             gnn::LabelKind::kMultilabel, 112},
                        Case{values, "synthetic-n2000-e10000-regression", 2, "auto", "",
                             gnn::LabelKind::kRegression, 2},
                        Case{classes, "synthetic-tiny", 2, "node_regression", "",
                             gnn::LabelKind::kRegression, 1}}) {
    const std::string tag = c.name + std::to_string(c.ranks);
    INFO(tag);
    const auto s = RunProcess({Bin("gnn-partition"), "--dataset", c.input, "--num_parts",
                               std::to_string(c.ranks), "--part_method", "random", "--task", c.task,
                               "--output", dir / ("single" + tag), "--quiet"},
                              120);
    INFO(s.err);
    REQUIRE(s.exit_code == 0);
    std::vector<std::string> env;
    if (!c.slice.empty()) env.push_back("GNN_FEATURE_SLICE_BYTES=" + c.slice);
    const auto d = Distributed(c.ranks,
                               {"--dataset", c.input, "--part_method", "random", "--task", c.task,
                                "--output", dir / ("dist" + tag)},
                               180, env);
    INFO(d.err);
    REQUIRE(d.exit_code == 0);
    const std::string a = dir / ("single" + tag) + "/" + c.name + ".json";
    const std::string b = dir / ("dist" + tag) + "/" + c.name + ".json";
    const gnn::PartitionConfig ca = gnn::LoadPartitionConfig(a);
    const gnn::PartitionConfig cb = gnn::LoadPartitionConfig(b);
    CHECK(Files(ca) == Files(cb));
    CHECK(ConfigWithoutReport(a) == ConfigWithoutReport(b));
    CHECK(cb.label_kind == c.kind);
    CHECK(cb.label_width == c.width);
    CHECK(Report(b).at("label_kind") == gnn::LabelKindName(c.kind));
    std::vector<int64_t> shape;
    gnn::ReadNpy<float>(dir / ("dist" + tag) + "/part0/label.npy", {}, &shape);
    CHECK(shape == std::vector<int64_t>{cb.parts[0].node_end - cb.parts[0].node_start, c.width});
  }
  // The chunks of ogbn-proteins' shape, on one machine, are the synthetic
  // graph itself.
  const auto direct =
      RunProcess({Bin("gnn-partition"), "--dataset", "synthetic:proteins-small", "--num_parts", "3",
                  "--part_method", "random", "--output", dir / "direct", "--quiet"},
                 120);
  REQUIRE(direct.exit_code == 0);
  CHECK(Files(gnn::LoadPartitionConfig(dir / "direct/synthetic-proteins-small.json")) ==
        Files(gnn::LoadPartitionConfig(dir / "singlesynthetic-proteins-small3/"
                                             "synthetic-proteins-small.json")));
  // A NaN target on machine 1; --task multilabel on values that are not 0/1.
  {
    const json meta = json::parse(std::ifstream(values + "/metadata.json"));
    const std::string file =
        values + "/" + meta["node_data"]["_N"]["label"]["data"][3].get<std::string>();
    std::vector<int64_t> shape;
    std::vector<float> rows = gnn::ReadNpy<float>(file, {}, &shape);
    fs::copy_file(file, file + ".good");
    rows[2 * 7 + 1] = std::nanf("");
    gnn::WriteNpy(file, rows.data(), shape);
    const auto r = Distributed(2, {"--dataset", values, "--output", dir / "out"});
    INFO(r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("machine 1: " + values + "/metadata.json: label: node " +
                     std::to_string(1500 + 7) + " has label nan, not a finite number") !=
          std::string::npos);
    CHECK(CountOf(r.err, "gnn-partition: error:") == 1);
    fs::remove(file);
    fs::rename(file + ".good", file);
    const auto t =
        Distributed(2, {"--dataset", values, "--task", "multilabel", "--output", dir / "out"});
    CHECK(t.exit_code == 3);
    CHECK(t.err.find("synthetic-n2000-e10000-regression: --task multilabel does not fit its "
                     "regression labels") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "out"));
  }
  // --task applies to the labels as read, as on one machine: multi-label
  // rows are not class ids, and class ids made values need every node's.
  {
    const auto r =
        Distributed(3, {"--dataset", proteins, "--task", "node", "--output", dir / "out"});
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("synthetic-proteins-small: --task node does not fit its multilabel labels") !=
          std::string::npos);
    const json meta = json::parse(std::ifstream(classes + "/metadata.json"));
    const std::string file =
        classes + "/" + meta["node_data"]["_N"]["label"]["data"][2].get<std::string>();
    std::vector<int64_t> l = gnn::ReadNpy<int64_t>(file);
    fs::copy_file(file, file + ".good");
    l[3] = -1;
    gnn::WriteNpy(file, l);
    for (int ranks : {1, 2}) {
      const auto u = ranks == 1
                         ? RunProcess({Bin("gnn-partition"), "--dataset", classes, "--num_parts",
                                       "2", "--task", "node_regression", "--output", dir / "out"},
                                      120)
                         : Distributed(2, {"--dataset", classes, "--task", "node_regression",
                                           "--output", dir / "out"});
      INFO(u.err);
      CHECK(u.exit_code == 3);
      CHECK(u.err.find("synthetic-tiny: node " + std::to_string(1000 + 3) +
                       " has no label (-1); --task node_regression needs a value for every "
                       "node") != std::string::npos);
    }
    fs::remove(file);
    fs::rename(file + ".good", file);
    CHECK_FALSE(fs::exists(dir / "out"));
  }
}

TEST_CASE("gnn-partition --distributed: bad edge data is one error line, nothing written",
          "[e2e]") {
  REQUIRE_MPI();
  test::TempDir dir;
  const std::string chunks = Chunked(
      dir, "synthetic:nodes=2000,edges=10000,feat=16,classes=4,efeat=3,etask=class", 4, "ef");
  auto check = [&](const test::ProcessResult& r, const std::string& text) {
    INFO(r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.err.find(text) != std::string::npos);
    CHECK(CountOf(r.err, "gnn-partition: error:") == 1);
    CHECK_FALSE(fs::exists(dir / "out"));
    for (const auto& e : fs::directory_iterator(dir.path())) {
      CHECK(e.path().filename().string().find("out.tmp.") == std::string::npos);
    }
  };
  const std::vector<std::string> args = {"--dataset", chunks, "--output", dir / "out"};
  // Machine 1 reads chunks 2 and 3. Each case changes one file and puts it back.
  auto with_file = [&](const std::string& file, const std::function<void()>& change,
                       const std::string& text) {
    fs::copy_file(file, file + ".good");
    change();
    check(Distributed(2, args), text);
    fs::remove(file);
    fs::rename(file + ".good", file);
  };
  const std::string feat2 = EdgeFile(chunks, "edge_data", "feat", 2);
  const std::string feat3 = EdgeFile(chunks, "edge_data", "feat", 3);
  std::vector<int64_t> shape;
  const std::vector<float> rows = gnn::ReadNpy<float>(feat3, {}, &shape);
  // A NaN feature.
  with_file(
      feat3,
      [&] {
        std::vector<float> bad = rows;
        bad[3 * 5 + 1] = std::nanf("");
        gnn::WriteNpy(feat3, bad.data(), shape);
      },
      "machine 1: synthetic-n2000-e10000-edgeclass: edge " + std::to_string(7500 + 5) +
          " has a feature that is not a finite number (column 1)");
  // Widths that differ within a machine's chunks, and across machines.
  std::vector<float> narrow(static_cast<size_t>(shape[0] * 2), 0.5f);
  with_file(
      feat3,
      [&] {
        gnn::WriteNpy(feat3, narrow.data(), {shape[0], 2});
      },
      "machine 1: " + feat3 + ": 2 columns, earlier chunks of feat have 3");
  // Both of machine 1's chunks 2 columns wide, machine 0's 3.
  fs::copy_file(feat3, feat3 + ".good");
  gnn::WriteNpy(feat3, narrow.data(), {shape[0], 2});
  with_file(
      feat2,
      [&] {
        gnn::WriteNpy(feat2, narrow.data(), {shape[0], 2});
      },
      "edge_data feat has 2 columns in some chunks and 3 in others");
  fs::remove(feat3);
  fs::rename(feat3 + ".good", feat3);
  // A train edge whose class is -1.
  const std::string label3 = EdgeFile(chunks, "edge_data", "label", 3);
  const std::string train3 = EdgeFile(chunks, "edge_data", "train_mask", 3);
  with_file(
      label3,
      [&] {
        std::vector<int64_t> l = gnn::ReadNpy<int64_t>(label3);
        const std::vector<uint8_t> train = gnn::ReadNpy<uint8_t>(train3);
        const size_t k =
            static_cast<size_t>(std::find(train.begin(), train.end(), uint8_t{1}) - train.begin());
        l[k] = -1;
        gnn::WriteNpy(label3, l);
      },
      "is in a split but has label -1, not a class in [0, ");
  // A label without train_mask, named before any work.
  {
    const std::string meta_file = chunks + "/metadata.json";
    const json meta = json::parse(std::ifstream(meta_file));
    json bad = meta;
    bad["edge_data"]["_N:_E:_N"].erase("train_mask");
    std::ofstream(meta_file) << bad.dump(2);
    check(Distributed(2, args), "edge_data._N:_E:_N.label needs train_mask beside it");
    std::ofstream(meta_file) << meta.dump(2);
  }
  // Intact again: it partitions, and --edge_weight names a column.
  const auto wrong =
      Distributed(2, {"--dataset", chunks, "--output", dir / "out", "--edge_weight", "feat"});
  CHECK(wrong.exit_code == 2);
  CHECK(wrong.err.find("--edge_weight feat: edge_data feat has 3 columns; a weight is one") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir / "out"));
  const auto ok = Distributed(2, {"--dataset", chunks, "--output", dir / "out", "--quiet"});
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("gnn-partition --distributed --ip_config starts its machines itself", "[e2e]") {
  REQUIRE_MPI();
  test::TempDir dir;
  const std::string chunks = Chunked(dir, "synthetic:tiny", 4, "tiny");
  std::ofstream(dir / "ip.txt") << "127.0.0.1 30050\n127.0.0.1 30060\n";
  // Started by hand, not under mpirun: it runs mpirun over the ip_config.
  const auto r = RunProcess({Bin("gnn-partition"), "--distributed", "--ip_config", dir / "ip.txt",
                             "--dataset", chunks, "--output", dir / "out", "--quiet"},
                            180);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const gnn::PartitionConfig c = gnn::LoadPartitionConfig(dir / "out/synthetic-tiny.json");
  CHECK(c.num_parts == 2);
  for (int p = 0; p < 2; ++p) CHECK_NOTHROW(gnn::VerifyPartFiles(c, p));
  CHECK(Report(dir / "out/synthetic-tiny.json").at("machines").size() == 2);
  // A host's lines apart cannot be placed by mpirun: one line naming it.
  std::ofstream(dir / "apart.txt") << "127.0.0.1 30050\n127.0.0.2 30060\n127.0.0.1 30070\n";
  const auto bad = RunProcess({Bin("gnn-partition"), "--distributed", "--ip_config",
                               dir / "apart.txt", "--dataset", chunks, "--output", dir / "out2"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("apart.txt:3: host 127.0.0.1 appears on lines apart") != std::string::npos);
}

namespace {

// Partitions `input` into `ranks` parts (--part_method random) on one
// machine into dir/single<tag> and with --distributed on `ranks` into
// dir/dist<tag> (feature and edge rows in slices of `slice` bytes when
// given), and checks every file byte for byte and the configs but for the
// report. Returns the single machine's config path.
std::string SameAsSingle(const test::TempDir& dir, const std::string& input, int ranks,
                         bool undirected, const std::string& slice, const std::string& tag,
                         const std::string& name) {
  std::vector<std::string> args = {"--dataset",     input,    "--num_parts", std::to_string(ranks),
                                   "--part_method", "random", "--quiet"};
  if (undirected) args.push_back("--undirected");
  std::vector<std::string> single_argv = {Bin("gnn-partition"), "--output", dir / ("single" + tag)};
  single_argv.insert(single_argv.end(), args.begin(), args.end());
  const auto single = RunProcess(single_argv, 120);
  INFO(single.err);
  REQUIRE(single.exit_code == 0);
  std::vector<std::string> env;
  if (!slice.empty()) env.push_back("GNN_FEATURE_SLICE_BYTES=" + slice);
  args.push_back("--output");
  args.push_back(dir / ("dist" + tag));
  const auto dist = Distributed(ranks, args, 180, env);
  INFO(dist.err);
  REQUIRE(dist.exit_code == 0);
  // Every file byte for byte (the config lists each one's sha256), and
  // the config itself but for the report.
  const std::string a = dir / ("single" + tag) + name, b = dir / ("dist" + tag) + name;
  CHECK(Files(gnn::LoadPartitionConfig(a)) == Files(gnn::LoadPartitionConfig(b)));
  CHECK(ConfigWithoutReport(a) == ConfigWithoutReport(b));
  for (const auto& [p, f] : Files(gnn::LoadPartitionConfig(b))) {
    CHECK(gnn::Sha256File(dir / ("dist" + tag + "/" + p)) == f);
  }
  return a;
}

}  // namespace

TEST_CASE("gnn-partition --distributed writes the single-machine typed partitions (random)",
          "[e2e]") {
  REQUIRE_MPI();
  test::TempDir dir;
  // 4 node types (features on paper only), 4 relations, labels and masks
  // on paper; 5 chunks of every type and relation.
  const std::string chunks = Chunked(dir, "synthetic:mag-small", 5, "mag");
  const std::string name = "/synthetic-mag-small.json";
  // The last case moves features in slices of 2000 bytes (7 rows of 64).
  for (const auto& [ranks, undirected, slice] : {std::tuple<int, bool, std::string>{1, false, ""},
                                                 {2, true, ""},
                                                 {3, false, ""},
                                                 {2, false, "2000"}}) {
    INFO(ranks << " machines, undirected " << undirected << ", slice " << slice);
    const std::string tag =
        std::to_string(ranks) + (undirected ? "u" : "d") + (slice.empty() ? "" : "s");
    const std::string a = SameAsSingle(dir, chunks, ranks, undirected, slice, tag, name);
    const std::string b = dir / ("dist" + tag) + name;
    const json ra = Report(a), rb = Report(b);
    for (const char* key :
         {"edge_cut", "undirected_edges", "input_edges", "imbalance", "ntypes", "etypes"}) {
      INFO(key);
      CHECK(ra.at(key) == rb.at(key));
    }
    CHECK(rb.at("machines").size() == static_cast<size_t>(ranks));
    for (const auto& e : fs::directory_iterator(dir.path())) {
      CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
    }
  }
}

TEST_CASE("gnn-partition --distributed with PT-Scotch partitions typed graphs", "[e2e]") {
  REQUIRE_MPI();
  test::TempDir dir;
  const std::string chunks = Chunked(dir, "synthetic:mag-small", 4, "mag");
  for (int ranks : {2, 3}) {
    INFO(ranks << " machines");
    const std::string out = dir / ("scotch" + std::to_string(ranks));
    const auto r = Distributed(ranks, {"--dataset", chunks, "--balance_train", "--balance_edges",
                                       "--output", out, "--quiet"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const gnn::PartitionConfig c = gnn::LoadPartitionConfig(out + "/synthetic-mag-small.json");
    CHECK(c.part_method == "ptscotch");
    CHECK(c.hetero());
    CHECK(c.ntypes.size() == 4);
    CHECK(c.etypes.size() == 4);
    // Every node of every type in exactly one partition, and every file as
    // the typed loader checks it.
    std::vector<std::set<int64_t>> seen(c.ntypes.size());
    int64_t nodes = 0, edges = 0;
    for (int p = 0; p < ranks; ++p) {
      const gnn::HeteroPartition part = gnn::LoadHeteroPartition(c, p, true);
      for (size_t t = 0; t < c.ntypes.size(); ++t) {
        const auto [b, e] = part.ntype_ranges[t];
        for (int64_t v = b; v < e; ++v) {
          CHECK(seen[t].insert(part.orig_nids[static_cast<size_t>(v - part.node_start)]).second);
        }
      }
      nodes += part.num_nodes;
      edges += static_cast<int64_t>(part.indices.size());
    }
    CHECK(nodes == c.num_nodes);
    CHECK(edges == c.num_edges);
    int64_t typed = 0;
    for (const std::set<int64_t>& s : seen) typed += static_cast<int64_t>(s.size());
    CHECK(typed == c.num_nodes);
    // One weight balanced: the folded one (each type's share, train nodes,
    // in-degree); the report says how each type came out.
    const json rep = Report(out + "/synthetic-mag-small.json");
    CHECK(rep.at("imbalance").at("nodes").get<double>() < 1.15);
    CHECK(rep.at("imbalance").at("train_nodes").get<double>() < 1.15);
    for (const std::string& t : c.ntypes) CHECK(rep.at("imbalance").contains("nodes_" + t));
    // A cut of METIS's class (the single-machine typed partitioner's).
    const std::string metis = dir / ("metis" + std::to_string(ranks));
    const auto m =
        RunProcess({Bin("gnn-partition"), "--dataset", chunks, "--num_parts", std::to_string(ranks),
                    "--balance_train", "--balance_edges", "--output", metis, "--quiet"},
                   120);
    REQUIRE(m.exit_code == 0);
    const int64_t metis_cut = Report(metis + "/synthetic-mag-small.json").at("edge_cut");
    INFO("PT-Scotch cut " << rep.at("edge_cut") << ", METIS " << metis_cut);
    CHECK(rep.at("edge_cut").get<double>() <= 1.3 * static_cast<double>(metis_cut));
    if (ranks == 2) {
      // The same input, seed and machine count give the same partitions.
      const auto again = Distributed(2, {"--dataset", chunks, "--balance_train", "--balance_edges",
                                         "--output", dir / "again", "--quiet"});
      REQUIRE(again.exit_code == 0);
      CHECK(Files(gnn::LoadPartitionConfig(dir / "again/synthetic-mag-small.json")) == Files(c));
    }
  }
}

TEST_CASE("gnn-partition --distributed: bad typed input is one error line, nothing written",
          "[e2e]") {
  REQUIRE_MPI();
  test::TempDir dir;
  const std::string chunks = Chunked(dir, "synthetic:mag-small", 4, "mag");
  auto check = [&](const test::ProcessResult& r, int code, const std::string& text) {
    INFO(r.err);
    CHECK(r.exit_code == code);
    CHECK(r.err.find(text) != std::string::npos);
    CHECK(CountOf(r.err, "gnn-partition: error:") == 1);
    CHECK_FALSE(fs::exists(dir / "out"));
    for (const auto& e : fs::directory_iterator(dir.path())) {
      CHECK(e.path().filename().string().find("out.tmp.") == std::string::npos);
    }
  };
  const std::string meta_file = chunks + "/metadata.json";
  const json meta = json::parse(std::ifstream(meta_file));
  // Typed graphs train class ids.
  check(Distributed(2, {"--dataset", chunks, "--task", "multilabel", "--output", dir / "out"}), 2,
        "--task multilabel: typed graphs train class ids (--task node) so far");
  // A relation naming a node type the graph does not have.
  {
    json bad = meta;
    bad["edge_type"][2] = "paper:cites:venue";
    bad["edges"]["paper:cites:venue"] = bad["edges"]["paper:cites:paper"];
    std::ofstream(meta_file) << bad.dump(2);
    check(Distributed(2, {"--dataset", chunks, "--output", dir / "out"}), 3,
          meta_file + ": edge type 'paper:cites:venue' names node type 'venue'");
    std::ofstream(meta_file) << meta.dump(2);
  }
  // A feature chunk one row short, read by machine 1.
  {
    const std::string file =
        chunks + "/" + meta["node_data"]["paper"]["feat"]["data"][3].get<std::string>();
    std::vector<int64_t> shape;
    const std::vector<float> rows = gnn::ReadNpy<float>(file, {}, &shape);
    fs::rename(file, file + ".good");
    gnn::WriteNpy(file, rows.data(), {shape[0] - 1, shape[1]});
    check(Distributed(2, {"--dataset", chunks, "--output", dir / "out"}), 3,
          "machine 1: " + file + ": shape does not match the chunk's");
    fs::remove(file);
    fs::rename(file + ".good", file);
  }
  // An edge chunk of the wrong length (metadata.json says one more edge).
  {
    json bad = meta;
    bad["num_edges_per_chunk"][1][2] = bad["num_edges_per_chunk"][1][2].get<int64_t>() + 1;
    std::ofstream(meta_file) << bad.dump(2);
    const std::string file =
        chunks + "/" + meta["edges"]["author:writes:paper"]["data"][2].get<std::string>();
    check(Distributed(2, {"--dataset", chunks, "--output", dir / "out"}), 3, "machine 1: " + file);
    std::ofstream(meta_file) << meta.dump(2);
  }
  // A missing label chunk, on machine 0.
  {
    const std::string file =
        chunks + "/" + meta["node_data"]["paper"]["label"]["data"][0].get<std::string>();
    fs::rename(file, file + ".good");
    check(Distributed(2, {"--dataset", chunks, "--output", dir / "out"}), 3, "cannot open " + file);
    fs::rename(file + ".good", file);
  }
  // A missing edge chunk.
  {
    const std::string file =
        chunks + "/" +
        meta["edges"]["paper:has_topic:field_of_study"]["data"][1].get<std::string>();
    fs::rename(file, file + ".good");
    check(Distributed(2, {"--dataset", chunks, "--output", dir / "out"}), 3, file);
    fs::rename(file + ".good", file);
  }
  // Intact again: it partitions.
  const auto ok = Distributed(2, {"--dataset", chunks, "--output", dir / "out", "--quiet"});
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("gnn-partition --distributed carries typed edge features: the single-machine partitions",
          "[e2e]") {
  REQUIRE_MPI();
  test::TempDir dir;
  // Every relation's edges with 3 features, in 4 chunks; a copy whose
  // author:writes:paper edges have none (their rows 0 in edge_feat.npy).
  const std::string chunks = Chunked(dir, "synthetic:mag-small,efeat=3", 4, "mag");
  const std::string some = dir / "some";
  fs::copy(chunks, some, fs::copy_options::recursive);
  json meta = json::parse(std::ifstream(some + "/metadata.json"));
  meta["edge_data"].erase("author:writes:paper");
  std::ofstream(some + "/metadata.json") << meta.dump(2);
  const std::string name = "/synthetic-mag-small-efeat3.json";
  for (const auto& [input, ranks, undirected, slice] :
       {std::tuple<std::string, int, bool, std::string>{chunks, 2, true, ""},
        {chunks, 3, false, ""},
        {some, 2, true, "1000"}}) {
    INFO(input << ": " << ranks << " machines, undirected " << undirected << ", slice " << slice);
    const std::string tag = std::to_string(ranks) + (undirected ? "u" : "d") +
                            (slice.empty() ? "" : "s") + (input == some ? "some" : "");
    const gnn::PartitionConfig c =
        gnn::LoadPartitionConfig(SameAsSingle(dir, input, ranks, undirected, slice, tag, name));
    CHECK(c.edge_feature_dim == 3);
    CHECK(std::count(c.etype_edge_feature_dims.begin(), c.etype_edge_feature_dims.end(), 0) ==
          (input == some ? (undirected ? 2 : 1) : 0));
  }
}

TEST_CASE(
    "gnn-partition --distributed carries a typed edge task's labels: the single-machine partitions",
    "[e2e]") {
  REQUIRE_MPI();
  test::TempDir dir;
  // Labels and masks on paper:cites:paper, 3 features on every relation,
  // in 4 chunks; and labels alone (values) in 3.
  const std::string both = Chunked(dir, "synthetic:mag-small,efeat=3,etask=class", 4, "both");
  for (const auto& [ranks, undirected] : {std::pair<int, bool>{2, true}, {3, false}}) {
    const std::string tag = "c" + std::to_string(ranks) + (undirected ? "u" : "d");
    const gnn::PartitionConfig c = gnn::LoadPartitionConfig(SameAsSingle(
        dir, both, ranks, undirected, "", tag, "/synthetic-mag-small-efeat3-edgeclass.json"));
    CHECK(c.edge_labels);
    CHECK(c.target_etype == "paper:cites:paper");
    CHECK(c.edge_feature_dim == 3);
  }
  const std::string values = Chunked(dir, "synthetic:mag-small,etask=regression", 3, "values");
  const gnn::PartitionConfig v = gnn::LoadPartitionConfig(
      SameAsSingle(dir, values, 2, true, "", "v", "/synthetic-mag-small-edgeregression.json"));
  CHECK(v.edge_label_kind == gnn::LabelKind::kRegression);
  CHECK(v.edge_feature_dim == 0);
  // Labels on a second relation are one line on every machine, before any
  // work.
  json meta = json::parse(std::ifstream(values + "/metadata.json"));
  meta["edge_data"]["author:writes:paper"] = meta["edge_data"]["paper:cites:paper"];
  std::ofstream(values + "/metadata.json") << meta.dump(2);
  const auto bad =
      Distributed(2, {"--dataset", values, "--num_parts", "2", "--output", dir / "bad"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("two relations") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "bad"));
}
