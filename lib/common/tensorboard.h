// TensorBoard event files (scalars only), written without TensorFlow or a
// protobuf library: a TFRecord file of hand-encoded `Event` messages, as
// tensorflow/core/util/event.proto and summary.proto define them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace gnn {

// Writes one new event file "events.out.tfevents.<unix s>.<host>.<pid>.<n>"
// in `dir` (created with its parents), starting with the file_version
// event "brain.Event:2"; `tensorboard --logdir <dir>` shows its scalars.
// Records are buffered: Flush() makes everything added so far readable,
// the destructor flushes and closes. Throws DataError naming the file when
// it cannot be created or written. Not thread-safe (one writer per thread,
// or the caller locks); several writers in one folder get distinct files.
class TensorBoardWriter {
 public:
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One point of the curve `tag` (e.g. "train/loss") at `step`, stamped
  // with the current wall time. TensorBoard stores values as float.
  void AddScalar(const std::string& tag, double value, int64_t step);
  // A SessionLog START at `step`: the run starts again there (a resumed
  // job), so TensorBoard drops the points at `step` and later that an
  // earlier, interrupted session of the same run wrote.
  void AddSessionStart(int64_t step);
  void Flush();
  const std::string& path() const { return path_; }

 private:
  void WriteRecord(const std::string& data);

  std::string path_;
  FILE* file_ = nullptr;
};

}  // namespace gnn
