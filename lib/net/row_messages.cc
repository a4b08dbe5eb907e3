// The messages that carry feature rows: the row format, SampleAggregate,
// PullFeatures, PullSums, PullSparseRows and their replies (messages.h).
#include <cmath>
#include <cstring>

#include "common/bfloat16.h"
#include "common/error.h"
#include "net/codec_util.h"
#include "net/messages.h"

namespace gnn::net {

using namespace codec;

// ------------------------------------------------------------ RowFormat

size_t RowFormatBytes(RowFormat f) { return f == RowFormat::kBfloat16 ? 2 : 4; }

RowFormat ParseRowFormat(const std::string& name, const std::string& flag) {
  if (name == "float32") return RowFormat::kFloat32;
  if (name == "bfloat16") return RowFormat::kBfloat16;
  throw ConfigError(flag + " must be float32 or bfloat16, got '" + name + "'");
}

const char* RowFormatName(RowFormat f) {
  return f == RowFormat::kBfloat16 ? "bfloat16" : "float32";
}

namespace {

// The optional own-rows field: written only when not -1 (all).
void PutOwn(Message* m, int64_t own) {
  if (own != -1) m->header.Add(Key::kOwn, own);
}

void RowOut(const zmq::message_t& rows, RowFormat f, int64_t dim, size_t i, float* out) {
  const size_t d = static_cast<size_t>(dim);
  if (f == RowFormat::kBfloat16) {
    FromBfloat16(static_cast<const uint16_t*>(rows.data()) + i * d, d, out);
  } else {
    std::memcpy(out, static_cast<const float*>(rows.data()) + i * d, d * sizeof(float));
  }
}

void RowIn(zmq::message_t& rows, RowFormat f, int64_t dim, size_t i, const float* values,
           size_t count_rows = 1) {
  const size_t n = static_cast<size_t>(dim) * count_rows;
  if (f == RowFormat::kBfloat16) {
    ToBfloat16(values, n, static_cast<uint16_t*>(rows.data()) + i * static_cast<size_t>(dim));
  } else {
    std::memcpy(static_cast<float*>(rows.data()) + i * static_cast<size_t>(dim), values,
                n * sizeof(float));
  }
}

}  // namespace

// ------------------------------------------------------- SampleAggregate

Message SampleAggregateRequest::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kSampleAggregate, request_id,
                          {{Key::kFanout, fanout},
                           {Key::kReplace, replace ? 1 : 0},
                           {Key::kRngSeed, static_cast<int64_t>(rng_seed)}});
  PutFormat(&m, format);
  PutCoding(&m, coding);
  PutOwn(&m, own_rows);
  AddInts(&m, dsts, coding);
  if (!exclude.empty()) {
    m.header.Add(Key::kExclude, 1);
    AddInts(&m, exclude, coding);
  }
  return m;
}

SampleAggregateRequest SampleAggregateRequest::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kSampleAggregate;
  const FieldReader f(m, kType,
                      {Key::kFanout, Key::kReplace, Key::kRngSeed, Key::kFormat, Key::kCoding,
                       Key::kOwn, Key::kExclude});
  const bool excludes = f.Flag(Key::kExclude);
  f.Frames(excludes ? 2 : 1);
  SampleAggregateRequest r;
  r.fanout = f.Get(Key::kFanout);
  r.replace = f.Get(Key::kReplace) != 0;
  r.rng_seed = static_cast<uint64_t>(f.Get(Key::kRngSeed));
  r.format = FormatOf(f, kType);
  r.coding = CodingOf(f, kType);
  r.own_rows = f.Get(Key::kOwn, -1);
  r.dsts = ReadInts(m, 0, r.coding, kMaxRequestValues);
  if (r.own_rows < -1 || r.own_rows > static_cast<int64_t>(r.dsts.size())) {
    Malformed(kType, "own rows " + std::to_string(r.own_rows) + " for " + N(r.dsts.size()) +
                         " destinations");
  }
  if (excludes) {
    r.exclude = ReadInts(m, 1, r.coding, kMaxRequestValues);
    if (r.exclude.empty() || r.exclude.size() % 2 != 0) {
      Malformed(kType, N(r.exclude.size()) + " excluded ids (pairs: an even number, at least 2)");
    }
  }
  return r;
}

bool SampleAggregateRequest::operator==(const SampleAggregateRequest& o) const {
  return dsts == o.dsts && fanout == o.fanout && replace == o.replace && rng_seed == o.rng_seed &&
         format == o.format && coding == o.coding && own_rows == o.own_rows && exclude == o.exclude;
}

SampleAggregateReply::SampleAggregateReply(int64_t d, size_t n, RowFormat f, IdCoding c,
                                           int64_t own)
    : dim(d),
      format(f),
      coding(c),
      own_rows(own),
      rows((n + (own < 0 ? n : static_cast<size_t>(own))) * static_cast<size_t>(d) *
           RowFormatBytes(f)) {}

size_t SampleAggregateReply::num_own_rows() const {
  return own_rows < 0 ? counts.size() : static_cast<size_t>(own_rows);
}

void SampleAggregateReply::RowTo(size_t i, float* out) const { RowOut(rows, format, dim, i, out); }

void SampleAggregateReply::SetRows(const float* values) {
  RowIn(rows, format, dim, 0, values, num_own_rows() + counts.size());
}

Message SampleAggregateReply::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kSampleAggregateReply, request_id, {{Key::kDim, dim}});
  PutFormat(&m, format);
  PutCoding(&m, coding);
  PutOwn(&m, own_rows);
  AddFrame(&m, Share(rows));
  AddInts(&m, counts, coding);
  AddInts(&m, remote_indptr, coding);
  AddInts(&m, remote_ids, coding);
  return m;
}

SampleAggregateReply SampleAggregateReply::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kSampleAggregateReply;
  const FieldReader f(m, kType, {Key::kDim, Key::kFormat, Key::kCoding, Key::kOwn});
  f.Frames(4);
  SampleAggregateReply r;
  r.dim = f.Get(Key::kDim);
  if (r.dim < 0) Malformed(kType, "negative width " + std::to_string(r.dim));
  r.format = FormatOf(f, kType);
  r.coding = CodingOf(f, kType);
  r.own_rows = f.Get(Key::kOwn, -1);
  size_t floats = 0;
  if (r.format == RowFormat::kBfloat16) {
    m.Array<uint16_t>(0, &floats);
  } else {
    m.Array<float>(0, &floats);
  }
  r.counts = ReadInts(m, 1, r.coding, kMaxReplyValues);
  r.remote_indptr = ReadInts(m, 2, r.coding, kMaxReplyValues);
  r.remote_ids = ReadInts(m, 3, r.coding, kMaxReplyValues);
  const size_t n = r.counts.size();
  if (r.own_rows < -1 || r.own_rows > static_cast<int64_t>(n)) {
    Malformed(kType, "own rows " + std::to_string(r.own_rows) + " for " + N(n) + " destinations");
  }
  if (floats != (r.num_own_rows() + n) * static_cast<size_t>(r.dim)) {
    Malformed(kType,
              N(floats) + " floats are not " +
                  (r.own_rows < 0 ? std::string("2 rows")
                                  : N(r.num_own_rows()) + " own rows and " + N(n) + " sums") +
                  " of width " + std::to_string(r.dim) + " for each of " + N(n) + " destinations");
  }
  const std::vector<int64_t>& p = r.remote_indptr;
  if (p.size() != n + 1 || p.front() != 0 ||
      p.back() != static_cast<int64_t>(r.remote_ids.size())) {
    Malformed(kType, "remote offsets do not span its " + N(r.remote_ids.size()) + " remote ids");
  }
  for (size_t i = 0; i < n; ++i) {
    if (p[i + 1] < p[i]) Malformed(kType, "remote offsets decrease at destination " + N(i));
    if (r.counts[i] < p[i + 1] - p[i]) {
      Malformed(kType, "destination " + N(i) + " has more remote neighbours than sampled ones");
    }
  }
  r.rows = Share(m.frames[0]);
  return r;
}

SampleAggregateReply SampleAggregateReply::Decode(const Message& m,
                                                  const SampleAggregateRequest& asked, int64_t dim,
                                                  int64_t num_nodes, int64_t node_start,
                                                  int64_t node_end, const std::string& peer) {
  SampleAggregateReply r = FromPeer(peer, [&] { return Decode(m); });
  const size_t n = asked.dsts.size();
  if (r.format != asked.format) {
    Bad(peer, std::string("a SampleAggregateReply in ") + RowFormatName(r.format) + " to a " +
                  RowFormatName(asked.format) + " request");
  }
  const int64_t own = asked.own_rows < 0 ? static_cast<int64_t>(n) : asked.own_rows;
  if (r.counts.size() == n && static_cast<int64_t>(r.num_own_rows()) != own) {
    Bad(peer, "a SampleAggregateReply with " + N(r.num_own_rows()) + " own rows to a request for " +
                  std::to_string(own));
  }
  if (r.counts.size() != n || r.dim != dim) {
    Bad(peer, "a SampleAggregateReply for " + N(r.counts.size()) + " destinations of width " +
                  std::to_string(r.dim) + " to " + N(n) + " of width " + std::to_string(dim));
  }
  for (int64_t c : r.counts) {
    if (asked.fanout >= 0 && c > asked.fanout) {
      Bad(peer, "a SampleAggregateReply with " + std::to_string(c) + " neighbours for fanout " +
                    std::to_string(asked.fanout));
    }
  }
  for (int64_t v : r.remote_ids) {
    if (v < 0 || v >= num_nodes || (v >= node_start && v < node_end)) {
      Bad(peer, "a SampleAggregateReply with remote node id " + std::to_string(v) +
                    (v < 0 || v >= num_nodes ? " outside the graph" : " that it owns itself"));
    }
  }
  return r;
}

bool SampleAggregateReply::operator==(const SampleAggregateReply& o) const {
  return dim == o.dim && format == o.format && coding == o.coding && counts == o.counts &&
         remote_indptr == o.remote_indptr && remote_ids == o.remote_ids &&
         rows.size() == o.rows.size() &&
         (rows.size() == 0 || std::memcmp(rows.data(), o.rows.data(), rows.size()) == 0);
}

// ---------------------------------------------------------- PullFeatures

Message PullFeatures::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kPullFeatures, request_id);
  PutFormat(&m, format);
  PutCoding(&m, coding);
  AddInts(&m, ids, coding);
  return m;
}

PullFeatures PullFeatures::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kPullFeatures;
  const FieldReader f(m, kType, {Key::kFormat, Key::kCoding});
  f.Frames(1);
  PullFeatures r;
  r.format = FormatOf(f, kType);
  r.coding = CodingOf(f, kType);
  r.ids = ReadInts(m, 0, r.coding, kMaxRequestValues);
  return r;
}

bool PullFeatures::operator==(const PullFeatures& o) const {
  return ids == o.ids && format == o.format && coding == o.coding;
}

// -------------------------------------------------------------- PullSums

Message PullSums::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kPullSums, request_id);
  PutFormat(&m, format);
  PutCoding(&m, coding);
  AddInts(&m, ids, coding);
  AddInts(&m, group_ptr, coding);
  return m;
}

PullSums PullSums::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kPullSums;
  const FieldReader f(m, kType, {Key::kFormat, Key::kCoding});
  f.Frames(2);
  const RowFormat format = FormatOf(f, kType);
  const IdCoding c = CodingOf(f, kType);
  PullSums r{ReadInts(m, 0, c, kMaxRequestValues), ReadInts(m, 1, c, kMaxRequestValues), format, c};
  CheckGroups(kType, r.ids.size(), r.group_ptr);
  return r;
}

bool PullSums::operator==(const PullSums& o) const {
  return ids == o.ids && group_ptr == o.group_ptr && format == o.format && coding == o.coding;
}

PullFeaturesReply::PullFeaturesReply(int64_t d, size_t num_rows, RowFormat f)
    : dim(d), format(f), rows(num_rows * static_cast<size_t>(d) * RowFormatBytes(f)) {}

void PullFeaturesReply::RowTo(size_t i, float* out) const { RowOut(rows, format, dim, i, out); }

void PullFeaturesReply::SetRow(size_t i, const float* values) {
  RowIn(rows, format, dim, i, values);
}

Message PullFeaturesReply::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kPullFeaturesReply, request_id, {{Key::kDim, dim}});
  PutFormat(&m, format);
  AddFrame(&m, Share(rows));
  return m;
}

PullFeaturesReply PullFeaturesReply::Decode(const Message& m) {
  const FieldReader f(m, MsgType::kPullFeaturesReply, {Key::kDim, Key::kFormat});
  f.Frames(1);
  PullFeaturesReply r;
  r.dim = f.Get(Key::kDim);
  r.format = FormatOf(f, MsgType::kPullFeaturesReply);
  size_t n = 0;
  if (r.format == RowFormat::kBfloat16) {
    m.Array<uint16_t>(0, &n);
  } else {
    m.Array<float>(0, &n);
  }
  if (r.dim < 0) Malformed(MsgType::kPullFeaturesReply, "negative width " + std::to_string(r.dim));
  if (r.dim == 0 ? n != 0 : n % static_cast<size_t>(r.dim) != 0) {
    Malformed(MsgType::kPullFeaturesReply,
              N(n) + " floats are not whole rows of width " + std::to_string(r.dim));
  }
  r.rows = Share(m.frames[0]);
  return r;
}

PullFeaturesReply PullFeaturesReply::DecodeRows(const Message& m, RowFormat format, size_t count,
                                                int64_t dim, const char* what,
                                                const std::string& peer) {
  PullFeaturesReply r = FromPeer(peer, [&] { return PullFeaturesReply::Decode(m); });
  if (r.format != format) {
    Bad(peer, std::string("a PullFeaturesReply in ") + RowFormatName(r.format) + " to a " +
                  RowFormatName(format) + " " + what + " request");
  }
  if (r.dim != dim || r.num_floats() != count * static_cast<size_t>(dim)) {
    Bad(peer, "a PullFeaturesReply of " + N(r.num_floats()) + " floats of width " +
                  std::to_string(r.dim) + " for " + N(count) + " rows of " + std::to_string(dim) +
                  " (" + what + ")");
  }
  return r;
}

PullFeaturesReply PullFeaturesReply::Decode(const Message& m, const PullFeatures& asked,
                                            int64_t dim, const std::string& peer) {
  return DecodeRows(m, asked.format, asked.ids.size(), dim, "PullFeatures", peer);
}

PullFeaturesReply PullFeaturesReply::Decode(const Message& m, const PullSums& asked, int64_t dim,
                                            const std::string& peer) {
  return DecodeRows(m, asked.format, asked.num_groups(), dim, "PullSums", peer);
}

bool PullFeaturesReply::operator==(const PullFeaturesReply& o) const {
  return dim == o.dim && format == o.format && rows.size() == o.rows.size() &&
         (rows.size() == 0 || std::memcmp(rows.data(), o.rows.data(), rows.size()) == 0);
}

// -------------------------------------------------------- PullSparseRows

Message PullSparseRows::Encode(uint64_t request_id) const {
  Message m = MakeMessage(MsgType::kPullSparseRows, request_id);
  PutFormat(&m, format);
  PutCoding(&m, coding);
  AddInts(&m, ids, coding);
  return m;
}

PullSparseRows PullSparseRows::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kPullSparseRows;
  const FieldReader f(m, kType, {Key::kFormat, Key::kCoding});
  f.Frames(1);
  PullSparseRows r;
  r.format = FormatOf(f, kType);
  r.coding = CodingOf(f, kType);
  r.ids = ReadInts(m, 0, r.coding, kMaxRequestValues);
  return r;
}

bool PullSparseRows::operator==(const PullSparseRows& o) const {
  return ids == o.ids && format == o.format && coding == o.coding;
}

Message SparseRowsReply::Encode(uint64_t request_id) const {
  const bool has_values = !values.empty();
  Message m = MakeMessage(MsgType::kSparseRowsReply, request_id, {{Key::kCols, cols}});
  PutFormat(&m, format);
  PutCoding(&m, coding);
  if (has_values) m.header.Add(Key::kHasValues, 1);
  AddInts(&m, counts, coding);
  if (coding == IdCoding::kInt64) {
    AddArray(&m, columns);
  } else {
    // Column ids increase within a row: small differences, 1-2 bytes each.
    AddInts(&m, std::vector<int64_t>(columns.begin(), columns.end()), coding);
  }
  if (has_values) {
    zmq::message_t frame(values.size() * RowFormatBytes(format));
    RowIn(frame, format, static_cast<int64_t>(values.size()), 0, values.data());
    AddFrame(&m, std::move(frame));
  }
  return m;
}

SparseRowsReply SparseRowsReply::Decode(const Message& m) {
  constexpr MsgType kType = MsgType::kSparseRowsReply;
  const FieldReader f(m, kType, {Key::kCols, Key::kFormat, Key::kCoding, Key::kHasValues});
  const bool has_values = f.Flag(Key::kHasValues);
  f.Frames(has_values ? 3 : 2);
  SparseRowsReply r;
  r.cols = f.Get(Key::kCols);
  if (r.cols < 0 || r.cols > INT32_MAX) Malformed(kType, "width " + std::to_string(r.cols));
  r.format = FormatOf(f, kType);
  r.coding = CodingOf(f, kType);
  const size_t max_values = static_cast<size_t>(kMaxReplyBytes) / sizeof(int32_t);
  r.counts = ReadInts(m, 0, r.coding, max_values);
  if (r.coding == IdCoding::kInt64) {
    r.columns = m.CopyArray<int32_t>(1);
  } else {
    const std::vector<int64_t> c = ReadInts(m, 1, r.coding, max_values);
    r.columns.resize(c.size());
    for (size_t k = 0; k < c.size(); ++k) {
      if (c[k] < 0 || c[k] >= r.cols) Malformed(kType, "column id " + std::to_string(c[k]));
      r.columns[k] = static_cast<int32_t>(c[k]);
    }
  }
  // Counts that add up to the columns, and columns increasing in each row.
  size_t at = 0;
  for (size_t i = 0; i < r.counts.size(); ++i) {
    const int64_t c = r.counts[i];
    if (c < 0 || static_cast<uint64_t>(c) > r.columns.size() - at) {
      Malformed(kType, "row " + N(i) + "'s count " + std::to_string(c) + " passes the " +
                           N(r.columns.size()) + " column ids");
    }
    for (size_t k = at; k < at + static_cast<size_t>(c); ++k) {
      const int32_t col = r.columns[k];
      if (col < 0 || col >= r.cols || (k > at && col <= r.columns[k - 1])) {
        Malformed(kType, "row " + N(i) + " has column id " + std::to_string(col) +
                             " out of range or out of order (width " + std::to_string(r.cols) +
                             ")");
      }
    }
    at += static_cast<size_t>(c);
  }
  if (at != r.columns.size()) {
    Malformed(kType,
              "counts add up to " + N(at) + ", not its " + N(r.columns.size()) + " column ids");
  }
  if (has_values) {
    const size_t bytes = RowFormatBytes(r.format);
    if (m.frames[2].size() != r.columns.size() * bytes) {
      Malformed(kType, N(m.frames[2].size() / bytes) + " values for " + N(r.columns.size()) +
                           " column ids");
    }
    r.values.resize(r.columns.size());
    if (!r.values.empty())
      RowOut(m.frames[2], r.format, static_cast<int64_t>(r.values.size()), 0, r.values.data());
    for (float v : r.values) {
      if (!std::isfinite(v)) Malformed(kType, "a value that is not finite");
    }
  }
  return r;
}

SparseRowsReply SparseRowsReply::Decode(const Message& m, const PullSparseRows& asked, int64_t cols,
                                        const std::string& peer) {
  SparseRowsReply r = FromPeer(peer, [&] { return SparseRowsReply::Decode(m); });
  if (r.format != asked.format || r.coding != asked.coding) {
    Bad(peer, std::string("a SparseRowsReply in ") + RowFormatName(r.format) + "/" +
                  IdCodingName(r.coding) + " to a " + RowFormatName(asked.format) + "/" +
                  IdCodingName(asked.coding) + " request");
  }
  if (r.cols != cols || r.counts.size() != asked.ids.size()) {
    Bad(peer, "a SparseRowsReply of " + N(r.counts.size()) + " rows of width " +
                  std::to_string(r.cols) + " for " + N(asked.ids.size()) + " rows of " +
                  std::to_string(cols));
  }
  return r;
}

bool SparseRowsReply::operator==(const SparseRowsReply& o) const {
  return cols == o.cols && format == o.format && coding == o.coding && counts == o.counts &&
         columns == o.columns && values == o.values;
}

}  // namespace gnn::net
