// The Open Inference Protocol v2 (KServe / Triton's HTTP/REST protocol) as
// gnn-serve speaks it: an inference request's JSON (and Triton's binary
// tensor data extension: the JSON is the first Inference-Header-Content-
// Length bytes of the body, each input's raw little-endian bytes follow
// it in input order) into a Query, an Answer into the response, and the
// model's metadata. Pure functions of their arguments: no sockets.
//
// Inputs:  node_ids     INT64 [k]     input-dataset ids of existing nodes
//          new_features FP32  [m, F]  new nodes -1..-m (optional)
//          new_edges    INT64 [e, 2]  (source, destination) rows (optional)
// Outputs: a class model's logits FP32 [k+m, C], pred INT64 [k+m]; a
//          multi-label model's logits and prob FP32 [k+m, L], pred UINT8
//          [k+m, L] (prob >= 0.5); a regression model's pred FP32 [k+m, T];
//          and any node model's embedding FP32 [k+m, H] (a request's
//          `outputs` selects; default all but the embedding), as gnn-train
//          --inference writes them.
// An edge model (--task edge_class, edge_regression) takes, in node_ids'
// place, edges INT64 [k, 2] (source, destination): input ids, or new
// nodes -1..-m of new_features and new_edges; and, when its decoder reads
// them, edge_features FP32 [k, D]. It answers logits FP32 [k, C] and pred
// INT64 [k] (a class), or pred FP32 [k] (a value), as gnn-train
// --inference's edge predictions. A link model (--task link) takes
// node_ids or edges: nodes get their embedding FP32 [k, H], edges their
// score FP32 [k] (the dot product of both ends' last-layer rows) and prob
// FP32 [k] (its sigmoid).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/serving.h"

namespace gnn {

// The names of the inputs a request to the model may give, and of the
// outputs it answers; all but the embedding are a request's default
// outputs.
std::vector<std::string> InputNames(const ModelInfo& info);
std::vector<std::string> OutputNames(const ModelInfo& info);

struct InferRequest {
  nlohmann::json id;  // echoed in the response (null: the request had none)
  Query query;
  // Asked outputs in the request's order, each as JSON data or binary.
  struct Output {
    std::string name;
    bool binary = false;
  };
  std::vector<Output> outputs;
};

// Limits a request is held to (a request over them is a BadRequest).
struct RequestLimits {
  int64_t max_nodes = 10000;  // k + m
  int64_t max_edges = 1000000;
};

// `body` as received; `header_length` the Inference-Header-Content-Length
// header's value (-1: absent, the body is all JSON). BadRequest naming what
// is wrong: malformed JSON, an unknown input or output, a wrong datatype,
// shape or element count, binary data that does not add up, over `limits`.
InferRequest ParseInferRequest(const std::string& body, int64_t header_length,
                               const ModelInfo& info, const RequestLimits& limits);

// The response to `request` with `answer` (rows in query order): its body,
// its content type, and the JSON part's length when outputs are binary
// (Inference-Header-Content-Length; -1: all JSON).
struct InferResponse {
  std::string body;
  std::string content_type;
  int64_t header_length = -1;
};
InferResponse EncodeInferResponse(const InferRequest& request, const Answer& answer,
                                  const ModelInfo& info);

// GET /v2/models/<name>: inputs, outputs, datatypes, shapes (-1: any).
nlohmann::json ModelMetadata(const ModelInfo& info);
// The protocol's error body: {"error": message}.
std::string ErrorBody(const std::string& message);

}  // namespace gnn
