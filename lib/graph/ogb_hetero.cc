#include "graph/ogb_hetero.h"

#include <filesystem>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/gzip.h"
#include "common/log.h"
#include "common/timer.h"
#include "graph/ogb_csv.h"

namespace gnn {

namespace {

namespace fs = std::filesystem;
using namespace ogb;

// Small text files (type lists) are read whole; anything larger is not one.
constexpr size_t kMaxSmallFile = 1 << 20;

std::string ReadSmallGz(const std::string& path) {
  std::string text;  // a missing file: ForEachGzipChunk says "cannot open PATH: REASON"
  ForEachGzipChunk(path, [&](const char* b, const char* e, int64_t) {
    text.append(b, e);
    if (text.size() > kMaxSmallFile) throw DataError(path + " is larger than 1 MiB");
  });
  return text;
}

// The comma-separated fields of each non-empty line.
std::vector<std::vector<std::string>> Rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> fields;
    std::istringstream l(line);
    std::string f;
    while (std::getline(l, f, ',')) {
      const size_t b = f.find_first_not_of(" \t"), e = f.find_last_not_of(" \t");
      fields.push_back(b == std::string::npos ? "" : f.substr(b, e - b + 1));
    }
    if (line.back() == ',') fields.push_back("");  // an empty last field is one too
    rows.push_back(fields);
  }
  return rows;
}

// A header of names over one row of values (num-node-dict, nodetype-has-*).
std::vector<std::pair<std::string, std::string>> HeaderRow(const std::string& path) {
  const auto rows = Rows(ReadSmallGz(path));
  if (rows.size() != 2 || rows[0].size() != rows[1].size() || rows[0].empty())
    throw DataError(path + ": expected a header line of node types and one line of values");
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < rows[0].size(); ++i) out.push_back({rows[0][i], rows[1][i]});
  return out;
}

int64_t ParseCount(const std::string& path, const std::string& type, const std::string& text) {
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw DataError(path + ": count of " + type + " is '" + text + "', not a positive integer");
}

bool ParseBool(const std::string& path, const std::string& text) {
  if (text == "True" || text == "true" || text == "1") return true;
  if (text == "False" || text == "false" || text == "0") return false;
  throw DataError(path + ": '" + text + "' is not True or False");
}

std::string RelationDir(const Relation& r) {
  return r.src_type + "___" + r.name + "___" + r.dst_type;
}

std::string TypeRow(const HeteroDataset& d, const std::function<std::string(const NodeType&)>& f) {
  std::string header, row;
  for (size_t i = 0; i < d.node_types.size(); ++i) {
    header += (i ? "," : "") + d.node_types[i].name;
    row += (i ? "," : "") + f(d.node_types[i]);
  }
  return header + "\n" + row + "\n";
}

}  // namespace

HeteroDataset ReadOgbHeteroFolder(const std::string& folder, const DatasetOptions& options) {
  Stopwatch watch;
  // Each relation's edge-feat.csv.gz is read; other edge data is refused
  // (or, with --ignore_edge_data, dropped with a warning, features too).
  RefuseEdgeData(folder, OgbEdgeDataFiles(folder, !options.ignore_edge_data),
                 options.ignore_edge_data, "which gnn does not carry for typed graphs yet");
  const fs::path root(folder), raw = root / "raw";
  HeteroDataset d;
  d.name = DatasetNameOf(folder);
  ParseContext ctx;
  const std::string dict = (raw / "num-node-dict.csv.gz").string();
  for (const auto& [type, count] : HeaderRow(dict)) {
    NodeType t;
    t.name = type;
    t.num_nodes = ParseCount(dict, type, count);
    d.node_types.push_back(std::move(t));
  }
  const std::string triplets = (raw / "triplet-type-list.csv.gz").string();
  for (const auto& row : Rows(ReadSmallGz(triplets))) {
    if (row.size() != 3) throw DataError(triplets + ": expected 'src,relation,dst' lines");
    Relation r;
    r.src_type = row[0];
    r.name = row[1];
    r.dst_type = row[2];
    const int s = d.TypeIndex(r.src_type), t = d.TypeIndex(r.dst_type);
    if (s < 0 || t < 0)
      throw DataError(triplets + ": relation " + r.Key() + " names a type not in " + dict);
    const fs::path dir = raw / "relations" / RelationDir(r);
    const std::string counts = (dir / "num-edge-list.csv.gz").string();
    const int64_t m = ReadCount(counts, &ctx);
    ReadIdPairs((dir / "edge.csv.gz").string(), d.node_types[static_cast<size_t>(s)].num_nodes,
                d.node_types[static_cast<size_t>(t)].num_nodes, m, &r.src, &r.dst, &ctx,
                "num-node-dict.csv.gz", counts);
    const fs::path feat = dir / kOgbEdgeFeatFile;
    std::error_code ec;
    if (!options.ignore_edge_data && fs::exists(feat, ec))
      r.edge_feature_dim =
          ReadFloatRows(feat.string(), m, &r.edge_features, &ctx, "edges", "num-edge-list.csv.gz");
    d.relations.push_back(std::move(r));
  }
  std::error_code ec;
  for (NodeType& t : d.node_types) {
    const fs::path feat = raw / "node-feat" / t.name / "node-feat.csv.gz";
    if (fs::exists(feat, ec))
      t.feature_dim = ReadFloatRows(feat.string(), t.num_nodes, &t.features, &ctx);
  }
  const std::string has_label = (raw / "nodetype-has-label.csv.gz").string();
  for (const auto& [type, flag] : HeaderRow(has_label)) {
    if (!ParseBool(has_label, flag) || !d.target.empty()) continue;
    const int t = d.TypeIndex(type);
    if (t < 0) throw DataError(has_label + ": " + type + " is not a node type");
    d.target = type;
    d.num_classes =
        ReadLabelColumn((raw / "node-label" / type / "node-label.csv.gz").string(),
                        d.node_types[static_cast<size_t>(t)].num_nodes, &d.labels, &ctx);
  }
  if (d.target.empty()) throw DataError(has_label + ": no node type has labels");
  const std::string split = ResolveSplit(folder, options.split);
  const fs::path sp = root / "split" / split / d.target;
  const int64_t n = d.node_types[static_cast<size_t>(d.TypeIndex(d.target))].num_nodes;
  d.train_idx = ReadIdList((sp / "train.csv.gz").string(), n, &ctx);
  d.valid_idx = ReadIdList((sp / "valid.csv.gz").string(), n, &ctx);
  d.test_idx = ReadIdList((sp / "test.csv.gz").string(), n, &ctx);
  d.Validate();
  GNN_LOG(kInfo) << "parsed raw files of " << d.name << " (split " << split << ") in "
                 << Fixed(watch.Seconds()) << " s: " << d.node_types.size() << " node types, "
                 << d.relations.size() << " relations, " << d.num_nodes() << " nodes, "
                 << d.num_edges() << " edges";
  return d;
}

void WriteOgbHeteroFolder(const HeteroDataset& d, const std::string& folder,
                          const std::string& split) {
  if (split.empty() || split.find('/') != std::string::npos || split == "." || split == "..") {
    throw DataError("bad split name '" + split + "' for " + folder);
  }
  d.Validate();
  const fs::path root(folder), raw = root / "raw", sp = root / "split" / split;
  MakeDirs(raw.string());
  MakeDirs((sp / d.target).string());
  WriteTextGz((raw / "num-node-dict.csv.gz").string(),
              TypeRow(d, [](const NodeType& t) { return std::to_string(t.num_nodes); }));
  std::string triplets;
  for (size_t i = 0; i < d.relations.size(); ++i) {
    const Relation& r = d.relations[i];
    triplets += r.src_type + "," + r.name + "," + r.dst_type + "\n";
    const fs::path dir = raw / "relations" / RelationDir(r);
    MakeDirs(dir.string());
    WriteTextGz((dir / "num-edge-list.csv.gz").string(), std::to_string(r.num_edges()) + "\n");
    WriteIdPairsGz((dir / "edge.csv.gz").string(), r.src, r.dst);
    WriteIdsGz((dir / "edge_reltype.csv.gz").string(),
               std::vector<int64_t>(r.src.size(), static_cast<int64_t>(i)));
    if (r.edge_feature_dim > 0) {
      WriteFloatRowsGz((dir / kOgbEdgeFeatFile).string(), r.edge_features, r.num_edges(),
                       r.edge_feature_dim);
    }
  }
  WriteTextGz((raw / "triplet-type-list.csv.gz").string(), triplets);
  for (const NodeType& t : d.node_types) {
    if (t.feature_dim == 0) continue;
    const fs::path dir = raw / "node-feat" / t.name;
    MakeDirs(dir.string());
    WriteFloatRowsGz((dir / "node-feat.csv.gz").string(), t.features, t.num_nodes, t.feature_dim);
  }
  auto is_target = [&](const NodeType& t) { return t.name == d.target ? "True" : "False"; };
  WriteTextGz((raw / "nodetype-has-label.csv.gz").string(), TypeRow(d, is_target));
  MakeDirs((raw / "node-label" / d.target).string());
  WriteLabelsGz((raw / "node-label" / d.target / "node-label.csv.gz").string(), d.labels);
  WriteTextGz((root / "split" / split / "nodetype-has-split.csv.gz").string(),
              TypeRow(d, is_target));
  WriteIdsGz((sp / d.target / "train.csv.gz").string(), d.train_idx);
  WriteIdsGz((sp / d.target / "valid.csv.gz").string(), d.valid_idx);
  WriteIdsGz((sp / d.target / "test.csv.gz").string(), d.test_idx);
}

}  // namespace gnn
