#include "graph/plain_files.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>

#include "common/error.h"
#include "common/fs.h"
#include "common/gzip.h"
#include "common/log.h"
#include "common/npy.h"
#include "common/sparse_rows.h"
#include "graph/npz_features.h"

namespace gnn {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Calls fn(line, number) for every line of a text file (gzip when it ends
// in .gz), without its '\n' or '\r'.
void ForEachLine(const std::string& path,
                 const std::function<void(std::string_view, int64_t)>& fn) {
  auto lines = [&](const char* b, const char* e, int64_t first) {
    int64_t n = first;
    if (first == 1 && e - b >= 3 && std::string_view(b, 3) == "\xEF\xBB\xBF") b += 3;  // a BOM
    while (b < e) {
      const char* nl = std::find(b, e, '\n');
      std::string_view line(b, static_cast<size_t>(nl - b));
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!line.empty() && line.front() == '#') {  // a comment (SNAP's edge lists)
        ++n;
      } else {
        fn(line, n++);
      }
      b = nl == e ? e : nl + 1;
    }
  };
  if (EndsWith(path, ".gz")) {
    ForEachGzipChunk(path, lines);
    return;
  }
  if (!PathExists(path)) throw DataError(path + ": No such file or directory");
  const std::string text = ReadFile(path);
  lines(text.data(), text.data() + text.size(), 1);
}

bool ParseInt(std::string_view s, int64_t* out) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '"')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '"')) s.remove_suffix(1);
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool ParseFloat(std::string_view s, float* out) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '"')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '"')) s.remove_suffix(1);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Fields of a line split by `delim` (' ': runs of blanks).
std::vector<std::string_view> Fields(std::string_view line, char delim) {
  std::vector<std::string_view> out;
  if (delim == ' ') {
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i == line.size()) break;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
      out.push_back(line.substr(i, j - i));
      i = j;
    }
    return out;
  }
  size_t i = 0;
  while (true) {
    const size_t j = line.find(delim, i);
    out.push_back(line.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  return out;
}

char DelimiterOf(std::string_view line) {
  if (line.find('\t') != std::string_view::npos) return '\t';
  if (line.find(',') != std::string_view::npos) return ',';
  return ' ';
}

// The user's ids -> rows, when --node_ids is given.
class IdMap {
 public:
  IdMap(const std::string& flag_file, int64_t n) : file_(flag_file), n_(n) {}
  void Set(std::vector<int64_t> ids) {
    rows_.reserve(ids.size());
    for (size_t r = 0; r < ids.size(); ++r) {
      if (!rows_.emplace(ids[r], static_cast<int64_t>(r)).second) {
        throw DataError(file_ + ": id " + S(ids[r]) + " is listed twice (rows " +
                        S(rows_.at(ids[r])) + " and " + S(static_cast<int64_t>(r)) +
                        "); each node needs one id");
      }
    }
    mapped_ = true;
  }
  // The row of id `v` read at `where`; DataError naming it otherwise.
  int64_t Row(int64_t v, const std::string& where) const {
    if (mapped_) {
      const auto it = rows_.find(v);
      if (it == rows_.end()) {
        throw DataError(where + ": node " + S(v) + " is not in --node_ids " + file_);
      }
      return it->second;
    }
    if (v < 0 || v >= n_) {
      throw DataError(where + ": node " + S(v) + " is out of range: --node_feat has " + S(n_) +
                      " rows, so ids are 0.." + S(n_ - 1) +
                      " (give --node_ids FILE when the ids are your own)");
    }
    return v;
  }

 private:
  std::string file_;
  int64_t n_;
  bool mapped_ = false;
  std::unordered_map<int64_t, int64_t> rows_;
};

// Node ids of a .npy: any integer dtype; strings (a pandas column saved
// as it is) are told to be numbered first.
std::vector<int64_t> ReadIdNpy(const std::string& path, NpyHeader* header) {
  try {
    return ReadNpyInts(path, header);
  } catch (const DataError& e) {
    const std::string what = e.what();
    for (const char* text : {"dtype '<U", "dtype '|S", "dtype '|O", "dtype '>U"}) {
      if (what.find(text) != std::string::npos) {
        throw DataError(what + " (node ids are int64: number string ids first)");
      }
    }
    throw;
  }
}

// Integers of a .npy (any integer dtype) or a text file (one a line).
std::vector<int64_t> ReadIntegers(const std::string& path, NpyHeader* header) {
  if (EndsWith(path, ".npy")) return ReadIdNpy(path, header);
  std::vector<int64_t> out;
  ForEachLine(path, [&](std::string_view line, int64_t n) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    int64_t v = 0;
    if (!ParseInt(line, &v)) {
      if (n == 1) return;  // a header
      throw DataError(path + ":" + S(n) + ": '" + std::string(line.substr(0, 40)) +
                      "' is not an integer (one int64 id a line; number string ids first)");
    }
    out.push_back(v);
  });
  header->shape = {static_cast<int64_t>(out.size())};
  header->dtype = DType::kInt64;
  return out;
}

// A split file: 0/1 (or bool) per node, or a list of node ids.
std::vector<int64_t> ReadSplit(const std::string& flag, const std::string& path, int64_t n,
                               const IdMap& ids) {
  NpyHeader h;
  const std::vector<int64_t> v = ReadIntegers(path, &h);
  const bool as_mask = static_cast<int64_t>(v.size()) == n &&
                       (h.dtype == DType::kUInt8 || std::all_of(v.begin(), v.end(), [](int64_t x) {
                          return x == 0 || x == 1;
                        }));
  if (!as_mask && (h.dtype == DType::kUInt8 || h.shape.size() > 1)) {
    throw DataError(flag + " " + path + ": a mask of shape [" +
                    (h.shape.empty() ? S(0) : S(h.shape[0])) + (h.shape.size() > 1 ? ", ..." : "") +
                    "] for " + S(n) + " nodes; a mask has one 0/1 per node (or give node ids)");
  }
  std::vector<int64_t> rows;
  if (as_mask) {
    for (int64_t r = 0; r < n; ++r) {
      if (v[static_cast<size_t>(r)]) rows.push_back(r);
    }
  } else {
    for (size_t i = 0; i < v.size(); ++i) {
      rows.push_back(ids.Row(v[i], flag + " " + path + " entry " + S(static_cast<int64_t>(i))));
    }
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  GNN_LOG(kInfo) << flag << " " << path << ": " << rows.size() << " nodes"
                 << (as_mask ? " (a 0/1 mask)" : "");
  return rows;
}

// The edge list's two ends: .npy [E, 2] or [2, E], or delimited text,
// whose other columns are the edges' features (*efeat, *ewidth wide)
// unless `ignore_edge_data` drops them.
// --edges FILE.npy: [E, 2], or PyG's edge_index [2, E].
void ReadNpyEdges(const PlainFiles& f, const IdMap& ids, std::vector<int64_t>* src,
                  std::vector<int64_t>* dst) {
  NpyHeader h;
  const std::vector<int64_t> v = ReadIdNpy(f.edges, &h);
  const bool rows = h.shape.size() == 2 && h.shape[1] == 2;
  const bool cols = h.shape.size() == 2 && h.shape[0] == 2 && !rows;
  if (!rows && !cols) {
    throw DataError("--edges " + f.edges + ": shape must be [E, 2] (or PyG's edge_index [2, E])");
  }
  const int64_t e = rows ? h.shape[0] : h.shape[1];
  if (cols) {
    GNN_LOG(kInfo) << "--edges " << f.edges << ": [2, E] read as PyG's edge_index";
  }
  if (e == 0) throw DataError("--edges " + f.edges + ": no edges");
  src->resize(static_cast<size_t>(e));
  dst->resize(static_cast<size_t>(e));
  for (int64_t i = 0; i < e; ++i) {
    const int64_t a = rows ? v[static_cast<size_t>(2 * i)] : v[static_cast<size_t>(i)];
    const int64_t b = rows ? v[static_cast<size_t>(2 * i + 1)] : v[static_cast<size_t>(e + i)];
    const std::string where = "--edges " + f.edges + " row " + S(i);
    (*src)[static_cast<size_t>(i)] = ids.Row(a, where);
    (*dst)[static_cast<size_t>(i)] = ids.Row(b, where);
  }
}

// What the first line of a text edge list says: the delimiter, the number
// of fields, the source and destination columns, the other columns (edge
// features unless dropped) and whether the line is a header.
struct EdgeColumns {
  char delim = 0;
  size_t width = 0;
  size_t ends[2] = {0, 1};
  std::vector<size_t> feat_cols;
  std::vector<std::string> feat_names;
  bool header = false;
};

// --edge_columns: the source and destination columns, by header name or
// 0-based position ("0", "1" when not given).
std::vector<std::string> WantedEdgeColumns(const PlainFiles& f) {
  std::vector<std::string> wanted = {"0", "1"};
  if (!f.edge_columns.empty()) {
    wanted.clear();
    for (std::string_view c : Fields(f.edge_columns, ',')) wanted.emplace_back(c);
    if (wanted.size() != 2) {
      throw ConfigError("--edge_columns " + f.edge_columns +
                        ": two columns, source then destination (names or 0-based positions)");
    }
  }
  return wanted;
}

// The first line: a header when its end columns are not numbers.
EdgeColumns FirstEdgeLine(const PlainFiles& f, bool ignore_edge_data,
                          const std::vector<std::string>& wanted, std::string_view line,
                          const std::string& where) {
  EdgeColumns e;
  e.delim = DelimiterOf(line);
  const std::vector<std::string_view> first = Fields(line, e.delim);
  e.width = first.size();
  std::vector<std::string> names;
  for (std::string_view x : first) names.emplace_back(x);
  for (int k = 0; k < 2; ++k) {
    int64_t pos = 0;
    if (ParseInt(wanted[static_cast<size_t>(k)], &pos)) {
      if (pos < 0 || static_cast<size_t>(pos) >= e.width) {
        throw DataError(where + ": has " + S(static_cast<int64_t>(e.width)) +
                        " columns; --edge_columns names column " + S(pos));
      }
      e.ends[k] = static_cast<size_t>(pos);
    } else {
      const auto it = std::find(names.begin(), names.end(), wanted[static_cast<size_t>(k)]);
      if (it == names.end()) {
        throw DataError(where + ": the header '" + std::string(line.substr(0, 80)) +
                        "' has no column '" + wanted[static_cast<size_t>(k)] +
                        "' (--edge_columns takes header names or 0-based positions)");
      }
      e.ends[k] = static_cast<size_t>(it - names.begin());
      e.header = true;
    }
  }
  if (e.width < 2) {
    throw DataError(where + ": one column; an edge list needs a source and a destination");
  }
  int64_t a = 0, b = 0;
  e.header = e.header || !(ParseInt(first[e.ends[0]], &a) && ParseInt(first[e.ends[1]], &b));
  std::vector<std::string> others;
  for (size_t c = 0; c < e.width; ++c) {
    if (c != e.ends[0] && c != e.ends[1]) {
      others.push_back(f.edges + " column " + (e.header ? "'" + names[c] + "'" : S(c)));
      e.feat_names.push_back(e.header ? "'" + names[c] + "'" : S(c));
      e.feat_cols.push_back(c);
    }
  }
  if (ignore_edge_data) {
    RefuseEdgeData(f.edges, others, true);
    e.feat_cols.clear();
  } else if (!f.edge_feat.empty() && !e.feat_cols.empty()) {
    throw ConfigError("--edges " + f.edges + " has columns beyond its two ends (" + others[0] +
                      ") and --edge_feat " + f.edge_feat +
                      " gives edge features too: give them one way");
  } else if (!e.feat_cols.empty()) {
    std::string list;
    for (const std::string& n : e.feat_names) list += (list.empty() ? "" : ", ") + n;
    GNN_LOG(kInfo) << "--edges " << f.edges << ": columns " << list
                   << " are the edges' features (--ignore_edge_data drops them)";
  }
  return e;
}

void ReadEdges(const PlainFiles& f, bool ignore_edge_data, const IdMap& ids,
               std::vector<int64_t>* src, std::vector<int64_t>* dst, std::vector<float>* efeat,
               int64_t* ewidth) {
  if (EndsWith(f.edges, ".npy")) {
    ReadNpyEdges(f, ids, src, dst);
    return;
  }
  const std::vector<std::string> wanted = WantedEdgeColumns(f);
  EdgeColumns e;
  bool started = false;
  ForEachLine(f.edges, [&](std::string_view line, int64_t n) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    const std::string where = f.edges + ":" + S(n);
    if (!started) {
      started = true;
      e = FirstEdgeLine(f, ignore_edge_data, wanted, line, where);
      *ewidth = static_cast<int64_t>(e.feat_cols.size());
      if (e.header) return;
    }
    const std::vector<std::string_view> fields = Fields(line, e.delim);
    if (fields.size() != e.width) {
      throw DataError(where + ": " + S(static_cast<int64_t>(fields.size())) +
                      " fields; the first line has " + S(static_cast<int64_t>(e.width)));
    }
    int64_t ends[2];
    for (int k = 0; k < 2; ++k) {
      if (!ParseInt(fields[e.ends[k]], &ends[k])) {
        throw DataError(where + ": '" + std::string(fields[e.ends[k]].substr(0, 30)) +
                        "' is not an integer node id (node ids are int64: number string ids "
                        "first, e.g. by their order in --node_ids)");
      }
    }
    src->push_back(ids.Row(ends[0], where));
    dst->push_back(ids.Row(ends[1], where));
    for (size_t k = 0; k < e.feat_cols.size(); ++k) {
      float v = 0;
      if (!ParseFloat(fields[e.feat_cols[k]], &v)) {
        throw DataError(where + ": '" + std::string(fields[e.feat_cols[k]].substr(0, 30)) +
                        "' in column " + e.feat_names[k] +
                        " is not a number (columns beyond the two ends are edge features; "
                        "--ignore_edge_data drops them)");
      }
      efeat->push_back(v);
    }
  });
  if (src->empty()) throw DataError("--edges " + f.edges + ": no edges");
}

}  // namespace

bool PlainFiles::given() const {
  return !edges.empty() || !edge_columns.empty() || !edge_feat.empty() || !node_feat.empty() ||
         !labels.empty() || !train_ids.empty() || !valid_ids.empty() || !test_ids.empty() ||
         !node_ids.empty();
}

void PlainFiles::Validate() const {
  const std::pair<const std::string*, const char*> required[] = {
      {&edges, "--edges FILE (CSV/TSV, gzip or not, or .npy [E, 2])"},
      {&node_feat, "--node_feat FILE.npy ([N, F] float16/32/64)"},
      {&labels, "--labels FILE.npy ([N] int32/int64 class ids, -1 for none)"},
      {&train_ids, "--train_ids FILE (ids or a 0/1 mask, .npy or one a line)"},
      {&graph_name, "--graph_name NAME (it names the partitions)"}};
  for (const auto& [value, what] : required) {
    if (value->empty()) throw ConfigError(std::string(what) + " is required with plain files");
  }
}

void AddPlainFileFlags(CLI::App& app, PlainFiles* f) {
  app.add_option("--edges", f->edges,
                 "instead of --dataset: an edge list (CSV/TSV with or without a header, .gz or "
                 "not; or .npy [E, 2] or PyG's [2, E]), with --node_feat, --labels, --train_ids");
  app.add_option("--edge_columns", f->edge_columns,
                 "the edge list's source and destination columns: header names or 0-based "
                 "positions (default 0,1)");
  app.add_option("--node_feat", f->node_feat,
                 "node features .npy [N, F] (float16/32/64), or .npz (np.savez, or a SciPy "
                 "sparse matrix from scipy.sparse.save_npz, kept sparse unless --feature_format "
                 "dense)");
  app.add_option("--labels", f->labels,
                 "node labels .npy: [N] class ids (int32/int64; -1: none), [N, L] of 0/1 "
                 "(multi-label) or float values (node regression)");
  app.add_option("--train_ids", f->train_ids, "train nodes: ids or a 0/1 mask (.npy or text)");
  app.add_option("--valid_ids", f->valid_ids, "validation nodes: ids or a 0/1 mask");
  app.add_option("--test_ids", f->test_ids, "test nodes: ids or a 0/1 mask");
  app.add_option("--edge_feat", f->edge_feat,
                 "edge features .npy [E] or [E, k], row i of edge i of --edges (or give them as "
                 "--edges CSV columns beyond the two ends)");
  app.add_option("--node_ids", f->node_ids,
                 "your int64 id of each row (.npy or text): edges and split files name these");
}

// --labels: class ids (int [N] or [N, 1]; -1 and below: unlabelled), or
// rows of numbers (multi-label 0/1, regression values; SetLabelRows says
// which). `lh` is the file's header, already checked against N.
void ReadLabels(const PlainFiles& f, const NpyHeader& lh, Dataset* d) {
  NpyHeader h;
  const bool float_labels =
      lh.dtype == DType::kFloat32 || lh.dtype == DType::kFloat64 || lh.dtype == DType::kFloat16;
  if (float_labels || (lh.shape.size() == 2 && lh.shape[1] != 1)) {
    // Rows of numbers: class ids, multi-label 0/1 or regression values.
    std::vector<double> rows;
    if (float_labels) {
      const std::vector<float> values = ReadNpyFloats(f.labels, &h);
      rows.assign(values.begin(), values.end());
    } else {
      const std::vector<int64_t> values = ReadNpyInts(f.labels, &h);
      rows.assign(values.begin(), values.end());
    }
    const int64_t width = lh.shape.size() == 2 ? lh.shape[1] : 1;
    if (width < 1) throw DataError("--labels " + f.labels + ": no label columns");
    const std::string said =
        SetLabelRows(d, std::move(rows), width, "auto", "--labels " + f.labels);
    if (!said.empty()) {
      GNN_LOG(kInfo) << said;
    }
  } else {
    d->labels = ReadNpyInts(f.labels, &h);
    for (int64_t& l : d->labels) {
      if (l < -1) l = -1;
      d->num_classes = std::max(d->num_classes, l + 1);
    }
  }
}

Dataset LoadPlainFiles(const PlainFiles& f, bool ignore_edge_data, bool keep_sparse) {
  f.Validate();
  const bool npz = EndsWith(f.node_feat, ".npz");
  if (!npz && !EndsWith(f.node_feat, ".npy"))
    throw DataError("--node_feat " + f.node_feat + ": a .npy or .npz file is expected");
  if (!EndsWith(f.labels, ".npy"))
    throw DataError("--labels " + f.labels + ": a .npy file is expected");
  // Headers first: the row counts must agree before any heavy read (a
  // .npz is read whole: its shape is inside the archive).
  NpzFeatures packed;
  NpyHeader fh;
  if (npz) {
    packed = ReadNpzFeatures(f.node_feat, keep_sparse);
    fh.dtype = DType::kFloat32;
    fh.shape = {packed.rows, packed.cols};
  } else {
    fh = ReadNpyHeader(f.node_feat);
  }
  if (fh.shape.size() != 2) {
    throw DataError("--node_feat " + f.node_feat + ": shape must be [N, F], not " +
                    S(static_cast<int64_t>(fh.shape.size())) + " dimensions");
  }
  if (fh.dtype != DType::kFloat32 && fh.dtype != DType::kFloat64 && fh.dtype != DType::kFloat16) {
    throw DataError("--node_feat " + f.node_feat + ": dtype " + DTypeDescr(fh.dtype) +
                    "; features are float16, float32 or float64");
  }
  const int64_t n = fh.shape[0];
  const NpyHeader lh = ReadNpyHeader(f.labels);
  if (lh.shape.size() > 2) {
    throw DataError("--labels " + f.labels + ": " + S(static_cast<int64_t>(lh.shape.size())) +
                    " dimensions; labels are [N] or [N, L]");
  }
  if (lh.shape.empty() || lh.shape[0] != n) {
    throw DataError("--labels " + f.labels + ": " + (lh.shape.empty() ? S(0) : S(lh.shape[0])) +
                    " rows; --node_feat " + f.node_feat + " has " + S(n));
  }
  IdMap ids(f.node_ids, n);
  std::vector<int64_t> user;
  if (!f.node_ids.empty()) {
    NpyHeader ih;
    user = ReadIntegers(f.node_ids, &ih);
    if (static_cast<int64_t>(user.size()) != n) {
      throw DataError("--node_ids " + f.node_ids + ": " + S(static_cast<int64_t>(user.size())) +
                      " ids; --node_feat " + f.node_feat + " has " + S(n) + " rows");
    }
    ids.Set(user);
  }

  Dataset d;
  d.node_ids = std::move(user);
  d.name = f.graph_name;
  d.num_nodes = n;
  ReadEdges(f, ignore_edge_data, ids, &d.src, &d.dst, &d.edge_features, &d.edge_feature_dim);
  if (!f.edge_feat.empty() && ignore_edge_data) {
    RefuseEdgeData(f.edge_feat, {"--edge_feat " + f.edge_feat}, true);
  } else if (!f.edge_feat.empty()) {
    NpyHeader eh;
    d.edge_features = ReadNpyFloats(f.edge_feat, &eh);
    const int64_t rows = eh.shape.empty() ? 0 : eh.shape[0];
    if (eh.shape.empty() || eh.shape.size() > 2 || rows != d.num_edges()) {
      throw DataError("--edge_feat " + f.edge_feat + ": " + S(rows) + " rows; --edges " + f.edges +
                      " has " + S(d.num_edges()) + " edges ([E] or [E, k] wanted)");
    }
    d.edge_feature_dim = eh.shape.size() == 1 ? 1 : eh.shape[1];
  }
  d.train_idx = ReadSplit("--train_ids", f.train_ids, n, ids);
  if (!f.valid_ids.empty()) d.valid_idx = ReadSplit("--valid_ids", f.valid_ids, n, ids);
  if (!f.test_ids.empty()) d.test_idx = ReadSplit("--test_ids", f.test_ids, n, ids);

  ReadLabels(f, lh, &d);
  NpyHeader h;
  if (packed.is_sparse) {
    d.sparse_features = std::move(packed.sparse);
  } else {
    d.features = npz ? std::move(packed.values) : ReadNpyFloats(f.node_feat, &h);
  }
  d.feature_dim = fh.shape[1];
  if (fh.dtype != DType::kFloat32) {
    GNN_LOG(kInfo) << "--node_feat " << f.node_feat << ": " << DTypeDescr(fh.dtype)
                   << " features stored as float32";
  }
  GNN_LOG(kInfo) << f.graph_name << " from plain files: " << n << " nodes, " << d.num_edges()
                 << " edges, " << d.feature_dim << " features, " << d.num_classes << " classes"
                 << (d.edge_feature_dim > 0 ? ", " + S(d.edge_feature_dim) + " edge features"
                                            : std::string());
  d.Validate();
  return d;
}

}  // namespace gnn
