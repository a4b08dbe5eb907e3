#include "graph/ogb_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <charconv>
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
#include "common/parse.h"
#include "common/timer.h"

namespace gnn {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Bump when the cached arrays or meta.json change meaning.
constexpr int kCacheFormatVersion = 1;

// deflate cannot expand data by more than 1032:1, so a .gz file of S bytes
// holds at most ~1032*S bytes of text. Counts read from num-*-list are
// checked against this before anything is allocated from them, so a corrupt
// count is a DataError rather than a bad_alloc.
constexpr uint64_t kMaxDeflateRatio = 1032;

// Node and edge counts beyond this are corrupt (and would overflow sums
// such as num_nodes + 1); class indices must fit a 32-bit model dimension.
constexpr int64_t kMaxCount = int64_t{1} << 62;
constexpr int64_t kMaxClasses = std::numeric_limits<int32_t>::max();

// Level 1 compresses CSV of floats about 4x faster than the default 6 and
// only ~10% larger; WriteOgbFolder is used to make products-size inputs.
constexpr int kWriteGzipLevel = 1;

// Thrown inside a parse callback to stop early because another file already
// failed; never escapes ReadOgbFolder.
struct Cancelled {};

struct ParseContext {
  std::atomic<uint64_t> bytes{0};  // uncompressed CSV bytes seen
  std::atomic<int> first_failure{-1};

  // Called at the start of every chunk.
  void OnChunk(const char* begin, const char* end) {
    if (first_failure.load(std::memory_order_relaxed) >= 0) throw Cancelled{};
    bytes.fetch_add(static_cast<uint64_t>(end - begin), std::memory_order_relaxed);
  }
};

// The files of one OGB folder, in the order they are parsed and listed in
// the cache's meta.json.
struct OgbFiles {
  std::string num_nodes, num_edges, edge, feat, label, train, valid, test;

  OgbFiles(const fs::path& folder, const std::string& split) {
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
  }
  std::vector<std::string> All() const {
    return {num_nodes, num_edges, edge, feat, label, train, valid, test};
  }
};

// "12.3": numbers for log lines.
std::string Fixed(double v, int digits = 2) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

std::string DatasetNameOf(const fs::path& folder) {
  fs::path p = fs::absolute(folder).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

std::string ResolveSplit(const fs::path& folder, const std::string& requested) {
  fs::path root = folder / "split";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw DataError("missing folder " + root.string());
  std::vector<std::string> names;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2)) names.push_back(it->path().filename().string());
  }
  if (ec) throw DataError("cannot list " + root.string() + ": " + ec.message());
  std::sort(names.begin(), names.end());
  if (!requested.empty()) {
    if (!fs::is_directory(root / requested, ec)) {
      throw DataError("missing split folder " + (root / requested).string() +
                      " (available: " + (names.empty() ? std::string("none") : Join(names)) + ")");
    }
    return requested;
  }
  if (names.empty()) throw DataError("no split folder under " + root.string());
  if (names.size() > 1) {
    throw ConfigError(root.string() + " holds several splits (" + Join(names) +
                      "); choose one with --split");
  }
  return names[0];
}

// Upper bound on the number of lines of at least `min_line_bytes` bytes
// (newline included) that the gzip file at `path` can decompress to.
uint64_t MaxLines(const std::string& path, uint64_t min_line_bytes) {
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  if (ec) throw DataError("missing file " + path + ": " + ec.message());
  return (size * kMaxDeflateRatio) / min_line_bytes + 1;
}

// Finds the start of line `line` in a line-aligned chunk that starts at
// line `first_line`. Error path only.
const char* LineStart(const char* begin, const char* end, int64_t first_line, int64_t line) {
  const char* p = begin;
  for (int64_t l = first_line; l < line && p < end; ++l) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    p = nl ? static_cast<const char*>(nl) + 1 : end;
  }
  return p;
}

// A file of exactly one non-negative integer (num-node-list, num-edge-list).
int64_t ReadCount(const std::string& path, ParseContext* ctx) {
  int64_t value = -1;
  int64_t lines = 0;
  ForEachGzipChunk(path, [&](const char* b, const char* e, int64_t first) {
    ctx->OnChunk(b, e);
    CsvCursor c(b, e, path, first);
    while (c.NextLine()) {
      if (++lines > 1) c.Fail("expected one number (one graph), found a second line");
      value = c.Int64();
      c.EndLine();
      if (value < 0) c.Fail("negative count " + std::to_string(value));
      if (value > kMaxCount) c.Fail("count " + std::to_string(value) + " is beyond 2^62");
    }
  });
  if (lines == 0) throw DataError(path + ": empty file, expected one number");
  return value;
}

void ReadEdges(const std::string& path, int64_t num_nodes, int64_t num_edges, Dataset* d,
               ParseContext* ctx) {
  // Shortest edge line: "0,0\n".
  size_t reserve =
      static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(num_edges), MaxLines(path, 4)));
  d->src.clear();
  d->dst.clear();
  d->src.reserve(reserve);
  d->dst.reserve(reserve);
  const uint64_t n = static_cast<uint64_t>(num_nodes);
  ForEachGzipChunk(path, [&](const char* b, const char* e, int64_t first) {
    ctx->OnChunk(b, e);
    CsvCursor c(b, e, path, first);
    while (c.NextLine()) {
      int64_t s = c.Int64();
      int64_t t = c.Int64();
      c.EndLine();
      // One unsigned compare per id catches negatives too.
      if (static_cast<uint64_t>(s) >= n || static_cast<uint64_t>(t) >= n) {
        c.Fail("node id " + std::to_string(static_cast<uint64_t>(s) >= n ? s : t) +
               " outside [0, " + std::to_string(num_nodes) + ") (num-node-list.csv.gz)");
      }
      d->src.push_back(s);
      d->dst.push_back(t);
    }
  });
  if (d->num_edges() != num_edges) {
    throw DataError(path + " has " + std::to_string(d->num_edges()) +
                    " edges, num-edge-list.csv.gz says " + std::to_string(num_edges));
  }
}

// Parses node-feat straight into a pre-sized [num_nodes, F] array; F is the
// field count of line 1.
void ReadFeatures(const std::string& path, int64_t num_nodes, Dataset* d, ParseContext* ctx) {
  int64_t dim = -1;
  int64_t rows = 0;
  ForEachGzipChunk(path, [&](const char* b, const char* e, int64_t first) {
    ctx->OnChunk(b, e);
    CsvCursor c(b, e, path, first);
    try {
      while (c.NextLine()) {
        if (dim < 0) {
          dim = c.CountFields();
          // Each value takes at least 2 bytes ("0," or "0\n").
          if (static_cast<uint64_t>(num_nodes) > MaxLines(path, 2 * static_cast<uint64_t>(dim))) {
            throw DataError(path + " is too small to hold " + std::to_string(num_nodes) +
                            " rows of " + std::to_string(dim) +
                            " values (num-node-list.csv.gz is wrong or the file is cut)");
          }
          d->features.assign(static_cast<size_t>(num_nodes * dim), 0.0f);
        }
        if (rows >= num_nodes) {
          c.Fail("more feature rows than the " + std::to_string(num_nodes) +
                 " nodes in num-node-list.csv.gz");
        }
        float* row = d->features.data() + rows * dim;
        for (int64_t j = 0; j < dim; ++j) row[j] = c.Float();
        c.EndLine();
        ++rows;
      }
    } catch (const DataError&) {
      // A short or long row surfaces as "expected a number" or "extra
      // field"; say what is actually wrong.
      const char* p = LineStart(b, e, first, c.line());
      int64_t fields = 1;
      for (; p < e && *p != '\n'; ++p) fields += (*p == ',');
      if (dim >= 0 && fields != dim) {
        throw DataError(path + ":" + std::to_string(c.line()) + ": row has " +
                        std::to_string(fields) + " values, expected " + std::to_string(dim) +
                        " (as on line 1)");
      }
      throw;
    }
  });
  if (rows != num_nodes) {
    throw DataError(path + " has " + std::to_string(rows) + " rows for " +
                    std::to_string(num_nodes) + " nodes");
  }
  d->feature_dim = dim;
}

void ReadLabels(const std::string& path, int64_t num_nodes, Dataset* d, ParseContext* ctx) {
  d->labels.clear();
  d->labels.reserve(
      static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(num_nodes), MaxLines(path, 2))));
  int64_t max_label = -1;
  ForEachGzipChunk(path, [&](const char* b, const char* e, int64_t first) {
    ctx->OnChunk(b, e);
    CsvCursor c(b, e, path, first);
    while (c.NextLine()) {
      int64_t l = c.Label();
      c.EndLine();
      if (l < -1) c.Fail("negative label " + std::to_string(l));
      if (l >= kMaxClasses) c.Fail("label " + std::to_string(l) + " is beyond 2^31 - 1");
      max_label = std::max(max_label, l);
      d->labels.push_back(l);
    }
  });
  if (static_cast<int64_t>(d->labels.size()) != num_nodes) {
    throw DataError(path + " has " + std::to_string(d->labels.size()) + " labels for " +
                    std::to_string(num_nodes) + " nodes");
  }
  d->num_classes = max_label + 1;
}

// One node id per line; returned sorted. Duplicates are an error.
std::vector<int64_t> ReadIdList(const std::string& path, int64_t num_nodes, ParseContext* ctx) {
  std::vector<int64_t> ids;
  ids.reserve(
      static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(num_nodes), MaxLines(path, 2))));
  ForEachGzipChunk(path, [&](const char* b, const char* e, int64_t first) {
    ctx->OnChunk(b, e);
    CsvCursor c(b, e, path, first);
    while (c.NextLine()) {
      int64_t v = c.Int64();
      c.EndLine();
      if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(num_nodes)) {
        c.Fail("node id " + std::to_string(v) + " outside [0, " + std::to_string(num_nodes) +
               ") (num-node-list.csv.gz)");
      }
      ids.push_back(v);
    }
  });
  if (!std::is_sorted(ids.begin(), ids.end())) std::sort(ids.begin(), ids.end());
  auto dup = std::adjacent_find(ids.begin(), ids.end());
  if (dup != ids.end()) {
    throw DataError(path + ": node id " + std::to_string(*dup) + " is listed more than once");
  }
  return ids;
}

Dataset ParseRaw(const OgbFiles& f, int num_threads, ParseContext* ctx) {
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
  auto edges = [&] { ReadEdges(f.edge, n, num_edges, &d, ctx); };
  auto nodes = [&] {
    ReadFeatures(f.feat, n, &d, ctx);
    ReadLabels(f.label, n, &d, ctx);
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
    d->features = ReadNpy<float>(CachePath(dir, "feat.npy"), {n, f});
    d->labels = ReadNpy<int64_t>(CachePath(dir, "label.npy"), {n});
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
    empty.known_undirected = d->known_undirected;
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
  WriteNpy(CachePath(dir, "feat.npy"), d.features.data(), {d.num_nodes, d.feature_dim});
  WriteNpy(CachePath(dir, "label.npy"), d.labels);
  WriteNpy(CachePath(dir, "train_idx.npy"), d.train_idx);
  WriteNpy(CachePath(dir, "valid_idx.npy"), d.valid_idx);
  WriteNpy(CachePath(dir, "test_idx.npy"), d.test_idx);
  json meta = {{"format_version", kCacheFormatVersion},
               {"split", split},
               {"num_nodes", d.num_nodes},
               {"num_edges", d.num_edges()},
               {"feature_dim", d.feature_dim},
               {"num_classes", d.num_classes},
               {"files", sigs}};
  WriteFileAtomic(CachePath(dir, "meta.json"), meta.dump(2) + "\n");
}

// ---- writing --------------------------------------------------------------

// Writes rows [0, num_rows) to a gzip file: `format(begin, end, out)`
// appends the text of rows [begin, end) to `out`. Blocks of rows are
// formatted on worker threads while this thread compresses earlier blocks,
// in order.
void WriteRowsGz(const std::string& path, int64_t num_rows, int64_t rows_per_block,
                 const std::function<void(int64_t, int64_t, std::string*)>& format) {
  GzipWriter w(path, kWriteGzipLevel);
  const int64_t window = std::max(2u, std::thread::hardware_concurrency());
  std::deque<std::future<std::string>> pending;
  int64_t next = 0;
  while (next < num_rows || !pending.empty()) {
    while (next < num_rows && static_cast<int64_t>(pending.size()) < window) {
      int64_t end = std::min(num_rows, next + rows_per_block);
      pending.push_back(std::async(std::launch::async, [&format, next, end] {
        std::string s;
        format(next, end, &s);
        return s;
      }));
      next = end;
    }
    std::string block = pending.front().get();
    pending.pop_front();
    w.Write(block);
  }
  w.Commit();
}

// Appends `v` in the shortest form that parses back to the same float.
inline char* PutFloat(char* p, char* end, float v) { return std::to_chars(p, end, v).ptr; }
inline char* PutInt(char* p, char* end, int64_t v) { return std::to_chars(p, end, v).ptr; }

// Shortest float32 text is at most 15 chars ("-1.1754944e-38"); int64 20.
constexpr size_t kMaxFloatChars = 24;
constexpr size_t kMaxIntChars = 24;

void WriteIds(const std::string& path, const std::vector<int64_t>& ids) {
  WriteRowsGz(path, static_cast<int64_t>(ids.size()), 1 << 20,
              [&](int64_t b, int64_t e, std::string* out) {
                out->resize(static_cast<size_t>(e - b) * kMaxIntChars);
                char* p = &(*out)[0];
                char* end = p + out->size();
                for (int64_t i = b; i < e; ++i) {
                  p = PutInt(p, end, ids[i]);
                  *p++ = '\n';
                }
                out->resize(static_cast<size_t>(p - out->data()));
              });
}

void WriteText(const std::string& path, const std::string& text) {
  GzipWriter w(path, kWriteGzipLevel);
  w.Write(text);
  w.Commit();
}

}  // namespace

Dataset ReadOgbFolder(const std::string& folder, const DatasetOptions& options) {
  Stopwatch watch;
  const fs::path root(folder);
  std::error_code ec;
  if (!fs::is_directory(root / "raw", ec))
    throw DataError("missing folder " + (root / "raw").string());
  const std::string split = ResolveSplit(root, options.split);
  const OgbFiles files(root, split);
  // Signatures first: a missing file fails here, before any parsing, and a
  // file changing during the parse makes the next load re-parse.
  const json sigs = Signatures(root, files);

  const std::string name = DatasetNameOf(root);
  const fs::path cache_dir =
      options.cache_dir.empty() ? root / "processed" : fs::path(options.cache_dir);

  if (options.use_cache) {
    Dataset d;
    d.name = name;
    d.known_undirected = IsKnownUndirected(name);
    if (LoadCache(cache_dir, split, sigs, &d)) {
      GNN_LOG(kInfo) << "loaded " << name << " (split " << split << ") from cache "
                     << cache_dir.string() << " in " << Fixed(watch.Seconds()) << " s";
      return d;
    }
  }

  int threads = options.num_threads > 0 ? options.num_threads
                                        : static_cast<int>(std::thread::hardware_concurrency());
  ParseContext ctx;
  Stopwatch parse_watch;
  Dataset d = ParseRaw(files, threads, &ctx);
  d.name = name;
  d.known_undirected = IsKnownUndirected(name);
  double secs = parse_watch.Seconds();
  double mb = static_cast<double>(ctx.bytes.load()) / 1e6;
  GNN_LOG(kInfo) << "parsed raw files of " << name << " (split " << split << ") in " << Fixed(secs)
                 << " s (" << Fixed(mb, 1) << " MB of CSV, " << Fixed(secs > 0 ? mb / secs : 0.0, 0)
                 << " MB/s): " << d.num_nodes << " nodes, " << d.num_edges() << " edges, "
                 << d.feature_dim << " features, " << d.num_classes << " classes";

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
  return d;
}

void WriteOgbFolder(const Dataset& d, const std::string& folder, const std::string& split) {
  if (split.empty() || split.find('/') != std::string::npos || split == "." || split == "..") {
    throw DataError("bad split name '" + split + "' for " + folder);
  }
  d.Validate();
  if (d.feature_dim <= 0)
    throw DataError(d.name + ": no node features; OGB layout needs node-feat");
  const fs::path root(folder);
  const fs::path raw = root / "raw";
  const fs::path sp = root / "split" / split;
  MakeDirs(raw.string());
  MakeDirs(sp.string());

  WriteText((raw / "num-node-list.csv.gz").string(), std::to_string(d.num_nodes) + "\n");
  WriteText((raw / "num-edge-list.csv.gz").string(), std::to_string(d.num_edges()) + "\n");

  WriteRowsGz((raw / "edge.csv.gz").string(), d.num_edges(), 1 << 19,
              [&](int64_t b, int64_t e, std::string* out) {
                out->resize(static_cast<size_t>(e - b) * 2 * kMaxIntChars);
                char* p = &(*out)[0];
                char* end = p + out->size();
                for (int64_t i = b; i < e; ++i) {
                  p = PutInt(p, end, d.src[i]);
                  *p++ = ',';
                  p = PutInt(p, end, d.dst[i]);
                  *p++ = '\n';
                }
                out->resize(static_cast<size_t>(p - out->data()));
              });

  const int64_t dim = d.feature_dim;
  {
    // About 4 MB of text per block.
    const int64_t rows_per_block = std::max<int64_t>(1, (4 << 20) / (dim * 10));
    WriteRowsGz((raw / "node-feat.csv.gz").string(), d.num_nodes, rows_per_block,
                [&](int64_t b, int64_t e, std::string* out) {
                  out->resize(static_cast<size_t>((e - b) * dim) * kMaxFloatChars);
                  char* p = &(*out)[0];
                  char* end = p + out->size();
                  for (int64_t r = b; r < e; ++r) {
                    const float* row = d.features.data() + r * dim;
                    for (int64_t j = 0; j < dim; ++j) {
                      p = PutFloat(p, end, row[j]);
                      *p++ = j + 1 < dim ? ',' : '\n';
                    }
                  }
                  out->resize(static_cast<size_t>(p - out->data()));
                });
  }

  WriteRowsGz((raw / "node-label.csv.gz").string(), d.num_nodes, 1 << 20,
              [&](int64_t b, int64_t e, std::string* out) {
                out->resize(static_cast<size_t>(e - b) * kMaxIntChars);
                char* p = &(*out)[0];
                char* end = p + out->size();
                for (int64_t i = b; i < e; ++i) {
                  if (d.labels[i] < 0) {
                    std::memcpy(p, "nan", 3);  // OGB's marker for "no label"
                    p += 3;
                  } else {
                    p = PutInt(p, end, d.labels[i]);
                  }
                  *p++ = '\n';
                }
                out->resize(static_cast<size_t>(p - out->data()));
              });

  WriteIds((sp / "train.csv.gz").string(), d.train_idx);
  WriteIds((sp / "valid.csv.gz").string(), d.valid_idx);
  WriteIds((sp / "test.csv.gz").string(), d.test_idx);
}

}  // namespace gnn
