// gnn-serve's model side: the model file loaded and checked against the
// graph it serves (ModelInfo: what requests may ask and get), its forward
// pass over a mini-batch (a ModelRunner for lib/serve's GraphEngine), and
// where this machine's gnn-serve listens.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "partition/config.h"
#include "serve/http_front.h"
#include "serve/serving.h"
#include "train/loop/predict.h"
#include "train/options/train_options.h"

namespace gnn {

struct Served {
  PartitionConfig config;
  RestoredModel model;
  ModelInfo info;
};

// Checks the flags gnn-serve needs, loads the partition config and the
// model file (--restore_model_path) and says what is served: every
// neighbour at every layer unless s.fan_out bounds it. Sets o's model
// fields from the file. ConfigError / DataError naming the flag or file.
Served LoadServed(TrainOptions& o, const ServeOptions& s);

// The model's forward pass, layer by layer, keeping layer embed_layer's
// rows when asked (as gnn-train --inference does); asked pairs scored by
// the model's edge decoder, or (`dot_product`, a link model) by the dot
// product of both ends' rows.
std::unique_ptr<ModelRunner> MakeTorchRunner(const RestoredModel& model, bool dot_product);

// Where this machine's gnn-serve listens: --http_host, or its ip_config
// address (127.0.0.1 standalone); --http_port plus its index among the
// machines on that host.
std::pair<std::string, int> ListenAddress(const TrainOptions& o, const ServeOptions& s);

}  // namespace gnn
