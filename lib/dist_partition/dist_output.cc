#include "dist_partition/dist_output.h"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "common/fs.h"
#include "common/npy.h"
#include "graph/csr.h"

namespace gnn {

namespace fs = std::filesystem;
using nlohmann::json;

PartInfo WriteReceivedPart(const std::string& tmp, int part, int64_t node_start, int64_t node_end,
                           std::vector<NodeRow>* rows_in, std::vector<int64_t>* indices,
                           std::vector<float>* feat, int64_t feature_dim,
                           std::vector<float>* label_rows, int64_t label_width) {
  std::vector<NodeRow>& rows = *rows_in;
  PartInfo info;
  info.dir = "part" + std::to_string(part);
  const std::string dir = tmp + "/" + info.dir;
  MakeDirs(dir);
  const int64_t owned = static_cast<int64_t>(rows.size());
  info.node_start = node_start;
  info.node_end = node_end;
  auto record = [&](const std::string& name, WrittenFile f) {
    info.files[name] = PartFile{f.bytes, f.sha256};
  };
  std::vector<int64_t> column(static_cast<size_t>(owned) + 1, 0);
  for (int64_t i = 0; i < owned; ++i) column[i + 1] = column[i] + rows[i].degree;
  record("indptr.npy", WriteNpy(dir + "/indptr.npy", column));
  record("indices.npy", WriteNpy(dir + "/indices.npy", *indices));
  FreeVector(*indices);
  record("feat.npy", WriteNpy(dir + "/feat.npy", feat->data(), {owned, feature_dim}));
  FreeVector(*feat);
  column.resize(static_cast<size_t>(owned));
  if (label_rows && label_width > 0) {
    record("label.npy", WriteNpy(dir + "/label.npy", label_rows->data(), {owned, label_width}));
    FreeVector(*label_rows);
  } else {
    for (int64_t i = 0; i < owned; ++i) column[i] = rows[i].label;
    record("label.npy", WriteNpy(dir + "/label.npy", column));
  }
  const char* mask_names[3] = {"train_mask.npy", "valid_mask.npy", "test_mask.npy"};
  int64_t* counts[3] = {&info.num_train, &info.num_valid, &info.num_test};
  for (int m = 0; m < 3; ++m) {
    std::vector<uint8_t> mask(static_cast<size_t>(owned));
    for (int64_t i = 0; i < owned; ++i) mask[i] = (rows[i].masks >> m) & 1;
    *counts[m] = std::count(mask.begin(), mask.end(), uint8_t{1});
    record(mask_names[m], WriteNpy(dir + "/" + mask_names[m], mask));
  }
  for (int64_t i = 0; i < owned; ++i) column[i] = rows[i].orig;
  record("orig_nids.npy", WriteNpy(dir + "/orig_nids.npy", column));
  info.edge_end = std::accumulate(rows.begin(), rows.end(), int64_t{0},
                                  [](int64_t s, const NodeRow& r) { return s + r.degree; });
  FreeVector(rows);
  return info;
}

namespace {

json PartInfoJson(const PartInfo& p) {
  json files = json::object();
  for (const auto& [name, f] : p.files) files[name] = {{"bytes", f.bytes}, {"sha256", f.sha256}};
  return {{"dir", p.dir},
          {"node_start", p.node_start},
          {"node_end", p.node_end},
          {"edges", p.edge_end},
          {"train", p.num_train},
          {"valid", p.num_valid},
          {"test", p.num_test},
          {"files", files},
          {"ntype_ranges", p.ntype_ranges},
          {"etype_edges", p.etype_edges},
          {"split_edges", {p.num_split_edges[0], p.num_split_edges[1], p.num_split_edges[2]}}};
}

PartInfo PartInfoFromJson(const json& j) {
  PartInfo p;
  p.dir = j.at("dir").get<std::string>();
  p.node_start = j.at("node_start").get<int64_t>();
  p.node_end = j.at("node_end").get<int64_t>();
  p.edge_end = j.at("edges").get<int64_t>();
  p.num_train = j.at("train").get<int64_t>();
  p.num_valid = j.at("valid").get<int64_t>();
  p.num_test = j.at("test").get<int64_t>();
  p.ntype_ranges = j.at("ntype_ranges").get<std::vector<std::pair<int64_t, int64_t>>>();
  p.etype_edges = j.at("etype_edges").get<std::vector<int64_t>>();
  const std::vector<int64_t> split = j.at("split_edges").get<std::vector<int64_t>>();
  std::copy(split.begin(), split.end(), p.num_split_edges);
  for (const auto& [name, f] : j.at("files").items()) {
    p.files[name] = PartFile{f.at("bytes").get<uint64_t>(), f.at("sha256").get<std::string>()};
  }
  return p;
}

}  // namespace

std::vector<PartInfo> GatherParts(MpiComm& comm, const PartInfo& mine) {
  const std::vector<std::string> infos =
      comm.AllgatherStrings(PartInfoJson(mine).dump(), "gathering the partitions");
  std::vector<PartInfo> parts;
  int64_t edge_start = 0;
  for (const std::string& text : infos) {
    PartInfo p = PartInfoFromJson(json::parse(text));
    p.edge_start = edge_start;
    p.edge_end += edge_start;
    edge_start = p.edge_end;
    parts.push_back(std::move(p));
  }
  return parts;
}

std::unique_ptr<TempOutput> AgreedTempOutput(MpiComm& comm, Agreement& agree,
                                             const std::string& output) {
  std::unique_ptr<TempOutput> tmp;
  agree.Run("writing the partition", [&] {
    if (comm.rank() == 0) tmp = std::make_unique<TempOutput>(AbsoluteOutput(output) + ".tmp.");
  });
  const std::string path = comm.AllgatherStrings(tmp ? tmp->path() : "", "naming the output")[0];
  agree.Run("writing the partition", [&] {
    if (comm.rank() != 0) tmp = std::make_unique<TempOutput>(path, TempOutput::Exact{});
  });
  return tmp;
}

void PublishOncePerFilesystem(MpiComm& comm, Agreement& agree, TempOutput& tmp,
                              const std::string& json_name, const std::string& config_text,
                              const std::string& output) {
  const int me = comm.rank();
  auto marker = [&](int rank) { return tmp.path() + "/.machine" + std::to_string(rank); };
  agree.Run("writing the partition config",
            [&] { WriteFileAtomic(marker(me), std::to_string(me) + "\n"); });
  bool publisher = true;
  for (int q = 0; q < me; ++q) {
    std::error_code ec;
    if (fs::exists(marker(q), ec)) publisher = false;
  }
  comm.Barrier("publishing");
  agree.Run("publishing the partitions", [&] {
    if (!publisher) return;
    for (int q = 0; q < comm.size(); ++q) RemoveAllQuietly(marker(q));
    WriteFileAtomic(tmp.path() + "/" + json_name, config_text);
    Publish(tmp, output);
  });
  tmp.Release();
}

}  // namespace gnn
