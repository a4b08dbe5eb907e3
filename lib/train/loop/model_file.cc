#include "train/loop/model_file.h"

#include <caffe2/serialize/inline_container.h>

#include <map>
#include <set>
#include <stdexcept>

#include "common/error.h"
#include "common/fs.h"
#include "train/models/tensor_text.h"

namespace gnn {

namespace {

// The opcodes of pickle protocol 2 that torch.load's restricted unpickler
// (torch/_weights_only_unpickler.py) accepts, written by hand: the data
// is a fixed shape, and every opcode here is one it knows.
class PickleWriter {
 public:
  PickleWriter() { Op(0x80), Op(2); }  // PROTO 2
  void Global(const std::string& module, const std::string& name) {
    Op('c');
    Raw(module + "\n" + name + "\n");
  }
  void Mark() { Op('('); }
  void Tuple() { Op('t'); }  // the items since the mark
  void EmptyTuple() { Op(')'); }
  void EmptyDict() { Op('}'); }
  void EmptyList() { Op(']'); }
  void SetItems() { Op('u'); }  // key/value pairs since the mark into the dict below
  void Appends() { Op('e'); }   // items since the mark into the list below
  void Reduce() { Op('R'); }    // callable(args)
  void Build() { Op('b'); }     // obj.__dict__.update(state) for an OrderedDict
  void PersistentId() { Op('Q'); }
  void Stop() { Op('.'); }
  void Bool(bool b) { Op(b ? 0x88 : 0x89); }
  void Str(const std::string& s) {
    Op('X');
    Le(static_cast<uint32_t>(s.size()), 4);
    Raw(s);
  }
  void Int(int64_t v) {
    if (v >= 0 && v < 256) {
      Op('K'), Op(static_cast<uint8_t>(v));
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      Op('J'), Le(static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
    } else {
      Op(0x8a), Op(8), Le(static_cast<uint64_t>(v), 8);  // LONG1, two's complement
    }
  }
  void Json(const nlohmann::json& j) {
    if (j.is_string()) {
      Str(j.get<std::string>());
    } else if (j.is_boolean()) {
      Bool(j.get<bool>());
    } else if (j.is_number_integer()) {
      Int(j.get<int64_t>());
    } else if (j.is_array()) {
      EmptyList();
      if (j.empty()) return;
      Mark();
      for (const auto& item : j) Json(item);
      Appends();
    } else if (j.is_object()) {
      EmptyDict();
      if (j.empty()) return;
      Mark();
      for (const auto& [key, value] : j.items()) Str(key), Json(value);
      SetItems();
    } else {
      // No floats: torch 1.13's restricted unpickler has no opcode for one.
      throw std::invalid_argument("model metadata holds a " + std::string(j.type_name()) +
                                  " value: strings, integers, booleans, arrays and objects only");
    }
  }
  void OrderedDict() {
    Global("collections", "OrderedDict");
    EmptyTuple();
    Reduce();
  }
  const std::string& bytes() const { return out_; }

 private:
  void Op(uint8_t c) { out_.push_back(static_cast<char>(c)); }
  void Raw(const std::string& s) { out_ += s; }
  void Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) Op(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::string out_;
};

// torch's legacy typed-storage class of a dtype, as torch.save names it.
const char* StorageClass(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat:
      return "FloatStorage";
    case torch::kDouble:
      return "DoubleStorage";
    case torch::kHalf:
      return "HalfStorage";
    case torch::kBFloat16:
      return "BFloat16Storage";
    case torch::kInt:
      return "IntStorage";
    case torch::kLong:
      return "LongStorage";
    default:
      throw std::invalid_argument(std::string("a model parameter of dtype ") + c10::toString(t) +
                                  " cannot be saved");
  }
}

}  // namespace

std::vector<char> StateDictFileBytes(
    const std::vector<std::pair<std::string, torch::Tensor>>& params, const nlohmann::json& meta) {
  if (!meta.is_object()) throw std::invalid_argument("model metadata must be a JSON object");
  std::vector<torch::Tensor> storages;
  PickleWriter p;
  p.OrderedDict();
  if (!params.empty()) {
    p.Mark();
    for (const auto& [name, tensor] : params) {
      const torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
      const std::string key = std::to_string(storages.size());
      storages.push_back(t);
      p.Str(name);
      // torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
      // requires_grad, backward_hooks), storage = persistent id
      // ('storage', <class>, key, location, numel): torch.save's layout.
      p.Global("torch._utils", "_rebuild_tensor_v2");
      p.Mark();
      p.Mark();
      p.Str("storage");
      p.Global("torch", StorageClass(t.scalar_type()));
      p.Str(key);
      p.Str("cpu");
      p.Int(t.numel());
      p.Tuple();
      p.PersistentId();
      p.Int(0);
      p.Mark();
      for (int64_t s : t.sizes()) p.Int(s);
      p.Tuple();
      p.Mark();
      for (int64_t s : t.strides()) p.Int(s);
      p.Tuple();
      p.Bool(false);
      p.OrderedDict();
      p.Tuple();
      p.Reduce();
    }
    p.SetItems();
  }
  // state_dict._metadata = {"": {"version": 1}, "gnn": meta}
  p.EmptyDict();
  p.Mark();
  p.Str("_metadata");
  p.Json({{"", {{"version", 1}}}, {"gnn", meta}});
  p.SetItems();
  p.Build();
  p.Stop();

  std::vector<char> out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
    const char* c = static_cast<const char*>(data);
    out.insert(out.end(), c, c + n);
    return n;
  });
  writer.writeRecord("data.pkl", p.bytes().data(), p.bytes().size());
  writer.writeRecord("byteorder", "little", 6);
  for (size_t i = 0; i < storages.size(); ++i) {
    writer.writeRecord("data/" + std::to_string(i), storages[i].data_ptr(), storages[i].nbytes());
  }
  writer.writeEndOfFile();
  return out;
}

std::string DglKey(const std::string& model, const std::string& key) {
  // "layers.<i>.<rest>": the layer's own parameter names.
  const std::string prefix = "layers.";
  if (key.rfind(prefix, 0) != 0) return key;
  const size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos) return key;
  const std::string layer = key.substr(0, dot + 1), rest = key.substr(dot + 1);
  if (model == "graphsage" && rest == "bias") return layer + "fc_self.bias";
  if (model == "gat" && rest == "res_fc.bias") return layer + "bias";
  // RelGraphConv keeps its relation weights in a TypedLinear.
  if (model == "rgcn" && rest == "weight") return layer + "linear_r.W";
  if (model == "rgcn" && rest == "coeff") return layer + "linear_r.coeff";
  return key;
}

void LoadParams(torch::nn::Module& module, const std::string& model, const ModelFile& file,
                const std::string& what) {
  std::map<std::string, torch::Tensor> given(file.params.begin(), file.params.end());
  std::set<std::string> used;
  torch::NoGradGuard no_grad;
  for (auto& item : module.named_parameters()) {
    const std::string key = DglKey(model, item.key());
    auto it = given.find(key);
    if (it == given.end()) throw DataError(what + ": the model has no " + key);
    torch::Tensor& p = item.value();
    if (it->second.sizes() != p.sizes()) {
      throw DataError(what + ": " + key + " is " + ShapeText(it->second) + ", the model's " +
                      ShapeText(p) + " (another width, layer count or class count?)");
    }
    p.copy_(it->second.to(p.dtype()));
    used.insert(key);
  }
  for (const auto& [key, t] : file.params) {
    if (!used.count(key)) {
      throw DataError(what + ": " + key + " is not a parameter of --model " + model);
    }
  }
}

void SaveModelFile(const std::string& path, const torch::nn::Module& module,
                   const nlohmann::json& meta,
                   const std::vector<std::pair<std::string, torch::Tensor>>& extra) {
  const std::string model = meta.is_object() ? meta.value("model", std::string()) : "";
  std::vector<std::pair<std::string, torch::Tensor>> params;
  for (const auto& item : module.named_parameters())
    params.emplace_back(DglKey(model, item.key()), item.value());
  params.insert(params.end(), extra.begin(), extra.end());
  const std::vector<char> bytes = StateDictFileBytes(params, meta);
  AtomicFile f(path);
  f.Write(bytes.data(), bytes.size());
  f.Commit();
}

}  // namespace gnn
