#include "dist_partition/dist_label_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "common/log.h"
#include "dist_partition/dist_exchange.h"
#include "graph/csr.h"
#include "graph/dataset.h"

namespace gnn {

LabelRows ReadLabelRows(MpiComm& comm, Agreement& agree, const ChunkedMeta& m,
                        const std::string& task, int c0, int c1, int64_t first_node,
                        std::vector<int64_t>* labels, int64_t* max_label) {
  const std::string what = m.dir + "/metadata.json: label";
  std::vector<double> values;
  int64_t width = -1;
  bool integral = true, binary = true;
  agree.Run("reading labels", [&] {
    for (int c = c0; c < c1; ++c) {
      int64_t w = 0;
      const std::vector<double> chunk = ReadChunkLabelRows(m, c, &w);
      if (width >= 0 && w != width) {
        throw DataError(what + " chunk " + std::to_string(c) + " has " + std::to_string(w) +
                        " columns, earlier chunks have " + std::to_string(width));
      }
      width = w;
      values.insert(values.end(), chunk.begin(), chunk.end());
    }
    for (size_t i = 0; i < values.size(); ++i) {
      const double v = values[i];
      if (!std::isfinite(v)) {
        throw DataError(what + ": node " +
                        std::to_string(first_node + static_cast<int64_t>(i) / width) +
                        " has label " + std::to_string(v) + ", not a finite number");
      }
      integral &= v == std::floor(v);
      binary &= v == 0.0 || v == 1.0;
    }
  });
  const std::vector<int64_t> agreed =
      comm.AllreduceMax({width, -width, integral ? 0 : 1, binary ? 0 : 1}, "reading labels");
  LabelRows out;
  agree.Run("reading labels", [&] {
    if (agreed[0] != -agreed[1]) {
      throw DataError(what + " chunks have " + std::to_string(-agreed[1]) + " and " +
                      std::to_string(agreed[0]) + " columns");
    }
    // As on one machine: the rows read as the data say (SetLabelRows),
    // then --task applied to them (ApplyLabelTask).
    const std::string chosen = ChunkedLabelTask(m, "auto");
    out.kind = ChooseLabelKind(chosen, width, agreed[2] == 0, agreed[3] == 0, what);
    out.width = width;
    if (comm.rank() == 0) {
      const std::string said = LabelKindLine(out.kind, width, chosen, what);
      if (!said.empty()) {
        GNN_LOG(kInfo) << said;
      }
    }
    if (out.kind != LabelKind::kClass) {
      if (task != "auto") out.kind = TaskOnLabelRows(out.kind, task, m.graph_name);
      out.rows.assign(values.begin(), values.end());
      return;
    }
    // One column of integers: class ids.
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] < -1 || values[i] >= static_cast<double>(std::numeric_limits<int32_t>::max())) {
        throw DataError(what + ": label " + std::to_string(values[i]) + " of node " +
                        std::to_string(first_node + static_cast<int64_t>(i)) +
                        " is not a class id");
      }
    }
    if (task == "multilabel" || task == "node_regression") {
      // Class ids made targets: every node needs one.
      for (size_t i = 0; i < values.size(); ++i) {
        if (values[i] < 0) {
          throw DataError(m.graph_name + ": node " +
                          std::to_string(first_node + static_cast<int64_t>(i)) +
                          " has no label (-1); --task " + task + " needs a value for every node");
        }
      }
      out.kind = ChooseLabelKind(task, 1, agreed[2] == 0, agreed[3] == 0, m.graph_name);
      out.rows.assign(values.begin(), values.end());
      return;
    }
    labels->resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      (*labels)[i] = static_cast<int64_t>(values[i]);
      *max_label = std::max(*max_label, (*labels)[i]);
    }
  });
  return out;
}

std::vector<float> MoveLabelRows(MpiComm& comm, const std::vector<int64_t>& nodes,
                                 const std::vector<int32_t>& part, size_t received,
                                 LabelRows* rows) {
  // Rows from rank q start where q's nodes of this partition start.
  std::vector<int64_t> ones(static_cast<size_t>(comm.size()), 1), unused;
  std::vector<int64_t> cursor =
      Offsets(comm.Alltoallv(nodes, ones, &unused, "exchanging label rows"));
  std::vector<float> out(received * static_cast<size_t>(rows->width));
  ExchangeFeatureRows(
      comm, rows->rows.data(), static_cast<int64_t>(part.size()), rows->width,
      [&](int64_t i) { return part[static_cast<size_t>(i)]; }, out.data(), &cursor);
  FreeVector(rows->rows);
  return out;
}

}  // namespace gnn
