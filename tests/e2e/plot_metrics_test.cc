// scripts/plot_metrics.py on synthetic gnn-train metrics files: the picture
// it writes, and one error line for bad input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/fs.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::RunProcess;

namespace {

const std::string kScript = std::string(GNN_SOURCE_DIR) + "/scripts/plot_metrics.py";

// A metrics file as gnn-train writes it: step records every 20 steps, one
// epoch record per epoch, evaluations every 2 epochs, a summary last.
void WriteMetrics(const std::string& path, int epochs, double speedup, bool link) {
  std::ofstream f(path);
  for (int e = 1; e <= epochs; ++e) {
    for (int s = 20; s <= 60; s += 20) {
      f << json{{"type", "step"},
                {"epoch", e},
                {"step", s},
                {"loss", 2.0 / (e + s / 60.0)},
                {"train_acc", 1 - 0.5 / e},
                {"samples_per_s", 4000 * speedup}}
        << "\n";
    }
    f << json{{"type", "epoch"},
              {"epoch", e},
              {"epoch_time_s", 3.0 / speedup},
              {"sample_s", 1.2},
              {"forward_s", 0.6},
              {"backward_s", 0.9},
              {"allreduce_s", 0.05},
              {"update_s", 0.01},
              {"seeds", 1208},
              {"inputs", 24000},
              {"param_checksum", 12.5}}
      << "\n";
    if (e % 2 == 0) {
      f << json{{"type", "eval"},
                {"epoch", e},
                {"val_acc", 0.6 + 0.03 * e},
                {"test_acc", 0.58 + 0.03 * e},
                {"eval_time_s", 0.4}}
        << "\n";
      if (link)
        f << json{{"type", "link_eval"}, {"epoch", e}, {"link_auc", 0.8}, {"link_mrr", 0.4}}
          << "\n";
    }
  }
  f << json{{"type", "summary"}, {"summary", {{"test_acc", 0.7}, {"epochs", epochs}}}} << "\n";
}

uint32_t BigEndian32(const std::string& s, size_t pos) {
  uint32_t v = 0;
  for (size_t i = pos; i < pos + 4; ++i) v = v << 8 | static_cast<unsigned char>(s[i]);
  return v;
}

test::ProcessResult Plot(std::vector<std::string> args) {
  args.insert(args.begin(), {"/usr/bin/python3", kScript});
  return RunProcess(args, 120);
}

bool HaveMatplotlib() {
  return PathExists("/usr/bin/python3") &&
         RunProcess({"/usr/bin/python3", "-c", "import matplotlib"}).exit_code == 0;
}

}  // namespace

TEST_CASE("plot_metrics.py draws two runs into a PNG and an SVG", "[e2e]") {
  if (!HaveMatplotlib()) GNN_SKIP("python3-matplotlib not installed");
  test::TempDir dir;
  WriteMetrics(dir / "one.jsonl", 6, 1.0, false);
  WriteMetrics(dir / "two.jsonl", 6, 1.8, true);

  auto png = Plot({dir / "one.jsonl", dir / "two.jsonl", "-o", dir / "curves.png", "--label",
                   "1 part", "--label", "2 parts"});
  INFO(png.err);
  REQUIRE(png.exit_code == 0);
  const std::string image = ReadFile(dir / "curves.png");
  REQUIRE(image.size() > 1000);
  CHECK(image.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  CHECK(image.compare(12, 4, "IHDR") == 0);
  const uint32_t width = BigEndian32(image, 16), height = BigEndian32(image, 20);
  CHECK(width >= 400);
  CHECK(width <= 4000);
  CHECK(height >= 300);
  CHECK(height <= 4000);

  auto svg = Plot({dir / "one.jsonl", dir / "two.jsonl", "-o", dir / "curves.svg"});
  INFO(svg.err);
  REQUIRE(svg.exit_code == 0);
  const std::string text = ReadFile(dir / "curves.svg");
  CHECK(text.find("<svg") != std::string::npos);
  CHECK(text.find("one.jsonl") != std::string::npos);  // default labels: the file names
  CHECK(text.find("two.jsonl") != std::string::npos);
  CHECK(text.find("Link prediction AUC") != std::string::npos);  // two.jsonl has link_eval
}

TEST_CASE("plot_metrics.py bad input: one error line naming the file and line", "[e2e]") {
  if (!HaveMatplotlib()) GNN_SKIP("python3-matplotlib not installed");
  test::TempDir dir;
  WriteMetrics(dir / "good.jsonl", 2, 1.0, false);
  auto expect_error = [&](const std::string& file, const std::string& needle) {
    auto r = Plot({dir / "good.jsonl", file, "-o", dir / "out.png"});
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("plot_metrics.py: error: " + needle) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(!PathExists(dir / "out.png"));
  };
  WriteFileAtomic(dir / "bad.jsonl",
                  "{\"type\":\"epoch\",\"epoch\":1,\"epoch_time_s\":2.5}\n\n{\"type\": step}\n");
  expect_error(dir / "bad.jsonl", dir / "bad.jsonl:3: not JSON");
  WriteFileAtomic(dir / "noloss.jsonl", "{\"type\":\"step\",\"epoch\":1,\"step\":20}\n");
  expect_error(dir / "noloss.jsonl",
               dir / "noloss.jsonl:1: \"step\" record needs a number \"loss\"");
  WriteFileAtomic(dir / "array.jsonl", "[1, 2]\n");
  expect_error(dir / "array.jsonl", dir / "array.jsonl:1: expected a JSON object");
  WriteFileAtomic(dir / "empty.jsonl", "");
  expect_error(dir / "empty.jsonl", dir / "empty.jsonl: no step, epoch or eval records");
  expect_error(dir / "missing.jsonl", dir / "missing.jsonl: cannot read");
}
