#include "dist_partition/dist_edge_data.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/npy.h"
#include "partition/partition_util.h"

namespace gnn {

Ranges EdgeRanges(const ChunkedMeta& m, int ranks) {
  Ranges r;
  int64_t at = 0;
  int chunk = 0;
  for (int q = 0; q <= ranks; ++q) {
    const int until = static_cast<int>(int64_t{q} * m.num_chunks / ranks);
    for (; chunk < until; ++chunk) at += m.edges_per_chunk[0][static_cast<size_t>(chunk)];
    r.start.push_back(at);
  }
  return r;
}

namespace {

// Appends chunk c's data to *o (its first chunk sets the columns).
void AppendChunk(EdgeDataChunk chunk, bool first, OwnedEdgeData* o, bool* integral) {
  o->features.insert(o->features.end(), chunk.features.begin(), chunk.features.end());
  o->labels.insert(o->labels.end(), chunk.labels.begin(), chunk.labels.end());
  o->split.insert(o->split.end(), chunk.split.begin(), chunk.split.end());
  if (chunk.labeled) *integral = *integral && chunk.integral;
  if (first) {
    o->width = chunk.width;
    o->columns = std::move(chunk.columns);
    o->labeled = chunk.labeled;
  }
}

// Every rank's arrays have the widths this rank's have.
void AgreeWidths(MpiComm& comm, Agreement& agree, const ChunkedMeta& m, const OwnedEdgeData& o) {
  std::vector<int64_t> widths;
  for (const Dataset::EdgeColumns& c : o.columns) widths.push_back(c.width);
  for (const Dataset::EdgeColumns& c : o.columns) widths.push_back(-c.width);
  widths = comm.AllreduceMax(widths, "reading edge data");
  const size_t n = o.columns.size();
  agree.Run("reading edge data", [&] {
    for (size_t a = 0; a < n; ++a) {
      if (widths[a] != -widths[n + a]) {
        throw DataError(m.dir + "/metadata.json: edge_data " + o.columns[a].name + " has " +
                        std::to_string(-widths[n + a]) + " columns in some chunks and " +
                        std::to_string(widths[a]) + " in others");
      }
    }
  });
}

// The label kind, class count and split counts over every rank, and the
// labels checked as Dataset::ValidateEdgeLabels checks them.
void AgreeLabels(MpiComm& comm, Agreement& agree, const ChunkedMeta& m, bool integral,
                 OwnedEdgeData* o) {
  const bool classes = comm.AllreduceMax(integral ? 0 : 1, "reading edge labels") == 0;
  o->kind = classes ? LabelKind::kClass : LabelKind::kRegression;
  int64_t top = 0;
  int64_t count[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < o->count; ++i) {
    const uint8_t s = o->split[static_cast<size_t>(i)];
    ++count[s];
    if (s != 0 && classes) {
      top = std::max(top, static_cast<int64_t>(o->labels[static_cast<size_t>(i)]) + 1);
    }
  }
  o->num_classes = classes ? comm.AllreduceMax(top, "reading edge labels") : 0;
  const std::vector<int64_t> sums =
      comm.AllreduceSum({count[0], count[1], count[2], count[3]}, "reading edge labels");
  std::copy(sums.begin(), sums.end(), o->split_count);
  agree.Run("checking edge labels", [&] {
    const std::string& name = m.graph_name;
    for (int64_t i = 0; i < o->count; ++i) {
      if (o->split[static_cast<size_t>(i)] == 0) continue;
      const double label = o->labels[static_cast<size_t>(i)];
      const std::string edge = name + ": edge " + std::to_string(o->first + i);
      if (classes && label < 0) {
        throw DataError(edge + " is in a split but has label " +
                        std::to_string(static_cast<int64_t>(label)) + ", not a class in [0, " +
                        std::to_string(o->num_classes) + ")");
      }
      if (!classes && !std::isfinite(static_cast<float>(label))) {
        throw DataError(edge + " has label " + std::to_string(static_cast<float>(label)) +
                        ", not a finite number");
      }
    }
    if (sums[1] + sums[2] + sums[3] == 0) {
      throw DataError(name + ": edge labels, but no edge is in any split");
    }
  });
}

}  // namespace

OwnedEdgeData ReadOwnedEdgeData(MpiComm& comm, Agreement& agree, const ChunkedMeta& m, int c0,
                                int c1, const Ranges& edge_ranges) {
  OwnedEdgeData o;
  o.first = edge_ranges.start[static_cast<size_t>(comm.rank())];
  o.count = edge_ranges.start[static_cast<size_t>(comm.rank()) + 1] - o.first;
  bool integral = true;
  agree.Run("reading edge data", [&] {
    EdgeDataChunk first;
    int64_t at = o.first;
    for (int c = c0; c < c1; ++c) {
      EdgeDataChunk chunk = ReadEdgeDataChunk(m, 0, c, at, c == c0 ? nullptr : &first);
      at += chunk.edges;
      if (c == c0) {
        first.columns = chunk.columns;
        first.width = chunk.width;
      }
      AppendChunk(std::move(chunk), c == c0, &o, &integral);
    }
  });
  AgreeWidths(comm, agree, m, o);
  if (o.labeled) AgreeLabels(comm, agree, m, integral, &o);
  return o;
}

StoredEdgeData FetchEdgeData(MpiComm& comm, const Ranges& edge_ranges, const OwnedEdgeData& owned,
                             const std::vector<int64_t>& eids) {
  const size_t P = static_cast<size_t>(comm.size());
  const int64_t w = owned.width, n = static_cast<int64_t>(eids.size());
  const bool labeled = owned.labeled;
  StoredEdgeData out;
  out.features.resize(static_cast<size_t>(n * w));
  if (labeled) {
    out.labels.resize(static_cast<size_t>(n));
    out.split.resize(static_cast<size_t>(n));
  }
  const int64_t entry_bytes = 8 + w * 4 + (labeled ? 9 : 0);
  const int64_t step = std::max<int64_t>(1, FeatureSliceBytes() / entry_bytes);
  const int64_t rounds = comm.AllreduceMax((n + step - 1) / step, "moving edge data");
  const std::string what = "moving edge data";
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t b = std::min(n, round * step), e = std::min(n, b + step);
    // This round's edges, grouped by the rank that read them.
    std::vector<int64_t> counts(P, 0);
    for (int64_t k = b; k < e; ++k) ++counts[static_cast<size_t>(edge_ranges.Owner(eids[k]))];
    std::vector<int64_t> at = Offsets(counts);
    std::vector<int64_t> ask(static_cast<size_t>(e - b)), place(static_cast<size_t>(e - b));
    for (int64_t k = b; k < e; ++k) {
      const size_t p = static_cast<size_t>(edge_ranges.Owner(eids[k]));
      ask[static_cast<size_t>(at[p])] = eids[k];
      place[static_cast<size_t>(at[p]++)] = k;
    }
    std::vector<int64_t> asked_counts, unused;
    const std::vector<int64_t> asked = comm.Alltoallv(ask, counts, &asked_counts, what);
    // The answers, in the order asked.
    std::vector<float> rows(asked.size() * static_cast<size_t>(w));
    std::vector<double> labels(labeled ? asked.size() : 0);
    std::vector<uint8_t> split(labeled ? asked.size() : 0);
    for (size_t i = 0; i < asked.size(); ++i) {
      const int64_t local = asked[i] - owned.first;
      if (local < 0 || local >= owned.count) {
        throw Error("edge " + std::to_string(asked[i]) + " was asked of the wrong machine");
      }
      std::copy_n(owned.features.begin() + local * w, w,
                  rows.begin() + static_cast<int64_t>(i) * w);
      if (labeled) {
        labels[i] = owned.labels[static_cast<size_t>(local)];
        split[i] = owned.split[static_cast<size_t>(local)];
      }
    }
    std::vector<int64_t> row_counts(P);
    for (size_t p = 0; p < P; ++p) row_counts[p] = asked_counts[p] * w;
    const std::vector<float> got_rows = comm.Alltoallv(rows, row_counts, &unused, what);
    for (size_t i = 0; i < place.size(); ++i) {
      std::copy_n(got_rows.begin() + static_cast<int64_t>(i) * w, w,
                  out.features.begin() + place[i] * w);
    }
    if (!labeled) continue;
    const std::vector<double> got_labels = comm.Alltoallv(labels, asked_counts, &unused, what);
    const std::vector<uint8_t> got_split = comm.Alltoallv(split, asked_counts, &unused, what);
    for (size_t i = 0; i < place.size(); ++i) {
      out.labels[static_cast<size_t>(place[i])] = got_labels[i];
      out.split[static_cast<size_t>(place[i])] = got_split[i];
    }
  }
  return out;
}

std::vector<float> AppendEdgeMeans(const std::vector<float>& feat, int64_t feature_dim,
                                   const std::vector<int64_t>& at, const std::vector<int64_t>& eids,
                                   const std::vector<float>& features, int64_t width) {
  const int64_t rows = static_cast<int64_t>(at.size()) - 1, out_dim = feature_dim + width;
  std::vector<float> out(static_cast<size_t>(rows * out_dim));
  std::vector<int64_t> order;
  std::vector<double> sum(static_cast<size_t>(width));
  for (int64_t i = 0; i < rows; ++i) {
    float* row = out.data() + i * out_dim;
    std::copy_n(feat.begin() + i * feature_dim, feature_dim, row);
    order.resize(static_cast<size_t>(at[i + 1] - at[i]));
    for (size_t k = 0; k < order.size(); ++k) order[k] = at[i] + static_cast<int64_t>(k);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return eids[a] < eids[b]; });
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t k : order) {
      for (int64_t j = 0; j < width; ++j) sum[static_cast<size_t>(j)] += features[k * width + j];
    }
    const double c = static_cast<double>(order.size());
    for (int64_t j = 0; j < width; ++j) {
      row[feature_dim + j] = order.empty() ? 0.0f : static_cast<float>(sum[j] / c);
    }
  }
  return out;
}

void WriteStoredEdgeData(const std::string& dir, const std::vector<int64_t>& eids,
                         const std::vector<uint8_t>& reverse, const StoredEdgeData& data,
                         int64_t width, const OwnedEdgeData& owned, PartInfo* info) {
  auto record = [&](const std::string& name, WrittenFile f) {
    info->files[name] = PartFile{f.bytes, f.sha256};
  };
  const int64_t stored = static_cast<int64_t>(eids.size());
  if (width > 0) {
    record(kEdgeFeatFile,
           WriteNpy(dir + "/" + kEdgeFeatFile, data.features.data(), {stored, width}));
  }
  record(kOrigEidsFile, WriteNpy(dir + "/" + kOrigEidsFile, eids));
  if (!owned.labeled) return;
  // As WriteEdgeLabels: an added reverse is in no split, a labelled edge in
  // none is 4.
  std::vector<uint8_t> split(static_cast<size_t>(stored));
  for (size_t k = 0; k < split.size(); ++k) {
    const uint8_t s = data.split[k];
    split[k] = reverse[k] ? 0 : s == 0 ? 4 : s;
    if (split[k] >= 1 && split[k] <= 3) ++info->num_split_edges[split[k] - 1];
  }
  if (owned.kind == LabelKind::kClass) {
    std::vector<int64_t> labels(data.labels.begin(), data.labels.end());
    record(kEdgeLabelFile, WriteNpy(dir + "/" + kEdgeLabelFile, labels));
  } else {
    std::vector<float> values(data.labels.begin(), data.labels.end());
    record(kEdgeLabelFile, WriteNpy(dir + "/" + kEdgeLabelFile, values));
  }
  record(kEdgeSplitFile, WriteNpy(dir + "/" + kEdgeSplitFile, split));
}

int64_t FinishEdgeData(const PartitionOptions& o, const std::string& name, bool undirected,
                       const std::vector<int64_t>& at, const std::vector<int64_t>& eids,
                       const OwnedEdgeData& owned, bool say, Agreement& agree,
                       std::vector<float>* feat, int64_t* feature_dim, StoredEdgeData* stored) {
  const int64_t width = owned.width;
  bool derive = false;
  agree.Run("deriving node features",
            [&] { derive = NodeFeaturesFromEdgesWanted(o, name, *feature_dim, width, say); });
  if (derive) {
    *feat = AppendEdgeMeans(*feat, *feature_dim, at, eids, stored->features, width);
    if (say) SayNodeFeaturesFromEdges(o, name, *feature_dim, width, undirected);
    *feature_dim += width;
  }
  int64_t stored_width = width;
  if (!o.edge_weight.empty()) {
    int64_t col = -1;
    agree.Run("choosing edge weights",
              [&] { col = EdgeWeightColumn(o.edge_weight, name, width, owned.columns, say); });
    stored->features =
        EdgeWeights(stored->features.data(), static_cast<int64_t>(eids.size()), width, col);
    stored_width = 1;
  }
  if (owned.labeled && say) {
    DescribeEdgeLabels(o, name, owned.kind, owned.num_classes, owned.split_count);
  }
  return stored_width;
}

}  // namespace gnn
