// The Open Inference Protocol codec of gnn-serve (serve/oip.h): requests in
// JSON and in Triton's binary tensor form, every malformed one a
// BadRequest naming what is wrong, responses in both forms.
#include "serve/oip.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

using namespace gnn;
using nlohmann::json;

namespace {

ModelInfo Info() {
  ModelInfo i;
  i.graph_name = "g";
  i.num_nodes = 10;
  i.feature_dim = 2;
  i.classes = 3;
  i.emb_dim = 4;
  return i;
}

std::string BadWhy(const std::string& body, int64_t header_length = -1, RequestLimits limits = {}) {
  try {
    ParseInferRequest(body, header_length, Info(), limits);
  } catch (const BadRequest& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("an infer request's JSON becomes a query", "[unit]") {
  const json j = {
      {"id", "x"},
      {"inputs",
       {{{"name", "node_ids"}, {"datatype", "INT64"}, {"shape", {3}}, {"data", {4, 0, 4}}},
        {{"name", "new_features"},
         {"datatype", "FP32"},
         {"shape", {2, 2}},
         {"data", {{1, 2}, {3, 4}}}},
        {{"name", "new_edges"}, {"datatype", "INT64"}, {"shape", {1, 2}}, {"data", {-2, 9}}}}},
      {"outputs",
       {{{"name", "embedding"}}, {{"name", "pred"}, {"parameters", {{"binary_data", true}}}}}}};
  const InferRequest r = ParseInferRequest(j.dump(), -1, Info(), {});
  CHECK(r.id == "x");
  CHECK(r.query.node_ids == std::vector<int64_t>{4, 0, 4});
  CHECK(r.query.num_new == 2);
  CHECK(r.query.new_features == std::vector<float>{1, 2, 3, 4});
  CHECK(r.query.new_edges == std::vector<int64_t>{-2, 9});
  CHECK(r.query.embedding);
  REQUIRE(r.outputs.size() == 2);
  CHECK(r.outputs[0].name == "embedding");
  CHECK_FALSE(r.outputs[0].binary);
  CHECK(r.outputs[1].binary);
}

TEST_CASE("binary tensor data follows the JSON header in input order", "[unit]") {
  const json j = {{"inputs",
                   {{{"name", "new_features"},
                     {"datatype", "FP32"},
                     {"shape", {1, 2}},
                     {"parameters", {{"binary_data_size", 8}}}},
                    {{"name", "node_ids"},
                     {"datatype", "INT64"},
                     {"shape", {2}},
                     {"parameters", {{"binary_data_size", 16}}}}}},
                  {"parameters", {{"binary_data_output", true}}}};
  std::string body = j.dump();
  const int64_t header = static_cast<int64_t>(body.size());
  const float f[2] = {0.5f, -1.5f};
  const int64_t ids[2] = {9, 1};
  body.append(reinterpret_cast<const char*>(f), sizeof(f));
  body.append(reinterpret_cast<const char*>(ids), sizeof(ids));
  const InferRequest r = ParseInferRequest(body, header, Info(), {});
  CHECK(r.query.new_features == std::vector<float>{0.5f, -1.5f});
  CHECK(r.query.node_ids == std::vector<int64_t>{9, 1});
  REQUIRE(r.outputs.size() == 2);  // logits and pred by default, both binary
  CHECK(r.outputs[0].binary);

  Answer a;
  a.rows = 3;
  a.classes = 3;
  a.logits = {0, 1, 0, 5, 1, 2, -1, -2, -0.5f};
  const InferResponse out = EncodeInferResponse(r, a, Info());
  REQUIRE(out.header_length > 0);
  CHECK(out.content_type == "application/octet-stream");
  const json head = json::parse(out.body.substr(0, static_cast<size_t>(out.header_length)));
  CHECK(head.at("outputs")[0].at("shape") == json::array({3, 3}));
  CHECK(head.at("outputs")[1].at("parameters").at("binary_data_size") == 24);
  REQUIRE(out.body.size() == static_cast<size_t>(out.header_length) + 36 + 24);
  int64_t pred[3];
  std::memcpy(pred, out.body.data() + out.header_length + 36, sizeof(pred));
  CHECK(pred[0] == 1);
  CHECK(pred[1] == 0);
  CHECK(pred[2] == 2);

  // Sizes that do not add up.
  CHECK_THAT(BadWhy(body.substr(0, body.size() - 1), header),
             Catch::Contains("bytes of binary data left"));
  CHECK_THAT(BadWhy(body + "x", header),
             Catch::Contains("no input's binary_data_size accounts for"));
  CHECK_THAT(BadWhy(body, static_cast<int64_t>(body.size()) + 1),
             Catch::Contains("longer than the body"));
}

TEST_CASE("every malformed infer request names what is wrong", "[unit]") {
  auto in = [](json input) { return json{{"inputs", {std::move(input)}}}.dump(); };
  auto ids = [](json shape, json data, const char* type = "INT64") {
    return json{{"name", "node_ids"}, {"datatype", type}, {"shape", shape}, {"data", data}};
  };
  CHECK_THAT(BadWhy("[1"), Catch::Contains("not valid JSON"));
  CHECK_THAT(BadWhy("[1]"), Catch::Contains("JSON object"));
  CHECK_THAT(BadWhy("{}"), Catch::Contains("no 'inputs'"));
  CHECK_THAT(BadWhy(in(ids({2}, {1, 2}, "INT32"))), Catch::Contains("datatype INT32"));
  CHECK_THAT(BadWhy(in(ids({2}, {1.5, 2}))), Catch::Contains("not an integer"));
  CHECK_THAT(BadWhy(in(ids({2, 1}, {1, 2}))), Catch::Contains("must have shape [n]"));
  CHECK_THAT(BadWhy(in(ids({3}, {1, 2}))), Catch::Contains("has 3 elements; data has 2"));
  CHECK_THAT(BadWhy(in(ids({1}, {10}))), Catch::Contains("10 is not a node of g"));
  CHECK_THAT(BadWhy(in(ids({1}, {-1}))), Catch::Contains("-1 is not a node of g"));
  CHECK_THAT(BadWhy(in(ids({-1}, json::array()))), Catch::Contains("non-negative"));
  CHECK_THAT(
      BadWhy(in({{"name", "x"}, {"datatype", "INT64"}, {"shape", {0}}, {"data", json::array()}})),
      Catch::Contains("unknown input 'x'"));
  CHECK_THAT(BadWhy(in({{"name", "new_features"},
                        {"datatype", "FP32"},
                        {"shape", {1, 3}},
                        {"data", {1, 2, 3}}})),
             Catch::Contains("shape [n, 2]"));
  CHECK_THAT(BadWhy(in(ids({11}, std::vector<int>(11, 1))), -1, RequestLimits{10, 5}),
             Catch::Contains("at most 10"));
  CHECK_THAT(BadWhy(json{{"inputs", {ids({1}, {1})}}, {"outputs", {{{"name", "probs"}}}}}.dump()),
             Catch::Contains("unknown output 'probs'"));
  CHECK_THAT(
      BadWhy(json{
          {"inputs",
           {{{"name", "new_edges"}, {"datatype", "INT64"}, {"shape", {1, 2}}, {"data", {-1, 2}}}}}}
                 .dump()),
      Catch::Contains("neither node_ids nor new_features"));
  CHECK(BadWhy(in(ids({0}, json::array()))) == "(accepted)");
  // Hostile shapes and nesting are refused before anything is read.
  CHECK_THAT(BadWhy(in(ids({1024, 1024, 2}, {1}))), Catch::Contains("more than 2 dimensions"));
  CHECK_THAT(BadWhy(std::string(100000, '[') + std::string(100000, ']')),
             Catch::Contains("nested deeper"));
  CHECK_THAT(
      BadWhy(json{
          {"inputs",
           {{{"name", "new_features"},
             {"datatype", "FP32"},
             {"shape", {0, 2}},
             {"data", json::array()}},
            {{"name", "new_edges"}, {"datatype", "INT64"}, {"shape", {1, 2}}, {"data", {-1, 2}}}}}}
                 .dump()),
      Catch::Contains("new_edges need new nodes"));
  CHECK_THAT(BadWhy(in(ids({2}, std::vector<int>(1000, 1)))), Catch::Contains("data has more"));
  // An error quoting bytes that are not UTF-8 is still JSON.
  CHECK(json::parse(ErrorBody("no route GET /\xFF")).at("error").get<std::string>().size() > 0);
}

TEST_CASE("multi-label and regression models answer what gnn-train --inference writes", "[unit]") {
  const json ids = {
      {"inputs",
       {{{"name", "node_ids"}, {"datatype", "INT64"}, {"shape", {2}}, {"data", {1, 2}}}}}};
  Answer a;
  a.rows = 2;
  a.classes = 2;
  a.logits = {2.0f, -1.0f, 0.0f, -3.0f};

  ModelInfo ml = Info();
  ml.kind = LabelKind::kMultilabel;
  ml.classes = 2;
  const InferRequest r = ParseInferRequest(ids.dump(), -1, ml, {});
  REQUIRE(r.outputs.size() == 3);  // logits, prob, pred
  const json out = json::parse(EncodeInferResponse(r, a, ml).body);
  CHECK(out.at("outputs")[0].at("name") == "logits");
  CHECK(out.at("outputs")[1].at("name") == "prob");
  CHECK(out.at("outputs")[1].at("shape") == json::array({2, 2}));
  CHECK(out.at("outputs")[1].at("data")[0].get<float>() == Approx(1 / (1 + std::exp(-2.0))));
  CHECK(out.at("outputs")[1].at("data")[2].get<float>() == Approx(0.5));
  CHECK(out.at("outputs")[2].at("datatype") == "UINT8");
  CHECK(out.at("outputs")[2].at("data") == json::array({1, 0, 1, 0}));  // prob >= 0.5
  const json meta = ModelMetadata(ml);
  CHECK(meta.at("outputs")[2].at("datatype") == "UINT8");
  CHECK(meta.at("parameters").at("task") == "multilabel");

  ModelInfo reg = Info();
  reg.kind = LabelKind::kRegression;
  reg.classes = 2;
  const InferRequest rr = ParseInferRequest(ids.dump(), -1, reg, {});
  REQUIRE(rr.outputs.size() == 1);  // pred, the values
  const json vals = json::parse(EncodeInferResponse(rr, a, reg).body);
  CHECK(vals.at("outputs")[0].at("datatype") == "FP32");
  CHECK(vals.at("outputs")[0].at("shape") == json::array({2, 2}));
  CHECK(vals.at("outputs")[0].at("data") == json::array({2.0, -1.0, 0.0, -3.0}));
  // A regression model has no logits to give.
  json logits = ids;
  logits["outputs"] = {{{"name", "logits"}}};
  try {
    ParseInferRequest(logits.dump(), -1, reg, {});
    FAIL("accepted");
  } catch (const BadRequest& e) {
    CHECK_THAT(e.what(), Catch::Contains("unknown output 'logits' (pred, embedding)"));
  }
}

TEST_CASE("an edge model's request names edges and their features, and it answers per edge",
          "[unit]") {
  ModelInfo ec = Info();
  ec.edge_model = true;
  ec.task = "edge_class";
  ec.classes = 4;  // the node rows the decoder reads
  ec.edge_outputs = 3;
  ec.edge_feature_dim = 2;
  const json edges = {
      {"name", "edges"}, {"datatype", "INT64"}, {"shape", {2, 2}}, {"data", {{4, 0}, {-1, 9}}}};
  const json feats = {
      {"name", "edge_features"}, {"datatype", "FP32"}, {"shape", {2, 2}}, {"data", {1, 2, 3, 4}}};
  const InferRequest r =
      ParseInferRequest(json{{"inputs", {edges, feats}}}.dump(), -1, ec, RequestLimits{});
  CHECK(r.query.edge_query);
  CHECK(r.query.rows() == 2);
  CHECK(r.query.edges == std::vector<int64_t>{4, 0, -1, 9});
  CHECK(r.query.edge_features == std::vector<float>{1, 2, 3, 4});
  REQUIRE(r.outputs.size() == 2);  // logits, pred
  Answer a;
  a.rows = 2;
  a.classes = 3;
  a.logits = {0.0f, 2.0f, 1.0f, 5.0f, -1.0f, 0.0f};
  const json out = json::parse(EncodeInferResponse(r, a, ec).body);
  CHECK(out.at("outputs")[0].at("shape") == json::array({2, 3}));
  CHECK(out.at("outputs")[1].at("data") == json::array({1, 0}));
  const json meta = ModelMetadata(ec);
  CHECK(meta.at("inputs")[0].at("name") == "edges");
  CHECK(meta.at("inputs")[3].at("shape") == json::array({-1, 2}));
  CHECK(meta.at("outputs")[0].at("shape") == json::array({-1, 3}));
  CHECK(meta.at("parameters").at("task") == "edge_class");

  auto why = [](const json& inputs, const ModelInfo& info, RequestLimits limits = {}) {
    try {
      ParseInferRequest(json{{"inputs", inputs}}.dump(), -1, info, limits);
    } catch (const BadRequest& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const json ids = {{"name", "node_ids"}, {"datatype", "INT64"}, {"shape", {1}}, {"data", {1}}};
  CHECK_THAT(why(json::array({ids}), ec),
             Catch::Contains("unknown input 'node_ids' (edges, new_features"));
  CHECK_THAT(why(json::array({feats}), ec),
             Catch::Contains("no edges input: this is a --task edge_class"));
  CHECK_THAT(why(json::array({edges}), ec),
             Catch::Contains("decoder reads 2 features of each edge"));
  json three = feats;
  three["shape"] = {3, 2};
  three["data"] = {1, 2, 3, 4, 5, 6};
  CHECK_THAT(why(json::array({edges, three}), ec), Catch::Contains("has 3 rows for 2 edges"));
  json flat = edges;
  flat["shape"] = {4};
  CHECK_THAT(why(json::array({flat, feats}), ec), Catch::Contains("must have shape [n, 2]"));
  json far = edges;
  far["data"] = {{4, 10}, {0, 1}};
  CHECK_THAT(why(json::array({far, feats}), ec), Catch::Contains("edges: 10 is not a node of g"));
  RequestLimits small;
  small.max_nodes = 3;
  CHECK_THAT(why(json::array({edges, feats}), ec, small), Catch::Contains("2 edges (4 ends)"));

  // A regression decoder: one value per edge, no features to give.
  ModelInfo er = ec;
  er.task = "edge_regression";
  er.kind = LabelKind::kRegression;
  er.edge_outputs = 1;
  er.edge_feature_dim = 0;
  CHECK_THAT(why(json::array({edges, feats}), er),
             Catch::Contains("input 'edge_features': this model's decoder reads no edge features"));
  const InferRequest rr = ParseInferRequest(json{{"inputs", {edges}}}.dump(), -1, er, {});
  REQUIRE(rr.outputs.size() == 1);
  Answer v;
  v.rows = 2;
  v.classes = 1;
  v.logits = {0.5f, -2.0f};
  const json vals = json::parse(EncodeInferResponse(rr, v, er).body);
  CHECK(vals.at("outputs")[0].at("shape") == json::array({2}));
  CHECK(vals.at("outputs")[0].at("data") == json::array({0.5, -2.0}));
  // A node model knows no edges input.
  CHECK_THAT(why(json::array({edges}), Info()), Catch::Contains("unknown input 'edges'"));
}

TEST_CASE("a link model's request asks nodes' embeddings or pairs' scores", "[unit]") {
  ModelInfo link = Info();
  link.edge_model = true;
  link.task = "link";
  link.edge_outputs = 1;
  const json ids = {{"name", "node_ids"}, {"datatype", "INT64"}, {"shape", {2}}, {"data", {1, 2}}};
  const json edges = {
      {"name", "edges"}, {"datatype", "INT64"}, {"shape", {1, 2}}, {"data", {{1, 2}}}};
  const InferRequest nodes = ParseInferRequest(json{{"inputs", {ids}}}.dump(), -1, link, {});
  CHECK_FALSE(nodes.query.edge_query);
  CHECK(nodes.query.embedding);
  REQUIRE(nodes.outputs.size() == 1);
  CHECK(nodes.outputs[0].name == "embedding");
  const InferRequest pairs =
      ParseInferRequest(json{{"inputs", json::array({edges})}}.dump(), -1, link, {});
  CHECK(pairs.query.edge_query);
  REQUIRE(pairs.outputs.size() == 2);  // score, prob
  Answer a;
  a.rows = 1;
  a.classes = 1;
  a.logits = {0.0f};
  const json out = json::parse(EncodeInferResponse(pairs, a, link).body);
  CHECK(out.at("outputs")[0].at("name") == "score");
  CHECK(out.at("outputs")[0].at("shape") == json::array({1}));
  CHECK(out.at("outputs")[1].at("data")[0].get<float>() == Approx(0.5));
  const json meta = ModelMetadata(link);
  CHECK(meta.at("inputs").size() == 4);
  CHECK(meta.at("outputs")[0].at("shape") == json::array({-1}));
  try {
    ParseInferRequest(json{{"inputs", {ids, edges}}}.dump(), -1, link, {});
    FAIL("accepted");
  } catch (const BadRequest& e) {
    CHECK_THAT(e.what(), Catch::Contains("not both"));
  }
}
