#include "dist_partition/dist_exchange.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "common/error.h"
#include "common/parallel.h"
#include "common/random.h"
#include "partition/assign.h"

namespace gnn {

using nlohmann::json;

std::vector<int64_t> Offsets(const std::vector<int64_t>& counts) {
  std::vector<int64_t> at(counts.size() + 1, 0);
  for (size_t p = 0; p < counts.size(); ++p) at[p + 1] = at[p] + counts[p];
  return at;
}

std::vector<int64_t> AskOwners(MpiComm& comm, const Ranges& ranges, const std::vector<int64_t>& ids,
                               const std::function<int64_t(int64_t)>& answer,
                               const std::string& what) {
  const int me = comm.rank();
  const int64_t lo = ranges.start[static_cast<size_t>(me)];
  std::vector<int64_t> ask(static_cast<size_t>(comm.size()), 0);
  for (int64_t g : ids) ++ask[static_cast<size_t>(ranges.Owner(g))];
  std::vector<int64_t> asked_counts, back;
  std::vector<int64_t> asked = comm.Alltoallv(ids, ask, &asked_counts, what);
  for (int64_t& g : asked) g = answer(g - lo);
  return comm.Alltoallv(asked, asked_counts, &back, what);
}

int64_t ReadLabelsAndMasks(const ChunkedMeta& m, size_t type, int c0, int c1,
                           std::vector<int64_t>* labels, std::vector<uint8_t>* masks) {
  int64_t max_label = -1;
  for (int c = c0; c < c1; ++c) {
    int64_t width = 0;
    const int64_t count = m.nodes_per_chunk[type][static_cast<size_t>(c)];
    if (labels) {
      std::vector<int64_t> l = ReadChunkNodeData<int64_t>(m, type, "label", c, &width);
      if (width != 1)
        throw DataError(m.dir + ": label chunk " + std::to_string(c) +
                        " is not one label per node");
      for (int64_t x : l) {
        if (x < -1 || x >= (int64_t{1} << 31)) {
          throw DataError(m.dir + ": label " + std::to_string(x) + " in chunk " +
                          std::to_string(c) + " is not a class");
        }
        max_label = std::max(max_label, x);
      }
      labels->insert(labels->end(), l.begin(), l.end());
    }
    const size_t at = masks->size();
    masks->resize(at + static_cast<size_t>(count), 0);
    for (int s = 0; s < 3; ++s) {
      const std::vector<uint8_t> mask =
          ReadChunkNodeData<uint8_t>(m, type, kChunkSplitNames[s], c, &width);
      if (width != 1 || static_cast<int64_t>(mask.size()) != count) {
        throw DataError(m.dir + ": " + kChunkSplitNames[s] + " chunk " + std::to_string(c) +
                        " is not one value per node");
      }
      for (size_t i = 0; i < mask.size(); ++i) {
        if (mask[i]) (*masks)[at + i] |= static_cast<uint8_t>(1 << s);
      }
    }
  }
  return max_label;
}

void SortRows(Csr* csr, bool dedup, int threads) {
  const int64_t local = static_cast<int64_t>(csr->indptr.size()) - 1;
  std::vector<int64_t> kept(static_cast<size_t>(local));
  ParallelFor(local, threads, [&](int64_t b, int64_t e) {
    for (int64_t v = b; v < e; ++v) {
      auto first = csr->indices.begin() + csr->indptr[v];
      auto last = csr->indices.begin() + csr->indptr[v + 1];
      std::sort(first, last);
      kept[static_cast<size_t>(v)] = (dedup ? std::unique(first, last) : last) - first;
    }
  });
  if (!dedup) return;
  int64_t out = 0;
  for (int64_t v = 0; v < local; ++v) {
    const int64_t start = csr->indptr[v];
    std::copy_n(csr->indices.begin() + start, kept[static_cast<size_t>(v)],
                csr->indices.begin() + out);
    csr->indptr[v] = out;
    out += kept[static_cast<size_t>(v)];
  }
  csr->indptr[local] = out;
  csr->indices.resize(static_cast<size_t>(out));
  csr->indices.shrink_to_fit();
}

int64_t SortRowsWithTags(Csr* csr, std::vector<int64_t>* tags, int threads) {
  const int64_t local = static_cast<int64_t>(csr->indptr.size()) - 1;
  std::atomic<int64_t> repeats{0};
  ParallelFor(local, threads, [&](int64_t b, int64_t e) {
    std::vector<std::pair<int64_t, int64_t>> row;
    int64_t same = 0;
    for (int64_t v = b; v < e; ++v) {
      const int64_t lo = csr->indptr[v], hi = csr->indptr[v + 1];
      row.clear();
      for (int64_t k = lo; k < hi; ++k) row.emplace_back(csr->indices[k], (*tags)[k]);
      std::sort(row.begin(), row.end());
      for (int64_t k = lo; k < hi; ++k) {
        csr->indices[k] = row[static_cast<size_t>(k - lo)].first;
        (*tags)[k] = row[static_cast<size_t>(k - lo)].second;
        same += k > lo && csr->indices[k] == csr->indices[k - 1];
      }
    }
    repeats += same;
  });
  return repeats.load();
}

Csr Sparsify(MpiComm& comm, const Ranges& ranges, int64_t lo, const Csr& sym,
             const std::vector<int64_t>& remote, int64_t cap, uint64_t seed) {
  const int64_t local = static_cast<int64_t>(sym.indptr.size()) - 1, hi = lo + local;
  const std::vector<int64_t> remote_degree = AskOwners(
      comm, ranges, remote, [&](int64_t v) { return sym.Degree(v); }, "sparsifying");
  auto degree = [&](int64_t g) {
    if (g >= lo && g < hi) return sym.Degree(g - lo);
    return remote_degree[static_cast<size_t>(std::lower_bound(remote.begin(), remote.end(), g) -
                                             remote.begin())];
  };
  Csr out;
  out.indptr.assign(static_cast<size_t>(local) + 1, 0);
  for (int64_t v = 0; v < local; ++v) {
    const int64_t a = lo + v, da = sym.Degree(v);
    for (int64_t k = sym.indptr[v]; k < sym.indptr[v + 1]; ++k) {
      const int64_t b = sym.indices[k];
      if (KeepSparsifiedEdge(a, b, da, degree(b), cap, seed)) out.indices.push_back(b);
    }
    out.indptr[v + 1] = out.num_entries();
  }
  out.indices.shrink_to_fit();
  return out;
}

int64_t FeatureSliceBytes() {
  const char* v = std::getenv("GNN_FEATURE_SLICE_BYTES");
  const int64_t bytes = v ? std::atoll(v) : 0;
  return bytes > 0 ? bytes : int64_t{256} << 20;
}

void ExchangeFeatureRows(MpiComm& comm, const float* rows, int64_t count, int64_t dim,
                         const std::function<int(int64_t)>& dest, float* out,
                         std::vector<int64_t>* cursor) {
  // The rows move in slices, so a round holds one chunk and two slices
  // whatever the chunk's size.
  const int P = comm.size();
  const int64_t slice = std::max<int64_t>(1, FeatureSliceBytes() / std::max<int64_t>(1, dim * 4));
  const int64_t slices = comm.AllreduceMax((count + slice - 1) / slice, "exchanging features");
  for (int64_t k = 0; k < slices; ++k) {
    const int64_t b = std::min(count, k * slice), e = std::min(count, (k + 1) * slice);
    std::vector<int64_t> counts(static_cast<size_t>(P), 0);
    for (int64_t i = b; i < e; ++i) counts[static_cast<size_t>(dest(i))] += dim;
    std::vector<int64_t> at = Offsets(counts);
    std::vector<float> send(static_cast<size_t>((e - b) * dim));
    for (int64_t i = b; i < e; ++i) {
      const size_t p = static_cast<size_t>(dest(i));
      std::copy_n(rows + i * dim, dim, send.begin() + at[p]);
      at[p] += dim;
    }
    std::vector<int64_t> got_counts;
    const std::vector<float> got = comm.Alltoallv(send, counts, &got_counts, "exchanging features");
    size_t g = 0;
    for (int q = 0; q < P; ++q) {
      std::copy_n(got.begin() + static_cast<int64_t>(g), got_counts[static_cast<size_t>(q)],
                  out + (*cursor)[static_cast<size_t>(q)] * dim);
      (*cursor)[static_cast<size_t>(q)] +=
          got_counts[static_cast<size_t>(q)] / std::max<int64_t>(1, dim);
      g += static_cast<size_t>(got_counts[static_cast<size_t>(q)]);
    }
  }
}

namespace {

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

}  // namespace

void AddMachinesReport(MpiComm& comm, const StageTimer& timer, json* report) {
  const std::vector<std::string> machines =
      comm.AllgatherStrings(json{{"host", HostName()},
                                 {"peak_rss_bytes", PeakRssBytes()},
                                 {"seconds", timer.Total()},
                                 {"bytes_sent", comm.bytes_sent()}}
                                .dump(),
                            "gathering the report");
  (*report)["machines"] = json::array();
  long long peak = 0;
  for (const std::string& m : machines) {
    (*report)["machines"].push_back(json::parse(m));
    peak = std::max(peak, (*report)["machines"].back().at("peak_rss_bytes").get<long long>());
  }
  (*report)["peak_rss_bytes"] = peak;
}

}  // namespace gnn
