#include "graph/ogb_csv.h"

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

namespace gnn {
namespace ogb {

namespace {

namespace fs = std::filesystem;

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

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

// Upper bound on the number of lines of at least `min_line_bytes` bytes
// (newline included) that the gzip file at `path` can decompress to.
uint64_t MaxLines(const std::string& path, uint64_t min_line_bytes) {
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  if (ec) throw DataError(CannotMessage("open", path, ec));
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

}  // namespace

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string DatasetNameOf(const std::string& folder) {
  fs::path p = fs::absolute(fs::path(folder)).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

std::string ResolveSplit(const std::string& folder, const std::string& requested) {
  fs::path root = fs::path(folder) / "split";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw DataError(CannotMessage("open", root.string(), DirectoryErrno(root.string())));
  }
  std::vector<std::string> names;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2)) names.push_back(it->path().filename().string());
  }
  if (ec) throw DataError(CannotMessage("list", root.string(), ec));
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

void ReadIdPairs(const std::string& path, int64_t num_src, int64_t num_dst, int64_t num_edges,
                 std::vector<int64_t>* src, std::vector<int64_t>* dst, ParseContext* ctx,
                 const std::string& node_counts, const std::string& edge_counts) {
  // Shortest edge line: "0,0\n".
  size_t reserve =
      static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(num_edges), MaxLines(path, 4)));
  src->clear();
  dst->clear();
  src->reserve(reserve);
  dst->reserve(reserve);
  const uint64_t ns = static_cast<uint64_t>(num_src), nd = static_cast<uint64_t>(num_dst);
  ForEachGzipChunk(path, [&](const char* b, const char* e, int64_t first) {
    ctx->OnChunk(b, e);
    CsvCursor c(b, e, path, first);
    while (c.NextLine()) {
      int64_t s = c.Int64();
      int64_t t = c.Int64();
      c.EndLine();
      // One unsigned compare per id catches negatives too.
      if (static_cast<uint64_t>(s) >= ns) {
        c.Fail("node id " + std::to_string(s) + " outside [0, " + std::to_string(num_src) + ") (" +
               node_counts + ")");
      }
      if (static_cast<uint64_t>(t) >= nd) {
        c.Fail("node id " + std::to_string(t) + " outside [0, " + std::to_string(num_dst) + ") (" +
               node_counts + ")");
      }
      src->push_back(s);
      dst->push_back(t);
    }
  });
  if (static_cast<int64_t>(src->size()) != num_edges) {
    throw DataError(path + " has " + std::to_string(src->size()) + " edges, " + edge_counts +
                    " says " + std::to_string(num_edges));
  }
}

namespace {

// The rows of floats of `path`, all of line 1's width F: start(F) once
// before the first row, then row(c, r, F) to parse row r from the cursor
// (then at its first field). Checks the row count against `num_rows`
// (named as `items` of `count_file`) and names a short or long row.
// Returns F.
template <typename Start, typename Row>
int64_t ParseFloatRows(const std::string& path, int64_t num_rows, ParseContext* ctx,
                       const char* items, const char* count_file, Start start, Row row) {
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
          if (static_cast<uint64_t>(num_rows) > MaxLines(path, 2 * static_cast<uint64_t>(dim))) {
            throw DataError(path + " is too small to hold " + std::to_string(num_rows) +
                            " rows of " + std::to_string(dim) + " values (" + count_file +
                            " is wrong or the file is cut)");
          }
          start(dim);
        }
        if (rows >= num_rows) {
          c.Fail("more feature rows than the " + std::to_string(num_rows) + " " + items + " in " +
                 count_file);
        }
        row(c, rows, dim);
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
  if (rows != num_rows) {
    throw DataError(path + " has " + std::to_string(rows) + " rows for " +
                    std::to_string(num_rows) + " " + items);
  }
  return dim;
}

}  // namespace

int64_t ReadFloatRows(const std::string& path, int64_t num_nodes, std::vector<float>* out,
                      ParseContext* ctx, const char* items, const char* count_file) {
  return ParseFloatRows(
      path, num_nodes, ctx, items, count_file,
      [&](int64_t dim) { out->assign(static_cast<size_t>(num_nodes * dim), 0.0f); },
      [&](CsvCursor& c, int64_t r, int64_t dim) {
        float* row = out->data() + r * dim;
        for (int64_t j = 0; j < dim; ++j) row[j] = c.Float();
      });
}

int64_t ReadFeatureRows(const std::string& path, int64_t num_nodes, double dense_above,
                        SparseRows* sparse, std::vector<float>* dense, ParseContext* ctx) {
  bool is_dense = false;
  bool has_values = false;  // a stored value was not 1
  *sparse = SparseRows();
  dense->clear();
  std::vector<float> row;
  // Values are kept only once one is not 1: earlier ones were all 1.
  auto store = [&](int64_t r, int64_t dim) {
    if (is_dense) {
      std::copy(row.begin(), row.end(), dense->data() + r * dim);
      return;
    }
    for (int64_t j = 0; j < dim; ++j) {
      const float x = row[static_cast<size_t>(j)];
      if (x == 0.0f) continue;
      if (x != 1.0f && !has_values) {
        sparse->values.assign(sparse->indices.size(), 1.0f);
        has_values = true;
      }
      if (has_values) sparse->values.push_back(x);
      sparse->indices.push_back(static_cast<int32_t>(j));
    }
    sparse->indptr.push_back(static_cast<int64_t>(sparse->indices.size()));
    if (dense_above > 0 && r + 1 == 1024 &&
        static_cast<double>(sparse->indices.size()) > dense_above * 1024.0 * dim) {
      // Dense after all: from here rows go straight into the matrix.
      dense->assign(static_cast<size_t>(num_nodes * dim), 0.0f);
      Densify(sparse->view(), dense->data(), 1);
      *sparse = SparseRows();
      is_dense = true;
    }
  };
  const int64_t dim = ParseFloatRows(
      path, num_nodes, ctx, "nodes", "num-node-list.csv.gz",
      [&](int64_t d) {
        if (d > std::numeric_limits<int32_t>::max()) {
          throw DataError(path + ": " + std::to_string(d) +
                          " values per row do not fit sparse rows' int32 column ids");
        }
        sparse->cols = d;
        row.resize(static_cast<size_t>(d));
      },
      [&](CsvCursor& c, int64_t r, int64_t d) {
        for (int64_t j = 0; j < d; ++j) row[static_cast<size_t>(j)] = c.Float();
        store(r, d);
      });
  if (!is_dense && dense_above > 0 &&
      static_cast<double>(sparse->nnz()) >
          dense_above * static_cast<double>(num_nodes) * static_cast<double>(dim)) {
    // Fewer than 1,024 rows, or the first ones sparser than the rest.
    dense->assign(static_cast<size_t>(num_nodes * dim), 0.0f);
    Densify(sparse->view(), dense->data());
    *sparse = SparseRows();
    is_dense = true;
  }
  if (!is_dense && dim > 0) {
    for (size_t k = 0; k < sparse->values.size(); ++k) {
      if (!std::isfinite(sparse->values[k])) {
        const int64_t r = std::upper_bound(sparse->indptr.begin(), sparse->indptr.end(),
                                           static_cast<int64_t>(k)) -
                          sparse->indptr.begin() - 1;
        throw DataError(path + ":" + std::to_string(r + 1) + ": value " +
                        std::to_string(sparse->values[k]) + " is not finite");
      }
    }
  }
  return dim;
}

int64_t ReadLabelColumn(const std::string& path, int64_t num_nodes, std::vector<int64_t>* labels,
                        ParseContext* ctx) {
  labels->clear();
  labels->reserve(
      static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(num_nodes), MaxLines(path, 2))));
  int64_t max_label = -1;
  ForEachGzipChunk(path, [&](const char* b, const char* e, int64_t first) {
    ctx->OnChunk(b, e);
    CsvCursor c(b, e, path, first);
    while (c.NextLine()) {
      if (labels->empty()) {
        const int64_t fields = c.CountFields();
        if (fields > 1) {
          c.Fail(std::to_string(fields) +
                 " labels per node: multi-label node classification (ogbn-proteins' shape) is "
                 "not supported yet; gnn trains one class id per node");
        }
      }
      int64_t l = c.Label();
      c.EndLine();
      if (l < -1) c.Fail("negative label " + std::to_string(l));
      if (l >= kMaxClasses) c.Fail("label " + std::to_string(l) + " is beyond 2^31 - 1");
      max_label = std::max(max_label, l);
      labels->push_back(l);
    }
  });
  if (static_cast<int64_t>(labels->size()) != num_nodes) {
    throw DataError(path + " has " + std::to_string(labels->size()) + " labels for " +
                    std::to_string(num_nodes) + " nodes");
  }
  return max_label + 1;
}

std::vector<int64_t> ReadIdList(const std::string& path, int64_t num_nodes, ParseContext* ctx,
                                const char* item, const char* count_file) {
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
        c.Fail(std::string(item) + " id " + std::to_string(v) + " outside [0, " +
               std::to_string(num_nodes) + ") (" + count_file + ")");
      }
      ids.push_back(v);
    }
  });
  if (!std::is_sorted(ids.begin(), ids.end())) std::sort(ids.begin(), ids.end());
  auto dup = std::adjacent_find(ids.begin(), ids.end());
  if (dup != ids.end()) {
    throw DataError(path + ": " + item + " id " + std::to_string(*dup) +
                    " is listed more than once");
  }
  return ids;
}

void WriteRowsGz(const std::string& path, int64_t num_rows, int64_t rows_per_block,
                 const std::function<void(int64_t, int64_t, std::string*)>& format) {
  GzipWriter w(path, kWriteGzipLevel);
  const int64_t window = std::max(2, ResolveThreads(0));
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
namespace {

inline char* PutFloat(char* p, char* end, float v) { return std::to_chars(p, end, v).ptr; }
inline char* PutInt(char* p, char* end, int64_t v) { return std::to_chars(p, end, v).ptr; }

// Shortest float32 text is at most 15 chars ("-1.1754944e-38"); int64 20.
constexpr size_t kMaxFloatChars = 24;
constexpr size_t kMaxIntChars = 24;

}  // namespace

void WriteIdsGz(const std::string& path, const std::vector<int64_t>& ids) {
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

void WriteTextGz(const std::string& path, const std::string& text) {
  GzipWriter w(path, kWriteGzipLevel);
  w.Write(text);
  w.Commit();
}

void WriteIdPairsGz(const std::string& path, const std::vector<int64_t>& src,
                    const std::vector<int64_t>& dst) {
  WriteRowsGz(path, static_cast<int64_t>(src.size()), 1 << 19,
              [&](int64_t b, int64_t e, std::string* out) {
                out->resize(static_cast<size_t>(e - b) * 2 * kMaxIntChars);
                char* p = &(*out)[0];
                char* end = p + out->size();
                for (int64_t i = b; i < e; ++i) {
                  p = PutInt(p, end, src[i]);
                  *p++ = ',';
                  p = PutInt(p, end, dst[i]);
                  *p++ = '\n';
                }
                out->resize(static_cast<size_t>(p - out->data()));
              });
}

void WriteFloatRowsGz(const std::string& path, const std::vector<float>& data, int64_t rows,
                      int64_t dim) {
  // About 4 MB of text per block.
  const int64_t rows_per_block = std::max<int64_t>(1, (4 << 20) / (dim * 10));
  WriteRowsGz(path, rows, rows_per_block, [&](int64_t b, int64_t e, std::string* out) {
    out->resize(static_cast<size_t>((e - b) * dim) * kMaxFloatChars);
    char* p = &(*out)[0];
    char* end = p + out->size();
    for (int64_t r = b; r < e; ++r) {
      const float* row = data.data() + r * dim;
      for (int64_t j = 0; j < dim; ++j) {
        p = PutFloat(p, end, row[j]);
        *p++ = j + 1 < dim ? ',' : '\n';
      }
    }
    out->resize(static_cast<size_t>(p - out->data()));
  });
}

void WriteLabelsGz(const std::string& path, const std::vector<int64_t>& labels) {
  WriteRowsGz(path, static_cast<int64_t>(labels.size()), 1 << 20,
              [&](int64_t b, int64_t e, std::string* out) {
                out->resize(static_cast<size_t>(e - b) * kMaxIntChars);
                char* p = &(*out)[0];
                char* end = p + out->size();
                for (int64_t i = b; i < e; ++i) {
                  if (labels[i] < 0) {
                    std::memcpy(p, "nan", 3);  // OGB's marker for "no label"
                    p += 3;
                  } else {
                    p = PutInt(p, end, labels[i]);
                  }
                  *p++ = '\n';
                }
                out->resize(static_cast<size_t>(p - out->data()));
              });
}

}  // namespace ogb
}  // namespace gnn
