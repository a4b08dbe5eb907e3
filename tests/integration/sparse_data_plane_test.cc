// Sparse feature rows through the data plane (#53 item 2): servers of a
// sparse-feature partitioning hold its CSR in shared memory (no dense
// copy), answer PullSparseRows with rows as stored, and a DistGraph's
// batches carry them sparse: the same sampled blocks and, made dense, the
// same input rows as the dense partitioning of the same graph, for a
// fraction of its bytes on the wire, with the machine's hot-row cache
// holding CSR rows; the MiniBatch codec carries them;
// dense requests (PullFeatures, PullSums) still get dense rows, and the
// owners refuse to aggregate a first layer over sparse rows.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "client/dist_graph.h"
#include "cluster_util.h"
#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "net/batch_codec.h"
#include "net/messages.h"
#include "partition/local_partition.h"
#include "partition/partition.h"
#include "store/row_cache.h"
#include "store/shm_names.h"
#include "store/shm_partition.h"

using namespace gnn;

namespace {

// 0.6 % of the entries set, every value 1 (bag of words); `vals` gives
// them values other than 1.
constexpr const char* kBow = "synthetic:nodes=800,edges=5000,feat=1500,classes=4,bow=9";

std::string Partition(const test::TempDir& dir, const std::string& format, int parts,
                      const std::string& spec = kBow) {
  return test::MakePartitions(dir, spec, parts, format + std::to_string(parts), "metis", format);
}

std::vector<float> Dense(const SparseRows& rows) {
  std::vector<float> out(static_cast<size_t>(rows.rows() * rows.cols));
  Densify(rows.view(), out.data());
  return out;
}

}  // namespace

TEST_CASE(
    "sparse rows over servers: the dense partitioning's blocks and inputs, a fraction of its "
    "bytes, through shared memory and the MiniBatch codec",
    "[integration]") {
  test::TempDir dir;
  const std::string sparse = Partition(dir, "sparse", 2);
  const std::string dense = Partition(dir, "dense", 2);
  const PartitionConfig sc = LoadPartitionConfig(sparse);
  REQUIRE(sc.sparse_features);
  REQUIRE(sc.feature_binary);
  REQUIRE_FALSE(LoadPartitionConfig(dense).sparse_features);
  const std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  const std::string job_s = "job-sparse-" + std::to_string(::getpid());
  const std::string job_d = "job-dense-" + std::to_string(::getpid());
  test::ServerThreads sparse_servers(ip, sparse, 2, 2, job_s);
  test::ServerThreads dense_servers(ip, dense, 2, 1, job_d);
  const std::vector<int> fanouts = {5, 10};

  // Shared memory holds the CSR as the files do, and no dense rows.
  {
    const auto shm = ShmPartition::Attach(JobShmName(sc.graph_name, Sha256File(sparse), job_s, 1),
                                          sc, 1, std::chrono::milliseconds(20000));
    const PartitionView& v = shm->view();
    REQUIRE(v.sparse());
    CHECK(v.features == nullptr);
    const SparseRows files = ReadSparseFeatures(sc, 1);
    CHECK(std::equal(files.indptr.begin(), files.indptr.end(), v.sparse_features.indptr));
    CHECK(std::equal(files.indices.begin(), files.indices.end(), v.sparse_features.indices));
    CHECK(v.sparse_features.values == nullptr);
    CHECK(shm->mapped_bytes() < static_cast<size_t>(v.num_nodes * sc.feature_dim));
  }

  for (int local : {-1, 0}) {
    for (const net::IdCoding coding : {net::IdCoding::kInt64, net::IdCoding::kVarint}) {
      INFO("local machine " << local << ", ids " << net::IdCodingName(coding));
      DistGraphOptions so = test::ClientOptions(sparse, ip, sparse_servers, job_s, local);
      so.id_coding = coding;
      // The machine's hot-row cache holds CSR rows of the other partition.
      so.cache_bytes = local >= 0 ? 64 << 10 : 0;
      DistGraph sg(so);
      REQUIRE(sg.sparse_rows());
      REQUIRE((sg.row_cache() != nullptr) == (local >= 0));
      if (local >= 0) {
        CHECK(sg.row_cache()->sparse());
        CHECK(sg.row_cache()->num_rows() > 10);  // the cut edges of train nodes' neighbourhoods
        CHECK(sg.row_cache()->mapped_bytes() <= (64 << 10) + 8192);
      }
      DistGraphOptions dopt = test::ClientOptions(dense, ip, dense_servers, job_d, local);
      dopt.id_coding = coding;
      dopt.aggregate_at_owner = false;
      DistGraph dg(dopt);
      DistGraphOptions owner = dopt;
      owner.aggregate_at_owner = true;
      DistGraph dg_owner(owner);
      uint64_t sparse_bytes = 0, dense_bytes = 0, owner_bytes = 0;
      for (uint64_t seed : {3, 4, 5}) {
        const std::vector<int64_t> seeds = test::DistinctRandomIds(sc.num_nodes, 64, seed);
        const MiniBatch s = sg.MakeBatch(seeds, fanouts, false, seed);
        const MiniBatch d = dg.MakeBatch(seeds, fanouts, false, seed);
        const MiniBatch o = dg_owner.MakeBatch(seeds, fanouts, false, seed);
        REQUIRE(s.sparse);
        CHECK_FALSE(s.input_means);
        CHECK(s.features.empty());
        REQUIRE(s.blocks.size() == d.blocks.size());
        for (size_t l = 0; l < s.blocks.size(); ++l) {
          CHECK(s.blocks[l].src_nodes == d.blocks[l].src_nodes);
          CHECK(s.blocks[l].indices == d.blocks[l].indices);
        }
        CHECK(s.sparse_features.rows() == static_cast<int64_t>(d.blocks[0].src_nodes.size()));
        const std::vector<float> made = Dense(s.sparse_features);
        CHECK(std::equal(made.begin(), made.end(), d.features.begin(), d.features.end()));
        CHECK(s.labels == d.labels);
        sparse_bytes += s.wire_bytes;
        dense_bytes += d.wire_bytes;
        owner_bytes += o.wire_bytes;
        // gnn-sampler -> trainer: the codec carries the rows as they are.
        const MiniBatch back = net::DecodeMiniBatch(net::EncodeMiniBatch(s, 7));
        CHECK(back.sparse);
        CHECK(back.sparse_features.indptr == s.sparse_features.indptr);
        CHECK(back.sparse_features.indices == s.sparse_features.indices);
        CHECK(back.sparse_features.values == s.sparse_features.values);
        CHECK(back.blocks[1].src_nodes == s.blocks[1].src_nodes);
      }
      if (local >= 0) CHECK(sg.cache_hits() > 0);
      INFO("bytes: sparse " << sparse_bytes << ", dense " << dense_bytes << ", dense summed at "
                            << "the owners " << owner_bytes);
      CHECK(sparse_bytes * 10 <= owner_bytes);
      CHECK(sparse_bytes * 10 <= dense_bytes);
      // Dense rows asked of sparse servers: the same rows.
      const std::vector<int64_t> ids = test::DistinctRandomIds(sc.num_nodes, 300, 9);
      NoInitVector<float> a, b;
      sg.PullFeatures(ids, &a);
      dg.PullFeatures(ids, &b);
      CHECK(std::equal(a.begin(), a.end(), b.begin(), b.end()));
      CHECK_THROWS_WITH(sg.SampleAggregate(ids, 5, false, 1, &a),
                        Catch::Contains("feature rows are sparse"));
    }
  }

  // Servers answer the dense forms too, and refuse a first layer's sums.
  {
    zmq::context_t ctx;
    net::Connection c(ctx, sparse_servers.endpoints()[1][0], "server 1", test::Keys(job_s));
    const net::Hello hello{sc.graph_name, Sha256File(sparse), job_s};
    c.Call(hello.Encode(0), std::chrono::milliseconds(20000));
    const int64_t first = sc.parts[1].node_start;
    const SparseRows files = ReadSparseFeatures(sc, 1);
    net::PullSums sums{{first, first + 1, first + 1}, {0, 2, 3}};
    const net::Message reply = c.Call(sums.Encode(0), std::chrono::milliseconds(20000));
    const net::PullFeaturesReply r =
        net::PullFeaturesReply::Decode(reply, sums, sc.feature_dim, "server 1");
    std::vector<float> want(static_cast<size_t>(2 * sc.feature_dim), 0.0f);
    AddSparseRow(files.view(), 0, want.data());
    AddSparseRow(files.view(), 1, want.data());
    AddSparseRow(files.view(), 1, want.data() + sc.feature_dim);
    CHECK(std::equal(want.begin(), want.end(), r.data()));
    net::SampleAggregateRequest agg{{first}, 5, false, 1};
    CHECK_THROWS_WITH(c.Call(agg.Encode(0), std::chrono::milliseconds(20000)),
                      Catch::Contains("holds sparse feature rows"));
  }
}

TEST_CASE("sparse rows with values travel with their values, in bfloat16 when asked",
          "[integration]") {
  test::TempDir dir;
  // Dense features kept sparse by hand: every entry stored, with its value.
  const std::string spec = "synthetic:nodes=400,edges=2500,feat=16,classes=3";
  const std::string sparse = Partition(dir, "sparse", 2, spec);
  const PartitionConfig sc = LoadPartitionConfig(sparse);
  REQUIRE(sc.sparse_features);
  REQUIRE_FALSE(sc.feature_binary);
  const std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  const std::string job = "job-values-" + std::to_string(::getpid());
  test::ServerThreads servers(ip, sparse, 2, 1, job);
  const std::vector<int64_t> ids = test::DistinctRandomIds(sc.num_nodes, 200, 4);
  const SparseRows files[2] = {ReadSparseFeatures(sc, 0), ReadSparseFeatures(sc, 1)};
  for (const net::RowFormat f : {net::RowFormat::kFloat32, net::RowFormat::kBfloat16}) {
    INFO(net::RowFormatName(f));
    DistGraphOptions o = test::ClientOptions(sparse, ip, servers, job, 0);
    o.wire_format = f;
    DistGraph g(o);
    SparseRows rows;
    g.PullSparseFeatures(ids, &rows);
    REQUIRE(rows.rows() == static_cast<int64_t>(ids.size()));
    REQUIRE_FALSE(rows.binary());
    // Row by row against the files: exact from shared memory and in
    // float32, to bfloat16's 3 digits from the other machine.
    for (size_t i = 0; i < ids.size(); ++i) {
      const int p = ids[i] >= sc.parts[1].node_start ? 1 : 0;
      const SparseRows& file = files[p];
      const int64_t r = ids[i] - sc.parts[p].node_start;
      const int64_t n = file.indptr[r + 1] - file.indptr[r];
      REQUIRE(rows.indptr[i + 1] - rows.indptr[i] == n);
      const bool exact = p == 0 || f == net::RowFormat::kFloat32;
      for (int64_t k = 0; k < n; ++k) {
        CHECK(rows.indices[rows.indptr[i] + k] == file.indices[file.indptr[r] + k]);
        const float got = rows.values[rows.indptr[i] + k];
        const float want = file.values[file.indptr[r] + k];
        CHECK(std::abs(got - want) <= (exact ? 0.0f : 0.01f * std::abs(want)));
      }
    }
  }
}
