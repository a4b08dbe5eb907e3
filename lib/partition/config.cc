#include "partition/config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include "common/error.h"
#include "common/fs.h"
#include "common/json_reader.h"
#include "common/parallel.h"
#include "common/sha256.h"

namespace gnn {

using nlohmann::json;
namespace fs = std::filesystem;

const std::vector<std::string> kPartFiles = {"indptr.npy",    "indices.npy",    "feat.npy",
                                             "label.npy",     "train_mask.npy", "valid_mask.npy",
                                             "test_mask.npy", "orig_nids.npy"};

const std::vector<std::string> kValEdgeFiles = {"val_edges.npy", "val_neg.npy"};

namespace {
// A partition's labelled edges per split, in the config's part entries.
const char* const kSplitEdgeKeys[3] = {"num_train_edges", "num_valid_edges", "num_test_edges"};
}  // namespace

int PartitionConfig::NtypeOf(int64_t node) const {
  const int p = PartOf(node);
  if (p < 0) return -1;
  const auto& ranges = parts[static_cast<size_t>(p)].ntype_ranges;
  if (ranges.empty()) return 0;
  for (size_t t = 0; t < ranges.size(); ++t) {
    if (node >= ranges[t].first && node < ranges[t].second) return static_cast<int>(t);
  }
  return -1;
}

std::vector<int64_t> PartitionConfig::InputTypeOffsets() const {
  std::vector<int64_t> offset(ntypes.size() + 1, 0);
  for (const PartInfo& p : parts) {
    for (size_t t = 0; t < p.ntype_ranges.size() && t < ntypes.size(); ++t)
      offset[t + 1] += p.ntype_ranges[t].second - p.ntype_ranges[t].first;
  }
  if (parts.empty() || parts.front().ntype_ranges.empty()) offset.back() = num_nodes;
  for (size_t t = 0; t < ntypes.size(); ++t) offset[t + 1] += offset[t];
  return offset;
}

std::vector<int> PartitionConfig::RelationSrcTypes() const {
  std::vector<int> out;
  for (const std::string& e : etypes) {
    const auto it = std::find(ntypes.begin(), ntypes.end(), e.substr(0, e.find(':')));
    if (it == ntypes.end()) throw DataError("relation '" + e + "' has no source node type");
    out.push_back(static_cast<int>(it - ntypes.begin()));
  }
  return out;
}

std::vector<int> PartitionMachines(int part, int num_parts, int num_machines) {
  std::vector<int> out;
  for (int m = part; m < num_machines; m += num_parts) out.push_back(m);
  return out;
}

void CheckMachinesForParts(int num_parts, int num_machines, const std::string& what) {
  if (num_parts < 1 || num_parts > num_machines) {
    throw ConfigError(what + " lists " + std::to_string(num_machines) +
                      (num_machines == 1 ? " machine" : " machines") + " for " +
                      std::to_string(num_parts) +
                      " partitions: every partition needs a machine (machine m serves partition "
                      "m mod " +
                      std::to_string(num_parts) + ")");
  }
}

EdgeShares ShareLabeledEdges(const PartitionConfig& config, int part,
                             const std::vector<uint8_t>& split, int num_machines, int num_trainers,
                             int machine_id, int trainer_id) {
  auto sharers_of = [&](int p) {
    return static_cast<int64_t>(PartitionMachines(p, config.num_parts, num_machines).size()) *
           num_trainers;
  };
  EdgeShares out;
  for (int p = 0; p < config.num_parts; ++p) {
    const int64_t s = sharers_of(p);
    out.max_train_share =
        std::max(out.max_train_share, (config.parts[p].num_split_edges[0] + s - 1) / s);
  }
  const int64_t sharers = sharers_of(part);
  const int64_t me = (machine_id / config.num_parts) * num_trainers + trainer_id;
  std::vector<int64_t> in_split[3];
  for (size_t e = 0; e < split.size(); ++e) {
    if (split[e] >= 1 && split[e] <= 3) in_split[split[e] - 1].push_back(static_cast<int64_t>(e));
  }
  for (int k = 0; k < 3; ++k) {
    const int64_t n = static_cast<int64_t>(in_split[k].size());
    out.split[k].assign(in_split[k].begin() + n * me / sharers,
                        in_split[k].begin() + n * (me + 1) / sharers);
  }
  return out;
}

std::vector<std::string> PartitionConfig::PartFileNames() const {
  if (!hetero()) {
    std::vector<std::string> names = kPartFiles;
    if (sparse_features) {
      names.erase(std::find(names.begin(), names.end(), "feat.npy"));
      names.push_back(kFeatIndptrFile);
      names.push_back(kFeatIndicesFile);
      if (!feature_binary) names.push_back(kFeatValuesFile);
    }
    if (user_node_ids) names.push_back(kUserIdsFile);
    if (edge_feature_dim > 0) names.push_back(kEdgeFeatFile);
    if (edge_feature_dim > 0 || edge_labels) names.push_back(kOrigEidsFile);
    if (edge_labels) {
      names.push_back(kEdgeLabelFile);
      names.push_back(kEdgeSplitFile);
    }
    return names;
  }
  std::vector<std::string> names = {"indptr.npy", "indices.npy", kEtypeFile, "orig_nids.npy"};
  for (size_t t = 0; t < ntypes.size(); ++t) {
    if (t < ntype_feature_dims.size() && ntype_feature_dims[t] > 0)
      names.push_back(ntypes[t] + "-feat.npy");
  }
  for (const char* f : {"-label.npy", "-train_mask.npy", "-valid_mask.npy", "-test_mask.npy"})
    names.push_back(target_ntype + f);
  if (edge_feature_dim > 0) names.push_back(kEdgeFeatFile);
  if (edge_feature_dim > 0 || edge_labels) names.push_back(kOrigEidsFile);
  if (edge_labels) {
    names.push_back(kEdgeLabelFile);
    names.push_back(kEdgeSplitFile);
  }
  return names;
}

int64_t PartitionConfig::LabelledEdgeFeatureDim() const {
  if (!hetero()) return edge_feature_dim;
  for (size_t e = 0; e < etypes.size() && e < etype_edge_feature_dims.size(); ++e) {
    if (etypes[e] == target_etype) return etype_edge_feature_dims[e];
  }
  return 0;
}

void PartitionConfig::RequireHomogeneous(const std::string& who) const {
  if (!hetero()) return;
  throw ConfigError(graph_name + " is partitioned as a heterogeneous graph (" +
                    std::to_string(ntypes.size()) + " node types, " +
                    std::to_string(etypes.size()) + " relations): " + who +
                    " takes one node type and one relation so far");
}

std::string PartitionConfig::FilePath(int part, const std::string& file) const {
  return (fs::path(base_dir) / parts.at(part).dir / file).string();
}

namespace {

// A typed config's target and widths: each node type's features, and with
// edge features each relation's.
void TypedWidthsToJson(const PartitionConfig& c, json* j) {
  (*j)["target_ntype"] = c.target_ntype;
  json dims = json::object();
  for (size_t t = 0; t < c.ntypes.size(); ++t) dims[c.ntypes[t]] = c.ntype_feature_dims.at(t);
  (*j)["ntype_feature_dims"] = dims;
  if (c.edge_feature_dim == 0) return;
  json edims = json::object();
  for (size_t e = 0; e < c.etypes.size(); ++e) edims[c.etypes[e]] = c.etype_edge_feature_dims.at(e);
  (*j)["etype_edge_feature_dims"] = edims;
}

}  // namespace

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
  if (c.label_kind != LabelKind::kClass) {
    j["label_kind"] = LabelKindName(c.label_kind);
    j["label_dtype"] = "float32";
    j["label_width"] = c.label_width;
  }
  j["balance_train"] = c.balance_train;
  j["balance_edges"] = c.balance_edges;
  j["undirected"] = c.undirected;
  j["seed"] = c.seed;
  if (c.user_node_ids) j["user_node_ids"] = true;
  if (c.edge_feature_dim > 0) j["edge_feature_dim"] = c.edge_feature_dim;
  if (c.edge_labels) {
    const bool classes = c.edge_label_kind == LabelKind::kClass;
    j["edge_labels"] = {{"kind", classes ? "class" : "regression"},
                        {"dtype", classes ? "int64" : "float32"},
                        {"num_classes", c.num_edge_classes}};
    if (!c.target_etype.empty()) j["edge_labels"]["etype"] = c.target_etype;
  }
  if (c.sparse_features) {
    j["feature_format"] = "sparse";
    j["feature_binary"] = c.feature_binary;
  }
  if (c.val_edges_fraction > 0) {
    j["val_edges"] = {{"fraction", c.val_edges_fraction},
                      {"num_edges", c.num_val_edges},
                      {"negatives_per_edge", c.val_negatives}};
  }
  // DGL's keys: one range per type (relation) per partition.
  json ntypes = json::object(), etypes = json::object(), node_map = json::object(),
       edge_map = json::object();
  for (size_t t = 0; t < c.ntypes.size(); ++t) {
    ntypes[c.ntypes[t]] = t;
    json ranges = json::array();
    for (const auto& p : c.parts) {
      ranges.push_back(c.hetero() ? json{p.ntype_ranges.at(t).first, p.ntype_ranges.at(t).second}
                                  : json{p.node_start, p.node_end});
    }
    node_map[c.ntypes[t]] = ranges;
  }
  for (size_t e = 0; e < c.etypes.size(); ++e) {
    etypes[c.etypes[e]] = e;
    json ranges = json::array();
    for (const auto& p : c.parts) {
      if (!c.hetero()) {
        ranges.push_back({p.edge_start, p.edge_end});
        continue;
      }
      int64_t start = p.edge_start;
      for (size_t k = 0; k < e; ++k) start += p.etype_edges.at(k);
      ranges.push_back({start, start + p.etype_edges.at(e)});
    }
    edge_map[c.etypes[e]] = ranges;
  }
  j["ntypes"] = ntypes;
  j["etypes"] = etypes;
  j["node_map"] = node_map;
  j["edge_map"] = edge_map;
  if (c.hetero()) TypedWidthsToJson(c, &j);
  for (size_t i = 0; i < c.parts.size(); ++i) {
    const PartInfo& p = c.parts[i];
    json files = json::object();
    for (const auto& [name, f] : p.files) files[name] = {{"bytes", f.bytes}, {"sha256", f.sha256}};
    j["part-" + std::to_string(i)] = {
        {"part_dir", p.dir},
        {"node_feats",
         c.hetero() ? p.dir : p.dir + "/" + (c.sparse_features ? kFeatIndptrFile : "feat.npy")},
        {"part_graph", p.dir + "/indptr.npy"},
        {"num_nodes", p.num_nodes()},
        {"num_edges", p.num_edges()},
        {"num_train", p.num_train},
        {"num_valid", p.num_valid},
        {"num_test", p.num_test},
        {"files", files},
    };
    if (c.val_edges_fraction > 0) j["part-" + std::to_string(i)]["num_val_edges"] = p.num_val_edges;
    if (c.edge_labels) {
      for (int k = 0; k < 3; ++k)
        j["part-" + std::to_string(i)][kSplitEdgeKeys[k]] = p.num_split_edges[k];
    }
  }
  if (!c.report.is_null()) j["partition_report"] = c.report;
  return j;
}

std::string PartitionConfigText(const PartitionConfig& config) {
  return ToJson(config).dump(2) + "\n";
}

namespace {

// Counts fit int64 with room for n + 1 and sums of a few of them.
constexpr int64_t kMaxCount = int64_t{1} << 62;
constexpr int64_t kMaxParts = int64_t{1} << 20;
constexpr int64_t kMaxHaloHops = 64;
constexpr int64_t kMaxNegatives = int64_t{1} << 20;
constexpr int64_t kMaxClasses = std::numeric_limits<int32_t>::max();

bool IsHex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char ch) {
           return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
         });
}

// True if `inner` is `outer` or lies below it (both canonical).
bool IsWithin(const fs::path& inner, const fs::path& outer) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end() || (o->empty() && std::next(o) == outer.end());
}

// `part_dir` must name a folder inside the config's folder: relative, no
// ".." component, and (resolving symlinks) not leading out of it.
std::string ConfinedDir(const JsonReader& r, const std::string& base_dir, PartDirs dirs) {
  const std::string dir = r.String();
  const fs::path rel(dir);
  if (dir.empty() || dir.find('\0') != std::string::npos) r.Fail("expected a folder name");
  if (dirs == PartDirs::kAnywhere) return dir;
  if (rel.is_absolute()) r.Fail("absolute path '" + dir + "' (must be inside the config's folder)");
  for (const fs::path& part : rel) {
    if (part == "..") r.Fail("path '" + dir + "' has a '..' component");
  }
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::absolute(base_dir, ec), ec);
  if (ec) r.Fail("cannot resolve the config's folder " + base_dir + ": " + ec.message());
  const fs::path full = fs::weakly_canonical(base / rel, ec);
  if (ec) r.Fail("cannot resolve '" + dir + "': " + ec.message());
  if (!IsWithin(full, base) || full == base) {
    r.Fail("path '" + dir + "' resolves to " + full.string() + ", outside " + base.string());
  }
  return dir;
}

void ParseValEdges(const JsonReader& v, PartitionConfig* c) {
  c->val_edges_fraction = v.At("fraction").Number(0, 1);
  if (c->val_edges_fraction <= 0 || c->val_edges_fraction >= 1) {
    v.At("fraction").Fail("expected a fraction in (0, 1)");
  }
  c->num_val_edges = v.At("num_edges").Int(0, kMaxCount);
  c->val_negatives = static_cast<int>(v.At("negatives_per_edge").Int(1, kMaxNegatives));
}

void ParseScalars(const JsonReader& r, PartitionConfig* c) {
  c->format_version = static_cast<int>(r.At("format_version").Int(0, 1 << 30));
  if (c->format_version != kPartitionFormatVersion) {
    r.At("format_version")
        .Fail(std::to_string(c->format_version) + " is not supported (this build reads " +
              std::to_string(kPartitionFormatVersion) + ")");
  }
  c->graph_name = r.At("graph_name").String();
  if (c->graph_name.empty()) r.At("graph_name").Fail("empty graph name");
  c->dataset = r.Has("dataset") ? r.At("dataset").String() : "";
  c->num_nodes = r.At("num_nodes").Int(0, kMaxCount);
  c->num_edges = r.At("num_edges").Int(0, kMaxCount);
  c->part_method = r.At("part_method").String();
  c->num_parts = static_cast<int>(r.At("num_parts").Int(1, kMaxParts));
  c->halo_hops = static_cast<int>(r.At("halo_hops").Int(0, kMaxHaloHops));
  c->feature_dim = r.At("feature_dim").Int(0, kMaxCount);
  int64_t cells;
  if (__builtin_mul_overflow(c->num_nodes, c->feature_dim, &cells) || cells > kMaxCount) {
    r.At("feature_dim").Fail("num_nodes x feature_dim does not fit 62 bits");
  }
  c->num_classes = r.At("num_classes").Int(0, kMaxClasses);
  if (r.Has("label_kind")) {
    c->label_kind = ParseLabelKind(r.At("label_kind").String(), "label_kind");
    if (c->label_kind != LabelKind::kClass) {
      c->label_width = r.At("label_width").Int(1, kMaxLabelWidth);
      int64_t label_cells;
      if (__builtin_mul_overflow(c->num_nodes, c->label_width, &label_cells) ||
          label_cells > kMaxCount) {
        r.At("label_width").Fail("num_nodes x label_width does not fit 62 bits");
      }
    }
  }
  c->balance_train = r.At("balance_train").Bool();
  c->balance_edges = r.At("balance_edges").Bool();
  c->undirected = r.At("undirected").Bool();
  c->seed = r.At("seed").Uint64();
  if (r.Has("val_edges")) ParseValEdges(r.At("val_edges"), c);
  c->user_node_ids = r.Has("user_node_ids") && r.At("user_node_ids").Bool();
  if (r.Has("feature_format")) {
    const std::string format = r.At("feature_format").String();
    if (format != "dense" && format != "sparse") r.At("feature_format").Fail("dense or sparse");
    c->sparse_features = format == "sparse";
    if (c->sparse_features) {
      c->feature_binary = r.At("feature_binary").Bool();
      if (c->feature_dim > std::numeric_limits<int32_t>::max())
        r.At("feature_dim").Fail("sparse features take at most 2^31 - 1 columns");
    }
  }
  if (r.Has("edge_labels")) {
    const JsonReader e = r.At("edge_labels");
    const std::string kind = e.At("kind").String();
    if (kind != "class" && kind != "regression") e.At("kind").Fail("class or regression");
    c->edge_labels = true;
    c->edge_label_kind = kind == "class" ? LabelKind::kClass : LabelKind::kRegression;
    c->num_edge_classes = e.At("num_classes").Int(kind == "class" ? 1 : 0, kMaxCount);
    if (e.Has("etype")) c->target_etype = e.At("etype").String();
  }
  if (r.Has("edge_feature_dim")) {
    c->edge_feature_dim = r.At("edge_feature_dim").Int(1, kMaxCount);
    if (__builtin_mul_overflow(c->num_edges, c->edge_feature_dim, &cells) || cells > kMaxCount) {
      r.At("edge_feature_dim").Fail("num_edges x edge_feature_dim does not fit 62 bits");
    }
  }
}

// [start, end) from a node_map / edge_map entry; must start at `next`.
std::pair<int64_t, int64_t> Range(const JsonReader& r, int64_t next, int64_t total) {
  if (r.ArraySize() != 2) r.Fail("expected [start, end]");
  const int64_t start = r.Item(0).Int(0, total), end = r.Item(1).Int(0, total);
  if (start != next || end < start) {
    r.Fail("range [" + std::to_string(start) + ", " + std::to_string(end) +
           ") is not contiguous with the previous one (expected start " + std::to_string(next) +
           ")");
  }
  return {start, end};
}

void ParsePartCounts(const JsonReader& pj, const PartitionConfig& c, PartInfo* p) {
  const int64_t n = p->num_nodes();
  p->num_train = pj.At("num_train").Int(0, n);
  p->num_valid = pj.At("num_valid").Int(0, n);
  p->num_test = pj.At("num_test").Int(0, n);
  if (c.val_edges_fraction > 0) p->num_val_edges = pj.At("num_val_edges").Int(0, c.num_val_edges);
  if (c.edge_labels) {
    for (int k = 0; k < 3; ++k) p->num_split_edges[k] = pj.At(kSplitEdgeKeys[k]).Int(0, kMaxCount);
  }
}

void ParseFiles(const JsonReader& files, const PartitionConfig& c, PartInfo* p) {
  std::vector<std::string> names = c.PartFileNames();
  if (c.val_edges_fraction > 0)
    names.insert(names.end(), kValEdgeFiles.begin(), kValEdgeFiles.end());
  for (const std::string& name : names) {
    const JsonReader f = files.At(name);
    PartFile pf{static_cast<uint64_t>(f.At("bytes").Int(0, kMaxCount)), f.At("sha256").String()};
    if (!IsHex64(pf.sha256)) f.At("sha256").Fail("expected 64 lowercase hex digits");
    p->files[name] = pf;
  }
}

// The names of a {name: index} object (ntypes, etypes) in index order;
// indices must be 0..n-1, each once.
std::vector<std::string> TypeNames(const JsonReader& r) {
  const std::vector<std::string> keys = r.Keys();
  if (keys.empty()) r.Fail("expected at least one type");
  std::vector<std::string> names(keys.size());
  std::vector<bool> seen(keys.size(), false);
  for (const std::string& k : keys) {
    if (k.empty()) r.Fail("empty type name");
    const size_t i = static_cast<size_t>(r.At(k).Int(0, static_cast<int64_t>(keys.size()) - 1));
    if (seen[i]) r.At(k).Fail("index given twice");
    seen[i] = true;
    names[i] = k;
  }
  return names;
}

// Node type names land in file names: letters, digits, '_', '-', '.'.
void CheckTypeName(const JsonReader& r, const std::string& name) {
  const bool ok =
      !name.empty() && name != "." && name != ".." &&
      std::all_of(name.begin(), name.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
      });
  if (!ok) r.Fail("node type '" + name + "' (letters, digits, '_', '-', '.' only)");
}

void ParseTypes(const JsonReader& r, PartitionConfig* c) {
  c->ntypes = TypeNames(r.At("ntypes"));
  c->etypes = TypeNames(r.At("etypes"));
  if (!r.Has("target_ntype")) {
    if (c->ntypes != std::vector<std::string>{"_N"} ||
        c->etypes != std::vector<std::string>{"_N:_E:_N"})
      r.At("ntypes").Fail("several node types or relations need a target_ntype");
    if (!c->target_etype.empty()) r.At("edge_labels").At("etype").Fail("names no relation here");
    return;
  }
  if (c->edge_labels &&
      std::find(c->etypes.begin(), c->etypes.end(), c->target_etype) == c->etypes.end()) {
    r.At("edge_labels").Fail("a typed graph's edge labels name one of etypes as \"etype\"");
  }
  for (const auto& t : c->ntypes) CheckTypeName(r.At("ntypes"), t);
  // Every relation is "src:rel:dst" over the node types.
  for (const auto& e : c->etypes) {
    const size_t a = e.find(':'), b = e.find(':', a == std::string::npos ? a : a + 1);
    const bool ok = a != std::string::npos && b != std::string::npos &&
                    e.find(':', b + 1) == std::string::npos && b > a + 1 &&
                    std::count(c->ntypes.begin(), c->ntypes.end(), e.substr(0, a)) == 1 &&
                    std::count(c->ntypes.begin(), c->ntypes.end(), e.substr(b + 1)) == 1;
    if (!ok) r.At("etypes").Fail("'" + e + "' is not src:rel:dst over the node types");
  }
  c->target_ntype = r.At("target_ntype").String();
  if (std::find(c->ntypes.begin(), c->ntypes.end(), c->target_ntype) == c->ntypes.end())
    r.At("target_ntype").Fail("'" + c->target_ntype + "' is not a node type");
  for (const auto& t : c->ntypes)
    c->ntype_feature_dims.push_back(r.At("ntype_feature_dims").At(t).Int(0, kMaxCount));
  if (c->edge_feature_dim == 0) return;
  // Every relation's width, the widest being edge_feature_dim.
  const JsonReader dims = r.At("etype_edge_feature_dims");
  int64_t widest = 0;
  for (const auto& e : c->etypes) {
    c->etype_edge_feature_dims.push_back(dims.At(e).Int(0, c->edge_feature_dim));
    widest = std::max(widest, c->etype_edge_feature_dims.back());
  }
  if (widest != c->edge_feature_dim)
    dims.Fail("the widest relation has " + std::to_string(widest) + " columns, edge_feature_dim " +
              std::to_string(c->edge_feature_dim));
}

void ParseParts(const JsonReader& r, PartDirs dirs_allowed, PartitionConfig* c) {
  std::vector<JsonReader> node_maps, edge_maps;
  for (const auto& t : c->ntypes) node_maps.push_back(r.At("node_map").At(t));
  for (const auto& e : c->etypes) edge_maps.push_back(r.At("edge_map").At(e));
  for (const auto* maps : {&node_maps, &edge_maps}) {
    for (const JsonReader& m : *maps) {
      if (m.ArraySize() != static_cast<size_t>(c->num_parts)) {
        m.Fail("has " + std::to_string(m.ArraySize()) + " ranges for num_parts " +
               std::to_string(c->num_parts));
      }
    }
  }
  int64_t next_node = 0, next_edge = 0, val_edges = 0;
  std::set<std::string> dirs;
  for (int i = 0; i < c->num_parts; ++i) {
    PartInfo p;
    const JsonReader pj = r.At("part-" + std::to_string(i));
    p.dir = ConfinedDir(pj.At("part_dir"), c->base_dir, dirs_allowed);
    if (!dirs.insert(fs::path(p.dir).lexically_normal().string()).second) {
      pj.At("part_dir").Fail("folder '" + p.dir + "' is used by another partition");
    }
    // A partition's types (relations) follow each other, then the next
    // partition's: one contiguous walk over all ranges.
    p.node_start = next_node;
    for (const JsonReader& m : node_maps) {
      p.ntype_ranges.push_back(Range(m.Item(i), next_node, c->num_nodes));
      next_node = p.ntype_ranges.back().second;
    }
    p.node_end = next_node;
    p.edge_start = next_edge;
    for (const JsonReader& m : edge_maps) {
      const auto [start, end] = Range(m.Item(i), next_edge, c->num_edges);
      p.etype_edges.push_back(end - start);
      next_edge = end;
    }
    p.edge_end = next_edge;
    if (!c->hetero()) {
      p.ntype_ranges.clear();
      p.etype_edges.clear();
    }
    ParsePartCounts(pj, *c, &p);
    val_edges += p.num_val_edges;
    ParseFiles(pj.At("files"), *c, &p);
    c->parts.push_back(std::move(p));
  }
  if (next_node != c->num_nodes) {
    node_maps.back().Fail("ranges cover " + std::to_string(next_node) + " of " +
                          std::to_string(c->num_nodes) + " nodes");
  }
  if (next_edge != c->num_edges) {
    edge_maps.back().Fail("ranges cover " + std::to_string(next_edge) + " of " +
                          std::to_string(c->num_edges) + " edges");
  }
  if (val_edges != c->num_val_edges) {
    r.At("val_edges")
        .At("num_edges")
        .Fail("partitions hold " + std::to_string(val_edges) + " held-out edges, not " +
              std::to_string(c->num_val_edges));
  }
}

}  // namespace

PartitionConfig ParsePartitionConfig(const json& j, const std::string& base_dir,
                                     const std::string& source, PartDirs dirs) {
  PartitionConfig c;
  c.base_dir = base_dir;
  const JsonReader r(j, source);
  try {
    ParseScalars(r, &c);
    ParseTypes(r, &c);
    ParseParts(r, dirs, &c);
    if (r.Has("partition_report")) c.report = j.at("partition_report");
  } catch (const json::exception& e) {
    // JsonReader checks types first; this is a backstop for anything missed.
    throw DataError(source + ": invalid partition config: " + e.what());
  }
  return c;
}

PartitionConfig ParsePartitionConfigText(const std::string& text, const std::string& base_dir,
                                         const std::string& source, PartDirs dirs) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw DataError(source + ": not valid JSON: " + e.what());
  }
  return ParsePartitionConfig(j, base_dir, source, dirs);
}

PartitionConfig LoadPartitionConfig(const std::string& path, PartDirs dirs) {
  std::string base = fs::path(path).parent_path().string();
  return ParsePartitionConfigText(ReadFile(path), base.empty() ? "." : base, path, dirs);
}

void VerifyPartFile(const std::string& path, const PartFile& f) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw DataError(CannotMessage("open", path, errno) + "; copy the partition again (gnn-copy)");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < f.bytes) {
    throw DataError(path + ": truncated: " + std::to_string(size) + " of " +
                    std::to_string(f.bytes) + " bytes; copy it again (gnn-copy)");
  }
  if (size > f.bytes) {
    throw DataError(path + ": " + std::to_string(size) + " bytes where the partition config says " +
                    std::to_string(f.bytes) +
                    "; copy it again (gnn-copy), or re-run gnn-partition");
  }
  const std::string sha = Sha256File(path);
  if (sha != f.sha256) {
    throw DataError(path + ": checksum mismatch (sha256 " + sha.substr(0, 16) +
                    "..., the partition config says " + f.sha256.substr(0, 16) +
                    "...): its bytes changed since partitioning; copy it again (gnn-copy)");
  }
}

void VerifyPartFiles(const PartitionConfig& config, int part) {
  // The files at once, the largest first (the features and the in-edges
  // are most of the bytes): hashing is CPU-bound.
  std::vector<std::pair<std::string, const PartFile*>> files;
  for (const auto& [name, f] : config.parts.at(part).files) {
    // The edge features are read only by runs that use them (edge
    // weights): they are hashed where they are read (LoadLocalPartition,
    // ShmPartition::Create), not at every start.
    if (name == kEdgeFeatFile || name == kOrigEidsFile) continue;
    files.emplace_back(config.FilePath(part, name), &f);
  }
  std::stable_sort(files.begin(), files.end(),
                   [](const auto& a, const auto& b) { return a.second->bytes > b.second->bytes; });
  ParallelChunks(static_cast<int64_t>(files.size()), 0, [&](int64_t i) {
    VerifyPartFile(files[static_cast<size_t>(i)].first, *files[static_cast<size_t>(i)].second);
  });
}

}  // namespace gnn
