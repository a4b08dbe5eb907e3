// gnn-serve's vocabulary: what a prediction asks (Query), what it answers
// (Answer), what the served model is (ModelInfo), and the one interface
// the HTTP front sees behind its queue (Engine). No LibTorch: the model's
// forward pass is a ModelRunner the trainer's library implements.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/label_kind.h"
#include "sampling/block.h"

namespace gnn {

// A request the caller got wrong (an unknown id, a wrong shape): HTTP 400,
// and nothing else changes.
class BadRequest : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One prediction: existing nodes by their input-dataset ids, and new nodes
// (rows -1..-num_new) with their features and edges, evaluated on the live
// graph plus those nodes (nothing is written to the partitions). An edge
// model's query names the edges to predict instead of node_ids: (source,
// destination) pairs of input ids or new nodes, scored by the model's
// decoder from both ends' embeddings (and each pair's own features when
// the decoder reads them); the pairs need not be edges of the graph.
struct Query {
  std::vector<int64_t> node_ids;     // input-dataset ids, any order, repeats allowed
  int64_t num_new = 0;               // new nodes -1..-num_new
  std::vector<float> new_features;   // [num_new, feature_dim]
  std::vector<int64_t> new_edges;    // [e, 2] rows (source, destination): -1..-m or input ids
  bool embedding = false;            // also the embedding layer's output
  bool edge_query = false;           // an edge model's: rows are `edges`
  std::vector<int64_t> edges;        // [k, 2] (source, destination): input ids or -1..-m
  std::vector<float> edge_features;  // [k, ModelInfo::edge_feature_dim]
  int64_t rows() const {
    return edge_query ? static_cast<int64_t>(edges.size() / 2)
                      : static_cast<int64_t>(node_ids.size()) + num_new;
  }
  // Nodes whose rows the query needs at most: its rows, or both ends of
  // every edge plus the new nodes (what --max_batch_nodes counts).
  int64_t nodes() const {
    return edge_query ? static_cast<int64_t>(edges.size()) + num_new : rows();
  }
};

// Rows follow the query: node_ids in order, then new nodes -1..-num_new
// (an edge query: its edges in order).
struct Answer {
  int64_t rows = 0;
  int64_t classes = 0;           // logits' width
  int64_t emb_dim = 0;           // embedding's width (0: not asked)
  std::vector<float> logits;     // [rows, classes]
  std::vector<float> embedding;  // [rows, emb_dim]
};

// What is served: the graph's schema and the model's shape.
struct ModelInfo {
  std::string graph_name;
  int64_t num_nodes = 0;    // input ids are 0..num_nodes-1
  bool user_ids = false;    // ...or the user's own (gnn-partition --node_ids)
  int64_t feature_dim = 0;  // new_features' width
  int64_t classes = 0;      // logits' width (label columns of a multi-label or regression model)
  // What the model predicts: a class (logits, pred = argmax), labels
  // (logits, prob = sigmoid, pred = prob >= 0.5) or values (pred).
  LabelKind kind = LabelKind::kClass;
  int64_t emb_dim = 0;       // embedding's width (the embed layer's)
  int embed_layer = 1;       // 1-based
  bool undirected = false;   // new edges go both ways
  std::vector<int> fanouts;  // per layer, input layer first (-1: every neighbour)
  // The model reads the sampled edges' data (edge weights or features): the
  // graph's edges carry it; a query's new edges have none to give yet.
  bool edge_data = false;
  nlohmann::json model;  // the model file's metadata
  // Every query samples with this seed: a node's sample depends on the node
  // and the layer only, as gnn-train --inference --fan_out's (same --seed).
  uint64_t sample_seed = 0;
  // The first layer's output width; whether a node's first-layer row
  // depends on the node alone (LayerCache); bytes for such rows (0: none).
  int64_t first_layer_dim = 0;
  bool layer_cacheable = false;
  int64_t layer_cache_bytes = 0;
  // An edge model (--task edge_class or edge_regression): queries name
  // edges, `classes` is the node rows' width (the decoder's input per end),
  // `kind` what the decoder predicts (kClass or kRegression) in
  // `edge_outputs` columns (1 for a value), reading `edge_feature_dim`
  // features of each asked edge (0: none). A link model (--task link) is
  // one too, its score the dot product of both ends' rows, and answers
  // node queries (embeddings) as well.
  bool edge_model = false;
  int64_t edge_outputs = 0;
  int64_t edge_feature_dim = 0;
  std::string task;  // the model's --task
};

// The model's forward pass over one mini-batch (LibTorch's side): the
// first `rows` seeds' logits [rows, classes] and, with `embedding`, the
// embed layer's output [rows, emb_dim], into *out (rows, widths set).
class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual void Run(const MiniBatch& mb, int64_t rows, bool embedding, Answer* out) = 0;
  // Run in two steps, for the first-layer cache: layer 0's output
  // [mb.blocks[0].num_dst, first_layer_dim] of a one-layer batch into
  // *out; then the layers above over `blocks` (blocks[0] unused) from h1,
  // [blocks[1].num_src, first_layer_dim] in blocks[1].src_nodes' order,
  // answering the first `rows` seeds as Run does.
  virtual void FirstLayer(const MiniBatch& mb, std::vector<float>* out) = 0;
  virtual void UpperLayers(const std::vector<Block>& blocks, const float* h1, int64_t rows,
                           bool embedding, Answer* out) = 0;
  // An edge model's decoder: for pair i, the rows heads[i] and tails[i] of
  // `node_rows` ([n, width], the model's output per node) and, when the
  // decoder reads them, edge_features [k, ModelInfo::edge_feature_dim];
  // [k, edge_outputs] into *out.
  virtual void DecodeEdges(const std::vector<float>& node_rows, int64_t width,
                           const std::vector<int64_t>& heads, const std::vector<int64_t>& tails,
                           const std::vector<float>& edge_features, std::vector<float>* out);
};

// Predictions on one thread (the queue's worker): Run answers a query,
// Probe says whether every partition answers (reconnecting when not).
class Engine {
 public:
  virtual ~Engine() = default;
  virtual const ModelInfo& info() const = 0;
  // BadRequest for what the caller got wrong; PeerError / TimeoutError when
  // the graph cannot be reached (the engine is then not ready until Probe).
  virtual Answer Run(const Query& q) = 0;
  virtual bool Probe() = 0;
};

}  // namespace gnn
