// Typed forms of every request and reply the servers and the sampler pool
// speak (SeedBatch / MiniBatch are in batch_codec.h). Each struct has one
// Encode and one Decode; the wire layout of each type is the one documented
// beside its MsgType in protocol.h, byte for byte.
//
// Decode(const Message&) checks the message's type and shape (its fields
// by name: each one the type takes, none twice, the required ones there;
// its frames, frame element sizes, structure such as offsets that span
// their indices) and throws ProtocolError naming the type. Replies
// also have a Decode that takes the request they answer and the peer's
// name: it checks every count, offset and id against what was asked, so a
// broken or hostile server yields a ProtocolError naming it, never an
// out-of-range access.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "net/protocol.h"

namespace gnn::net {

// How feature rows and partial sums travel: float32, or bfloat16 (half the
// bytes, float32's range, ~3 significant digits; common/bfloat16.h).
enum class RowFormat : int64_t { kFloat32 = 0, kBfloat16 = 1 };
size_t RowFormatBytes(RowFormat f);  // bytes per value
// "float32" / "bfloat16" <-> RowFormat; ConfigError naming `flag` otherwise.
RowFormat ParseRowFormat(const std::string& name, const std::string& flag);
const char* RowFormatName(RowFormat f);

// The handshake text every client presents, "graph\nconfig_sha256\njob_id":
// servers compare the graph and config, a trainer's sampler pool all three.
struct Hello {
  std::string graph_name;
  std::string config_sha256;
  std::string job_id;

  std::string Text() const;
  // Reads the first line as the graph, the second as the sha256, the rest as
  // the job; missing lines read as empty, so a foreign peer's text is a
  // mismatch (the server says which graph it has), not a malformed message.
  static Hello Parse(const std::string& text);
  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static Hello Decode(const Message& m);
  bool operator==(const Hello& o) const;
  bool operator!=(const Hello& o) const { return !(*this == o); }
};

struct HelloReply {
  int64_t machine_id = 0;
  int64_t server_id = 0;
  int64_t node_start = 0;
  int64_t node_end = 0;  // the server owns [node_start, node_end)
  int64_t feature_dim = 0;
  int64_t num_classes = 0;

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static HelloReply Decode(const Message& m);
  bool operator==(const HelloReply& o) const;
};

// A gnn-sampler's hello to its trainer's pool: the same text, plus who it is.
struct SamplerHello {
  Hello hello;
  int64_t trainer_id = 0;
  int64_t sampler_id = 0;

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static SamplerHello Decode(const Message& m);
  bool operator==(const SamplerHello& o) const;
};

struct Ping {
  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static Ping Decode(const Message& m);
  bool operator==(const Ping&) const { return true; }
};

struct Pong {
  int64_t machine_id = 0;
  int64_t server_id = 0;

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static Pong Decode(const Message& m);
  bool operator==(const Pong& o) const;
};

// Neighbours of `seeds` (all owned by the server), up to `fanout` each
// (-1 = all); the server checks the range of fanout.
struct SampleRequest {
  std::vector<int64_t> seeds;
  int64_t fanout = 0;
  bool replace = false;
  uint64_t rng_seed = 0;
  IdCoding coding = IdCoding::kInt64;  // of the seeds, and of the reply's frames
  // The reply carries each sampled edge's data (the partition's edge
  // features) in float32.
  bool edge_data = false;

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static SampleRequest Decode(const Message& m);
  bool operator==(const SampleRequest& o) const;
};

struct SampleReply {
  std::vector<int64_t> indptr;   // one row per seed: starts at 0, never decreases
  std::vector<int64_t> indices;  // global ids, indptr.back() of them
  IdCoding coding = IdCoding::kInt64;
  // Asked for (SampleRequest::edge_data): [indices.size(), edge_dim] float32.
  int64_t edge_dim = 0;
  std::vector<float> edge_data{};

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static SampleReply Decode(const Message& m);
  // Also: one row per asked seed, no row longer than its fanout, every id
  // inside [0, num_nodes). `peer` names the server in errors.
  // With asked.edge_data: edge rows of width `edge_dim`, one per edge.
  static SampleReply Decode(const Message& m, const SampleRequest& asked, int64_t num_nodes,
                            const std::string& peer, int64_t edge_dim = 0);
  bool operator==(const SampleReply& o) const;
};

// Sample and aggregate at the owner (sampling/owner_aggregate.h): `dsts`
// all owned by the server, their in-neighbours sampled as SampleRequest's
// seeds are (same fanout, replace, rng_seed: the same neighbours).
struct SampleAggregateRequest {
  std::vector<int64_t> dsts;
  int64_t fanout = 0;
  bool replace = false;
  uint64_t rng_seed = 0;
  RowFormat format = RowFormat::kFloat32;  // of the reply's rows
  IdCoding coding = IdCoding::kInt64;      // of the dsts, and of the reply's frames
  // Only the first own_rows destinations' own rows are wanted (the asker
  // holds the others', e.g. in its hot-row cache); -1: all.
  int64_t own_rows = -1;
  // An edge task's batch edges to keep out of the sample: flat pairs
  // (destination, neighbour), each destination's sampled neighbour in a
  // pair is dropped before counting and summing (EdgeExclusion). Empty:
  // none (no field, no frame).
  std::vector<int64_t> exclude{};

  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static SampleAggregateRequest Decode(const Message& m);
  bool operator==(const SampleAggregateRequest& o) const;
};

// Per destination: its own row (the first own_rows destinations' only,
// when asked so) and the sum of its sampled neighbours' rows the server
// holds (`rows`, [own + n, dim]: own rows, then the sums; one buffer filled
// in place as PullFeaturesReply's), how many neighbours it sampled in all, and those it
// does not hold (a CSR over the destinations; servers list each
// destination's in increasing order, which varints carry in 1-3 bytes).
struct SampleAggregateReply {
  int64_t dim = 0;
  RowFormat format = RowFormat::kFloat32;
  IdCoding coding = IdCoding::kInt64;
  int64_t own_rows = -1;  // -1: one per destination
  zmq::message_t rows;    // [own + n, dim] values of `format`
  std::vector<int64_t> counts;
  std::vector<int64_t> remote_indptr;  // [n + 1]
  std::vector<int64_t> remote_ids;

  SampleAggregateReply() = default;
  // Rows for `n` destinations of `dim` values, uninitialized.
  SampleAggregateReply(int64_t dim, size_t n, RowFormat format = RowFormat::kFloat32,
                       IdCoding coding = IdCoding::kInt64, int64_t own_rows = -1);
  // Own rows the reply carries (before the n sums).
  size_t num_own_rows() const;
  // float32 only: the rows in place.
  float* data() { return static_cast<float*>(rows.data()); }
  const float* data() const { return static_cast<const float*>(rows.data()); }
  size_t num_values() const { return rows.size() / RowFormatBytes(format); }
  // Row i (of own + n) as floats, whatever the format.
  void RowTo(size_t i, float* out) const;
  // Fills the rows from `values` [own + n, dim] floats, converted to the format.
  void SetRows(const float* values);

  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  // Checks the shape: own + counts.size() rows of `dim`, remote offsets
  // spanning the remote ids, never more remote ids than sampled ones.
  static SampleAggregateReply Decode(const Message& m);
  // Also: one destination per asked one, the asked own rows, rows of `dim`, no count above the
  // fanout, every remote id inside [0, num_nodes) and outside the server's
  // own [node_start, node_end). `peer` names the server in errors.
  static SampleAggregateReply Decode(const Message& m, const SampleAggregateRequest& asked,
                                     int64_t dim, int64_t num_nodes, int64_t node_start,
                                     int64_t node_end, const std::string& peer);
  bool operator==(const SampleAggregateReply& o) const;
};

struct PullFeatures {
  std::vector<int64_t> ids;
  RowFormat format = RowFormat::kFloat32;  // of the reply's rows
  IdCoding coding = IdCoding::kInt64;      // of the ids

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static PullFeatures Decode(const Message& m);
  bool operator==(const PullFeatures& o) const;
};

// The sums of groups of rows the server owns: group k is
// ids[group_ptr[k], group_ptr[k + 1]) (ids may repeat, within a group and
// across groups); answered by a PullFeaturesReply with one row per group,
// summed in float32 and sent in `format`. Decode checks that the offsets
// start at 0, never decrease and end at ids.size(); the server checks
// ownership and the reply's size.
struct PullSums {
  std::vector<int64_t> ids;
  std::vector<int64_t> group_ptr = {0};    // [groups + 1]
  RowFormat format = RowFormat::kFloat32;  // of the reply's rows
  IdCoding coding = IdCoding::kInt64;      // of the ids and offsets

  size_t num_groups() const { return group_ptr.empty() ? 0 : group_ptr.size() - 1; }
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static PullSums Decode(const Message& m);
  bool operator==(const PullSums& o) const;
};

// Feature rows travel in one ZeroMQ buffer from the server's gather to the
// client's copy: the server fills `rows` in place, Encode and Decode share
// the buffer (reference counted) instead of copying megabytes. A decoded
// reply keeps the received buffer alive by itself.
struct PullFeaturesReply {
  int64_t dim = 0;
  RowFormat format = RowFormat::kFloat32;
  zmq::message_t rows;  // [num_rows, dim] values of `format`

  PullFeaturesReply() = default;
  // `num_rows` rows of `dim` values, uninitialized: fill them before Encode.
  PullFeaturesReply(int64_t dim, size_t num_rows, RowFormat format = RowFormat::kFloat32);
  // float32 only: the rows in place.
  float* data() { return static_cast<float*>(rows.data()); }
  const float* data() const { return static_cast<const float*>(rows.data()); }
  size_t num_values() const { return rows.size() / RowFormatBytes(format); }
  size_t num_floats() const { return num_values(); }
  // Row i as floats, whatever the format; SetRow writes it in the format.
  void RowTo(size_t i, float* out) const;
  void SetRow(size_t i, const float* values);

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static PullFeaturesReply Decode(const Message& m);
  // Also: exactly one row of `dim` values per asked id, in the asked format.
  static PullFeaturesReply Decode(const Message& m, const PullFeatures& asked, int64_t dim,
                                  const std::string& peer);
  // The answer to a PullSums: exactly one row of `dim` values per asked
  // group, in the asked format.
  static PullFeaturesReply Decode(const Message& m, const PullSums& asked, int64_t dim,
                                  const std::string& peer);
  // Any of these: `count` rows of `dim` values in `format`, answering a
  // `what` request of `peer`'s.
  static PullFeaturesReply DecodeRows(const Message& m, RowFormat format, size_t count, int64_t dim,
                                      const char* what, const std::string& peer);
  bool operator==(const PullFeaturesReply& o) const;  // same dim and bytes
};

// Rows of a sparse-feature partition as stored (CSR), answered by a
// SparseRowsReply: one row per id, in order.
struct PullSparseRows {
  std::vector<int64_t> ids;
  RowFormat format = RowFormat::kFloat32;  // of the reply's values
  IdCoding coding = IdCoding::kInt64;      // of the ids, and the reply's counts and columns

  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static PullSparseRows Decode(const Message& m);
  bool operator==(const PullSparseRows& o) const;
};

// Sparse rows [counts.size(), cols]: row i's column ids are
// columns[sum(counts[<i]) ...] (strictly increasing within a row), with as
// many values, or none when every value is 1 (`values` empty). Values
// travel in `format`; a decoded reply holds them as float32.
struct SparseRowsReply {
  int64_t cols = 0;
  RowFormat format = RowFormat::kFloat32;
  IdCoding coding = IdCoding::kInt64;
  std::vector<int64_t> counts;   // [rows]
  std::vector<int32_t> columns;  // [nnz]
  std::vector<float> values;     // [nnz] or empty: every value is 1

  size_t nnz() const { return columns.size(); }
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  // Checks counts, columns (in [0, cols), increasing within each row) and
  // values (as many as columns, or none; finite).
  static SparseRowsReply Decode(const Message& m);
  // Also: one row per asked id, `cols` wide, in the asked format and coding.
  static SparseRowsReply Decode(const Message& m, const PullSparseRows& asked, int64_t cols,
                                const std::string& peer);
  bool operator==(const SparseRowsReply& o) const;
};

struct PullLabels {
  std::vector<int64_t> ids;
  IdCoding coding = IdCoding::kInt64;  // of the ids, and of the reply's labels
  // kPullOrigIds: the nodes' input-dataset ids instead of their labels
  // (the same reply).
  bool orig_ids = false;
  // kPullTargets: the nodes' label rows of a multi-label or regression
  // graph, answered by a float32 PullFeaturesReply of the label width.
  bool targets = false;

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static PullLabels Decode(const Message& m);
  bool operator==(const PullLabels& o) const;
};

struct PullLabelsReply {
  std::vector<int64_t> labels;
  IdCoding coding = IdCoding::kInt64;

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static PullLabelsReply Decode(const Message& m);
  // Also: exactly one label per asked id.
  static PullLabelsReply Decode(const Message& m, const PullLabels& asked, const std::string& peer);
  bool operator==(const PullLabelsReply& o) const;
};

// The server's `mask` nodes (0 train, 1 valid, 2 test) number
// [offset, offset + count) in id order; the server checks the arguments.
struct SplitNodes {
  int64_t mask = 0;
  int64_t offset = 0;
  int64_t count = 0;

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static SplitNodes Decode(const Message& m);
  bool operator==(const SplitNodes& o) const;
};

struct SplitNodesReply {
  std::vector<int64_t> ids;

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static SplitNodesReply Decode(const Message& m);
  // Also: exactly asked.count increasing ids inside [node_start, node_end).
  static SplitNodesReply Decode(const Message& m, const SplitNodes& asked, int64_t node_start,
                                int64_t node_end, const std::string& peer);
  bool operator==(const SplitNodesReply& o) const;
};

struct Metadata {
  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static Metadata Decode(const Message& m);
  bool operator==(const Metadata&) const { return true; }
};

struct MetadataReply {
  std::string json;  // the server's graph, partition and ids (see RunServer)

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static MetadataReply Decode(const Message& m);
  bool operator==(const MetadataReply& o) const { return json == o.json; }
};

// Only obeyed when `job_id` is the server's own job.
struct Shutdown {
  std::string job_id;

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static Shutdown Decode(const Message& m);
  bool operator==(const Shutdown& o) const { return job_id == o.job_id; }
};

struct ShutdownReply {
  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static ShutdownReply Decode(const Message& m);
  bool operator==(const ShutdownReply&) const { return true; }
};

// Trainer -> gnn-sampler: no more batches.
struct Stop {
  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static Stop Decode(const Message& m);
  bool operator==(const Stop&) const { return true; }
};

// Any refusal; `code` is an ErrorCode (an unknown code still decodes).
struct ErrorReply {
  int64_t code = 0;
  std::string message;

  // One line for logs, e.g. "SampleRequest{seeds=1000, fanout=10, ...}".
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static ErrorReply Decode(const Message& m);
  bool operator==(const ErrorReply& o) const { return code == o.code && message == o.message; }
};

}  // namespace gnn::net
