#include "dist_partition/dist_hetero_edges.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "common/error.h"
#include "common/fs.h"
#include "common/npy.h"
#include "graph/csr.h"
#include "partition/partition_util.h"

namespace gnn {

TypedEdgeIds MakeTypedEdgeIds(const ChunkedMeta& m, int ranks) {
  const size_t R = m.edge_types.size();
  TypedEdgeIds ids;
  ids.ranges.start.assign(1, 0);
  std::vector<int64_t> line(R, 0);  // each relation's next line
  for (int q = 0; q < ranks; ++q) {
    const int c0 = static_cast<int>(int64_t{q} * m.num_chunks / ranks);
    const int c1 = static_cast<int>(int64_t{q + 1} * m.num_chunks / ranks);
    std::vector<int64_t> within(1, 0), first;
    for (size_t e = 0; e < R; ++e) {
      first.push_back(line[e]);
      int64_t count = 0;
      for (int c = c0; c < c1; ++c) count += m.edges_per_chunk[e][static_cast<size_t>(c)];
      line[e] += count;
      within.push_back(within.back() + count);
    }
    ids.ranges.start.push_back(ids.ranges.start.back() + within.back());
    ids.within.push_back(std::move(within));
    ids.line0.push_back(std::move(first));
  }
  return ids;
}

std::pair<size_t, int64_t> TypedEdgeIds::Line(int64_t j) const {
  const size_t q = static_cast<size_t>(ranges.Owner(j));
  const int64_t k = j - ranges.start[q];
  const std::vector<int64_t>& w = within[q];
  const size_t e = static_cast<size_t>(std::upper_bound(w.begin(), w.end(), k) - w.begin()) - 1;
  return {e, line0[q][e] + k - w[e]};
}

OwnedEdgeData ReadOwnedTypedEdgeData(MpiComm& comm, Agreement& agree, const ChunkedMeta& m, int c0,
                                     int c1, const TypedEdgeIds& ids,
                                     std::vector<int64_t>* widths) {
  const size_t R = m.edge_types.size();
  const size_t me = static_cast<size_t>(comm.rank());
  const int labelled = TypedEdgeLabelRelation(m);
  // Each relation's chunks, as read (width -1: this rank read none), and
  // the labelled relation's labels and split.
  std::vector<std::vector<float>> rows(R);
  std::vector<int64_t> read(R, -1);
  std::vector<double> labels;
  std::vector<uint8_t> split;
  bool integral = true;
  agree.Run("reading edge data", [&] {
    for (size_t e = 0; e < R; ++e) {
      if (m.edge_data_files[e].empty()) continue;
      EdgeDataChunk first;
      int64_t line = ids.line0[me][e];
      for (int c = c0; c < c1; ++c) {
        EdgeDataChunk chunk = ReadEdgeDataChunk(m, e, c, line, c == c0 ? nullptr : &first);
        line += chunk.edges;
        if (c == c0) {
          first.columns = chunk.columns;
          first.width = chunk.width;
          read[e] = chunk.width;
        }
        rows[e].insert(rows[e].end(), chunk.features.begin(), chunk.features.end());
        if (!chunk.labeled) continue;
        labels.insert(labels.end(), chunk.labels.begin(), chunk.labels.end());
        split.insert(split.end(), chunk.split.begin(), chunk.split.end());
        integral = integral && chunk.integral;
      }
    }
  });
  // Every reader of a relation read the same width; a rank that read none
  // takes theirs.
  std::vector<int64_t> both(2 * R);
  for (size_t e = 0; e < R; ++e) {
    both[e] = read[e];
    both[R + e] = read[e] < 0 ? std::numeric_limits<int64_t>::min() / 2 : -read[e];
  }
  both = comm.AllreduceMax(both, "agreeing on edge data");
  agree.Run("agreeing on edge data", [&] {
    for (size_t e = 0; e < R; ++e) {
      if (both[e] >= 0 && both[e] != -both[R + e]) {
        throw DataError(m.dir + "/metadata.json: edge_data of " + m.edge_types[e] + " has " +
                        std::to_string(-both[R + e]) + " columns on one machine and " +
                        std::to_string(both[e]) + " on another");
      }
    }
  });
  widths->assign(R, 0);
  int64_t widest = 0;
  for (size_t e = 0; e < R; ++e) {
    (*widths)[e] = std::max<int64_t>(0, both[e]);
    widest = std::max(widest, (*widths)[e]);
  }
  OwnedEdgeData o;
  o.first = ids.ranges.start[me];
  o.count = ids.ranges.start[me + 1] - o.first;
  o.width = widest;
  o.features.assign(static_cast<size_t>(o.count * widest), 0.0f);
  for (size_t e = 0; e < R; ++e) {
    const int64_t w = (*widths)[e], at = ids.within[me][e];
    const int64_t count = ids.within[me][e + 1] - at;
    if (w == 0) continue;
    for (int64_t k = 0; k < count; ++k) {
      std::copy_n(rows[e].begin() + k * w, w, o.features.begin() + (at + k) * widest);
    }
    FreeVector(rows[e]);
  }
  if (labelled < 0) return o;
  // The labelled relation's labels and split at its edges' places; every
  // other edge is in no split.
  o.labeled = true;
  o.labels.assign(static_cast<size_t>(o.count), 0.0);
  o.split.assign(static_cast<size_t>(o.count), 0);
  const size_t l = static_cast<size_t>(labelled);
  std::copy(labels.begin(), labels.end(), o.labels.begin() + ids.within[me][l]);
  std::copy(split.begin(), split.end(), o.split.begin() + ids.within[me][l]);
  AgreeLabels(comm, agree, m, integral, &o);
  return o;
}

void DescribeTypedEdgeData(const PartitionOptions& o, const ChunkedMeta& m,
                           const OwnedEdgeData& owned, const std::vector<int64_t>& widths,
                           int labelled, bool say, HeteroDataset* shape) {
  const size_t R = m.edge_types.size();
  for (size_t r = 0; r < shape->relations.size(); ++r) {
    shape->relations[r].edge_feature_dim = widths[r % R];  // a reverse relation's are its edges'
  }
  if (!owned.labeled) return;
  HeteroDataset::EdgeLabels& e = shape->edge_task;
  e.relation = labelled;
  e.kind = owned.kind;
  e.num_classes = owned.num_classes;
  if (say) {
    DescribeEdgeLabels(o, m.graph_name + " " + m.edge_types[static_cast<size_t>(labelled)], e.kind,
                       e.num_classes, owned.split_count);
  }
}

void WriteTypedPartEdgeData(MpiComm& comm, const TypedEdgeIds& ids, const OwnedEdgeData& owned,
                            int labelled, const std::vector<int64_t>& tags,
                            const std::vector<int64_t>& at, const std::string& dir,
                            PartInfo* info) {
  MakeDirs(dir);
  const int64_t stored = static_cast<int64_t>(tags.size());
  std::vector<int64_t> jobs(tags.size()), lines(tags.size());
  // The labelled relation's own edges (not an added reverse's).
  std::vector<uint8_t> mine(owned.labeled ? tags.size() : 0);
  for (size_t k = 0; k < tags.size(); ++k) {
    jobs[k] = tags[k] >> 1;
    const auto [relation, line] = ids.Line(jobs[k]);
    lines[k] = line;
    if (owned.labeled) mine[k] = (tags[k] & 1) == 0 && static_cast<int>(relation) == labelled;
  }
  auto record = [&](const char* name, const WrittenFile& f) {
    info->files[name] = PartFile{f.bytes, f.sha256};
  };
  record(kOrigEidsFile, WriteNpy(dir + "/" + kOrigEidsFile, lines));
  FreeVector(lines);
  std::optional<NpyWriter> feats;
  if (owned.width > 0) {
    feats.emplace(dir + "/" + kEdgeFeatFile, DType::kFloat32,
                  std::vector<int64_t>{stored, owned.width});
  }
  StoredEdgeData data;
  FetchEdgeData(comm, ids.ranges, owned, jobs, at, &data,
                [&](int64_t b, int64_t e, const float* rows) {
                  if (feats) feats->Append(rows, (e - b) * owned.width);
                });
  if (feats) record(kEdgeFeatFile, feats->Commit());
  if (!owned.labeled) return;
  // As the single machine writes them: class -1 or value 0 and split 0 off
  // the labelled relation, 4 on its edges in no split.
  std::vector<uint8_t> split(tags.size());
  std::vector<int64_t> classes;
  std::vector<float> values;
  for (size_t k = 0; k < tags.size(); ++k) {
    const uint8_t s = data.split[k];
    split[k] = !mine[k] ? 0 : s == 0 ? 4 : s;
    if (split[k] >= 1 && split[k] <= 3) ++info->num_split_edges[split[k] - 1];
    if (owned.kind == LabelKind::kClass) {
      classes.push_back(mine[k] ? static_cast<int64_t>(data.labels[k]) : -1);
    } else {
      values.push_back(mine[k] ? static_cast<float>(data.labels[k]) : 0.0f);
    }
  }
  record(kEdgeLabelFile, owned.kind == LabelKind::kClass
                             ? WriteNpy(dir + "/" + kEdgeLabelFile, classes)
                             : WriteNpy(dir + "/" + kEdgeLabelFile, values));
  record(kEdgeSplitFile, WriteNpy(dir + "/" + kEdgeSplitFile, split));
}

}  // namespace gnn
