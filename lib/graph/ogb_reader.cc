#include "graph/ogb_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "common/gzip.h"
#include "common/log.h"
#include "common/npy.h"
#include "common/parallel.h"
#include "common/parse.h"
#include "common/timer.h"
#include "graph/ogb_csv.h"

namespace gnn {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace ogb;

// Bump when the cached arrays or meta.json change meaning.
constexpr int kCacheFormatVersion = 3;  // 2: edge features; 3: label rows

// The files of one OGB folder, in the order they are parsed and listed in
// the cache's meta.json. edge_feat is empty when the graph's edge features
// are not read (none, or --ignore_edge_data); feat is empty when a graph
// with edge features has no node features (gnn-partition derives them).
struct OgbFiles {
  std::string num_nodes, num_edges, edge, feat, label, train, valid, test, edge_feat;

  OgbFiles(const fs::path& folder, const std::string& split, bool read_edge_feat) {
    fs::path raw = folder / "raw";
    fs::path sp = folder / "split" / split;
    num_nodes = (raw / "num-node-list.csv.gz").string();
    num_edges = (raw / "num-edge-list.csv.gz").string();
    edge = (raw / "edge.csv.gz").string();
    feat = (raw / "node-feat.csv.gz").string();
    label = (raw / "node-label.csv.gz").string();
    train = (sp / "train.csv.gz").string();
    valid = (sp / "valid.csv.gz").string();
    test = (sp / "test.csv.gz").string();
    std::error_code ec;
    if (read_edge_feat && fs::exists(raw / kOgbEdgeFeatFile, ec)) {
      edge_feat = (raw / kOgbEdgeFeatFile).string();
      if (!fs::exists(feat, ec)) feat.clear();
    }
  }
  std::vector<std::string> All() const {
    std::vector<std::string> all = {num_nodes, num_edges, edge};
    if (!feat.empty()) all.push_back(feat);
    for (const std::string* f : {&label, &train, &valid, &test}) all.push_back(*f);
    if (!edge_feat.empty()) all.push_back(edge_feat);
    return all;
  }
};

// `feature_format` (DatasetOptions'): anything but "dense" parses the node
// features into CSR rows ("auto" switches to dense rows early when the
// first rows are dense).
Dataset ParseRaw(const OgbFiles& f, const std::string& feature_format, int num_threads,
                 ParseContext* ctx) {
  Dataset d;
  d.num_nodes = ReadCount(f.num_nodes, ctx);
  if (d.num_nodes <= 0) throw DataError(f.num_nodes + ": the graph has no nodes");
  const int64_t num_edges = ReadCount(f.num_edges, ctx);
  const int64_t n = d.num_nodes;

  // Edges on their own thread, everything else on this one: each file also
  // has its own decompression thread, so this keeps all cores busy whichever
  // of inflate and parse is the slower stage.
  std::exception_ptr errors[2];
  auto guarded = [&](int id, const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Cancelled&) {
      // Another file failed first; its error is the one reported.
    } catch (...) {
      errors[id] = std::current_exception();
      int none = -1;
      ctx->first_failure.compare_exchange_strong(none, id);
    }
  };
  auto edges = [&] {
    ReadIdPairs(f.edge, n, n, num_edges, &d.src, &d.dst, ctx, "num-node-list.csv.gz",
                "num-edge-list.csv.gz");
    if (!f.edge_feat.empty())
      d.edge_feature_dim = ReadFloatRows(f.edge_feat, num_edges, &d.edge_features, ctx, "edges",
                                         "num-edge-list.csv.gz");
  };
  auto nodes = [&] {
    if (!f.feat.empty() && feature_format == "dense") {
      d.feature_dim = ReadFloatRows(f.feat, n, &d.features, ctx);
    } else if (!f.feat.empty()) {
      d.feature_dim =
          ReadFeatureRows(f.feat, n, feature_format == "auto" ? kSparseFeatureDensity : 0.0,
                          &d.sparse_features, &d.features, ctx);
      if (!d.features.empty()) d.sparse_features = SparseRows();
    }
    try {
      d.num_classes = ReadLabelColumn(f.label, n, &d.labels, ctx);
    } catch (const DataError&) {
      // Several columns (ogbn-proteins' 112) or values that are not class
      // ids: rows of numbers, multi-label or regression targets. A file
      // that is not that either (short, long, one column of integers with a
      // bad one) keeps the class-id reader's error.
      const std::exception_ptr as_classes = std::current_exception();
      std::vector<float> values;
      int64_t width = 0;
      try {
        width = ReadFloatRows(f.label, n, &values, ctx, "nodes", "num-node-list.csv.gz");
      } catch (const DataError&) {
        std::rethrow_exception(as_classes);
      }
      bool integral = true;
      for (float v : values) integral &= std::isfinite(v) && v == std::floor(v);
      if (width == 1 && integral) std::rethrow_exception(as_classes);
      const std::string said = SetLabelRows(&d, std::vector<double>(values.begin(), values.end()),
                                            width, "auto", f.label);
      if (!said.empty()) {
        GNN_LOG(kInfo) << said;
      }
    }
    d.train_idx = ReadIdList(f.train, n, ctx);
    d.valid_idx = ReadIdList(f.valid, n, ctx);
    d.test_idx = ReadIdList(f.test, n, ctx);
  };
  if (num_threads >= 2) {
    std::thread t([&] { guarded(0, edges); });
    guarded(1, nodes);
    t.join();
  } else {
    guarded(0, edges);
    if (ctx->first_failure.load() < 0) guarded(1, nodes);
  }
  int first = ctx->first_failure.load();
  if (first >= 0) std::rethrow_exception(errors[first]);
  return d;
}

// ---- cache ----------------------------------------------------------------

// True if `dir` (or, when it does not exist yet, its nearest existing
// ancestor) has no write permission bits at all. Checked on the mode rather
// than with access(2) because root may write anywhere, and a dataset folder
// someone marked read-only (a shared copy) should stay untouched.
bool LooksReadOnly(const fs::path& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) return false;
  while (!p.empty() && !fs::exists(p, ec)) {
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  struct stat st;
  if (::stat(p.c_str(), &st) != 0) return false;
  return (st.st_mode & 0222) == 0;
}

json Signatures(const fs::path& folder, const OgbFiles& f) {
  json sig = json::object();
  for (const std::string& path : f.All()) {
    // Key by the path inside the dataset folder, so moving the folder keeps
    // the cache valid.
    std::string key = fs::path(path).lexically_relative(folder).generic_string();
    sig[key] = FileSignature(path);  // throws "missing file <path>"
  }
  return sig;
}

std::string CachePath(const fs::path& dir, const char* name) { return (dir / name).string(); }

// Fills `d` from the cache if it is present and matches; false otherwise.
bool LoadCache(const fs::path& dir, const std::string& split, const json& sigs, Dataset* d) {
  std::string meta_path = CachePath(dir, "meta.json");
  if (!PathExists(meta_path)) return false;
  try {
    json meta = json::parse(ReadFile(meta_path));
    if (meta.at("format_version").get<int>() != kCacheFormatVersion) {
      GNN_LOG(kInfo) << "cache " << dir.string() << " has another format version; re-parsing";
      return false;
    }
    if (meta.at("split").get<std::string>() != split) {
      GNN_LOG(kInfo) << "cache " << dir.string() << " holds split '"
                     << meta.at("split").get<std::string>() << "', not '" << split
                     << "'; re-parsing";
      return false;
    }
    const json& cached = meta.at("files");
    if (cached != sigs) {
      std::string changed = "a raw file";
      for (auto it = sigs.begin(); it != sigs.end(); ++it) {
        if (!cached.contains(it.key()) || cached.at(it.key()) != it.value()) {
          changed = it.key();
          break;
        }
      }
      GNN_LOG(kInfo) << changed << " changed since the cache in " << dir.string()
                     << " was written; re-parsing";
      return false;
    }
    const int64_t n = meta.at("num_nodes").get<int64_t>();
    const int64_t e = meta.at("num_edges").get<int64_t>();
    const int64_t f = meta.at("feature_dim").get<int64_t>();
    d->num_nodes = n;
    d->feature_dim = f;
    d->num_classes = meta.at("num_classes").get<int64_t>();
    d->src = ReadNpy<int64_t>(CachePath(dir, "src.npy"), {e});
    d->dst = ReadNpy<int64_t>(CachePath(dir, "dst.npy"), {e});
    if (meta.value("feature_format", "dense") == "sparse") {
      SparseRows& x = d->sparse_features;
      x.cols = f;
      x.indptr = ReadNpy<int64_t>(CachePath(dir, "feat_indptr.npy"), {n + 1});
      x.indices = ReadNpy<int32_t>(CachePath(dir, "feat_indices.npy"), {-1});
      if (!meta.value("feature_binary", false))
        x.values = ReadNpy<float>(CachePath(dir, "feat_values.npy"), {-1});
    } else {
      d->features = ReadNpy<float>(CachePath(dir, "feat.npy"), {n, f});
    }
    d->edge_feature_dim = meta.at("edge_feature_dim").get<int64_t>();
    if (d->edge_feature_dim > 0) {
      d->edge_features = ReadNpy<float>(CachePath(dir, "edge_feat.npy"), {e, d->edge_feature_dim});
    }
    d->label_kind = ParseLabelKind(meta.at("label_kind").get<std::string>(), meta_path);
    if (d->label_kind == LabelKind::kClass) {
      d->labels = ReadNpy<int64_t>(CachePath(dir, "label.npy"), {n});
    } else {
      d->label_width = meta.at("label_width").get<int64_t>();
      d->targets = ReadNpy<float>(CachePath(dir, "label.npy"), {n, d->label_width});
    }
    d->train_idx = ReadNpy<int64_t>(CachePath(dir, "train_idx.npy"), {-1});
    d->valid_idx = ReadNpy<int64_t>(CachePath(dir, "valid_idx.npy"), {-1});
    d->test_idx = ReadNpy<int64_t>(CachePath(dir, "test_idx.npy"), {-1});
    d->Validate();
    return true;
  } catch (const std::exception& ex) {
    GNN_LOG(kWarn) << "ignoring the cache in " << dir.string() << ": " << ex.what()
                   << "; re-parsing the raw files";
    Dataset empty;
    empty.name = d->name;
    empty.undirected_reason = d->undirected_reason;
    *d = std::move(empty);
    return false;
  }
}

void WriteCache(const fs::path& dir, const std::string& split, const json& sigs, const Dataset& d) {
  MakeDirs(dir.string());
  // meta.json goes first and comes back last: a crash in between leaves no
  // meta.json, so half-written arrays are never mistaken for a valid cache.
  std::error_code ec;
  fs::remove(dir / "meta.json", ec);
  if (ec) throw DataError("cannot remove " + CachePath(dir, "meta.json") + ": " + ec.message());
  WriteNpy(CachePath(dir, "src.npy"), d.src);
  WriteNpy(CachePath(dir, "dst.npy"), d.dst);
  if (d.sparse()) {
    WriteNpy(CachePath(dir, "feat_indptr.npy"), d.sparse_features.indptr);
    WriteNpy(CachePath(dir, "feat_indices.npy"), d.sparse_features.indices);
    if (!d.sparse_features.binary())
      WriteNpy(CachePath(dir, "feat_values.npy"), d.sparse_features.values);
  } else {
    WriteNpy(CachePath(dir, "feat.npy"), d.features.data(), {d.num_nodes, d.feature_dim});
  }
  if (d.label_kind == LabelKind::kClass) {
    WriteNpy(CachePath(dir, "label.npy"), d.labels);
  } else {
    WriteNpy(CachePath(dir, "label.npy"), d.targets.data(), {d.num_nodes, d.label_width});
  }
  if (d.edge_feature_dim > 0) {
    WriteNpy(CachePath(dir, "edge_feat.npy"), d.edge_features.data(),
             {d.num_edges(), d.edge_feature_dim});
  }
  WriteNpy(CachePath(dir, "train_idx.npy"), d.train_idx);
  WriteNpy(CachePath(dir, "valid_idx.npy"), d.valid_idx);
  WriteNpy(CachePath(dir, "test_idx.npy"), d.test_idx);
  json meta = {{"format_version", kCacheFormatVersion},
               {"split", split},
               {"num_nodes", d.num_nodes},
               {"num_edges", d.num_edges()},
               {"feature_dim", d.feature_dim},
               {"num_classes", d.num_classes},
               {"edge_feature_dim", d.edge_feature_dim},
               {"label_kind", LabelKindName(d.label_kind)},
               {"label_width", d.label_width},
               {"feature_format", d.sparse() ? "sparse" : "dense"},
               {"feature_binary", d.sparse() && d.sparse_features.binary()},
               {"files", sigs}};
  WriteFileAtomic(CachePath(dir, "meta.json"), meta.dump(2) + "\n");
}

// OGB-style edge labels: raw/edge-label.csv.gz, one value per line of
// edge.csv.gz (integers: classes; otherwise regression values), and
// split/<split>/edge_{train,valid,test}.csv.gz listing input edge ids
// (0-based lines of edge.csv.gz). Read after the rest (cached or parsed),
// never cached: one number per edge. No-op without the label file.
void ReadOgbEdgeLabels(const fs::path& root, const std::string& split, Dataset* d) {
  const fs::path label = root / "raw" / kOgbEdgeLabelFile;
  std::error_code ec;
  if (!fs::exists(label, ec)) return;
  const fs::path sp = root / "split" / split;
  const std::string names[3] = {"edge_train.csv.gz", "edge_valid.csv.gz", "edge_test.csv.gz"};
  if (!fs::exists(sp / names[0], ec)) {
    throw DataError(label.string() + " labels the edges, but " + (sp / names[0]).string() +
                    " (the train edges' ids: lines of edge.csv.gz) does not exist");
  }
  ParseContext ctx;
  const int64_t m = d->num_edges();
  std::vector<float> values;
  const int64_t width =
      ReadFloatRows(label.string(), m, &values, &ctx, "edges", "num-edge-list.csv.gz");
  if (width != 1) {
    throw DataError(label.string() + ": " + std::to_string(width) +
                    " values per line; edge labels are one class id or value per edge");
  }
  bool integral = true;
  for (float v : values) integral &= std::isfinite(v) && v == std::floor(v) && v >= -1;
  d->edge_split.assign(static_cast<size_t>(m), 0);
  for (int k = 0; k < 3; ++k) {
    const fs::path f = sp / names[k];
    if (!fs::exists(f, ec)) continue;  // valid and test are optional
    for (int64_t e : ReadIdList(f.string(), m, &ctx, "edge", "num-edge-list.csv.gz")) {
      if (d->edge_split[e] != 0) {
        throw DataError(f.string() + ": edge " + std::to_string(e) + " is in another split too");
      }
      d->edge_split[e] = static_cast<uint8_t>(k + 1);
    }
  }
  if (integral) {
    d->edge_label_kind = LabelKind::kClass;
    d->edge_labels.assign(values.begin(), values.end());
    int64_t classes = 0;
    for (int64_t v : d->edge_labels) classes = std::max(classes, v + 1);
    d->num_edge_classes = classes;
  } else {
    d->edge_label_kind = LabelKind::kRegression;
    d->edge_targets = std::move(values);
  }
  d->ValidateEdgeLabels();
}

}  // namespace

Dataset ReadOgbFolder(const std::string& folder, const DatasetOptions& options) {
  Stopwatch watch;
  const fs::path root(folder);
  std::error_code ec;
  if (!fs::is_directory(root / "raw", ec)) {
    const std::string raw = (root / "raw").string();
    throw DataError(CannotMessage("open", raw, DirectoryErrno(raw)));
  }
  // Edge features are read; other edge data is refused (or, with
  // --ignore_edge_data, dropped with the features).
  RefuseEdgeData(folder, OgbEdgeDataFiles(folder, !options.ignore_edge_data),
                 options.ignore_edge_data);
  const std::string split = ResolveSplit(folder, options.split);
  const OgbFiles files(root, split, !options.ignore_edge_data);
  // Signatures first: a missing file fails here, before any parsing, and a
  // file changing during the parse makes the next load re-parse.
  const json sigs = Signatures(root, files);

  const std::string name = DatasetNameOf(folder);
  const fs::path cache_dir =
      options.cache_dir.empty() ? root / "processed" : fs::path(options.cache_dir);

  if (options.use_cache) {
    Dataset d;
    d.name = name;
    d.undirected_reason = KnownUndirectedReason(name);
    if (LoadCache(cache_dir, split, sigs, &d)) {
      GNN_LOG(kInfo) << "loaded " << name << " (split " << split << ") from cache "
                     << cache_dir.string() << " in " << Fixed(watch.Seconds()) << " s";
      if (!options.ignore_edge_data) ReadOgbEdgeLabels(root, split, &d);
      return d;
    }
  }

  int threads = options.num_threads > 0 ? options.num_threads : ResolveThreads(0);
  ParseContext ctx;
  Stopwatch parse_watch;
  Dataset d = ParseRaw(files, options.feature_format, threads, &ctx);
  d.name = name;
  d.undirected_reason = KnownUndirectedReason(name);
  double secs = parse_watch.Seconds();
  double mb = static_cast<double>(ctx.bytes.load()) / 1e6;
  GNN_LOG(kInfo) << "parsed raw files of " << name << " (split " << split << ") in " << Fixed(secs)
                 << " s (" << Fixed(mb, 1) << " MB of CSV, " << Fixed(secs > 0 ? mb / secs : 0.0, 0)
                 << " MB/s): " << d.num_nodes << " nodes, " << d.num_edges() << " edges, "
                 << d.feature_dim << " features, " << d.num_classes << " classes"
                 << (d.edge_feature_dim > 0
                         ? ", " + std::to_string(d.edge_feature_dim) + " edge features"
                         : std::string());

  d.Validate();  // a bad value (NaN edge features) is refused before it is cached
  if (options.use_cache) {
    if (LooksReadOnly(cache_dir)) {
      GNN_LOG(kWarn) << "not caching parsed arrays: " << cache_dir.string()
                     << " is in a read-only folder (set a cache dir to cache them)";
    } else {
      try {
        Stopwatch cache_watch;
        WriteCache(cache_dir, split, sigs, d);
        GNN_LOG(kInfo) << "cached parsed arrays in " << cache_dir.string() << " ("
                       << Fixed(cache_watch.Seconds()) << " s)";
      } catch (const std::exception& ex) {
        GNN_LOG(kWarn) << "cannot cache parsed arrays in " << cache_dir.string() << ": "
                       << ex.what() << "; continuing without a cache";
      }
    }
  }
  if (!options.ignore_edge_data) ReadOgbEdgeLabels(root, split, &d);
  return d;
}

void WriteOgbFolder(const Dataset& d, const std::string& folder, const std::string& split) {
  if (split.empty() || split.find('/') != std::string::npos || split == "." || split == "..") {
    throw DataError("bad split name '" + split + "' for " + folder);
  }
  d.Validate();
  if (d.feature_dim <= 0 && d.edge_feature_dim <= 0)
    throw DataError(d.name + ": no node features; OGB layout needs node-feat");
  const fs::path root(folder);
  const fs::path raw = root / "raw";
  const fs::path sp = root / "split" / split;
  MakeDirs(raw.string());
  MakeDirs(sp.string());

  WriteTextGz((raw / "num-node-list.csv.gz").string(), std::to_string(d.num_nodes) + "\n");
  WriteTextGz((raw / "num-edge-list.csv.gz").string(), std::to_string(d.num_edges()) + "\n");

  WriteIdPairsGz((raw / "edge.csv.gz").string(), d.src, d.dst);
  if (d.feature_dim > 0) {
    WriteFloatRowsGz((raw / "node-feat.csv.gz").string(), d.features, d.num_nodes, d.feature_dim);
  }
  if (d.edge_feature_dim > 0) {
    WriteFloatRowsGz((raw / kOgbEdgeFeatFile).string(), d.edge_features, d.num_edges(),
                     d.edge_feature_dim);
  }
  if (d.label_kind == LabelKind::kClass) {
    WriteLabelsGz((raw / "node-label.csv.gz").string(), d.labels);
  } else {
    WriteFloatRowsGz((raw / "node-label.csv.gz").string(), d.targets, d.num_nodes, d.label_width);
  }
  WriteIdsGz((sp / "train.csv.gz").string(), d.train_idx);
  WriteIdsGz((sp / "valid.csv.gz").string(), d.valid_idx);
  WriteIdsGz((sp / "test.csv.gz").string(), d.test_idx);
  if (d.edge_labeled()) {
    if (d.edge_label_kind == LabelKind::kClass) {
      WriteLabelsGz((raw / kOgbEdgeLabelFile).string(), d.edge_labels);
    } else {
      WriteFloatRowsGz((raw / kOgbEdgeLabelFile).string(), d.edge_targets, d.num_edges(), 1);
    }
    const char* names[3] = {"edge_train.csv.gz", "edge_valid.csv.gz", "edge_test.csv.gz"};
    for (int k = 0; k < 3; ++k) {
      std::vector<int64_t> ids;
      for (size_t e = 0; e < d.edge_split.size(); ++e)
        if (d.edge_split[e] == k + 1) ids.push_back(static_cast<int64_t>(e));
      WriteIdsGz((sp / names[k]).string(), ids);
    }
  }
}

}  // namespace gnn
