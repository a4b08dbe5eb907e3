#include "train/checkpoint.h"

#include <cstdio>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/sha256.h"

namespace gnn {

// Order-sensitive checksum of every parameter's bytes: equal on every rank
// after every step when the all-reduce keeps the replicas identical.
std::string ParamChecksum(GraphSage& model) {
  Sha256 h;
  for (const auto& p : model->named_parameters()) {
    torch::Tensor t = p.value().detach().contiguous();
    h.Update(p.key().data(), p.key().size());
    h.Update(t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size());
  }
  return h.HexDigest().substr(0, 16);
}

std::string ModelSignature(const TrainOptions& o, const PartitionConfig& c, const Task& task) {
  std::ostringstream s;
  s << "graphsage graph=" << c.graph_name << " in=" << c.feature_dim << " hidden=" << o.num_hidden
    << " classes=" << c.num_classes << " layers=" << o.num_layers << task.Signature();
  return s.str();
}

void SaveCheckpoint(const std::string& dir, GraphSage& model, torch::optim::Adam& opt,
                    const TrainState& st, const std::string& signature) {
  MakeDirs(dir);
  torch::serialize::OutputArchive archive, model_ar, opt_ar;
  model->save(model_ar);
  opt.save(opt_ar);
  archive.write("model", model_ar);
  archive.write("optimizer", opt_ar);
  archive.write("signature", c10::IValue(signature));
  archive.write("state",
                torch::tensor({static_cast<double>(st.epochs_done), st.best_val, st.test_at_best,
                               st.final_test, static_cast<double>(st.best_epoch)},
                              torch::kFloat64));
  const std::string path = dir + "/checkpoint.pt";
  const std::string tmp = path + ".tmp." + RandomSuffix();
  try {
    archive.save_to(tmp);
  } catch (const std::exception& e) {
    std::remove(tmp.c_str());
    const std::string what = e.what();
    throw DataError("cannot write checkpoint " + path + ": " + what.substr(0, what.find('\n')));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw DataError("cannot write checkpoint " + path);
  }
  SyncDir(dir);
}

TrainState LoadCheckpoint(const std::string& dir, GraphSage& model, torch::optim::Adam& opt,
                          const std::string& signature) {
  const std::string path = dir + "/checkpoint.pt";
  if (!PathExists(path)) throw DataError("--resume: no checkpoint at " + path);
  TrainState st;
  try {
    torch::serialize::InputArchive archive, model_ar, opt_ar;
    archive.load_from(path);
    c10::IValue sig;
    archive.read("signature", sig);
    if (!sig.isString() || sig.toStringRef() != signature) {
      throw DataError("checkpoint " + path + " is for a different model (" +
                      (sig.isString() ? sig.toStringRef() : std::string("?")) + "; now " +
                      signature + ")");
    }
    archive.read("model", model_ar);
    archive.read("optimizer", opt_ar);
    model->load(model_ar);
    opt.load(opt_ar);
    torch::Tensor s;
    archive.read("state", s);
    auto a = s.accessor<double, 1>();
    st.epochs_done = static_cast<int>(a[0]);
    st.best_val = a[1];
    st.test_at_best = a[2];
    st.final_test = a[3];
    st.best_epoch = static_cast<int>(a[4]);
  } catch (const DataError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw DataError("cannot read checkpoint " + path + ": " + what.substr(0, what.find('\n')));
  }
  return st;
}

}  // namespace gnn
