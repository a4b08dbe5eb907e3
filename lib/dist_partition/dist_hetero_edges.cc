#include "dist_partition/dist_hetero_edges.h"

#include <algorithm>
#include <limits>

#include "common/error.h"
#include "common/fs.h"
#include "common/npy.h"
#include "graph/csr.h"

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

OwnedEdgeData ReadOwnedTypedEdgeFeatures(MpiComm& comm, Agreement& agree, const ChunkedMeta& m,
                                         int c0, int c1, const TypedEdgeIds& ids,
                                         std::vector<int64_t>* widths) {
  const size_t R = m.edge_types.size();
  const size_t me = static_cast<size_t>(comm.rank());
  // Each relation's chunks, as read (width -1: this rank read none).
  std::vector<std::vector<float>> rows(R);
  std::vector<int64_t> read(R, -1);
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
  return o;
}

void WriteTypedPartEdgeFeatures(MpiComm& comm, const TypedEdgeIds& ids, const OwnedEdgeData& owned,
                                const std::vector<int64_t>& tags, const std::vector<int64_t>& at,
                                const std::string& dir, PartInfo* info) {
  MakeDirs(dir);
  const int64_t stored = static_cast<int64_t>(tags.size());
  std::vector<int64_t> jobs(tags.size()), lines(tags.size());
  for (size_t k = 0; k < tags.size(); ++k) {
    jobs[k] = tags[k] >> 1;
    lines[k] = ids.Line(jobs[k]).second;
  }
  const WrittenFile eids = WriteNpy(dir + "/" + kOrigEidsFile, lines);
  FreeVector(lines);
  NpyWriter feats(dir + "/" + kEdgeFeatFile, DType::kFloat32, {stored, owned.width});
  StoredEdgeData unused;
  FetchEdgeData(
      comm, ids.ranges, owned, jobs, at, &unused,
      [&](int64_t b, int64_t e, const float* rows) { feats.Append(rows, (e - b) * owned.width); });
  info->files[kOrigEidsFile] = PartFile{eids.bytes, eids.sha256};
  const WrittenFile f = feats.Commit();
  info->files[kEdgeFeatFile] = PartFile{f.bytes, f.sha256};
}

}  // namespace gnn
