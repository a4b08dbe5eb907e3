#include "dist_partition/dist_edge_data.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <optional>

#include "common/error.h"
#include "common/fs.h"
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

}  // namespace

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

namespace {

// Round boundaries over the stored edges: whole nodes, each round about
// `step` edges (more when one node has more).
std::vector<int64_t> NodeRounds(const std::vector<int64_t>& at, int64_t step) {
  std::vector<int64_t> bounds = {0};
  const int64_t n = at.back();
  size_t node = 0;
  while (bounds.back() < n) {
    const int64_t limit = bounds.back() + step;
    size_t next =
        static_cast<size_t>(std::upper_bound(at.begin(), at.end(), limit) - at.begin()) - 1;
    while (next <= node || at[next] == bounds.back()) ++next;  // at least one edge further
    node = next;
    bounds.push_back(at[node]);
  }
  return bounds;
}

}  // namespace

void FetchEdgeData(MpiComm& comm, const Ranges& edge_ranges, const OwnedEdgeData& owned,
                   const std::vector<int64_t>& eids, const std::vector<int64_t>& at,
                   StoredEdgeData* stored, const EdgeRows& on_rows) {
  const size_t P = static_cast<size_t>(comm.size());
  const int64_t w = owned.width, n = static_cast<int64_t>(eids.size());
  const bool labeled = owned.labeled;
  if (labeled) {
    stored->labels.resize(static_cast<size_t>(n));
    stored->split.resize(static_cast<size_t>(n));
  }
  // A round holds its requests and replies about four times over (sent,
  // received, placed): a quarter of a slice each. Rounds are sized by the
  // asking rank; a rank that answers P ranks at once holds up to P times a
  // round's replies.
  const int64_t entry_bytes = 8 + w * 4 + (labeled ? 9 : 0);
  const std::vector<int64_t> bounds =
      NodeRounds(at, std::max<int64_t>(1, FeatureSliceBytes() / 4 / entry_bytes));
  const int64_t mine = static_cast<int64_t>(bounds.size()) - 1;
  const std::string what = "moving edge data";
  const int64_t rounds = comm.AllreduceMax(mine, what);
  std::vector<float> placed;
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t b = round < mine ? bounds[static_cast<size_t>(round)] : n;
    const int64_t e = round < mine ? bounds[static_cast<size_t>(round) + 1] : n;
    // This round's edges, grouped by the rank that read them.
    std::vector<int64_t> counts(P, 0);
    std::vector<int32_t> owner(static_cast<size_t>(e - b));
    for (int64_t k = b; k < e; ++k) {
      owner[static_cast<size_t>(k - b)] = edge_ranges.Owner(eids[k]);
      ++counts[static_cast<size_t>(owner[static_cast<size_t>(k - b)])];
    }
    std::vector<int64_t> next = Offsets(counts);
    std::vector<int64_t> ask(static_cast<size_t>(e - b)), place(static_cast<size_t>(e - b));
    for (int64_t k = b; k < e; ++k) {
      const size_t p = static_cast<size_t>(owner[static_cast<size_t>(k - b)]);
      ask[static_cast<size_t>(next[p])] = eids[k];
      place[static_cast<size_t>(next[p]++)] = k - b;
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
    placed.resize(static_cast<size_t>((e - b) * w));
    for (size_t i = 0; i < place.size(); ++i) {
      std::copy_n(got_rows.begin() + static_cast<int64_t>(i) * w, w, placed.begin() + place[i] * w);
    }
    on_rows(b, e, placed.data());
    if (!labeled) continue;
    const std::vector<double> got_labels = comm.Alltoallv(labels, asked_counts, &unused, what);
    const std::vector<uint8_t> got_split = comm.Alltoallv(split, asked_counts, &unused, what);
    for (size_t i = 0; i < place.size(); ++i) {
      stored->labels[static_cast<size_t>(b + place[i])] = got_labels[i];
      stored->split[static_cast<size_t>(b + place[i])] = got_split[i];
    }
  }
}

PartEdges PartEdgesFromTags(std::vector<int64_t> tags, const std::vector<int64_t>& degrees) {
  PartEdges edges;
  edges.eids = std::move(tags);
  edges.reverse.resize(edges.eids.size());
  for (size_t k = 0; k < edges.eids.size(); ++k) {
    edges.reverse[k] = static_cast<uint8_t>(edges.eids[k] & 1);
    edges.eids[k] >>= 1;
  }
  edges.at.assign(degrees.size() + 1, 0);
  for (size_t i = 0; i < degrees.size(); ++i) edges.at[i + 1] = edges.at[i] + degrees[i];
  return edges;
}

void PutEdgeMean(const int64_t* eids, const float* rows, int64_t count, int64_t width, float* out) {
  // Scratch kept between nodes (one node after another, on one thread).
  thread_local std::vector<int64_t> order;
  thread_local std::vector<double> sum;
  order.resize(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) order[static_cast<size_t>(k)] = k;
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return eids[a] < eids[b]; });
  sum.assign(static_cast<size_t>(width), 0.0);
  for (int64_t k : order) {
    for (int64_t j = 0; j < width; ++j) sum[static_cast<size_t>(j)] += rows[k * width + j];
  }
  for (int64_t j = 0; j < width; ++j) {
    out[j] = count == 0 ? 0.0f : static_cast<float>(sum[static_cast<size_t>(j)] / count);
  }
}

namespace {

// The edges' data other than their features: orig_eids.npy, and with an
// edge task edge_label.npy and edge_split.npy (as WriteEdgeLabels: an added
// reverse is in no split, a labelled edge in none is 4).
void WriteOtherEdgeFiles(const std::string& dir, const PartEdges& edges, const StoredEdgeData& data,
                         const OwnedEdgeData& owned, PartInfo* info) {
  auto record = [&](const std::string& name, WrittenFile f) {
    info->files[name] = PartFile{f.bytes, f.sha256};
  };
  record(kOrigEidsFile, WriteNpy(dir + "/" + kOrigEidsFile, edges.eids));
  if (!owned.labeled) return;
  std::vector<uint8_t> split(edges.eids.size());
  for (size_t k = 0; k < split.size(); ++k) {
    const uint8_t s = data.split[k];
    split[k] = edges.reverse[k] ? 0 : s == 0 ? 4 : s;
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

}  // namespace

int64_t WritePartEdgeData(MpiComm& comm, Agreement& agree, const PartitionOptions& o,
                          const std::string& name, bool undirected, const Ranges& edge_ranges,
                          const OwnedEdgeData& owned, const PartEdges& edges, bool say,
                          const std::string& dir, std::vector<float>* feat, int64_t* feature_dim,
                          PartInfo* info) {
  const int64_t width = owned.width, stored = static_cast<int64_t>(edges.eids.size());
  const int64_t nodes = static_cast<int64_t>(edges.at.size()) - 1;
  bool derive = false;
  int64_t col = -1;
  agree.Run("choosing node features and edge weights", [&] {
    derive = NodeFeaturesFromEdgesWanted(o, name, *feature_dim, width, say);
    if (!o.edge_weight.empty())
      col = EdgeWeightColumn(o.edge_weight, name, width, owned.columns, say);
  });
  const int64_t had = *feature_dim, dim = had + (derive ? width : 0);
  const int64_t stored_width = o.edge_weight.empty() ? width : 1;
  std::vector<float> out;
  std::optional<NpyWriter> writer;
  agree.Run("writing edge features", [&] {
    if (derive) {
      out.assign(static_cast<size_t>(nodes * dim), 0.0f);
      for (int64_t i = 0; i < nodes; ++i) {
        std::copy_n(feat->begin() + i * had, had, out.begin() + i * dim);
      }
    }
    MakeDirs(dir);
    if (stored_width > 0) {
      writer.emplace(dir + "/" + kEdgeFeatFile, DType::kFloat32,
                     std::vector<int64_t>{stored, stored_width});
    }
  });
  // Each round: its nodes' means, then its rows (or weights) to the file. A
  // failure waits for the rounds to end, then is agreed.
  std::exception_ptr failed;
  StoredEdgeData data;
  FetchEdgeData(comm, edge_ranges, owned, edges.eids, edges.at, &data,
                [&](int64_t b, int64_t e, const float* rows) {
                  if (failed || b == e) return;
                  try {
                    if (derive) {
                      auto i =
                          std::lower_bound(edges.at.begin(), edges.at.end(), b) - edges.at.begin();
                      for (; i < nodes && edges.at[i] < e; ++i) {
                        const int64_t k = edges.at[i], count = edges.at[i + 1] - k;
                        PutEdgeMean(edges.eids.data() + k, rows + (k - b) * width, count, width,
                                    out.data() + i * dim + had);
                      }
                    }
                    if (!o.edge_weight.empty()) {
                      const std::vector<float> w = EdgeWeights(rows, e - b, width, col);
                      writer->Append(w.data(), e - b);
                    } else if (writer) {
                      writer->Append(rows, (e - b) * width);
                    }
                  } catch (...) {
                    failed = std::current_exception();
                  }
                });
  agree.Run("writing edge features", [&] {
    if (failed) std::rethrow_exception(failed);
    if (writer) {
      const WrittenFile f = writer->Commit();
      info->files[kEdgeFeatFile] = PartFile{f.bytes, f.sha256};
    }
    WriteOtherEdgeFiles(dir, edges, data, owned, info);
  });
  if (derive) {
    *feat = std::move(out);
    *feature_dim = dim;
    if (say) SayNodeFeaturesFromEdges(o, name, had, width, undirected);
  }
  if (owned.labeled && say) {
    DescribeEdgeLabels(o, name, owned.kind, owned.num_classes, owned.split_count);
  }
  return stored_width;
}

}  // namespace gnn
