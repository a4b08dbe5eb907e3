// gnn-partition and gnn-dataset from the plain files a user has (an edge
// list CSV with a header, float64 features, int32 labels, splits as id
// lists, a text file and a mask, the user's own node ids), and every
// problem with them as one error line naming the file and the fix.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/npy.h"
#include "common/npz.h"
#include "common/sparse_rows.h"
#include "partition/config.h"
#include "partition/local_partition.h"
#include "process_util.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::Bin;
using test::ExpectOneLine;
using test::RunProcess;

namespace {

constexpr int kNodes = 60;
int64_t UserId(int row) { return 1000 + 7 * row; }  // the user's ids: not 0..N-1

template <typename T>
void Write(const std::string& path, DType dtype, const std::vector<T>& v,
           std::vector<int64_t> shape) {
  NpyWriter w(path, dtype, std::move(shape));
  w.Append(v.data(), static_cast<int64_t>(v.size()));
  w.Commit();
}

// The files of a 60-node graph in the user's ids.
struct Files {
  test::TempDir dir;
  std::vector<std::string> flags;
  Files() {
    std::ofstream edges(dir / "edges.csv");
    edges << "src,dst,weight\n";
    for (int v = 0; v < kNodes; ++v) {
      for (int k : {1, 5}) edges << UserId(v) << "," << UserId((v + k) % kNodes) << ",0.5\n";
    }
    std::vector<double> feat;
    std::vector<int32_t> labels;
    std::vector<int64_t> ids, train;
    std::vector<uint8_t> test_mask(kNodes, 0);
    std::ofstream valid(dir / "valid.txt");
    for (int v = 0; v < kNodes; ++v) {
      for (int f = 0; f < 3; ++f) feat.push_back(v * 0.5 + f);
      labels.push_back(v % 4);
      ids.push_back(UserId(v));
      if (v % 3 == 0) train.push_back(UserId(v));
      if (v % 3 == 1) valid << UserId(v) << "\n";
      if (v % 3 == 2) test_mask[static_cast<size_t>(v)] = 1;
    }
    Write(dir / "feat.npy", DType::kFloat64, feat, {kNodes, 3});
    Write(dir / "labels.npy", DType::kInt32, labels, {kNodes});
    Write(dir / "ids.npy", DType::kInt64, ids, {kNodes});
    Write(dir / "train.npy", DType::kInt64, train, {static_cast<int64_t>(train.size())});
    Write(dir / "test.npy", DType::kUInt8, test_mask, {kNodes});
    flags = {"--edges",     dir / "edges.csv",  "--node_feat",  dir / "feat.npy",
             "--labels",    dir / "labels.npy", "--node_ids",   dir / "ids.npy",
             "--train_ids", dir / "train.npy",  "--valid_ids",  dir / "valid.txt",
             "--test_ids",  dir / "test.npy",   "--graph_name", "mine"};
  }
  test::ProcessResult Run(const std::string& binary, std::vector<std::string> extra) const {
    std::vector<std::string> argv = {Bin(binary), "--quiet"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunProcess(argv, 120);
  }
};

}  // namespace

TEST_CASE("gnn-partition and gnn-dataset take plain files in place of --dataset", "[e2e]") {
  Files f;
  // The weight column is the edges' feature (edge_data_test.cc), unless
  // --ignore_edge_data drops it.
  auto carried = f.Run("gnn-partition", {"--num_parts", "1", "--output", f.dir / "carried"});
  INFO(carried.err);
  REQUIRE(carried.exit_code == 0);
  CHECK(json::parse(test::ReadFileOrEmpty(f.dir / "carried/mine.json")).at("edge_feature_dim") ==
        1);

  auto r = f.Run("gnn-partition", {"--num_parts", "2", "--output", f.dir / "out", "--edge_columns",
                                   "src,dst", "--ignore_edge_data", "--undirected"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json c = json::parse(test::ReadFileOrEmpty(f.dir / "out/mine.json"));
  CHECK(c.at("num_nodes") == kNodes);
  CHECK(c.at("num_edges") == 2 * 2 * kNodes);  // both ways
  CHECK(c.at("feature_dim") == 3);
  CHECK(c.at("num_classes") == 4);
  int64_t train = 0, valid = 0, test_n = 0;
  for (int p = 0; p < 2; ++p) {
    const json& part = c.at("part-" + std::to_string(p));
    train += part.at("num_train").get<int64_t>();
    valid += part.at("num_valid").get<int64_t>();
    test_n += part.at("num_test").get<int64_t>();
    // Rows are the input's rows (the node_ids file's order), features float32.
    const std::string dir = f.dir / ("out/part" + std::to_string(p));
    const std::vector<int64_t> orig = ReadNpy<int64_t>(dir + "/orig_nids.npy");
    std::vector<int64_t> shape;
    const std::vector<float> feat = ReadNpy<float>(dir + "/feat.npy", {}, &shape);
    REQUIRE(shape == std::vector<int64_t>{static_cast<int64_t>(orig.size()), 3});
    for (size_t i = 0; i < orig.size(); ++i) CHECK(feat[i * 3 + 2] == orig[i] * 0.5f + 2);
  }
  CHECK(train == kNodes / 3);
  CHECK(valid == kNodes / 3);
  CHECK(test_n == kNodes / 3);

  // The same flags write DGL's chunked format, which partitions alike.
  r = f.Run("gnn-dataset", {"--write_chunked", "2", "--output", f.dir / "chunks", "--edge_columns",
                            "0,1", "--ignore_edge_data"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("names nodes by their row") == std::string::npos);  // the ids go along
  auto p = RunProcess({Bin("gnn-partition"), "--quiet", "--dataset", f.dir / "chunks",
                       "--num_parts", "2", "--output", f.dir / "from-chunks"});
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  const json fc = json::parse(test::ReadFileOrEmpty(f.dir / "from-chunks/mine.json"));
  CHECK(fc.at("num_nodes") == kNodes);
  CHECK(fc.at("user_node_ids") == true);
  // Each partition's node_ids.npy: the user's id of the row orig_nids names.
  for (int q = 0; q < 2; ++q) {
    const std::string dir = f.dir / ("from-chunks/part" + std::to_string(q));
    const std::vector<int64_t> orig = ReadNpy<int64_t>(dir + "/orig_nids.npy");
    const std::vector<int64_t> user = ReadNpy<int64_t>(dir + "/node_ids.npy");
    REQUIRE(user.size() == orig.size());
    for (size_t i = 0; i < orig.size(); ++i) CHECK(user[i] == UserId(static_cast<int>(orig[i])));
  }
  // Repeated ids in the chunks are one line.
  std::vector<int64_t> twice(kNodes / 2, 7);
  Write(f.dir / "chunks/node_data/_N/node_ids-0.npy", DType::kInt64, twice, {kNodes / 2});
  ExpectOneLine(RunProcess({Bin("gnn-partition"), "--quiet", "--dataset", f.dir / "chunks",
                            "--num_parts", "1", "--output", f.dir / "dup"}),
                "gnn-partition", "node_data _N.node_ids names node 7 twice");
}

TEST_CASE("plain files: every problem is one line naming the file and the fix", "[e2e]") {
  Files f;
  auto part = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--num_parts", "1", "--output", f.dir / "o", "--ignore_edge_data"});
    return f.Run("gnn-partition", extra);
  };
  // Float labels with a NaN, multi-label that is not 0/1, rows that do not agree.
  std::vector<float> nan_labels(kNodes, 1.5f);
  nan_labels[3] = std::nanf("");
  Write(f.dir / "flabels.npy", DType::kFloat32, nan_labels, {kNodes});
  ExpectOneLine(part({"--labels", f.dir / "flabels.npy"}), "gnn-partition",
                "node 3 has label nan, not a finite number");
  Write(f.dir / "mlabels.npy", DType::kInt64, std::vector<int64_t>(2 * kNodes, 2), {kNodes, 2});
  ExpectOneLine(part({"--labels", f.dir / "mlabels.npy", "--task", "multilabel"}), "gnn-partition",
                "--task multilabel does not fit its regression labels");
  Write(f.dir / "short.npy", DType::kInt64, std::vector<int64_t>(5, 1), {5});
  ExpectOneLine(part({"--labels", f.dir / "short.npy"}), "gnn-partition",
                "5 rows; --node_feat " + (f.dir / "feat.npy") + " has 60");
  // An edge naming an id that is not one of the user's.
  std::ofstream(f.dir / "bad_edges.csv") << "a\tb\n1000\t1007\n1000\t999\n";
  ExpectOneLine(part({"--edges", f.dir / "bad_edges.csv"}), "gnn-partition",
                "bad_edges.csv:3: node 999 is not in --node_ids");
  std::ofstream(f.dir / "text_edges.csv") << "1000,1007\n1000,x\n";
  ExpectOneLine(part({"--edges", f.dir / "text_edges.csv"}), "gnn-partition",
                "text_edges.csv:2: 'x' is not an integer node id");
  ExpectOneLine(part({"--edge_columns", "from,to"}), "gnn-partition", "has no column 'from'");
  // String ids saved by NumPy ('<U4'): numbered first, the line says.
  {
    std::string head = "{'descr': '<U4', 'fortran_order': False, 'shape': (2,), }";
    head.resize(64 - 10 - 1, ' ');
    head += '\n';
    std::string npy = std::string("\x93NUMPY\x01\x00", 8);
    npy += static_cast<char>(head.size());
    npy += '\0';
    npy += head + std::string(2 * 4 * 4, '\0');
    std::ofstream(f.dir / "str_ids.npy", std::ios::binary) << npy;
    ExpectOneLine(part({"--node_ids", f.dir / "str_ids.npy"}), "gnn-partition",
                  "(node ids are int64: number string ids first)");
  }
  // Without --node_ids the ids are rows.
  auto no_ids = Files();
  std::vector<std::string> flags = no_ids.flags;
  flags.erase(std::find(flags.begin(), flags.end(), "--node_ids"),
              std::find(flags.begin(), flags.end(), "--node_ids") + 2);
  flags.insert(flags.begin(), {Bin("gnn-partition"), "--quiet", "--num_parts", "1", "--output",
                               no_ids.dir / "o", "--ignore_edge_data"});
  ExpectOneLine(RunProcess(flags), "gnn-partition",
                "node 1000 is out of range: --node_feat has 60 rows");
  // Flags.
  ExpectOneLine(part({"--dataset", "synthetic:tiny"}), "gnn-partition", "give one of them");
  ExpectOneLine(
      RunProcess({Bin("gnn-partition"), "--edges", f.dir / "edges.csv", "--num_parts", "1"}),
      "gnn-partition", "--node_feat FILE.npy");
  std::ofstream(f.dir / "feat.npz") << "PK";
  ExpectOneLine(part({"--node_feat", f.dir / "feat.npz"}), "gnn-partition", "not a .npz");
  CHECK_FALSE(std::filesystem::exists(f.dir / "o"));
}

TEST_CASE("plain files: features as .npz, dense or SciPy sparse, partition as the .npy does",
          "[e2e]") {
  // numpy writes the archives (np.savez, np.savez_compressed) and SciPy its
  // sparse matrices (scipy.sparse.save_npz: csr and csc deflated, coo
  // stored), from the same float64 matrix as feat.npy; then malformed ones.
  REQUIRE(RunProcess({"/usr/bin/python3", "-c", "import numpy, scipy.sparse"}).exit_code == 0);
  Files f;
  const std::string script = R"(
import io, sys, zipfile, numpy as np, scipy.sparse as sp
d = sys.argv[1]
m = np.load(d + '/feat.npy')
m[::4, 1] = 0  # some zeros, so the sparse forms leave entries out
np.save(d + '/feat.npy', m)
np.savez_compressed(d + '/dense.npz', m)
sp.save_npz(d + '/csr.npz', sp.csr_matrix(m))
sp.save_npz(d + '/csc.npz', sp.csc_matrix(m))
sp.save_npz(d + '/coo.npz', sp.coo_matrix(m), compressed=False)
def npz(path, arrays):
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        for name, a in arrays.items():
            b = io.BytesIO(); np.save(b, a); z.writestr(name + '.npy', b.getvalue())
c = sp.csr_matrix(m)
bad = c.indices.copy(); bad[5] = 3
npz(d + '/bad_index.npz', dict(format=np.array(b'csr'), shape=np.array([60, 3]), indptr=c.indptr, indices=bad, data=c.data))
npz(d + '/bad_ptr.npz', dict(format=np.array(b'csr'), shape=np.array([60, 3]), indptr=c.indptr[:-1], indices=c.indices, data=c.data))
npz(d + '/lil.npz', dict(format=np.array(b'lil'), shape=np.array([60, 3])))
jump = c.indptr.copy(); jump[1] = jump[-1] + 50  # past every entry, then back down
npz(d + '/jump_ptr.npz', dict(format=np.array(b'csr'), shape=np.array([60, 3]), indptr=jump, indices=c.indices, data=c.data))
k = sp.csc_matrix(m); kjump = k.indptr.copy(); kjump[1] = kjump[-1] + 50
npz(d + '/jump_csc.npz', dict(format=np.array(b'csc'), shape=np.array([60, 3]), indptr=kjump, indices=k.indices, data=k.data))
npz(d + '/two.npz', dict(a=m, b=m))
b = np.zeros((60, 50))
for r in range(60):
    b[r, [(r * 7) % 50, (r * 11 + 3) % 50, (r * 13 + 5) % 50]] = 1
np.save(d + '/bow.npy', b)
sp.save_npz(d + '/bow_csr.npz', sp.csr_matrix(b))
sp.save_npz(d + '/bow_coo.npz', sp.coo_matrix(b), compressed=False)
u = sp.csr_matrix(b)
swapped = u.indices.copy(); swapped[0], swapped[1] = swapped[1], swapped[0]
npz(d + '/unsorted.npz', dict(format=np.array(b'csr'), shape=np.array([60, 50]), indptr=u.indptr, indices=swapped, data=u.data))
twice = u.indices.copy(); twice[1] = twice[0]
npz(d + '/twice.npz', dict(format=np.array(b'csr'), shape=np.array([60, 50]), indptr=u.indptr, indices=twice, data=u.data))
raw = bytearray(open(d + '/csr.npz', 'rb').read())
at = raw.index(b'data.npy') + 40
raw[at:at + 8] = b'\xff' * 8
open(d + '/corrupt.npz', 'wb').write(bytes(raw))
)";
  auto py = RunProcess({"/usr/bin/python3", "-c", script, f.dir.path()});
  INFO(py.err);
  REQUIRE(py.exit_code == 0);
  auto part = [&](const std::string& feat, const std::string& out) {
    return f.Run("gnn-partition", {"--node_feat", f.dir / feat, "--num_parts", "1", "--output",
                                   f.dir / out, "--ignore_edge_data"});
  };
  auto r = part("feat.npy", "ref");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<float> want = ReadNpy<float>(f.dir / "ref/part0/feat.npy");
  for (const std::string name : {"dense", "csr", "csc", "coo"}) {
    r = part(name + ".npz", name);
    INFO(name << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(ReadNpy<float>(f.dir / (name + "/part0/feat.npy")) == want);
  }
  // A bag-of-words matrix stays sparse from the .npz to the partition
  // (csr as it is, coo sorted into rows): the CSR files hold the rows the
  // dense partition of the same matrix holds.
  r = f.Run("gnn-partition", {"--node_feat", f.dir / "bow.npy", "--num_parts", "1", "--output",
                              f.dir / "bowref", "--ignore_edge_data", "--feature_format", "dense"});
  REQUIRE(r.exit_code == 0);
  const std::vector<float> bow = ReadNpy<float>(f.dir / "bowref/part0/feat.npy");
  for (const std::string name : {"bow_csr", "bow_coo"}) {
    r = part(name + ".npz", name);
    INFO(name << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    const PartitionConfig c = LoadPartitionConfig(f.dir / (name + "/mine.json"));
    REQUIRE(c.sparse_features);
    CHECK(c.feature_binary);
    const SparseRows rows = ReadSparseFeatures(c, 0);
    std::vector<float> dense(static_cast<size_t>(rows.rows() * rows.cols));
    Densify(rows.view(), dense.data());
    CHECK(dense == bow);
  }
  ExpectOneLine(part("unsorted.npz", "o"), "gnn-partition",
                "unsorted.npz: row 0: column ids are not sorted");
  ExpectOneLine(part("twice.npz", "o"), "gnn-partition", "twice.npz: row 0: column id");
  ExpectOneLine(part("bad_index.npz", "o"), "gnn-partition", "bad_index.npz: entry 5 at (");
  ExpectOneLine(part("bad_ptr.npz", "o"), "gnn-partition", "indptr must have 61 entries");
  // Offsets past the entries before they come back down: refused before
  // any entry is placed, densified or kept sparse.
  ExpectOneLine(part("jump_ptr.npz", "o"), "gnn-partition",
                "jump_ptr.npz: row pointers decrease at row 1");
  ExpectOneLine(
      f.Run("gnn-partition", {"--node_feat", f.dir / "jump_ptr.npz", "--num_parts", "1", "--output",
                              f.dir / "o", "--ignore_edge_data", "--feature_format", "dense"}),
      "gnn-partition", "jump_ptr.npz: indptr decreases at 1");
  ExpectOneLine(part("jump_csc.npz", "o"), "gnn-partition", "jump_csc.npz: indptr decreases at 1");
  ExpectOneLine(part("lil.npz", "o"), "gnn-partition", "m.tocsr()");
  ExpectOneLine(part("two.npz", "o"), "gnn-partition", "holds 2 arrays");
  ExpectOneLine(part("corrupt.npz", "o"), "gnn-partition", "(member data.npy)");
  CHECK_FALSE(std::filesystem::exists(f.dir / "o"));

  // Every prefix of an archive, and every byte of it overwritten, is read
  // or refused as a DataError: no other failure, no read out of bounds.
  const std::string whole = ReadFile(f.dir / "csr.npz");
  const std::string cut = f.dir / "cut.npz";
  int refused = 0;
  for (size_t i = 0; i < whole.size(); ++i) {
    for (const bool truncate : {true, false}) {
      std::string bytes = truncate ? whole.substr(0, i) : whole;
      if (!truncate) bytes[i] = static_cast<char>(~bytes[i]);
      WriteFileAtomic(cut, bytes);
      try {
        ReadNpz(cut);
      } catch (const DataError&) {
        ++refused;
      }
    }
  }
  CHECK(refused >= static_cast<int>(whole.size()));  // at least every prefix
}
