#include "serve/oip.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

namespace gnn {

using nlohmann::json;

namespace {

std::string S(int64_t v) { return std::to_string(v); }

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + S(shape[i]);
  return s + "]";
}

// One input tensor as received: its elements as the datatype says.
struct Tensor {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;
  std::vector<int64_t> ints;  // INT64
  std::vector<float> floats;  // FP32
  // Elements of the shape (ReadInput caps every extent and the rank, so
  // this cannot overflow).
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// Appends the leaves of `data` (a flat or nested array of numbers).
template <class T>
void Flatten(const json& data, const std::string& name, int64_t limit, std::vector<T>* out) {
  if (static_cast<int64_t>(out->size()) > limit) return;  // the count check says it
  if (data.is_array()) {
    for (const json& v : data) Flatten(v, name, limit, out);
    return;
  }
  if constexpr (std::is_same_v<T, int64_t>) {
    if (!data.is_number_integer()) {
      throw BadRequest("input '" + name + "': INT64 data holds " + data.dump() +
                       ", not an integer");
    }
    out->push_back(data.get<int64_t>());
  } else {
    if (!data.is_number()) {
      throw BadRequest("input '" + name + "': FP32 data holds " + data.dump() + ", not a number");
    }
    out->push_back(data.get<float>());
  }
}

// The input's bytes from the binary section, from *offset on.
template <class T>
void TakeBinary(const std::string& binary, int64_t size, const Tensor& t, size_t* offset,
                std::vector<T>* out) {
  if (size != t.count() * static_cast<int64_t>(sizeof(T))) {
    throw BadRequest("input '" + t.name + "': binary_data_size " + S(size) + " is not " +
                     S(t.count()) + " elements of " + t.datatype + " (" +
                     S(t.count() * static_cast<int64_t>(sizeof(T))) + " bytes)");
  }
  if (*offset + static_cast<size_t>(size) > binary.size()) {
    throw BadRequest("input '" + t.name + "': the body has " +
                     S(static_cast<int64_t>(binary.size() - *offset)) +
                     " bytes of binary data left, not binary_data_size " + S(size));
  }
  out->resize(static_cast<size_t>(t.count()));
  if (size > 0) std::memcpy(out->data(), binary.data() + *offset, static_cast<size_t>(size));
  *offset += static_cast<size_t>(size);
}

Tensor ReadInput(const json& in, const std::string& binary, size_t* offset) {
  if (!in.is_object()) throw BadRequest("every entry of 'inputs' must be an object");
  Tensor t;
  for (const char* key : {"name", "datatype", "shape"}) {
    if (!in.contains(key)) throw BadRequest("an input has no '" + std::string(key) + "'");
  }
  if (!in.at("name").is_string() || !in.at("datatype").is_string() || !in.at("shape").is_array()) {
    throw BadRequest("an input's name and datatype must be strings and its shape an array");
  }
  t.name = in.at("name").get<std::string>();
  t.datatype = in.at("datatype").get<std::string>();
  if (in.at("shape").size() > 2) {
    throw BadRequest("input '" + t.name + "': shape " + in.at("shape").dump() +
                     " has more than 2 dimensions");
  }
  for (const json& d : in.at("shape")) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 ||
        d.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      throw BadRequest("input '" + t.name + "': shape " + in.at("shape").dump() +
                       " must list non-negative integers");
    }
    t.shape.push_back(d.get<int64_t>());
  }
  if (t.datatype != "INT64" && t.datatype != "FP32") {
    throw BadRequest("input '" + t.name + "': datatype " + t.datatype +
                     " (INT64 or FP32 expected)");
  }
  const bool ints = t.datatype == "INT64";
  const json* size = nullptr;
  if (in.contains("parameters") && in.at("parameters").is_object() &&
      in.at("parameters").contains("binary_data_size")) {
    size = &in.at("parameters").at("binary_data_size");
    if (!size->is_number_integer() || size->get<int64_t>() < 0) {
      throw BadRequest("input '" + t.name + "': binary_data_size must be a non-negative integer");
    }
  }
  if (size) {
    if (ints) {
      TakeBinary(binary, size->get<int64_t>(), t, offset, &t.ints);
    } else {
      TakeBinary(binary, size->get<int64_t>(), t, offset, &t.floats);
    }
    return t;
  }
  if (!in.contains("data")) {
    throw BadRequest("input '" + t.name + "' has neither data nor parameters.binary_data_size");
  }
  if (ints) {
    Flatten(in.at("data"), t.name, t.count(), &t.ints);
  } else {
    Flatten(in.at("data"), t.name, t.count(), &t.floats);
  }
  const int64_t got = static_cast<int64_t>(ints ? t.ints.size() : t.floats.size());
  if (got != t.count()) {
    throw BadRequest("input '" + t.name + "': shape " + ShapeText(t.shape) + " has " +
                     S(t.count()) + " elements; data has " + (got > t.count() ? "more" : S(got)));
  }
  return t;
}

void Expect(const Tensor& t, const char* datatype, size_t rank, int64_t width) {
  if (t.datatype != datatype) {
    throw BadRequest("input '" + t.name + "' must be " + datatype + ", not " + t.datatype);
  }
  if (t.shape.size() != rank || (width >= 0 && t.shape.back() != width)) {
    std::string want = rank == 1 ? "[n]" : "[n, " + S(width) + "]";
    throw BadRequest("input '" + t.name + "' must have shape " + want + ", not " +
                     ShapeText(t.shape));
  }
}

void ReadOutputs(const json& j, const ModelInfo& info, InferRequest* r) {
  std::vector<std::string> names = OutputNames(info);
  // A link model: scores for edges, embeddings for nodes.
  if (info.task == "link") {
    names = r->query.edge_query ? std::vector<std::string>{"score", "prob"}
                                : std::vector<std::string>{"embedding"};
  }
  bool all_binary = false;
  if (j.contains("parameters") && j.at("parameters").is_object()) {
    const json& p = j.at("parameters");
    if (p.contains("binary_data_output")) {
      if (!p.at("binary_data_output").is_boolean()) {
        throw BadRequest("parameters.binary_data_output must be true or false");
      }
      all_binary = p.at("binary_data_output").get<bool>();
    }
  }
  if (!j.contains("outputs")) {
    for (const std::string& name : names) {
      if (name != "embedding" || names.size() == 1) r->outputs.push_back({name, all_binary});
    }
    r->query.embedding = names.size() == 1 && names[0] == "embedding";
    return;
  }
  if (!j.at("outputs").is_array()) throw BadRequest("'outputs' must be an array");
  for (const json& o : j.at("outputs")) {
    if (!o.is_object() || !o.contains("name") || !o.at("name").is_string()) {
      throw BadRequest("every entry of 'outputs' must be an object with a name");
    }
    InferRequest::Output out{o.at("name").get<std::string>(), all_binary};
    if (std::find(names.begin(), names.end(), out.name) == names.end()) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      throw BadRequest("unknown output '" + out.name + "' (" + known + ")");
    }
    for (const InferRequest::Output& seen : r->outputs) {
      if (seen.name == out.name) throw BadRequest("output '" + out.name + "' is asked twice");
    }
    if (o.contains("parameters") && o.at("parameters").is_object() &&
        o.at("parameters").contains("binary_data")) {
      if (!o.at("parameters").at("binary_data").is_boolean()) {
        throw BadRequest("output '" + out.name + "': binary_data must be true or false");
      }
      out.binary = o.at("parameters").at("binary_data").get<bool>();
    }
    r->outputs.push_back(out);
  }
  r->query.embedding =
      std::any_of(r->outputs.begin(), r->outputs.end(),
                  [](const InferRequest::Output& o) { return o.name == "embedding"; });
}

// The deepest nesting of arrays and objects in JSON text (strings
// skipped): the codec's own walks recurse, so a request nested deeper than
// any valid one is refused before it is parsed.
int MaxDepth(const char* p, const char* end) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (; p < end; ++p) {
    if (in_string) {
      if (*p == '\\') {
        ++p;
      } else if (*p == '"') {
        in_string = false;
      }
    } else if (*p == '"') {
      in_string = true;
    } else if (*p == '[' || *p == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (*p == ']' || *p == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

InferRequest ParseInferRequest(const std::string& body, int64_t header_length,
                               const ModelInfo& info, const RequestLimits& limits) {
  if (header_length > static_cast<int64_t>(body.size())) {
    throw BadRequest("Inference-Header-Content-Length " + S(header_length) +
                     " is longer than the body (" + S(static_cast<int64_t>(body.size())) +
                     " bytes)");
  }
  const size_t json_bytes = header_length < 0 ? body.size() : static_cast<size_t>(header_length);
  if (MaxDepth(body.data(), body.data() + json_bytes) > 8) {
    throw BadRequest("the request's JSON is nested deeper than an inference request is");
  }
  json j =
      json::parse(body.begin(), body.begin() + static_cast<int64_t>(json_bytes), nullptr, false);
  if (j.is_discarded()) throw BadRequest("the request is not valid JSON");
  if (!j.is_object()) throw BadRequest("the request must be a JSON object");
  const std::string binary = body.substr(json_bytes);
  InferRequest r;
  if (j.contains("id")) r.id = j.at("id");
  if (!j.contains("inputs") || !j.at("inputs").is_array()) {
    throw BadRequest("the request has no 'inputs' array");
  }
  size_t offset = 0;
  // The model's inputs by name (InputNames); an edge model's
  // edge_features is a known name even when its decoder reads none, so
  // that the refusal below can say why.
  std::vector<std::string> names = InputNames(info);
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  if (info.edge_model && info.task != "link" && info.edge_feature_dim == 0) {
    names.push_back("edge_features");
  }
  std::map<std::string, Tensor> given;
  for (const json& in : j.at("inputs")) {
    Tensor t = ReadInput(in, binary, &offset);
    if (std::find(names.begin(), names.end(), t.name) == names.end()) {
      throw BadRequest("unknown input '" + t.name + "' (" + known + ")");
    }
    if (given.count(t.name)) throw BadRequest("input '" + t.name + "' is given twice");
    const std::string name = t.name;
    given.emplace(name, std::move(t));
  }
  if (offset != binary.size()) {
    throw BadRequest("the body has " + S(static_cast<int64_t>(binary.size() - offset)) +
                     " bytes of binary data that no input's binary_data_size accounts for");
  }
  const bool seen[4] = {given.count("node_ids") > 0, given.count("new_features") > 0,
                        given.count("new_edges") > 0, given.count("edge_features") > 0};
  Tensor &node_ids = given["node_ids"], &features = given["new_features"],
         &edges = given["new_edges"], &edge_features = given["edge_features"];
  const bool asks_edges = given.count("edges") > 0;
  if (info.task == "link") {
    // A link model answers node_ids' embeddings or edges' scores.
    if (asks_edges && seen[0]) {
      throw BadRequest(
          "a request to a --task link model names node_ids (their embeddings) or "
          "edges (their scores), not both");
    }
    if (!asks_edges && !seen[0] && !seen[1]) {
      throw BadRequest("the request has neither node_ids, edges nor new_features");
    }
  } else if (info.edge_model) {
    if (!asks_edges) {
      throw BadRequest("the request has no edges input: this is a --task " + info.task +
                       " model, which predicts edges ([k, 2] source, destination)");
    }
    if (seen[3] != (info.edge_feature_dim > 0)) {
      throw BadRequest(seen[3] ? "input 'edge_features': this model's decoder reads no edge "
                                 "features"
                               : "the request has no edge_features input: this model's decoder "
                                 "reads " +
                                     S(info.edge_feature_dim) + " features of each edge");
    }
  } else if (!seen[0] && !seen[1]) {
    throw BadRequest("the request has neither node_ids nor new_features");
  }
  if (seen[2] && (!seen[1] || features.shape.empty() || features.shape[0] == 0)) {
    throw BadRequest("new_edges need new nodes (new_features rows)");
  }
  Query& q = r.query;
  if (asks_edges) {
    Tensor& asked = given["edges"];
    Expect(asked, "INT64", 2, 2);
    q.edge_query = true;
    q.edges = std::move(asked.ints);
    if (seen[3]) {
      Expect(edge_features, "FP32", 2, info.edge_feature_dim);
      if (edge_features.shape[0] != q.rows()) {
        throw BadRequest("input 'edge_features' has " + S(edge_features.shape[0]) + " rows for " +
                         S(q.rows()) + " edges");
      }
      q.edge_features = std::move(edge_features.floats);
      for (float v : q.edge_features) {
        if (!std::isfinite(v))
          throw BadRequest("input 'edge_features' holds a value that is not finite");
      }
    }
  } else if (seen[0]) {
    Expect(node_ids, "INT64", 1, -1);
    q.node_ids = std::move(node_ids.ints);
  }
  if (seen[1]) {
    Expect(features, "FP32", 2, info.feature_dim);
    q.num_new = features.shape[0];
    q.new_features = std::move(features.floats);
    for (float v : q.new_features) {
      if (!std::isfinite(v))
        throw BadRequest("input 'new_features' holds a value that is not finite");
    }
  }
  if (seen[2]) {
    Expect(edges, "INT64", 2, 2);
    if (edges.shape[0] > limits.max_edges) {
      throw BadRequest("new_edges has " + S(edges.shape[0]) + " rows; at most " +
                       S(limits.max_edges) + " per request");
    }
    q.new_edges = std::move(edges.ints);
  }
  if (q.edge_query && 2 * q.rows() + q.num_new > limits.max_nodes) {
    throw BadRequest("the request asks for " + S(q.rows()) + " edges (" + S(2 * q.rows()) +
                     " ends) and " + S(q.num_new) + " new nodes; at most " + S(limits.max_nodes) +
                     " nodes per request (--max_request_nodes)");
  }
  if (q.rows() > limits.max_nodes) {
    throw BadRequest("the request asks for " + S(q.rows()) + " nodes; at most " +
                     S(limits.max_nodes) + " per request (--max_request_nodes)");
  }
  for (int64_t id : q.node_ids) {
    if (!info.user_ids && (id < 0 || id >= info.num_nodes)) {
      throw BadRequest("node_ids: " + S(id) + " is not a node of " + info.graph_name +
                       " (input ids are 0.." + S(info.num_nodes - 1) + ")");
    }
  }
  for (int64_t id : q.edges) {
    // Negative ids name new nodes (the engine checks them).
    if (!info.user_ids && id >= info.num_nodes) {
      throw BadRequest("edges: " + S(id) + " is not a node of " + info.graph_name +
                       " (input ids are 0.." + S(info.num_nodes - 1) + ", new nodes -1..-m)");
    }
  }
  ReadOutputs(j, info, &r);
  return r;
}

InferResponse EncodeInferResponse(const InferRequest& request, const Answer& answer,
                                  const ModelInfo& info) {
  json outputs = json::array();
  std::string binary;
  const int64_t rows = answer.rows;
  std::vector<int64_t> pred;
  std::vector<uint8_t> labels;
  std::vector<float> prob;
  for (const InferRequest::Output& o : request.outputs) {
    json out = {{"name", o.name}};
    const char* data = nullptr;
    size_t bytes = 0;
    json values;
    const int64_t width = answer.classes;
    if (o.name == "pred" && info.kind == LabelKind::kMultilabel) {
      labels.resize(answer.logits.size());
      // As gnn-train --inference decides: sigmoid(logit) >= 0.5 in float.
      for (size_t k = 0; k < labels.size(); ++k)
        labels[k] = 1.0f / (1.0f + std::exp(-answer.logits[k])) >= 0.5f ? 1 : 0;
      out["datatype"] = "UINT8";
      out["shape"] = {rows, width};
      data = reinterpret_cast<const char*>(labels.data());
      bytes = labels.size();
      if (!o.binary) values = labels;
    } else if (o.name == "prob") {
      prob.resize(answer.logits.size());
      for (size_t k = 0; k < prob.size(); ++k)
        prob[k] = 1.0f / (1.0f + std::exp(-answer.logits[k]));
      out["datatype"] = "FP32";
      // A link model's: one per edge.
      out["shape"] = info.edge_model ? json{rows} : json{rows, width};
      data = reinterpret_cast<const char*>(prob.data());
      bytes = prob.size() * sizeof(float);
      if (!o.binary) values = prob;
    } else if (o.name == "score") {
      // A link model's: the dot product of both ends' outputs, per edge.
      out["datatype"] = "FP32";
      out["shape"] = {rows};
      data = reinterpret_cast<const char*>(answer.logits.data());
      bytes = answer.logits.size() * sizeof(float);
      if (!o.binary) values = answer.logits;
    } else if (o.name == "pred" && info.kind == LabelKind::kRegression) {
      out["datatype"] = "FP32";
      // An edge's value is one number, as gnn-train --inference's pred.npy.
      out["shape"] = info.edge_model ? json{rows} : json{rows, width};
      data = reinterpret_cast<const char*>(answer.logits.data());
      bytes = answer.logits.size() * sizeof(float);
      if (!o.binary) values = answer.logits;
    } else if (o.name == "pred") {
      pred.assign(static_cast<size_t>(rows), 0);
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = answer.logits.data() + r * answer.classes;
        pred[static_cast<size_t>(r)] = std::max_element(row, row + answer.classes) - row;
      }
      out["datatype"] = "INT64";
      out["shape"] = {rows};
      data = reinterpret_cast<const char*>(pred.data());
      bytes = pred.size() * sizeof(int64_t);
      if (!o.binary) values = pred;
    } else {
      const bool logits = o.name == "logits";
      const std::vector<float>& v = logits ? answer.logits : answer.embedding;
      out["datatype"] = "FP32";
      out["shape"] = {rows, logits ? answer.classes : answer.emb_dim};
      data = reinterpret_cast<const char*>(v.data());
      bytes = v.size() * sizeof(float);
      if (!o.binary) values = v;
    }
    if (o.binary) {
      out["parameters"] = {{"binary_data_size", static_cast<int64_t>(bytes)}};
      binary.append(data, bytes);
    } else {
      out["data"] = std::move(values);
    }
    outputs.push_back(std::move(out));
  }
  json j = {{"model_name", info.graph_name}, {"model_version", "1"}, {"outputs", outputs}};
  if (!request.id.is_null()) j["id"] = request.id;
  InferResponse r;
  r.body = j.dump();
  const bool any_binary = std::any_of(request.outputs.begin(), request.outputs.end(),
                                      [](const InferRequest::Output& o) { return o.binary; });
  if (any_binary) {
    r.header_length = static_cast<int64_t>(r.body.size());
    r.body += binary;
    r.content_type = "application/octet-stream";
  } else {
    r.content_type = "application/json";
  }
  return r;
}

json ModelMetadata(const ModelInfo& info) {
  auto tensor = [](const char* name, const char* type, json shape) {
    return json{{"name", name}, {"datatype", type}, {"shape", std::move(shape)}};
  };
  json outputs = json::array();
  const int64_t width = info.edge_model ? info.edge_outputs : info.classes;
  for (const std::string& n : OutputNames(info)) {
    const char* type = n == "embedding" || n == "logits" || n == "prob" || n == "score" ? "FP32"
                       : info.kind == LabelKind::kClass                                 ? "INT64"
                       : info.kind == LabelKind::kMultilabel                            ? "UINT8"
                                                                                        : "FP32";
    const bool one_column = n == "score" || (n == "prob" && info.edge_model) ||
                            (n == "pred" && (info.kind == LabelKind::kClass || info.edge_model));
    json shape = n == "embedding" ? json{-1, info.emb_dim}
                 : one_column     ? json{-1}
                                  : json{-1, width};
    outputs.push_back(tensor(n.c_str(), type, std::move(shape)));
  }
  json inputs = json::array();
  for (const std::string& n : InputNames(info)) {
    json shape = n == "node_ids"        ? json{-1}
                 : n == "new_features"  ? json{-1, info.feature_dim}
                 : n == "edge_features" ? json{-1, info.edge_feature_dim}
                                        : json{-1, 2};
    inputs.push_back(tensor(n.c_str(),
                            n == "new_features" || n == "edge_features" ? "FP32" : "INT64",
                            std::move(shape)));
  }
  json parameters = {{"model", info.model},
                     {"num_nodes", info.num_nodes},
                     {"fan_out", info.fanouts},
                     {"embed_layer", info.embed_layer},
                     {"undirected", info.undirected},
                     {"task", info.edge_model ? info.task : LabelKindName(info.kind)}};
  if (info.edge_model) parameters["edge_feature_dim"] = info.edge_feature_dim;
  return {{"name", info.graph_name}, {"versions", {"1"}},  {"platform", "gnn"},
          {"inputs", inputs},        {"outputs", outputs}, {"parameters", parameters}};
}

std::vector<std::string> InputNames(const ModelInfo& info) {
  if (!info.edge_model) return {"node_ids", "new_features", "new_edges"};
  if (info.task == "link") return {"node_ids", "edges", "new_features", "new_edges"};
  std::vector<std::string> names = {"edges", "new_features", "new_edges"};
  if (info.edge_feature_dim > 0) names.push_back("edge_features");
  return names;
}

std::vector<std::string> OutputNames(const ModelInfo& info) {
  if (info.task == "link") return {"score", "prob", "embedding"};
  if (info.edge_model) {
    if (info.kind == LabelKind::kRegression) return {"pred"};
    return {"logits", "pred"};
  }
  switch (info.kind) {
    case LabelKind::kMultilabel:
      return {"logits", "prob", "pred", "embedding"};
    case LabelKind::kRegression:
      return {"pred", "embedding"};
    default:
      return {"logits", "pred", "embedding"};
  }
}

std::string ErrorBody(const std::string& message) {
  // A message may quote request bytes that are not UTF-8 (a path).
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace gnn
