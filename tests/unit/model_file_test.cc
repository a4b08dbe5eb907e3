// The model file (--save_model / --restore_model_path): written and read
// back without Python, DGL 2.x's parameter names, and the files it refuses.
#include "train/loop/model_file.h"

#include <caffe2/serialize/inline_container.h>

#include <catch2/catch.hpp>

#include "common/error.h"
#include "train/models/node_model.h"
#include "train/options/train_options.h"

using namespace gnn;
using nlohmann::json;
using namespace std::string_literals;

namespace {

std::vector<char> ZipWithPickle(const std::string& pickle) {
  std::vector<char> out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
    const char* c = static_cast<const char*>(data);
    out.insert(out.end(), c, c + n);
    return n;
  });
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  writer.writeEndOfFile();
  return out;
}

}  // namespace

TEST_CASE("model file: tensors and metadata read back exactly", "[unit]") {
  torch::manual_seed(1);
  const std::vector<std::pair<std::string, torch::Tensor>> params = {
      {"layers.0.fc_self.weight", torch::randn({3, 5})},
      {"layers.0.fc_self.bias", torch::randn({3})},
      {"ids", torch::arange(7, torch::kInt64) - 3},
      {"half", torch::randn({2, 2}).to(torch::kBFloat16)},
      {"strided", torch::randn({4, 6}).t()},  // saved contiguous
      {"empty", torch::empty({0, 4})}};
  const json meta = {{"model", "graphsage"},    {"num_layers", 2},
                     {"big", int64_t{1} << 40}, {"neg", -300000},
                     {"fan_out", {10, 25}},     {"nested", {{"a", true}, {"b", json::array()}}}};
  const std::vector<char> bytes = StateDictFileBytes(params, meta);
  const ModelFile f = ParseModelFileBytes(bytes, "m.pt");
  REQUIRE(f.params.size() == params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    CHECK(f.params[i].first == params[i].first);
    CHECK(f.params[i].second.dtype() == params[i].second.dtype());
    CHECK(torch::equal(f.params[i].second, params[i].second.contiguous()));
  }
  CHECK(f.meta == meta);
}

TEST_CASE("model file: DGL 2.x names, and a strict load into the model", "[unit]") {
  CHECK(DglKey("graphsage", "layers.1.bias") == "layers.1.fc_self.bias");
  CHECK(DglKey("graphsage", "layers.1.fc_neigh.weight") == "layers.1.fc_neigh.weight");
  CHECK(DglKey("gat", "layers.0.res_fc.bias") == "layers.0.bias");
  CHECK(DglKey("gat", "layers.0.bias") == "layers.0.bias");
  CHECK(DglKey("gcn", "layers.0.bias") == "layers.0.bias");
  CHECK(DglKey("rgcn", "layers.2.weight") == "layers.2.linear_r.W");
  CHECK(DglKey("rgcn", "layers.2.coeff") == "layers.2.linear_r.coeff");
  CHECK(DglKey("rgcn", "embed.proj_1") == "embed.proj_1");

  TrainOptions o;
  o.num_hidden = 8;
  std::shared_ptr<NodeModel> a = MakeNodeModel(o, 5, 3);
  std::vector<std::pair<std::string, torch::Tensor>> saved;
  for (const auto& p : a->named_parameters())
    saved.emplace_back(DglKey("graphsage", p.key()), p.value());
  const ModelFile f =
      ParseModelFileBytes(StateDictFileBytes(saved, {{"model", "graphsage"}}), "m.pt");
  torch::manual_seed(9);
  std::shared_ptr<NodeModel> b = MakeNodeModel(o, 5, 3);
  LoadParams(*b, "graphsage", f, "m.pt");
  for (const auto& p : a->named_parameters()) {
    CHECK(torch::equal(p.value(), b->named_parameters()[p.key()]));
  }
  // Strict: a missing key, an extra one, another shape.
  ModelFile missing = f;
  missing.params.pop_back();
  CHECK_THROWS_WITH(LoadParams(*b, "graphsage", missing, "m.pt"),
                    Catch::Contains("m.pt: the model has no"));
  ModelFile extra = f;
  extra.params.emplace_back("layers.9.weight", torch::zeros({1}));
  CHECK_THROWS_WITH(LoadParams(*b, "graphsage", extra, "m.pt"),
                    Catch::Contains("layers.9.weight is not a parameter of --model graphsage"));
  o.num_hidden = 4;
  std::shared_ptr<NodeModel> narrow = MakeNodeModel(o, 5, 3);
  CHECK_THROWS_WITH(LoadParams(*narrow, "graphsage", f, "m.pt"),
                    Catch::Contains("fc_self.bias is [8], the model's [4]"));
}

TEST_CASE("model file: truncated, foreign and hostile files are one DataError", "[unit]") {
  const std::vector<char> good =
      StateDictFileBytes({{"w", torch::ones({2, 2})}}, {{"model", "graphsage"}});
  auto refuses = [](const std::vector<char>& bytes, const std::string& needle) {
    CHECK_THROWS_AS(ParseModelFileBytes(bytes, "m.pt"), DataError);
    CHECK_THROWS_WITH(ParseModelFileBytes(bytes, "m.pt"), Catch::Contains(needle));
  };
  refuses(std::vector<char>(good.begin(), good.begin() + static_cast<long>(good.size() / 2)),
          "m.pt: not a model file");
  refuses(std::vector<char>{'h', 'i'}, "m.pt: not a model file");
  // A pickle that would run a command in Python's default unpickler.
  refuses(ZipWithPickle("\x80\x02"s + "cos\nsystem\nX\x02\x00\x00\x00ls\x85R."s),
          "refers to os.system");
  // Cut short, an unknown opcode, a stack left over, a tensor past its storage.
  refuses(ZipWithPickle("\x80\x02}(X\x01\x00\x00\x00"s + "a"s), "cut short");
  refuses(ZipWithPickle("\x80\x02\xff."s), "opcode 0xff");
  refuses(ZipWithPickle("\x80\x02}}."s), "ends with a stack of 2");
  refuses(ZipWithPickle("\x80\x02K\x05."s), "no dict at its top");
  const std::string past =
      "\x80\x02}X\x01\x00\x00\x00w"s + "ctorch._utils\n_rebuild_tensor_v2\n(("s +
      "X\x07\x00\x00\x00storage"s + "ctorch\nFloatStorage\n"s + "X\x01\x00\x00\x00"s + "0"s +
      "X\x03\x00\x00\x00"s + "cpu"s + "K\x04tQK\x00K\x09\x85K\x01\x85\x89)tRs."s;
  std::vector<char> zip;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
      const char* c = static_cast<const char*>(data);
      zip.insert(zip.end(), c, c + n);
      return n;
    });
    writer.writeRecord("data.pkl", past.data(), past.size());
    const float four[4] = {1, 2, 3, 4};
    writer.writeRecord("data/0", four, sizeof(four));
    writer.writeEndOfFile();
  }
  refuses(zip, "outside its storage");
}
