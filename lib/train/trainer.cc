#include "train/trainer.h"

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/npy.h"
#include "common/timer.h"
#include "partition/config.h"
#include "partition/local_partition.h"
#include "sampling/loader.h"
#include "sampling/sampler.h"
#include "train/sage.h"

namespace gnn {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<int> TrainOptions::Fanouts() const {
  std::vector<int> out;
  std::stringstream ss(fan_out);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    try {
      size_t used = 0;
      int v = std::stoi(tok, &used);
      if (used != tok.size() || v < -1) throw std::invalid_argument(tok);
      out.push_back(v);
    } catch (const std::exception&) {
      throw ConfigError("--fan_out must be comma-separated integers >= -1, got '" + fan_out + "'");
    }
  }
  return out;
}

void TrainOptions::Validate() const {
  if (part_config.empty()) throw ConfigError("--part_config is required");
  if (num_epochs < 1) throw ConfigError("--num_epochs must be >= 1");
  if (batch_size < 1) throw ConfigError("--batch_size must be >= 1");
  if (batch_size_eval < 1) throw ConfigError("--batch_size_eval must be >= 1");
  if (num_hidden < 1) throw ConfigError("--num_hidden must be >= 1");
  if (num_layers < 1) throw ConfigError("--num_layers must be >= 1");
  if (!(lr > 0)) throw ConfigError("--lr must be > 0");
  if (dropout < 0 || dropout >= 1) throw ConfigError("--dropout must be in [0, 1)");
  if (weight_decay < 0) throw ConfigError("--weight_decay must be >= 0");
  if (log_every < 1) throw ConfigError("--log_every must be >= 1");
  if (eval_every < 1) throw ConfigError("--eval_every must be >= 1");
  if (num_workers < 0) throw ConfigError("--num_workers must be >= 0");
  if (prefetch < 1) throw ConfigError("--prefetch must be >= 1");
  if (static_cast<int>(Fanouts().size()) != num_layers) {
    throw ConfigError("--fan_out '" + fan_out + "' has " + std::to_string(Fanouts().size()) +
                      " entries but --num_layers is " + std::to_string(num_layers));
  }
  if (resume && checkpoint_dir.empty()) throw ConfigError("--resume needs --checkpoint_dir");
}

namespace {

// Appends JSON lines to the metrics file (if any), flushing each line.
class MetricsWriter {
 public:
  MetricsWriter(const std::string& path, bool append) {
    if (path.empty()) return;
    file_ = std::fopen(path.c_str(), append ? "a" : "w");
    if (!file_) throw DataError("cannot write --metrics_file " + path);
  }
  ~MetricsWriter() {
    if (file_) std::fclose(file_);
  }
  void Write(const json& j) {
    if (!file_) return;
    std::string line = j.dump() + "\n";
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
  }

 private:
  FILE* file_ = nullptr;
};

struct TrainState {
  int epochs_done = 0;
  double best_val = -1, test_at_best = 0, final_test = 0;
  int best_epoch = 0;
};

std::string ModelSignature(const TrainOptions& o, const PartitionConfig& c) {
  std::ostringstream s;
  s << "graphsage graph=" << c.graph_name << " in=" << c.feature_dim << " hidden=" << o.num_hidden
    << " classes=" << c.num_classes << " layers=" << o.num_layers;
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
  archive.write("state", torch::tensor({static_cast<double>(st.epochs_done), st.best_val,
                                        st.test_at_best, st.final_test,
                                        static_cast<double>(st.best_epoch)},
                                       torch::kFloat64));
  const std::string path = dir + "/checkpoint.pt";
  archive.save_to(path + ".tmp");
  if (std::rename((path + ".tmp").c_str(), path.c_str()) != 0) {
    throw DataError("cannot write checkpoint " + path);
  }
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

// Layer-wise full-neighbour inference over every node of the partition (as
// DGL's evaluate): layer l is computed for all nodes before layer l+1, in
// batches of batch_size_eval destination nodes, so memory stays bounded.
torch::Tensor Inference(GraphSage& model, const LocalPartition& part, int64_t batch_size,
                        int threads) {
  torch::NoGradGuard no_grad;
  model->eval();
  CscView csc{part.indptr.data(), part.indices.data(), part.node_start, part.num_nodes};
  torch::Tensor h = torch::from_blob(const_cast<float*>(part.features.data()),
                                     {part.num_nodes, part.feature_dim}, torch::kFloat32);
  for (int l = 0; l < model->num_layers(); ++l) {
    torch::Tensor next = torch::empty({part.num_nodes, model->OutDim(l)}, torch::kFloat32);
    for (int64_t start = 0; start < part.num_nodes; start += batch_size) {
      int64_t end = std::min(part.num_nodes, start + batch_size);
      std::vector<int64_t> dst(end - start);
      for (int64_t i = start; i < end; ++i) dst[i - start] = part.node_start + i;
      std::vector<int64_t> nbr_ptr, nbr_idx;
      SampleNeighbors(csc, dst.data(), static_cast<int64_t>(dst.size()), -1, false, 0, threads,
                      &nbr_ptr, &nbr_idx);
      Block block = ToBlock(dst, std::move(nbr_ptr), nbr_idx);
      BlockTensors bt = ToTensors(block);
      torch::Tensor src = torch::from_blob(block.src_nodes.data(), {block.num_src()}, torch::kInt64);
      torch::Tensor out = model->ForwardLayer(l, bt, h.index_select(0, src - part.node_start));
      next.slice(0, start, end).copy_(out);
    }
    h = next;
  }
  model->train();
  return h;
}

double Accuracy(const torch::Tensor& logits, const LocalPartition& part,
                const std::vector<int64_t>& nodes) {
  if (nodes.empty()) return 0.0;
  torch::Tensor idx =
      torch::from_blob(const_cast<int64_t*>(nodes.data()), {static_cast<int64_t>(nodes.size())},
                       torch::kInt64) - part.node_start;
  torch::Tensor labels =
      torch::from_blob(const_cast<int64_t*>(part.labels.data()), {part.num_nodes}, torch::kInt64);
  torch::Tensor pred = logits.index_select(0, idx).argmax(1);
  return pred.eq(labels.index_select(0, idx)).to(torch::kFloat64).mean().item<double>();
}

}  // namespace

json RunTrain(const TrainOptions& o) {
  o.Validate();
  if (o.num_gpus > 0 && !torch::cuda::is_available()) {
    throw ConfigError("--num_gpus " + std::to_string(o.num_gpus) +
                      " requested, but this gnn-train has no CUDA device (LibTorch " +
                      std::string(torch::cuda::is_available() ? "with" : "without") +
                      " CUDA); use --num_gpus -1 for CPU");
  }
  if (!o.standalone) {
    throw ConfigError("distributed training is not available yet: run with --standalone on a "
                      "1-partition config");
  }
  // Debian's LibTorch starts with one OpenMP thread whatever the core count,
  // so "default" means every core here, as DGL's launcher sets it explicitly.
  torch::set_num_threads(o.num_omp_threads > 0 ? o.num_omp_threads
                                               : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  PartitionConfig config = LoadPartitionConfig(o.part_config);
  if (!o.graph_name.empty() && o.graph_name != config.graph_name) {
    throw ConfigError("--graph_name " + o.graph_name + " does not match " + o.part_config +
                      " (graph_name " + config.graph_name + ")");
  }
  if (config.num_parts != 1) {
    throw ConfigError("--standalone needs a 1-partition config, but " + o.part_config + " has " +
                      std::to_string(config.num_parts) +
                      " partitions (re-run gnn-partition with --num_parts 1)");
  }
  if (config.num_classes < 1) throw DataError(o.part_config + ": num_classes is 0");
  Stopwatch load_watch;
  LocalPartition part = LoadLocalPartition(config, 0, o.verify_checksums);
  const std::vector<int64_t> train_nodes = part.Nodes(part.train_mask);
  const std::vector<int64_t> valid_nodes = part.Nodes(part.valid_mask);
  const std::vector<int64_t> test_nodes = part.Nodes(part.test_mask);
  if (train_nodes.empty()) throw DataError(o.part_config + ": partition 0 has no train nodes");
  GNN_LOG(kInfo) << "loaded " << config.graph_name << ": " << part.num_nodes << " nodes, "
                 << part.indices.size() << " in-edges, " << train_nodes.size() << " train / "
                 << valid_nodes.size() << " valid / " << test_nodes.size() << " test, in "
                 << std::fixed << std::setprecision(2) << load_watch.Seconds() << " s";

  torch::manual_seed(o.seed);
  GraphSage model(config.feature_dim, o.num_hidden, config.num_classes, o.num_layers, o.dropout);
  torch::optim::Adam opt(model->parameters(),
                         torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));
  const std::string signature = ModelSignature(o, config);
  TrainState st;
  if (o.resume) {
    st = LoadCheckpoint(o.checkpoint_dir, model, opt, signature);
    GNN_LOG(kInfo) << "resumed from " << o.checkpoint_dir << " after epoch " << st.epochs_done;
  }
  MetricsWriter metrics(o.metrics_file, o.resume);

  LocalGraph graph;
  graph.csc = CscView{part.indptr.data(), part.indices.data(), part.node_start, part.num_nodes,
                      part.orig_nids.data()};
  graph.features = part.features.data();
  graph.feature_dim = part.feature_dim;
  graph.labels = part.labels.data();
  LoaderOptions lo;
  lo.fanouts = o.Fanouts();
  lo.batch_size = o.batch_size;
  lo.replace = o.sample_replace;
  lo.num_workers = o.num_workers;
  lo.prefetch = o.prefetch;
  lo.seed = o.seed;

  double train_seconds = 0;
  int64_t seeds_seen = 0;
  int epochs_run = 0;
  for (int epoch = st.epochs_done; epoch < o.num_epochs; ++epoch) {
    // Dropout draws from LibTorch's generator: reseeding per epoch makes a
    // resumed run identical to an uninterrupted one.
    torch::manual_seed(MixSeed(o.seed, static_cast<uint64_t>(epoch) + 1));
    model->train();
    Stopwatch epoch_watch;
    double t_sample = 0, t_fwd = 0, t_bwd = 0, t_upd = 0;
    int64_t epoch_seeds = 0, epoch_inputs = 0;
    BatchLoader loader(graph, train_nodes, lo, epoch);
    Stopwatch step_watch;
    int64_t step = 0, seeds_at_log = 0;
    while (true) {
      Stopwatch t;
      std::optional<MiniBatch> mb = loader.Next();
      t_sample += t.Seconds();
      if (!mb) break;
      t.Reset();
      std::vector<BlockTensors> blocks;
      for (const Block& b : mb->blocks) blocks.push_back(ToTensors(b));
      torch::Tensor x = torch::from_blob(mb->features.data(),
                                         {mb->blocks.front().num_src(), mb->feature_dim},
                                         torch::kFloat32);
      torch::Tensor y = torch::from_blob(mb->labels.data(),
                                         {static_cast<int64_t>(mb->labels.size())}, torch::kInt64);
      torch::Tensor logits = model->forward(blocks, x);
      torch::Tensor loss = torch::nn::functional::cross_entropy(logits, y);
      t_fwd += t.Seconds();
      t.Reset();
      opt.zero_grad();
      loss.backward();
      t_bwd += t.Seconds();
      t.Reset();
      opt.step();
      t_upd += t.Seconds();
      epoch_seeds += static_cast<int64_t>(mb->seeds.size());
      epoch_inputs += mb->blocks.front().num_src();
      ++step;
      if (step % o.log_every == 0) {
        double acc = logits.argmax(1).eq(y).to(torch::kFloat64).mean().item<double>();
        double speed = static_cast<double>(epoch_seeds - seeds_at_log) / step_watch.Seconds();
        seeds_at_log = epoch_seeds;
        step_watch.Reset();
        GNN_LOG(kInfo) << "Part 0 | Epoch " << std::setw(5) << std::setfill('0') << epoch + 1
                       << " | Step " << std::setw(5) << step << std::setfill(' ') << std::fixed
                       << " | Loss " << std::setprecision(4) << loss.item<double>()
                       << " | Train Acc " << acc << " | Speed (samples/sec) "
                       << std::setprecision(1) << speed;
        metrics.Write({{"type", "step"}, {"epoch", epoch + 1}, {"step", step},
                       {"loss", loss.item<double>()}, {"train_acc", acc},
                       {"samples_per_s", speed}});
      }
    }
    double epoch_s = epoch_watch.Seconds();
    train_seconds += epoch_s;
    seeds_seen += epoch_seeds;
    ++epochs_run;
    GNN_LOG(kInfo) << "Part 0, Epoch Time(s): " << std::fixed << std::setprecision(4) << epoch_s
                   << ", sample+data_copy: " << t_sample << ", forward: " << t_fwd
                   << ", backward: " << t_bwd << ", update: " << t_upd
                   << ", #seeds: " << epoch_seeds << ", #inputs: " << epoch_inputs;
    metrics.Write({{"type", "epoch"}, {"epoch", epoch + 1}, {"epoch_time_s", epoch_s},
                   {"sample_s", t_sample}, {"forward_s", t_fwd}, {"backward_s", t_bwd},
                   {"update_s", t_upd}, {"seeds", epoch_seeds}, {"inputs", epoch_inputs}});
    st.epochs_done = epoch + 1;
    if ((epoch + 1) % o.eval_every == 0 || epoch + 1 == o.num_epochs) {
      Stopwatch ev;
      torch::Tensor logits = Inference(model, part, o.batch_size_eval, o.num_workers);
      double val = Accuracy(logits, part, valid_nodes);
      double test = Accuracy(logits, part, test_nodes);
      st.final_test = test;
      if (val > st.best_val) {
        st.best_val = val;
        st.test_at_best = test;
        st.best_epoch = epoch + 1;
      }
      GNN_LOG(kInfo) << "Part 0, Val Acc " << std::fixed << std::setprecision(4) << val
                     << ", Test Acc " << test << ", time: " << ev.Seconds();
      metrics.Write({{"type", "eval"}, {"epoch", epoch + 1}, {"val_acc", val},
                     {"test_acc", test}, {"eval_time_s", ev.Seconds()}});
    }
    if (!o.checkpoint_dir.empty()) SaveCheckpoint(o.checkpoint_dir, model, opt, st, signature);
  }

  if (!o.save_model.empty()) {
    c10::Dict<std::string, torch::Tensor> dict;
    for (const auto& p : model->named_parameters()) dict.insert(p.key(), p.value().detach().clone());
    std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
    AtomicFile f(o.save_model);
    f.Write(bytes.data(), bytes.size());
    f.Commit();
  }
  if (!o.save_embeddings.empty()) {
    torch::Tensor emb = Inference(model, part, o.batch_size_eval, o.num_workers).contiguous();
    // Rows in the input dataset's node order, so users can join on their ids.
    std::vector<float> out(static_cast<size_t>(emb.numel()));
    const int64_t dim = emb.size(1);
    const float* src = emb.data_ptr<float>();
    for (int64_t i = 0; i < part.num_nodes; ++i) {
      std::copy(src + i * dim, src + (i + 1) * dim, out.begin() + part.orig_nids[i] * dim);
    }
    WriteNpy(o.save_embeddings, out.data(), {part.num_nodes, dim});
  }

  json summary = {
      {"graph_name", config.graph_name},
      {"best_val_acc", st.best_val < 0 ? 0.0 : st.best_val},
      {"test_acc", st.test_at_best},
      {"final_test_acc", st.final_test},
      {"best_epoch", st.best_epoch},
      {"epochs", st.epochs_done},
      {"epochs_run", epochs_run},
      {"mean_epoch_time_s", epochs_run ? train_seconds / epochs_run : 0.0},
      {"seeds_per_s", train_seconds > 0 ? static_cast<double>(seeds_seen) / train_seconds : 0.0},
      {"num_trainers", 1},
  };
  metrics.Write({{"type", "summary"}, {"summary", summary}});
  return summary;
}

}  // namespace gnn
