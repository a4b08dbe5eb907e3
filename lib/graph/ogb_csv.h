// The gzip CSV files of OGB's raw layouts, read and written on plain
// arrays: counts, id pairs (edges), rows of floats (features), labels and
// id lists (splits). Readers check every value and name the file and line
// of the first bad one; writers format blocks of rows on worker threads
// while compressing earlier blocks, in order.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/sparse_rows.h"

namespace gnn {
namespace ogb {

// Thrown inside a parse callback to stop early because another file already
// failed; never escapes the folder readers.
struct Cancelled {};

// Shared by the files one folder read parses (possibly on several threads).
struct ParseContext {
  std::atomic<uint64_t> bytes{0};  // uncompressed CSV bytes seen
  std::atomic<int> first_failure{-1};

  // Called at the start of every chunk.
  void OnChunk(const char* begin, const char* end) {
    if (first_failure.load(std::memory_order_relaxed) >= 0) throw Cancelled{};
    bytes.fetch_add(static_cast<uint64_t>(end - begin), std::memory_order_relaxed);
  }
};

// "12.3": numbers for log lines.
std::string Fixed(double v, int digits = 2);
// The dataset name of an OGB folder: its base name with '_' as '-'.
std::string DatasetNameOf(const std::string& folder);
// The split folder under FOLDER/split to read: `requested`, or the only one.
std::string ResolveSplit(const std::string& folder, const std::string& requested);

// A file of exactly one non-negative integer (num-node-list, num-edge-list).
int64_t ReadCount(const std::string& path, ParseContext* ctx);
// `num_edges` lines "s,d" with s < num_src and d < num_dst; errors name
// the files the node and edge counts came from.
void ReadIdPairs(const std::string& path, int64_t num_src, int64_t num_dst, int64_t num_edges,
                 std::vector<int64_t>* src, std::vector<int64_t>* dst, ParseContext* ctx,
                 const std::string& node_counts, const std::string& edge_counts);
// `num_rows` rows of floats, straight into a [num_rows, F] array; F is the
// field count of line 1, returned. Errors name the rows as `items` counted
// by `count_file`.
int64_t ReadFloatRows(const std::string& path, int64_t num_rows, std::vector<float>* out,
                      ParseContext* ctx, const char* items = "nodes",
                      const char* count_file = "num-node-list.csv.gz");
// The same rows kept sparse as they are parsed: zeros are not stored, and
// no value array is kept while every stored value is 1. With
// `dense_above` > 0, once 1,024 rows are read and more than that fraction
// of their entries is stored, the rows go on into `dense` instead (and
// `sparse` is left empty): a dense file never costs its CSR; a file denser
// than that in the end comes back dense too. Returns F.
int64_t ReadFeatureRows(const std::string& path, int64_t num_rows, double dense_above,
                        SparseRows* sparse, std::vector<float>* dense, ParseContext* ctx);
// One label per line ("nan" or -1: none); returns the class count (max + 1).
int64_t ReadLabelColumn(const std::string& path, int64_t num_rows, std::vector<int64_t>* labels,
                        ParseContext* ctx);
// One id < num_nodes per line; returned sorted. Duplicates are an error.
// Errors name the ids as `item` ids counted by `count_file`.
std::vector<int64_t> ReadIdList(const std::string& path, int64_t num_nodes, ParseContext* ctx,
                                const char* item = "node",
                                const char* count_file = "num-node-list.csv.gz");

// Writes rows [0, num_rows) to a gzip file: `format(begin, end, out)`
// appends the text of rows [begin, end) to `out`.
void WriteRowsGz(const std::string& path, int64_t num_rows, int64_t rows_per_block,
                 const std::function<void(int64_t, int64_t, std::string*)>& format);
void WriteTextGz(const std::string& path, const std::string& text);
void WriteIdsGz(const std::string& path, const std::vector<int64_t>& ids);
void WriteIdPairsGz(const std::string& path, const std::vector<int64_t>& src,
                    const std::vector<int64_t>& dst);
void WriteFloatRowsGz(const std::string& path, const std::vector<float>& data, int64_t rows,
                      int64_t dim);
// Labels, "nan" for none (OGB's marker).
void WriteLabelsGz(const std::string& path, const std::vector<int64_t>& labels);

}  // namespace ogb
}  // namespace gnn
