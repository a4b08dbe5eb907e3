// --restore_model_path: a state dict file read back without Python. The
// pickle in it is run by a small stack machine that knows only what a
// state dict of tensors needs (the opcodes of pickle protocol 2 that
// torch.save and model_file.cc write, and the handful of globals
// torch.load's weights_only unpickler allows for tensors), so a foreign
// file is refused by name rather than executed.
#include <caffe2/serialize/inline_container.h>

#include <cstring>
#include <map>
#include <memory>

#include "common/error.h"
#include "common/fs.h"
#include "train/loop/model_file.h"
#include "train/models/tensor_text.h"

namespace gnn {

namespace {

struct PVal;
using PRef = std::shared_ptr<PVal>;

// One value on the unpickler's stack.
struct PVal {
  enum Kind { kNone, kBool, kInt, kFloat, kStr, kTuple, kList, kDict, kGlobal, kStorage, kTensor };
  Kind kind = kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                             // kStr; kGlobal: "module.name"
  std::vector<PRef> items;                   // kTuple, kList
  std::vector<std::pair<PRef, PRef>> dict;   // kDict, in insertion order
  std::vector<std::pair<PRef, PRef>> attrs;  // kDict: what BUILD set (_metadata)
  torch::Tensor tensor;                      // kStorage (flat), kTensor
};

PRef Make(PVal::Kind k) {
  auto v = std::make_shared<PVal>();
  v->kind = k;
  return v;
}

// torch's legacy storage classes and the dtypes they hold.
bool StorageDtype(const std::string& global, torch::ScalarType* out) {
  static const std::map<std::string, torch::ScalarType> kinds = {
      {"torch.FloatStorage", torch::kFloat}, {"torch.DoubleStorage", torch::kDouble},
      {"torch.HalfStorage", torch::kHalf},   {"torch.BFloat16Storage", torch::kBFloat16},
      {"torch.IntStorage", torch::kInt},     {"torch.LongStorage", torch::kLong},
      {"torch.ByteStorage", torch::kByte},   {"torch.CharStorage", torch::kChar},
      {"torch.ShortStorage", torch::kShort}, {"torch.BoolStorage", torch::kBool}};
  auto it = kinds.find(global);
  if (it == kinds.end()) return false;
  *out = it->second;
  return true;
}

class Unpickler {
 public:
  Unpickler(const std::string& what, const std::string& pickle,
            caffe2::serialize::PyTorchStreamReader& zip)
      : what_(what), p_(pickle), zip_(zip) {}

  PRef Run() {
    while (true) {
      const uint8_t op = Byte();
      if (op == '.') {  // STOP
        if (stack_.size() != 1 || !marks_.empty()) {
          Fail("the pickle ends with a stack of " + std::to_string(stack_.size()));
        }
        return stack_.back();
      }
      if (op == 0x80) {  // PROTO
        Byte();
        continue;
      }
      if (Literal(op) || Container(op)) continue;
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", op);
      Fail(std::string("pickle opcode ") + hex + " at byte " + std::to_string(at_ - 1) +
           " is not one a state dict uses");
    }
  }

 private:
  // The opcodes that push one value (a constant, a string, a global).
  bool Literal(uint8_t op) {
    switch (op) {
      case 'c': {  // GLOBAL
        const std::string module = Line(), name = Line();
        auto g = Make(PVal::kGlobal);
        g->s = module + "." + name;
        torch::ScalarType unused;
        if (g->s != "collections.OrderedDict" && g->s != "torch._utils._rebuild_tensor_v2" &&
            g->s != "torch._utils._rebuild_parameter" && !StorageDtype(g->s, &unused)) {
          Fail("it refers to " + g->s + ", which a state dict of tensors does not");
        }
        Push(g);
        return true;
      }
      case 'N':
        Push(Make(PVal::kNone));
        return true;
      case 0x88:
      case 0x89: {
        auto v = Make(PVal::kBool);
        v->b = op == 0x88;
        Push(v);
        return true;
      }
      case 'K':
        PushInt(Byte());
        return true;
      case 'M':
        PushInt(static_cast<int64_t>(Le(2)));
        return true;
      case 'J':
        PushInt(static_cast<int32_t>(static_cast<uint32_t>(Le(4))));
        return true;
      case 0x8a: {  // LONG1: n bytes, two's complement
        const size_t n = Byte();
        if (n > 8) Fail("an integer of " + std::to_string(n) + " bytes");
        uint64_t v = Le(n);
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);
        PushInt(static_cast<int64_t>(v));
        return true;
      }
      case 'G': {  // BINFLOAT, big-endian
        uint64_t bits = 0;
        for (int k = 0; k < 8; ++k) bits = bits << 8 | Byte();
        auto v = Make(PVal::kFloat);
        std::memcpy(&v->f, &bits, sizeof(bits));
        Push(v);
        return true;
      }
      case 'X':
        PushStr(Take(Le(4)));
        return true;  // BINUNICODE
      case 0x8c:
        PushStr(Take(Byte()));
        return true;  // SHORT_BINUNICODE
      default:
        return false;
    }
  }

  // The opcodes that build, fill, call or remember containers.
  bool Container(uint8_t op) {
    switch (op) {
      case '(':
        marks_.push_back(stack_.size());
        return true;
      case 't':
        Push(TupleOf(PopMark()));
        return true;
      case ')':
        Push(Make(PVal::kTuple));
        return true;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const size_t n = op - 0x84u;
        Need(n);
        std::vector<PRef> items(stack_.end() - static_cast<long>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        Push(TupleOf(std::move(items)));
        return true;
      }
      case '}':
        Push(Make(PVal::kDict));
        return true;
      case ']':
        Push(Make(PVal::kList));
        return true;
      case 'q':
        Memo(Byte());
        return true;  // BINPUT
      case 'r':
        Memo(Le(4));
        return true;  // LONG_BINPUT
      case 0x94:
        Memo(memo_.size());
        return true;  // MEMOIZE
      case 'h':
        Push(Recall(Byte()));
        return true;  // BINGET
      case 'j':
        Push(Recall(Le(4)));
        return true;  // LONG_BINGET
      case 's': {     // SETITEM
        Need(3);
        PRef value = Pop(), key = Pop();
        DictAt(stack_.back())->dict.emplace_back(key, value);
        return true;
      }
      case 'u': {  // SETITEMS
        std::vector<PRef> kv = PopMark();
        if (kv.size() % 2) Fail("SETITEMS with an odd number of items");
        Need(1);
        PRef d = DictAt(stack_.back());
        for (size_t k = 0; k < kv.size(); k += 2) d->dict.emplace_back(kv[k], kv[k + 1]);
        return true;
      }
      case 'a': {  // APPEND
        Need(2);
        PRef v = Pop();
        ListAt(stack_.back())->items.push_back(v);
        return true;
      }
      case 'e': {  // APPENDS
        std::vector<PRef> items = PopMark();
        Need(1);
        PRef l = ListAt(stack_.back());
        l->items.insert(l->items.end(), items.begin(), items.end());
        return true;
      }
      case 'Q':
        Push(Storage(Pop()));
        return true;  // BINPERSID
      case 'R': {     // REDUCE
        Need(2);
        PRef args = Pop(), fn = Pop();
        Push(Reduce(fn, args));
        return true;
      }
      case 'b': {  // BUILD: an OrderedDict's attributes (_metadata)
        Need(2);
        PRef state = Pop();
        PRef obj = DictAt(stack_.back());
        if (state->kind == PVal::kNone) return true;
        if (state->kind != PVal::kDict) Fail("BUILD with a state that is not a dict");
        obj->attrs.insert(obj->attrs.end(), state->dict.begin(), state->dict.end());
        return true;
      }
      default:
        return false;
    }
  }

  [[noreturn]] void Fail(const std::string& why) const {
    throw DataError(what_ + ": not a state dict of tensors (" + why + ")");
  }
  uint8_t Byte() {
    if (at_ >= p_.size()) Fail("the pickle is cut short");
    return static_cast<uint8_t>(p_[at_++]);
  }
  uint64_t Le(size_t n) {
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= uint64_t{Byte()} << (8 * k);
    return v;
  }
  std::string Take(uint64_t n) {
    if (n > p_.size() - at_) Fail("a string runs past the end of the pickle");
    std::string s = p_.substr(at_, n);
    at_ += n;
    return s;
  }
  std::string Line() {
    const size_t end = p_.find('\n', at_);
    if (end == std::string::npos || end - at_ > 256) Fail("a malformed GLOBAL");
    std::string s = p_.substr(at_, end - at_);
    at_ = end + 1;
    return s;
  }
  void Push(PRef v) {
    if (stack_.size() > (size_t{1} << 20)) Fail("a stack of over 2^20 values");
    stack_.push_back(std::move(v));
  }
  void PushInt(int64_t i) {
    auto v = Make(PVal::kInt);
    v->i = i;
    Push(v);
  }
  void PushStr(std::string s) {
    auto v = Make(PVal::kStr);
    v->s = std::move(s);
    Push(v);
  }
  void Need(size_t n) const {
    const size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() < floor + n) Fail("an opcode finds too few values on the stack");
  }
  PRef Pop() {
    Need(1);
    PRef v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::vector<PRef> PopMark() {
    if (marks_.empty()) Fail("no MARK for an opcode that needs one");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<PRef> items(stack_.begin() + static_cast<long>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  static PRef TupleOf(std::vector<PRef> items) {
    auto t = Make(PVal::kTuple);
    t->items = std::move(items);
    return t;
  }
  PRef DictAt(const PRef& v) const {
    if (v->kind != PVal::kDict) Fail("a dict opcode on something that is not a dict");
    return v;
  }
  PRef ListAt(const PRef& v) const {
    if (v->kind != PVal::kList) Fail("a list opcode on something that is not a list");
    return v;
  }
  void Memo(uint64_t k) {
    Need(1);
    if (k > (uint64_t{1} << 24)) Fail("a memo index past 2^24");
    memo_[k] = stack_.back();
  }
  PRef Recall(uint64_t k) const {
    auto it = memo_.find(k);
    if (it == memo_.end()) Fail("a memo index that was never set");
    return it->second;
  }
  int64_t IntAt(const PRef& t, size_t k) const {
    if (t->items.size() <= k || t->items[k]->kind != PVal::kInt) Fail("a tensor's int is missing");
    return t->items[k]->i;
  }
  std::vector<int64_t> Ints(const PRef& t) const {
    if (t->kind != PVal::kTuple) Fail("a tensor's size or stride is not a tuple");
    std::vector<int64_t> out;
    for (const PRef& v : t->items) {
      if (v->kind != PVal::kInt || v->i < 0) Fail("a tensor's size or stride is not >= 0");
      out.push_back(v->i);
    }
    return out;
  }

  // ('storage', <storage class>, key, location, numel) -> the record
  // data/<key> as a flat tensor of that class's dtype.
  PRef Storage(const PRef& pid) {
    if (pid->kind != PVal::kTuple || pid->items.size() != 5 || pid->items[0]->kind != PVal::kStr ||
        pid->items[0]->s != "storage" || pid->items[1]->kind != PVal::kGlobal ||
        pid->items[2]->kind != PVal::kStr) {
      Fail("a persistent id that is not a tensor storage");
    }
    torch::ScalarType dtype;
    if (!StorageDtype(pid->items[1]->s, &dtype)) Fail(pid->items[1]->s + " is not a storage");
    const int64_t numel = IntAt(pid, 4);
    if (numel < 0) Fail("a storage of negative size");
    const std::string record = "data/" + pid->items[2]->s;
    auto it = storages_.find(record);
    if (it != storages_.end()) return it->second;
    if (!zip_.hasRecord(record)) Fail("its storage " + record + " is missing");
    auto [data, bytes] = zip_.getRecord(record);
    const size_t want = static_cast<size_t>(numel) * c10::elementSize(dtype);
    if (bytes != want) {
      Fail("storage " + record + " holds " + std::to_string(bytes) + " bytes, not " +
           std::to_string(want));
    }
    auto s = Make(PVal::kStorage);
    s->tensor = torch::empty({numel}, torch::TensorOptions().dtype(dtype));
    if (want > 0) std::memcpy(s->tensor.data_ptr(), data.get(), want);
    storages_[record] = s;
    return s;
  }

  PRef Reduce(const PRef& fn, const PRef& args) {
    if (fn->kind != PVal::kGlobal || args->kind != PVal::kTuple) Fail("a call of a non-global");
    if (fn->s == "collections.OrderedDict") {
      if (!args->items.empty()) Fail("an OrderedDict made from arguments");
      return Make(PVal::kDict);
    }
    if (fn->s == "torch._utils._rebuild_parameter") {
      if (args->items.empty() || args->items[0]->kind != PVal::kTensor) Fail("a bad parameter");
      return args->items[0];
    }
    if (fn->s != "torch._utils._rebuild_tensor_v2") Fail("a call of " + fn->s);
    // (storage, offset, size, stride, requires_grad, hooks[, metadata])
    if (args->items.size() < 4 || args->items[0]->kind != PVal::kStorage) {
      Fail("a tensor without a storage");
    }
    const torch::Tensor& flat = args->items[0]->tensor;
    const int64_t offset = IntAt(args, 1);
    const std::vector<int64_t> size = Ints(args->items[2]), stride = Ints(args->items[3]);
    if (size.size() != stride.size() || size.size() > 8) Fail("a tensor's size and stride differ");
    int64_t last = offset, numel = 1;
    for (size_t d = 0; d < size.size(); ++d) {
      numel *= size[d];
      if (size[d] > 0) last += (size[d] - 1) * stride[d];
      if (numel > flat.numel() * 64 + 1) Fail("a tensor larger than its storage allows");
    }
    if (offset < 0 || (numel > 0 && last >= flat.numel())) Fail("a tensor outside its storage");
    auto t = Make(PVal::kTensor);
    t->tensor = flat.as_strided(size, stride, offset).clone(at::MemoryFormat::Contiguous);
    return t;
  }

  const std::string what_;
  const std::string& p_;
  caffe2::serialize::PyTorchStreamReader& zip_;
  size_t at_ = 0;
  std::vector<PRef> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, PRef> memo_;
  std::map<std::string, PRef> storages_;
};

nlohmann::json ToJson(const PRef& v, const std::string& what, int depth) {
  if (depth > 32) throw DataError(what + ": its metadata nests deeper than 32");
  switch (v->kind) {
    case PVal::kNone:
      return nullptr;
    case PVal::kBool:
      return v->b;
    case PVal::kInt:
      return v->i;
    case PVal::kFloat:
      return v->f;
    case PVal::kStr:
      return v->s;
    case PVal::kTuple:
    case PVal::kList: {
      nlohmann::json a = nlohmann::json::array();
      for (const PRef& item : v->items) a.push_back(ToJson(item, what, depth + 1));
      return a;
    }
    case PVal::kDict: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& [key, value] : v->dict) {
        if (key->kind != PVal::kStr) throw DataError(what + ": its metadata has a non-string key");
        o[key->s] = ToJson(value, what, depth + 1);
      }
      return o;
    }
    default:
      throw DataError(what + ": its metadata holds a tensor or a global");
  }
}

ModelFile ParseModelFile(std::shared_ptr<caffe2::serialize::ReadAdapterInterface> in,
                         const std::string& what) {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip;
  std::string pickle;
  try {
    zip = std::make_unique<caffe2::serialize::PyTorchStreamReader>(std::move(in));
    if (!zip->hasRecord("data.pkl")) {
      throw DataError(what + ": not a model file (a zip without data.pkl)");
    }
    auto [data, bytes] = zip->getRecord("data.pkl");
    pickle.assign(static_cast<const char*>(data.get()), bytes);
  } catch (const DataError&) {
    throw;
  } catch (const std::exception& e) {
    throw DataError(what + ": not a model file saved by --save_model or torch.save (" +
                    FirstLine(e.what()) + ")");
  }
  PRef root;
  try {
    root = Unpickler(what, pickle, *zip).Run();
  } catch (const DataError&) {
    throw;
  } catch (const std::exception& e) {
    throw DataError(what + ": cannot read a storage (" + FirstLine(e.what()) + ")");
  }
  if (root->kind != PVal::kDict) throw DataError(what + ": not a state dict (no dict at its top)");
  ModelFile f;
  for (const auto& [key, value] : root->dict) {
    if (key->kind != PVal::kStr || value->kind != PVal::kTensor) {
      throw DataError(what + ": not a state dict of named tensors");
    }
    f.params.emplace_back(key->s, value->tensor);
  }
  for (const auto& [key, value] : root->attrs) {
    if (key->kind != PVal::kStr || key->s != "_metadata" || value->kind != PVal::kDict) continue;
    for (const auto& [module, meta] : value->dict) {
      if (module->kind == PVal::kStr && module->s == "gnn") f.meta = ToJson(meta, what, 0);
    }
  }
  return f;
}

}  // namespace

ModelFile ReadModelFile(const std::string& path) {
  if (!PathExists(path)) throw DataError("cannot open " + path + ": No such file or directory");
  const std::string bytes = ReadFile(path);
  return ParseModelFileBytes(std::vector<char>(bytes.begin(), bytes.end()), path);
}

ModelFile ParseModelFileBytes(const std::vector<char>& bytes, const std::string& what) {
  class Adapter : public caffe2::serialize::ReadAdapterInterface {
   public:
    explicit Adapter(const std::vector<char>& b) : b_(b) {}
    size_t size() const override { return b_.size(); }
    size_t read(uint64_t pos, void* buf, size_t n, const char*) const override {
      if (pos >= b_.size()) return 0;
      n = std::min<size_t>(n, b_.size() - pos);
      std::memcpy(buf, b_.data() + pos, n);
      return n;
    }

   private:
    const std::vector<char>& b_;
  };
  return ParseModelFile(std::make_shared<Adapter>(bytes), what);
}

}  // namespace gnn
