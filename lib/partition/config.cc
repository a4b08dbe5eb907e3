#include "partition/config.h"

#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "common/sha256.h"

namespace gnn {

using nlohmann::json;

const std::vector<std::string> kPartFiles = {
    "indptr.npy",     "indices.npy",    "feat.npy",      "label.npy",
    "train_mask.npy", "valid_mask.npy", "test_mask.npy", "orig_nids.npy"};

const std::vector<std::string> kValEdgeFiles = {"val_edges.npy", "val_neg.npy"};

int PartitionConfig::PartOf(int64_t node) const {
  auto it = std::upper_bound(parts.begin(), parts.end(), node,
                             [](int64_t v, const PartInfo& p) { return v < p.node_end; });
  if (it == parts.end() || node < it->node_start) return -1;
  return static_cast<int>(it - parts.begin());
}

std::string PartitionConfig::FilePath(int part, const std::string& file) const {
  return (std::filesystem::path(base_dir) / parts.at(part).dir / file).string();
}

json ToJson(const PartitionConfig& c) {
  json j;
  j["format_version"] = c.format_version;
  j["graph_name"] = c.graph_name;
  j["dataset"] = c.dataset;
  j["num_nodes"] = c.num_nodes;
  j["num_edges"] = c.num_edges;
  j["part_method"] = c.part_method;
  j["num_parts"] = c.num_parts;
  j["halo_hops"] = c.halo_hops;
  j["feature_dim"] = c.feature_dim;
  j["num_classes"] = c.num_classes;
  j["balance_train"] = c.balance_train;
  j["balance_edges"] = c.balance_edges;
  j["undirected"] = c.undirected;
  j["seed"] = c.seed;
  if (c.val_edges_fraction > 0) {
    j["val_edges"] = {{"fraction", c.val_edges_fraction},
                      {"num_edges", c.num_val_edges},
                      {"negatives_per_edge", c.val_negatives}};
  }
  // DGL's keys for a homogeneous graph.
  j["ntypes"] = {{"_N", 0}};
  j["etypes"] = {{"_N:_E:_N", 0}};
  json node_map = json::array(), edge_map = json::array();
  for (const auto& p : c.parts) {
    node_map.push_back({p.node_start, p.node_end});
    edge_map.push_back({p.edge_start, p.edge_end});
  }
  j["node_map"] = {{"_N", node_map}};
  j["edge_map"] = {{"_N:_E:_N", edge_map}};
  for (size_t i = 0; i < c.parts.size(); ++i) {
    const PartInfo& p = c.parts[i];
    json files = json::object();
    for (const auto& [name, f] : p.files) files[name] = {{"bytes", f.bytes}, {"sha256", f.sha256}};
    j["part-" + std::to_string(i)] = {
        {"part_dir", p.dir},
        {"node_feats", p.dir + "/feat.npy"},
        {"part_graph", p.dir + "/indptr.npy"},
        {"num_nodes", p.num_nodes()},
        {"num_edges", p.num_edges()},
        {"num_train", p.num_train},
        {"num_valid", p.num_valid},
        {"num_test", p.num_test},
        {"files", files},
    };
    if (c.val_edges_fraction > 0) j["part-" + std::to_string(i)]["num_val_edges"] = p.num_val_edges;
  }
  if (!c.report.is_null()) j["partition_report"] = c.report;
  return j;
}

PartitionConfig ParsePartitionConfig(const json& j, const std::string& base_dir,
                                     const std::string& source) {
  PartitionConfig c;
  c.base_dir = base_dir;
  try {
    c.format_version = j.at("format_version").get<int>();
    if (c.format_version != kPartitionFormatVersion) {
      throw DataError(source + ": format_version " + std::to_string(c.format_version) +
                      " is not supported (this build reads " +
                      std::to_string(kPartitionFormatVersion) + ")");
    }
    c.graph_name = j.at("graph_name").get<std::string>();
    c.dataset = j.value("dataset", "");
    c.num_nodes = j.at("num_nodes").get<int64_t>();
    c.num_edges = j.at("num_edges").get<int64_t>();
    c.part_method = j.at("part_method").get<std::string>();
    c.num_parts = j.at("num_parts").get<int>();
    c.halo_hops = j.at("halo_hops").get<int>();
    c.feature_dim = j.at("feature_dim").get<int64_t>();
    c.num_classes = j.at("num_classes").get<int64_t>();
    c.balance_train = j.at("balance_train").get<bool>();
    c.balance_edges = j.at("balance_edges").get<bool>();
    c.undirected = j.at("undirected").get<bool>();
    c.seed = j.at("seed").get<uint64_t>();
    if (j.contains("val_edges")) {
      const json& v = j.at("val_edges");
      c.val_edges_fraction = v.at("fraction").get<double>();
      c.num_val_edges = v.at("num_edges").get<int64_t>();
      c.val_negatives = v.at("negatives_per_edge").get<int>();
      if (!(c.val_edges_fraction > 0 && c.val_edges_fraction < 1) || c.num_val_edges < 0 ||
          c.val_negatives < 1) {
        throw DataError(source + ": val_edges has an invalid fraction, count or negatives");
      }
    }
    const json& node_map = j.at("node_map").at("_N");
    const json& edge_map = j.at("edge_map").at("_N:_E:_N");
    if (c.num_parts < 1 || node_map.size() != static_cast<size_t>(c.num_parts) ||
        edge_map.size() != static_cast<size_t>(c.num_parts)) {
      throw DataError(source + ": num_parts " + std::to_string(c.num_parts) +
                      " does not match node_map/edge_map");
    }
    int64_t next_node = 0, next_edge = 0;
    for (int i = 0; i < c.num_parts; ++i) {
      PartInfo p;
      const json& pj = j.at("part-" + std::to_string(i));
      p.dir = pj.at("part_dir").get<std::string>();
      p.node_start = node_map[i].at(0).get<int64_t>();
      p.node_end = node_map[i].at(1).get<int64_t>();
      p.edge_start = edge_map[i].at(0).get<int64_t>();
      p.edge_end = edge_map[i].at(1).get<int64_t>();
      if (p.node_start != next_node || p.node_end < p.node_start) {
        throw DataError(source + ": node_map range " + std::to_string(i) +
                        " is not contiguous with the previous one");
      }
      if (p.edge_start != next_edge || p.edge_end < p.edge_start) {
        throw DataError(source + ": edge_map range " + std::to_string(i) +
                        " is not contiguous with the previous one");
      }
      next_node = p.node_end;
      next_edge = p.edge_end;
      p.num_train = pj.at("num_train").get<int64_t>();
      p.num_valid = pj.at("num_valid").get<int64_t>();
      p.num_test = pj.at("num_test").get<int64_t>();
      std::vector<std::string> names = kPartFiles;
      if (c.val_edges_fraction > 0) {
        names.insert(names.end(), kValEdgeFiles.begin(), kValEdgeFiles.end());
        p.num_val_edges = pj.at("num_val_edges").get<int64_t>();
      }
      for (const std::string& name : names) {
        const json& f = pj.at("files").at(name);
        p.files[name] = PartFile{f.at("bytes").get<uint64_t>(), f.at("sha256").get<std::string>()};
      }
      c.parts.push_back(std::move(p));
    }
    if (next_node != c.num_nodes) {
      throw DataError(source + ": node_map covers " + std::to_string(next_node) + " of " +
                      std::to_string(c.num_nodes) + " nodes");
    }
    if (next_edge != c.num_edges) {
      throw DataError(source + ": edge_map covers " + std::to_string(next_edge) + " of " +
                      std::to_string(c.num_edges) + " edges");
    }
    if (j.contains("partition_report")) c.report = j["partition_report"];
  } catch (const json::exception& e) {
    throw DataError(source + ": invalid partition config: " + e.what());
  }
  return c;
}

PartitionConfig LoadPartitionConfig(const std::string& path) {
  std::string text = ReadFile(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw DataError(path + ": not valid JSON: " + e.what());
  }
  std::string base = std::filesystem::path(path).parent_path().string();
  return ParsePartitionConfig(j, base.empty() ? "." : base, path);
}

void VerifyPartFiles(const PartitionConfig& config, int part) {
  for (const auto& [name, f] : config.parts.at(part).files) {
    std::string path = config.FilePath(part, name);
    std::string sha = Sha256File(path);
    if (sha != f.sha256) {
      throw DataError(path + ": checksum mismatch (sha256 " + sha + ", config says " + f.sha256 +
                      ")");
    }
  }
}

}  // namespace gnn
