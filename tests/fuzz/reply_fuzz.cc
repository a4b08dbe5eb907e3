// libFuzzer target for the client-side reply decoders (the typed replies of
// lib/net/messages.h and TypedSampleReply of lib/net/typed_messages.h, with
// its relation ids of 1, 2 or 4 bytes, decoded against the request they
// answer):
// what a broken or hostile server could send to a trainer or sampler. The
// input is a message (header frame + array frames, the protocol fuzzer's
// layout after 8 leading bytes) and the request it answers (8 bytes: seed
// count, fanout, node count, split bounds). The only acceptable failure is
// a ProtocolError; a decoded reply must satisfy what the decoder promises.
//
//   CXX=clang++ cmake -S . -B build-fuzz -DGNN_FUZZ=ON -DGNN_WITH_TORCH=OFF -DGNN_BUILD_TESTS=OFF
//   cmake --build build-fuzz --target gnn-reply-fuzz && build-fuzz/tests/fuzz/gnn-reply-fuzz
//   -max_total_time=60
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/error.h"
#include "fuzz_frames.h"
#include "net/messages.h"
#include "net/protocol.h"
#include "net/typed_messages.h"

namespace {

using gnn::ProtocolError;
using namespace gnn::net;

[[noreturn]] void Broken(const char* what) {
  std::fprintf(stderr, "invariant broken: %s\n", what);
  std::abort();
}

std::vector<zmq::message_t> Split(const uint8_t* data, size_t size) {
  return gnn::fuzz::SplitFrames(data, size, 6);
}

void Exercise(const Message& m, const uint8_t* q) {
  const SampleRequest sample{std::vector<int64_t>(q[0] % 64), static_cast<int>(q[1] % 20) - 1,
                             false, 0};
  const int64_t nodes = q[2] + 1;
  try {
    const SampleReply r = SampleReply::Decode(m, sample, nodes, "server");
    const std::vector<int64_t>& ptr = r.indptr;
    const size_t seeds = sample.seeds.size();
    if (ptr.size() != seeds + 1 || ptr[0] != 0 ||
        ptr.back() != static_cast<int64_t>(r.indices.size())) {
      Broken("SampleReply offsets");
    }
    for (size_t i = 0; i < seeds; ++i) {
      if (ptr[i + 1] < ptr[i] || (sample.fanout >= 0 && ptr[i + 1] - ptr[i] > sample.fanout)) {
        Broken("SampleReply row");
      }
    }
    for (int64_t v : r.indices) {
      if (v < 0 || v >= nodes) Broken("SampleReply id");
    }
  } catch (const ProtocolError&) {
  }
  try {
    const PullFeatures asked{std::vector<int64_t>(q[3] % 16)};
    const int64_t dim = q[4] % 8;
    const PullFeaturesReply r = PullFeaturesReply::Decode(m, asked, dim, "server");
    const size_t floats = asked.ids.size() * static_cast<size_t>(dim);
    if (r.dim != dim || r.num_floats() != floats ||
        m.frames.at(0).size() != floats * sizeof(float) || (floats > 0 && !r.data())) {
      Broken("FeaturesReply size");
    }
  } catch (const ProtocolError&) {
  }
  try {
    // A PullSums of q[3] % 16 groups, in either row format: one row each.
    PullSums asked;
    asked.group_ptr.assign(q[3] % 16 + 1, 0);
    asked.format = q[5] & 1 ? RowFormat::kBfloat16 : RowFormat::kFloat32;
    const int64_t dim = q[4] % 8;
    const PullFeaturesReply r = PullFeaturesReply::Decode(m, asked, dim, "server");
    const size_t values = asked.num_groups() * static_cast<size_t>(dim);
    if (r.dim != dim || r.format != asked.format || r.num_values() != values ||
        m.frames.at(0).size() != values * RowFormatBytes(asked.format)) {
      Broken("PullSums reply size");
    }
  } catch (const ProtocolError&) {
  }
  try {
    // Sparse rows: one count per asked row, columns inside the width and
    // increasing within each row, as many values as columns (or none).
    const PullSparseRows asked{std::vector<int64_t>(q[3] % 16),
                               q[5] & 1 ? RowFormat::kBfloat16 : RowFormat::kFloat32,
                               q[6] & 1 ? IdCoding::kVarint : IdCoding::kInt64};
    const int64_t cols = q[4] % 64;
    const SparseRowsReply r = SparseRowsReply::Decode(m, asked, cols, "server");
    if (r.counts.size() != asked.ids.size()) Broken("SparseRowsReply rows");
    if (!r.values.empty() && r.values.size() != r.columns.size()) Broken("SparseRowsReply values");
    size_t at = 0;
    for (int64_t c : r.counts) {
      for (size_t k = at; k < at + static_cast<size_t>(c); ++k) {
        if (r.columns.at(k) < 0 || r.columns[k] >= cols ||
            (k > at && r.columns[k] <= r.columns[k - 1]))
          Broken("SparseRowsReply column");
      }
      at += static_cast<size_t>(c);
    }
    if (at != r.columns.size()) Broken("SparseRowsReply counts");
  } catch (const ProtocolError&) {
  }
  try {
    const PullLabels asked{std::vector<int64_t>(q[5] % 16)};
    if (PullLabelsReply::Decode(m, asked, "server").labels.size() != asked.ids.size())
      Broken("LabelsReply size");
  } catch (const ProtocolError&) {
  }
  try {
    const int64_t lo = q[6] % 32, hi = lo + q[7] % 32;
    const SplitNodes asked{0, 0, q[5] % 8};
    std::vector<int64_t> ids = SplitNodesReply::Decode(m, asked, lo, hi, "server").ids;
    if (static_cast<int64_t>(ids.size()) != asked.count) Broken("SplitNodesReply size");
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < lo || ids[i] >= hi || (i > 0 && ids[i] <= ids[i - 1]))
        Broken("SplitNodesReply id");
    }
  } catch (const ProtocolError&) {
  }
  try {
    // A server of [lo, hi) in a graph of `nodes`, rows of width q[4] % 8.
    // Own rows for all destinations, or for the first q[5] % (n + 1).
    SampleAggregateRequest asked{std::vector<int64_t>(q[0] % 64), static_cast<int>(q[1] % 20) - 1,
                                 false, 0};
    const size_t n = asked.dsts.size();
    if (q[5] & 0x80) asked.own_rows = static_cast<int64_t>(q[5] % (n + 1));
    const size_t own = asked.own_rows < 0 ? n : static_cast<size_t>(asked.own_rows);
    const int64_t dim = q[4] % 8, lo = q[6] % 32, hi = lo + q[7] % 32;
    const SampleAggregateReply r =
        SampleAggregateReply::Decode(m, asked, dim, nodes, lo, hi, "server");
    if (r.counts.size() != n || r.num_values() != (own + n) * static_cast<size_t>(dim) ||
        r.remote_indptr.size() != n + 1 ||
        r.remote_indptr.back() != static_cast<int64_t>(r.remote_ids.size())) {
      Broken("SampleAggregateReply sizes");
    }
    for (size_t i = 0; i < n; ++i) {
      const int64_t remote = r.remote_indptr[i + 1] - r.remote_indptr[i];
      if (remote < 0 || remote > r.counts[i] || (asked.fanout >= 0 && r.counts[i] > asked.fanout))
        Broken("SampleAggregateReply row");
    }
    for (int64_t v : r.remote_ids) {
      if (v < 0 || v >= nodes || (v >= lo && v < hi)) Broken("SampleAggregateReply id");
    }
  } catch (const ProtocolError&) {
  }
  try {
    // A graph of up to 300 relations (past a byte's range), q[1] % 20 - 1
    // of each.
    const int64_t rels = 1 + (q[6] + 256 * (q[7] & 1)) % 300;
    const TypedSampleRequest asked{
        std::vector<int64_t>(q[0] % 64),
        std::vector<int64_t>(static_cast<size_t>(rels), static_cast<int>(q[1] % 20) - 1), false, 0};
    const TypedSampleReply r = TypedSampleReply::Decode(m, asked, nodes, "server");
    const size_t seeds = asked.seeds.size();
    if (r.indptr.size() != seeds + 1 || r.indptr[0] != 0 ||
        r.indptr.back() != static_cast<int64_t>(r.indices.size()) ||
        r.etypes.size() != r.indices.size()) {
      Broken("TypedSampleReply offsets");
    }
    for (size_t i = 0; i < seeds; ++i) {
      if (r.indptr[i + 1] < r.indptr[i]) Broken("TypedSampleReply row");
      for (int64_t k = r.indptr[i]; k < r.indptr[i + 1]; ++k) {
        const int64_t e = r.etypes[static_cast<size_t>(k)];
        if (e < 0 || e >= rels || (k > r.indptr[i] && e < r.etypes[static_cast<size_t>(k - 1)]))
          Broken("TypedSampleReply relation");
      }
    }
    for (int64_t v : r.indices) {
      if (v < 0 || v >= nodes) Broken("TypedSampleReply id");
    }
  } catch (const ProtocolError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  std::vector<zmq::message_t> parts = Split(data + 8, size - 8);
  try {
    Message m = Decode(std::move(parts));
    Exercise(m, data);
  } catch (const ProtocolError&) {
  }
  return 0;
}
