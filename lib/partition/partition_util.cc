#include "partition/partition_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "partition/assign.h"
#include "partition/partition.h"

namespace gnn {

namespace fs = std::filesystem;

double Imbalance(const std::vector<int64_t>& per_part) {
  if (per_part.empty()) return 1.0;
  double sum = 0, mx = 0;
  for (int64_t x : per_part) {
    sum += static_cast<double>(x);
    mx = std::max(mx, static_cast<double>(x));
  }
  double mean = sum / static_cast<double>(per_part.size());
  return mean > 0 ? mx / mean : 1.0;
}

std::vector<uint8_t> MaskOf(int64_t n, const std::vector<int64_t>& idx) {
  std::vector<uint8_t> m(n, 0);
  for (int64_t v : idx) m[v] = 1;
  return m;
}

namespace {

// The entries of `dir`. Throws DataError "cannot list DIR: REASON" (not
// std::filesystem's "filesystem error: ...").
std::vector<fs::directory_entry> ListDir(const fs::path& dir) {
  std::vector<fs::directory_entry> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    entries.push_back(*it);
  }
  if (ec) throw DataError(CannotMessage("list", dir.string(), ec));
  return entries;
}

// What in `dir` gnn-partition did not write: every entry that is neither a
// partition config (<name>.json that parses as one) nor a folder such a
// config lists, and every file in a listed folder that its config does not
// name. Paths relative to `dir`, sorted.
std::vector<std::string> ForeignEntries(const fs::path& dir) {
  std::map<std::string, std::set<std::string>> listed;  // part folder -> its files
  std::set<std::string> configs;
  for (const auto& e : ListDir(dir)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".json" || !e.is_regular_file()) continue;
    try {
      const PartitionConfig c = LoadPartitionConfig(e.path().string());
      for (const PartInfo& p : c.parts) {
        std::set<std::string>& files = listed[fs::path(p.dir).lexically_normal().string()];
        for (const auto& [file, unused] : p.files) files.insert(file);
      }
      configs.insert(name);
    } catch (const std::exception&) {
      // Not a partition config: foreign.
    }
  }
  std::vector<std::string> foreign;
  for (const auto& e : ListDir(dir)) {
    const std::string name = e.path().filename().string();
    if (configs.count(name)) continue;
    auto part = listed.find(name);
    if (part == listed.end() || !e.is_directory() || e.is_symlink()) {
      foreign.push_back(name);
      continue;
    }
    for (const auto& f : ListDir(e.path())) {
      const std::string file = f.path().filename().string();
      if (!part->second.count(file) || !f.is_regular_file()) foreign.push_back(name + "/" + file);
    }
  }
  std::sort(foreign.begin(), foreign.end());
  return foreign;
}

// Whether `a` is `b` or a folder above it.
bool IsSameOrAbove(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  for (fs::path p = b; !p.empty(); p = p.parent_path()) {
    if (fs::equivalent(a, p, ec)) return true;
    if (p == p.parent_path()) break;
  }
  return false;
}

}  // namespace

// Checks that `output` may be (re)placed, before any work is done: an
// existing non-empty folder only with --overwrite, and then only one that
// gnn-partition wrote (nothing else in it is deleted) and that rename(2)
// can move aside (not the working folder or above it, not a mount point).
void CheckOutput(const PartitionOptions& o) {
  std::error_code ec;
  if (fs::exists(o.output, ec)) {
    if (!fs::is_directory(o.output, ec)) {
      throw ConfigError("--output " + o.output + " exists and is not a directory");
    }
    if (!fs::is_empty(o.output, ec) && !o.overwrite) {
      throw ConfigError("--output " + o.output +
                        " already exists and is not empty; pass --overwrite to replace it");
    }
    if (IsSameOrAbove(o.output, fs::current_path(ec))) {
      throw ConfigError("--output " + o.output +
                        " is the current folder or holds it, so it cannot be replaced; name a "
                        "folder inside it (e.g. --output data)");
    }
    struct stat self {
    }, parent{};
    const fs::path absolute = AbsoluteOutput(o.output);
    if (::stat(absolute.c_str(), &self) == 0 &&
        ::stat(absolute.parent_path().c_str(), &parent) == 0 &&
        (self.st_dev != parent.st_dev || self.st_ino == parent.st_ino)) {
      throw ConfigError("--output " + o.output +
                        " is a mount point, so it cannot be replaced; name a folder inside it");
    }
    if (!fs::is_empty(o.output, ec)) {
      const std::vector<std::string> foreign = ForeignEntries(o.output);
      if (!foreign.empty()) {
        std::string names;
        for (size_t i = 0; i < foreign.size() && i < 5; ++i) names += (i ? ", " : "") + foreign[i];
        if (foreign.size() > 5) names += " and " + std::to_string(foreign.size() - 5) + " more";
        throw ConfigError("--overwrite replaces only a gnn-partition output, and " + o.output +
                          " holds what gnn-partition did not write: " + names +
                          "; move them away or choose another --output");
      }
    }
  }
  // Missing parent folders are made, as DGL's partition_graph does.
  fs::path parent = fs::absolute(o.output).parent_path();
  if (!fs::is_directory(parent, ec) && (!fs::create_directories(parent, ec) || ec)) {
    throw DataError("cannot write --output " + o.output + ": cannot create its folder " +
                    parent.string() + (ec ? ": " + ec.message() : ""));
  }
  if (::access(parent.c_str(), W_OK) != 0) {
    throw DataError("cannot write --output " + o.output + ": folder " + parent.string() +
                    " is not writable: " + std::strerror(errno));
  }
}

void LogDirection(DirectionFlag flag, const std::string& name, const std::string& undirected_reason,
                  int64_t num_edges, const EdgeOrder& order) {
  bool suggest = false;
  const std::string line = DirectionLine(flag, name, undirected_reason, num_edges, order, &suggest);
  if (suggest) {
    GNN_LOG(kWarn) << line;
  } else {
    GNN_LOG(kInfo) << line;
  }
}

// `output` as an absolute, normal path without a trailing '/'.
std::string AbsoluteOutput(const std::string& output) {
  std::string path = fs::absolute(output).lexically_normal().string();
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

TempOutput::TempOutput(const std::string& prefix) : path_(MakeUniqueDir(prefix)) {}

TempOutput::TempOutput(const std::string& path, Exact) : path_(path) { MakeDirs(path); }

TempOutput::~TempOutput() {
  if (!path_.empty()) RemoveAllQuietly(path_);
}

// Moves the finished temp folder to `output`, replacing an old one only now.
void Publish(TempOutput& tmp, const std::string& output_in) {
  std::error_code ec;
  const std::string absolute = AbsoluteOutput(output_in);
  const std::string& output = absolute;  // "." and "dir/" are not rename(2)'s
  bool had_old = fs::exists(output, ec);
  std::string old;
  if (had_old) {
    // rename(2) may replace an empty folder: reserve a unique one.
    old = MakeUniqueDir(absolute + ".old.");
    fs::rename(output, old, ec);
    if (ec) {
      RemoveAllQuietly(old);
      throw DataError("cannot replace " + output + ": " + ec.message());
    }
  }
  fs::rename(tmp.path(), output, ec);
  if (ec) {
    const std::string why = ec.message();  // before the restore's rename overwrites it
    if (had_old) fs::rename(old, output, ec);
    throw DataError("cannot move the finished partitions to " + output + ": " + why);
  }
  tmp.Release();
  if (had_old) RemoveAllQuietly(old);
  SyncDir(fs::path(absolute).parent_path().string());
}

ScratchMap::ScratchMap(const std::string& path, const void* data, size_t bytes) : path_(path) {
  FILE* f = std::fopen(path.c_str(), "wb");
  bool ok = f && std::fwrite(data, 1, bytes, f) == bytes;
  int err = errno;
  if (f && std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::remove(path.c_str());
    throw DataError(CannotMessage("write scratch file", path, err));
  }
  int fd = ::open(path.c_str(), O_RDONLY);
  void* p = fd < 0 ? MAP_FAILED : ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  err = errno;
  if (fd >= 0) ::close(fd);
  if (p == MAP_FAILED) {
    std::remove(path.c_str());
    throw DataError(CannotMessage("map scratch file", path, err));
  }
  map_ = p;
  bytes_ = bytes;
}

ScratchMap& ScratchMap::operator=(ScratchMap&& other) noexcept {
  if (this != &other) {
    Reset();
    path_ = std::move(other.path_);
    map_ = other.map_;
    bytes_ = other.bytes_;
    other.map_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void ScratchMap::Reset() {
  if (!map_) return;
  ::munmap(map_, bytes_);
  std::remove(path_.c_str());
  map_ = nullptr;
}

WrittenFile WriteGatheredRows(const std::string& path, const float* table, int64_t dim,
                              const int64_t* ids, int64_t count) {
  NpyWriter w(path, DType::kFloat32, {count, dim});
  const int64_t rows_per_block = std::max<int64_t>(1, (8 << 20) / std::max<int64_t>(1, dim * 4));
  std::vector<float> block;
  for (int64_t i = 0; i < count; i += rows_per_block) {
    const int64_t e = std::min(count, i + rows_per_block);
    block.resize(static_cast<size_t>((e - i) * dim));
    for (int64_t k = i; k < e; ++k) {
      const float* src = table + ids[k] * dim;
      std::copy(src, src + dim, block.data() + (k - i) * dim);
    }
    w.Append(block.data(), (e - i) * dim);
  }
  return w.Commit();
}

// Orders nodes by partition, then by original id (stable and reproducible).
Relabeling Relabel(const std::vector<int32_t>& part, int num_parts) {
  const int64_t n = static_cast<int64_t>(part.size());
  Relabeling r;
  r.part_start.assign(num_parts + 1, 0);
  for (int32_t p : part) ++r.part_start[p + 1];
  for (int p = 0; p < num_parts; ++p) r.part_start[p + 1] += r.part_start[p];
  std::vector<int64_t> fill(r.part_start.begin(), r.part_start.end() - 1);
  r.new_id.resize(n);
  r.orig.resize(n);
  for (int64_t v = 0; v < n; ++v) {
    int64_t id = fill[part[v]]++;
    r.new_id[v] = id;
    r.orig[id] = v;
  }
  return r;
}

nlohmann::json PartitionReport(const PartitionConfig& config, int64_t input_edges,
                               int64_t undirected_edges, int64_t cut, const StageTimer& timer) {
  using nlohmann::json;
  std::vector<int64_t> nodes, edges, train;
  json parts = json::array();
  for (const PartInfo& p : config.parts) {
    nodes.push_back(p.num_nodes());
    edges.push_back(p.num_edges());
    train.push_back(p.num_train);
    parts.push_back({{"nodes", p.num_nodes()},
                     {"edges", p.num_edges()},
                     {"train_nodes", p.num_train},
                     {"valid_nodes", p.num_valid},
                     {"test_nodes", p.num_test}});
  }
  json stages = json::object();
  for (const auto& [name, secs] : timer.stages()) {
    stages[name.rfind("load", 0) == 0 ? "load" : name] = secs;
  }
  return {
      {"graph_name", config.graph_name},
      {"num_parts", config.num_parts},
      {"part_method", config.part_method},
      {"num_nodes", config.num_nodes},
      {"input_edges", input_edges},
      {"treated_as", config.undirected ? "undirected" : "directed"},
      {"undirected_edges", undirected_edges},
      {"stored_in_edges", config.num_edges},
      {"val_edges", config.num_val_edges},
      {"edge_cut", cut},
      {"edge_cut_fraction", undirected_edges > 0
                                ? static_cast<double>(cut) / static_cast<double>(undirected_edges)
                                : 0.0},
      {"parts", parts},
      {"imbalance",
       {{"nodes", Imbalance(nodes)},
        {"train_nodes", Imbalance(train)},
        {"edges", Imbalance(edges)}}},
      {"stage_seconds", stages},
      {"total_seconds", timer.Total()},
      {"peak_rss_bytes", PeakRssBytes()},
  };
}

std::string AssignMethod(const std::string& asked, int64_t entries, bool ids_fit_32) {
  if (asked != "metis") return asked;
  const int64_t limit = MetisMaxAdjacency();
  if (ids_fit_32 && entries <= limit) return asked;
  GNN_LOG(kWarn) << "the graph's " << entries << " adjacency entries"
                 << (ids_fit_32 ? "" : " and 64-bit node ids")
                 << " exceed METIS's 32-bit index (at most " << limit
                 << " entries): using the streaming assignment (--part_method stream) instead";
  return "stream";
}

std::string FormatPartitionReport(const nlohmann::json& r) {
  std::ostringstream out;
  out << std::fixed;
  out << "Partitioned " << r.at("graph_name").get<std::string>() << " into "
      << r.at("num_parts").get<int>() << " parts (" << r.at("part_method").get<std::string>()
      << "): " << r.at("num_nodes").get<int64_t>() << " nodes, "
      << r.at("input_edges").get<int64_t>() << " listed edges";
  if (r.contains("treated_as")) out << " treated as " << r.at("treated_as").get<std::string>();
  out << " (" << r.at("undirected_edges").get<int64_t>() << " linked node pairs), "
      << r.at("stored_in_edges").get<int64_t>() << " stored in-edges";
  if (r.contains("edge_feature_dim")) {
    out << ", each with " << r.at("edge_feature_dim").get<int64_t>()
        << " edge features (repeated edges kept)";
  }
  if (r.contains("feature_format")) {
    out << "; node features " << r.at("feature_format").get<std::string>() << " ("
        << std::setprecision(3) << 100.0 * r.at("feature_density").get<double>() << " % non-zero)";
  }
  if (r.contains("label_kind")) {
    out << "; labels: " << r.at("label_width").get<int64_t>() << " "
        << r.at("label_kind").get<std::string>() << " column(s) per node";
  }
  out << "\n";
  out << "edge_cut " << r.at("edge_cut").get<int64_t>() << " (" << std::setprecision(4)
      << r.at("edge_cut_fraction").get<double>() * 100 << "% of linked node pairs)\n";
  out << std::setw(6) << "part" << std::setw(12) << "nodes" << std::setw(14) << "edges"
      << std::setw(12) << "train" << std::setw(12) << "valid" << std::setw(12) << "test\n";
  int i = 0;
  for (const auto& p : r.at("parts")) {
    out << std::setw(6) << i++ << std::setw(12) << p.at("nodes").get<int64_t>() << std::setw(14)
        << p.at("edges").get<int64_t>() << std::setw(12) << p.at("train_nodes").get<int64_t>()
        << std::setw(12) << p.at("valid_nodes").get<int64_t>() << std::setw(11)
        << p.at("test_nodes").get<int64_t>() << "\n";
  }
  const nlohmann::json& im = r.at("imbalance");
  out << std::setprecision(3) << "imbalance (max/mean): nodes " << im.at("nodes").get<double>()
      << ", train_nodes " << im.at("train_nodes").get<double>() << ", edges "
      << im.at("edges").get<double>() << "\n";
  out << "stage seconds:";
  const nlohmann::json& stages = r.at("stage_seconds");
  for (const char* name :
       {"load", "symmetrize", "metis", "stream assignment", "random assignment", "exchange edges",
        "ptscotch", "relabel", "exchange rows", "exchange features", "write", "publish"}) {
    if (stages.contains(name)) {
      out << " " << name << " " << std::setprecision(2) << stages.at(name).get<double>();
    }
  }
  out << " | total " << r.at("total_seconds").get<double>() << " s, peak RSS "
      << std::setprecision(1) << r.at("peak_rss_bytes").get<double>() / (1 << 20) << " MiB\n";
  return out.str();
}

// Edge labels travel with the stored edges (WriteEdgeLabels); says so in
// one line. Held-out edges for link evaluation would take labelled edges
// out of the graph: refused.
void DescribeEdgeLabels(const PartitionOptions& options, const std::string& name, LabelKind kind,
                        int64_t num_classes, const int64_t count[4]) {
  if (options.val_edges > 0) {
    throw ConfigError("--val_edges holds edges out for --task link; " + name +
                      " has edge labels (the edge tasks keep every edge): drop --val_edges");
  }
  const bool classes = kind == LabelKind::kClass;
  GNN_LOG(kInfo) << name << ": edge labels ("
                 << (classes ? std::to_string(num_classes) + " classes"
                             : std::string("regression values"))
                 << "), " << count[1] << " train, " << count[2] << " valid, " << count[3]
                 << " test edges, stored with each stored in-edge (" << kEdgeLabelFile << ", "
                 << kEdgeSplitFile << "; gnn-train --task "
                 << (classes ? "edge_class" : "edge_regression") << ")";
}

void DescribeEdgeLabels(const PartitionOptions& options, const Dataset& d) {
  int64_t count[4] = {0, 0, 0, 0};
  for (uint8_t s : d.edge_split) ++count[s];
  DescribeEdgeLabels(options, d.name, d.edge_label_kind, d.num_edge_classes, count);
}

int64_t EdgeWeightColumn(const std::string& spec, const std::string& name, int64_t w,
                         const std::vector<Dataset::EdgeColumns>& columns, bool say) {
  if (w == 0) throw ConfigError("--edge_weight " + spec + ": " + name + " has no edge features");
  int64_t col = -1;
  std::string what;
  for (const Dataset::EdgeColumns& c : columns) {
    if (c.name != spec) continue;
    if (c.width != 1) {
      throw ConfigError("--edge_weight " + spec + ": edge_data " + spec + " has " +
                        std::to_string(c.width) + " columns; a weight is one");
    }
    col = c.first;
    what = "edge_data " + spec;
  }
  if (col < 0 && spec != "mean") {
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(spec, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != spec.size() || v < 0 || v >= w) {
      std::string names;
      for (const Dataset::EdgeColumns& c : columns) names += ", " + c.name;
      throw ConfigError("--edge_weight " + spec + ": not a column of " + name + "'s " +
                        std::to_string(w) + " edge features (0.." + std::to_string(w - 1) +
                        ", mean" + names + ")");
    }
    col = v;
    what = "column " + spec;
  }
  if (!say) return col;
  GNN_LOG(kInfo) << name << ": edge weights are " << (col >= 0 ? what : "each edge's mean")
                 << " of its " << w << " edge feature" << (w == 1 ? "" : "s")
                 << " (--edge_weight); the partitions keep only them";
  return col;
}

std::vector<float> EdgeWeights(const float* features, int64_t rows, int64_t w, int64_t col) {
  std::vector<float> weights(static_cast<size_t>(rows));
  for (int64_t e = 0; e < rows; ++e) {
    const float* row = features + e * w;
    if (col >= 0) {
      weights[static_cast<size_t>(e)] = row[col];
    } else {
      double sum = 0;
      for (int64_t j = 0; j < w; ++j) sum += row[j];
      weights[static_cast<size_t>(e)] = static_cast<float>(sum / static_cast<double>(w));
    }
  }
  return weights;
}

void SelectEdgeWeight(const std::string& spec, Dataset* d) {
  if (spec.empty()) return;
  const int64_t w = d->edge_feature_dim;
  const int64_t col = EdgeWeightColumn(spec, d->name, w, d->edge_feature_columns);
  d->edge_features = EdgeWeights(d->edge_features.data(), d->num_edges(), w, col);
  d->edge_feature_dim = 1;
  d->edge_feature_columns = {{spec, 0, 1}};
}

bool NodeFeaturesFromEdgesWanted(const PartitionOptions& options, const std::string& name,
                                 int64_t node_dim, int64_t edge_dim, bool say) {
  const std::string& how = options.node_feat_from_edges;
  if (edge_dim == 0) {
    if (how == "mean") {
      throw ConfigError("--node_feat_from_edges mean: " + name + " has no edge features");
    }
    return false;
  }
  if (say) {
    GNN_LOG(kInfo) << name << ": " << edge_dim
                   << " edge features per edge, stored with each stored in-edge (" << kEdgeFeatFile
                   << ", " << kOrigEidsFile << ")";
  }
  if (how == "none" || (how == "auto" && node_dim > 0)) {
    if (node_dim == 0) {
      throw DataError(name +
                      " has no node features (edge features only): --node_feat_from_edges "
                      "mean derives them from the edges");
    }
    return false;
  }
  return true;
}

void SayNodeFeaturesFromEdges(const PartitionOptions& options, const std::string& name, int64_t had,
                              int64_t edge_dim, bool undirected) {
  const std::string& how = options.node_feat_from_edges;
  GNN_LOG(kInfo) << name << ": node features "
                 << (had == 0 ? "are" : "get " + std::to_string(had) + " columns plus")
                 << " the mean of each node's " << (undirected ? "edges'" : "in-edges'") << " "
                 << edge_dim << " features (--node_feat_from_edges "
                 << (how == "auto" ? "auto: the graph has no node features" : how) << ")";
}

void SayRepeatedEdges(int64_t repeats, bool undirected) {
  if (repeats == 0) return;
  const std::string line =
      std::to_string(repeats) +
      " stored in-edges repeat the (source, destination) pair of another: with edge data, "
      "repeated input edges" +
      (undirected ? " (and edges listed in both directions)" : "") +
      " stay separate edges, each with its own data";
  if (undirected) {
    GNN_LOG(kWarn) << line << "; if the list already holds both directions, pass --directed";
  } else {
    GNN_LOG(kInfo) << line;
  }
}

}  // namespace gnn
