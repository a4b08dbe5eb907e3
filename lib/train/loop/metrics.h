// The trainer's metrics: JSON lines (--metrics_file) and TensorBoard scalars
// (--tensorboard_dir) on one step axis, written by rank 0 of every model's
// training loop.
#pragma once

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "common/tensorboard.h"

namespace gnn {

// What a task's evaluation reports, and how the loop names it: class ids'
// accuracy, multi-label ROC-AUC (OGB's proteins evaluator) or regression
// RMSE (lower is better: the best epoch has the lowest validation RMSE).
struct EvalMetric {
  std::string key = "acc";    // summary / metrics: best_val_<key>, test_<key>, val_<key>
  std::string title = "Acc";  // log lines: "Val Acc", "Test Acc"
  bool lower_is_better = false;
  std::string train_key = "train_acc";    // the step records' training figure
  std::string train_title = "Train Acc";  // and its log name
  bool Better(double a, double b) const { return lower_is_better ? a < b : a > b; }
};

// Writes one metrics record (a JSON line of --metrics_file).
using RecordFn = std::function<void(const nlohmann::json&)>;

// Appends JSON lines to the metrics file (if any), flushing each line, and
// mirrors the scalars to TensorBoard (if asked) on one step axis: the
// global step count (each line's "global_step").
class MetricsWriter {
 public:
  MetricsWriter(const std::string& path, bool append, const std::string& tensorboard_dir)
      : path_(path) {
    if (!tensorboard_dir.empty()) tb_ = std::make_unique<TensorBoardWriter>(tensorboard_dir);
    if (path.empty()) return;
    file_ = std::fopen(path.c_str(), append ? "a" : "w");
    if (!file_) throw DataError(CannotMessage("write --metrics_file", path, errno));
  }

  // Everything written so far reaches the files (TensorBoard buffers its
  // records): with a checkpoint, so a resumed run's curves have no gap.
  void Flush() {
    if (tb_) tb_->Flush();
    if (file_) std::fflush(file_);
  }

  // A resumed run goes on after global step `step`: what an interrupted
  // run wrote past it is dropped (metrics lines; TensorBoard by a session
  // start), so every step appears once.
  void Rewind(int64_t step) {
    if (tb_) {
      tb_->AddSessionStart(step + 1);
      tb_->Flush();
    }
    if (!file_) return;
    std::fclose(file_);
    file_ = nullptr;
    std::string kept, line;
    {
      std::ifstream in(path_);
      while (std::getline(in, line)) {
        const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_discarded() && j.is_object() && j.contains("global_step") &&
            j["global_step"].is_number_integer() && j["global_step"].get<int64_t>() > step)
          continue;
        kept += line + "\n";
      }
    }
    WriteFileAtomic(path_, kept);
    file_ = std::fopen(path_.c_str(), "a");
    if (!file_) throw DataError(CannotMessage("write --metrics_file", path_, errno));
  }
  ~MetricsWriter() {
    if (file_) std::fclose(file_);
  }
  void Write(nlohmann::json j, int64_t global_step) {
    if (tb_) Scalars(j, global_step);
    if (!file_) return;
    j["global_step"] = global_step;
    std::string line = j.dump() + "\n";
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
  }

 private:
  // Which JSON fields of which record type become which TensorBoard tags.
  void Scalars(const nlohmann::json& j, int64_t step) {
    static const std::vector<std::tuple<const char*, const char*, const char*>> kTags = {
        {"step", "loss", "train/loss"},
        {"step", "train_acc", "train/acc"},
        {"step", "samples_per_s", "train/samples_per_s"},
        {"epoch", "epoch_time_s", "epoch/time_s"},
        {"step", "train_rmse", "train/rmse"},
        {"eval", "val_acc", "eval/val_acc"},
        {"eval", "test_acc", "eval/test_acc"},
        {"eval", "val_rocauc", "eval/val_rocauc"},
        {"eval", "test_rocauc", "eval/test_rocauc"},
        {"eval", "val_rmse", "eval/val_rmse"},
        {"eval", "test_rmse", "eval/test_rmse"},
        {"link_eval", "link_auc", "link/auc"},
        {"link_eval", "link_mrr", "link/mrr"}};
    const std::string type = j.value("type", "");
    for (const auto& [t, field, tag] : kTags) {
      if (type == t && j.contains(field) && j.at(field).is_number()) {
        tb_->AddScalar(tag, j.at(field).get<double>(), step);
      }
    }
    if (type != "step") tb_->Flush();  // readable after each epoch and evaluation
  }

  std::string path_;
  FILE* file_ = nullptr;
  std::unique_ptr<TensorBoardWriter> tb_;
};

}  // namespace gnn
