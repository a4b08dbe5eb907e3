#include "train/loop/checkpoint.h"

#include <filesystem>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/sha256.h"
#include "train/models/tensor_text.h"

namespace gnn {

namespace {

namespace fs = std::filesystem;

// The state tensor's fields, in order. Checkpoints of earlier versions
// have the first five only (whole epochs).
enum StateField {
  kEpochsDone,
  kBestVal,
  kTestAtBest,
  kFinalTest,
  kBestEpoch,
  kBatchesDone,
  kGlobalStep,
  kWorld,
  kNumBatches,
  kNumStateFields
};

// Fields of checkpoints of earlier versions: whole epochs only, then the
// position without the epoch's cut.
constexpr int kEpochFields = 5, kPositionFields = 7;

}  // namespace

// Order-sensitive checksum of every parameter's bytes: equal on every rank
// after every step when the all-reduce keeps the replicas identical.
std::string ParamChecksum(torch::nn::Module& model) {
  Sha256 h;
  for (const auto& p : model.named_parameters()) {
    torch::Tensor t = p.value().detach().contiguous().cpu();
    h.Update(p.key().data(), p.key().size());
    h.Update(t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size());
  }
  return h.HexDigest().substr(0, 16);
}

std::string ModelSignature(const TrainOptions& o, const PartitionConfig& c, const Task& task) {
  std::ostringstream s;
  s << o.model << " graph=" << c.graph_name << " in=" << c.feature_dim << " hidden=" << o.num_hidden
    << " classes=" << c.num_classes << " layers=" << o.num_layers << task.Signature();
  if (o.use_edge_weight) s << " edge_weight";
  if (o.edge_feat_dim > 0) s << " edge_feat=" << o.edge_feat_mp_op << "x" << o.edge_feat_dim;
  if (o.model == "gat") {
    s << " heads=" << o.num_heads << " out_heads=" << o.num_out_heads << " residual=" << o.residual;
  }
  return s.str();
}

std::string CheckpointPath(const std::string& dir) { return dir + "/checkpoint.pt"; }

void SaveCheckpoint(const std::string& dir, torch::nn::Module& model, torch::optim::Adam& opt,
                    const TrainState& st, const std::string& signature, const std::string& extra,
                    const std::vector<torch::Tensor>& best) {
  MakeDirs(dir);
  torch::serialize::OutputArchive archive, model_ar, opt_ar, best_ar;
  model.save(model_ar);
  if (!best.empty()) {
    for (size_t i = 0; i < best.size(); ++i) best_ar.write(std::to_string(i), best[i]);
    archive.write("best", best_ar);
  }
  if (!extra.empty()) {
    archive.write("extra", torch::from_blob(const_cast<char*>(extra.data()),
                                            {static_cast<int64_t>(extra.size())}, torch::kUInt8)
                               .clone());
  }
  opt.save(opt_ar);
  archive.write("model", model_ar);
  archive.write("optimizer", opt_ar);
  archive.write("signature", c10::IValue(signature));
  std::vector<double> state(kNumStateFields);
  state[kEpochsDone] = st.epochs_done;
  state[kBestVal] = st.best_val;
  state[kTestAtBest] = st.test_at_best;
  state[kFinalTest] = st.final_test;
  state[kBestEpoch] = st.best_epoch;
  state[kBatchesDone] = static_cast<double>(st.batches_done);
  state[kGlobalStep] = static_cast<double>(st.global_step);
  state[kWorld] = static_cast<double>(st.world);
  state[kNumBatches] = static_cast<double>(st.num_batches);
  archive.write("state", torch::tensor(state, torch::kFloat64));
  std::ostringstream bytes;
  const std::string path = CheckpointPath(dir);
  try {
    archive.save_to(bytes);
  } catch (const std::exception& e) {
    throw DataError("cannot write checkpoint " + path + ": " + FirstLine(e.what()));
  }
  const std::string b = bytes.str();
  AtomicFile f(path);
  f.Write(b.data(), b.size());
  f.Commit();
}

std::string ReadCheckpointBytes(const std::string& dir) {
  const std::string path = CheckpointPath(dir);
  if (!PathExists(path)) return "";
  return ReadFile(path);  // "cannot open|read PATH: REASON"
}

namespace {

TrainState ReadState(torch::serialize::InputArchive& archive, const std::string& path) {
  torch::Tensor s;
  archive.read("state", s);
  if (s.dim() != 1 || s.scalar_type() != torch::kFloat64 || s.size(0) < kEpochFields)
    throw DataError("checkpoint " + path + " has no valid training state");
  auto a = s.accessor<double, 1>();
  TrainState st;
  st.epochs_done = static_cast<int>(a[kEpochsDone]);
  st.best_val = a[kBestVal];
  st.test_at_best = a[kTestAtBest];
  st.final_test = a[kFinalTest];
  st.best_epoch = static_cast<int>(a[kBestEpoch]);
  if (s.size(0) >= kPositionFields) {
    st.batches_done = static_cast<int64_t>(a[kBatchesDone]);
    st.global_step = static_cast<int64_t>(a[kGlobalStep]);
  }
  if (s.size(0) >= kNumStateFields) {
    st.world = static_cast<int64_t>(a[kWorld]);
    st.num_batches = static_cast<int64_t>(a[kNumBatches]);
  }
  return st;
}

}  // namespace

TrainState PeekCheckpointState(const std::string& bytes, const std::string& path) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(bytes.data(), bytes.size());
    return ReadState(archive, path);
  } catch (const DataError&) {
    throw;
  } catch (const std::exception& e) {
    throw DataError("cannot read checkpoint " + path + ": " + FirstLine(e.what()));
  }
}

std::string ReadResumeBytes(const TrainOptions& o) {
  if (o.checkpoint_dir.empty()) return "";
  const std::string path = CheckpointPath(o.checkpoint_dir);
  std::string bytes = ReadCheckpointBytes(o.checkpoint_dir);
  if (o.resume) {
    if (bytes.empty()) throw DataError("--resume: no checkpoint at " + path);
    return bytes;
  }
  if (bytes.empty() || o.resume_step == -2) return bytes;
  const TrainState st = PeekCheckpointState(bytes, path);
  if (o.resume_step >= 0 && st.global_step >= o.resume_step) return bytes;
  GNN_LOG(kWarn) << "ignoring " << path << " (step " << st.global_step
                 << "): not written by this job ("
                 << (o.resume_step < 0 ? std::string("it wrote none yet")
                                       : "its newest is step " + std::to_string(o.resume_step))
                 << ")";
  return "";
}

void RemoveCheckpointTemporaries(const std::string& dir) {
  std::error_code ec;
  const std::string prefix = "checkpoint.pt.tmp.";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(prefix, 0) == 0) fs::remove(it->path(), ec);
  }
}

TrainState RestoreCheckpoint(const std::string& bytes, const std::string& path,
                             torch::nn::Module& model, torch::optim::Adam& opt,
                             const std::string& signature, std::string* extra,
                             std::vector<torch::Tensor>* best) {
  TrainState st;
  try {
    torch::serialize::InputArchive archive, model_ar, opt_ar, best_ar;
    archive.load_from(bytes.data(), bytes.size());
    c10::IValue sig;
    archive.read("signature", sig);
    if (!sig.isString() || sig.toStringRef() != signature) {
      throw DataError("checkpoint " + path + " is for a different model (" +
                      (sig.isString() ? sig.toStringRef() : std::string("?")) + "; now " +
                      signature + ")");
    }
    archive.read("model", model_ar);
    archive.read("optimizer", opt_ar);
    model.load(model_ar);
    opt.load(opt_ar);
    st = ReadState(archive, path);
    if (best) {
      best->clear();
      if (archive.try_read("best", best_ar)) {
        const size_t n = model.parameters().size();
        for (size_t i = 0; i < n; ++i) {
          torch::Tensor t;
          best_ar.read(std::to_string(i), t);
          best->push_back(t);
        }
      }
    }
    if (extra) {
      // Absent when it was empty (an RGCN whose every node type has
      // features); the caller judges whether bytes were due.
      torch::Tensor blob;
      extra->clear();
      if (archive.try_read("extra", blob)) {
        if (blob.scalar_type() != torch::kUInt8 || blob.dim() != 1)
          throw DataError("checkpoint " + path + " has a malformed embedding-table entry");
        blob = blob.contiguous();
        extra->assign(static_cast<const char*>(blob.data_ptr()), static_cast<size_t>(blob.numel()));
      }
    }
  } catch (const DataError&) {
    throw;
  } catch (const std::exception& e) {
    throw DataError("cannot read checkpoint " + path + ": " + FirstLine(e.what()));
  }
  return st;
}

TrainState LoadCheckpoint(const std::string& dir, torch::nn::Module& model, torch::optim::Adam& opt,
                          const std::string& signature) {
  const std::string bytes = ReadCheckpointBytes(dir);
  if (bytes.empty()) throw DataError("--resume: no checkpoint at " + CheckpointPath(dir));
  return RestoreCheckpoint(bytes, CheckpointPath(dir), model, opt, signature);
}

}  // namespace gnn
