#include "serve/serve_graph.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/error.h"
#include "common/log.h"
#include "common/random.h"
#include "partition/local_partition.h"
#include "sampling/sampler.h"

namespace gnn {

namespace {

// The ids requests name -> graph ids: input rows 0..N-1 (a dense table),
// or the user's ids (a hash map) when the partitions keep them.
class RequestIds {
 public:
  int64_t Find(int64_t id) const {
    if (!user_.empty()) {
      const auto it = user_.find(id);
      return it == user_.end() ? -1 : it->second;
    }
    return id >= 0 && id < static_cast<int64_t>(rows_.size()) ? rows_[static_cast<size_t>(id)] : -1;
  }
  bool empty() const { return rows_.empty() && user_.empty(); }
  void SetRows(std::vector<int64_t> graph_id_of_row) { rows_ = std::move(graph_id_of_row); }
  // Partition `part`'s user ids (LoadUserNodeIds), its nodes in order.
  void AddUserIds(const PartitionConfig& config, int part) {
    const std::vector<int64_t> ids = LoadUserNodeIds(config, part);
    const int64_t start = config.parts[static_cast<size_t>(part)].node_start;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!user_.emplace(ids[i], start + static_cast<int64_t>(i)).second) {
        throw DataError(config.FilePath(part, kUserIdsFile) + ": id " + std::to_string(ids[i]) +
                        " names two nodes");
      }
    }
  }

 private:
  std::vector<int64_t> rows_;
  std::unordered_map<int64_t, int64_t> user_;
};

// Partition 0 of a 1-partition config in this process.
class LocalServeGraph : public ServeGraph {
 public:
  LocalServeGraph(const PartitionConfig& config, bool verify, int threads, bool edge_data)
      : config_(config), threads_(threads) {
    part_ = LoadLocalPartition(config, 0, verify, edge_data);
    csc_ = CscView{part_.indptr.data(), part_.indices.data(), part_.node_start, part_.num_nodes,
                   part_.orig_nids.data()};
    if (part_.edge_dim > 0) {
      csc_.edge_data = part_.edge_data.data();
      csc_.edge_dim = part_.edge_dim;
    }
    if (config.user_node_ids) {
      ids_.AddUserIds(config, 0);
      return;
    }
    std::vector<int64_t> graph_id(static_cast<size_t>(part_.num_nodes), -1);
    for (int64_t i = 0; i < part_.num_nodes; ++i) {
      const int64_t orig = part_.orig_nids[static_cast<size_t>(i)];
      if (orig < 0 || orig >= part_.num_nodes || graph_id[orig] >= 0) {
        throw DataError("partition 0's orig_nids are not a permutation of 0.." +
                        std::to_string(part_.num_nodes - 1));
      }
      graph_id[orig] = part_.node_start + i;
    }
    ids_.SetRows(std::move(graph_id));
  }

  const PartitionConfig& config() const override { return config_; }
  int64_t GraphId(int64_t id) const override { return ids_.Find(id); }

  void Neighbors(const std::vector<int64_t>& dst, int fanout, uint64_t rng_seed,
                 std::vector<int64_t>* ptr, std::vector<int64_t>* idx) override {
    SampleNeighbors(csc_, dst.data(), static_cast<int64_t>(dst.size()), fanout, false, rng_seed,
                    threads_, ptr, idx);
  }

  void Features(const std::vector<int64_t>& ids, NoInitVector<float>* out) override {
    GatherRows(part_.features.data(), part_.node_start, part_.feature_dim, ids, out, threads_);
  }

  MiniBatch Batch(const std::vector<int64_t>& seeds, const std::vector<int>& fanouts,
                  uint64_t rng_seed) override {
    MiniBatch mb;
    mb.features.swap(spare_rows_);
    mb.features.clear();
    mb.seeds = seeds;
    mb.feature_dim = part_.feature_dim;
    mb.blocks = SampleBlocks(csc_, seeds, fanouts, false, rng_seed, threads_);
    Features(mb.blocks.front().src_nodes, &mb.features);
    return mb;
  }
  void Recycle(MiniBatch&& mb) override {
    if (mb.features.capacity() > spare_rows_.capacity()) spare_rows_.swap(mb.features);
  }

  bool Probe() override { return true; }

 private:
  const PartitionConfig& config_;
  int threads_;
  LocalPartition part_;
  CscView csc_;
  RequestIds ids_;
  NoInitVector<float> spare_rows_;  // the last batch's rows' buffer (Recycle)
};

// The job's servers through one DistGraph, made again after a failure.
class DistServeGraph : public ServeGraph {
 public:
  // The user's ids are read here, so a missing file ends the start.
  DistServeGraph(const DistGraphOptions& options, const PartitionConfig& config)
      : options_(options), config_(config) {
    for (int p = 0; config_.user_node_ids && p < config_.num_parts; ++p)
      ids_.AddUserIds(config_, p);
  }

  const PartitionConfig& config() const override { return config_; }
  int64_t GraphId(int64_t id) const override { return ids_.Find(id); }

  void Neighbors(const std::vector<int64_t>& dst, int fanout, uint64_t rng_seed,
                 std::vector<int64_t>* ptr, std::vector<int64_t>* idx) override {
    Guarded([&] { Graph().SampleNeighbors(dst, fanout, false, rng_seed, ptr, idx); });
  }
  void Features(const std::vector<int64_t>& ids, NoInitVector<float>* out) override {
    Guarded([&] { Graph().PullFeatures(ids, out); });
  }
  MiniBatch Batch(const std::vector<int64_t>& seeds, const std::vector<int>& fanouts,
                  uint64_t rng_seed) override {
    MiniBatch mb;
    Guarded([&] { mb = Graph().MakeBatch(seeds, fanouts, false, rng_seed); });
    return mb;
  }
  void Recycle(MiniBatch&& mb) override {
    if (graph_) graph_->Recycle(std::move(mb));
  }

  bool Probe() override {
    try {
      if (!graph_) {
        graph_ = std::make_unique<DistGraph>(options_);
        if (ids_.empty()) MapInputIds();
        GNN_LOG(kInfo) << "connected to every partition of " << config_.graph_name;
      }
      graph_->Ping();
      return true;
    } catch (const std::exception& e) {
      if (graph_ || !said_down_) {
        GNN_LOG(kWarn) << "the graph is not ready: " << e.what();
        said_down_ = true;
      }
      graph_.reset();
      return false;
    }
  }

 private:
  DistGraph& Graph() {
    if (!graph_) throw PeerError("not connected to the graph's servers");
    return *graph_;
  }

  // A failure to reach the servers drops the connections: the next Probe
  // makes them again.
  template <class F>
  void Guarded(F&& f) {
    try {
      f();
    } catch (const PeerError&) {
      graph_.reset();
      throw;
    } catch (const TimeoutError&) {
      graph_.reset();
      throw;
    } catch (const ProtocolError&) {
      graph_.reset();
      throw;
    }
  }

  // Every node's input id, asked of its partition in pieces of 1 Mi ids
  // (8 MB), inverted: input id -> graph id. (The user's ids come from
  // every partition's kUserIdsFile in this machine's copy instead.)
  void MapInputIds() {
    const int64_t n = config_.num_nodes;
    std::vector<int64_t> graph_id(static_cast<size_t>(n), -1);
    constexpr int64_t kPiece = int64_t{1} << 20;
    std::vector<int64_t> ids, orig;
    for (const PartInfo& p : config_.parts) {
      for (int64_t begin = p.node_start; begin < p.node_end; begin += kPiece) {
        const int64_t end = std::min(p.node_end, begin + kPiece);
        ids.resize(static_cast<size_t>(end - begin));
        for (int64_t v = begin; v < end; ++v) ids[static_cast<size_t>(v - begin)] = v;
        graph_->PullOrigIds(ids, &orig);
        for (size_t i = 0; i < ids.size(); ++i) {
          if (orig[i] < 0 || orig[i] >= n || graph_id[static_cast<size_t>(orig[i])] >= 0) {
            throw DataError("the partitions' orig_nids are not a permutation of 0.." +
                            std::to_string(n - 1) + " (node " + std::to_string(ids[i]) + ")");
          }
          graph_id[static_cast<size_t>(orig[i])] = ids[i];
        }
      }
    }
    ids_.SetRows(std::move(graph_id));
  }

  DistGraphOptions options_;
  const PartitionConfig& config_;
  std::unique_ptr<DistGraph> graph_;
  RequestIds ids_;
  bool said_down_ = false;
};

}  // namespace

std::unique_ptr<ServeGraph> OpenLocalServeGraph(const PartitionConfig& config,
                                                const std::string& part_config, bool verify,
                                                int threads, bool edge_data) {
  if (config.num_parts != 1) {
    throw ConfigError("--standalone serves a 1-partition config; " + part_config + " has " +
                      std::to_string(config.num_parts) + " (serve it through gnn-launch)");
  }
  return std::make_unique<LocalServeGraph>(config, verify, threads, edge_data);
}

std::unique_ptr<ServeGraph> OpenDistServeGraph(const DistGraphOptions& options,
                                               const PartitionConfig& config) {
  return std::make_unique<DistServeGraph>(options, config);
}

void ModelRunner::DecodeEdges(const std::vector<float>&, int64_t, const std::vector<int64_t>&,
                              const std::vector<int64_t>&, const std::vector<float>&,
                              std::vector<float>*) {
  throw Error("this model has no edge decoder");
}

GraphEngine::GraphEngine(std::unique_ptr<ServeGraph> graph, std::unique_ptr<ModelRunner> runner,
                         ModelInfo info)
    : graph_(std::move(graph)), runner_(std::move(runner)), info_(std::move(info)) {
  if (info_.layer_cacheable && info_.layer_cache_bytes > 0 && info_.fanouts.size() >= 2) {
    cache_ = std::make_unique<LayerCache>(info_.layer_cache_bytes, info_.first_layer_dim);
  }
}

void GraphEngine::RunCached(const std::vector<int64_t>& seeds, bool embedding, Answer* out) {
  const int layers = static_cast<int>(info_.fanouts.size());
  const uint64_t rng_seed = info_.sample_seed;
  std::vector<Block> blocks(static_cast<size_t>(layers));
  std::vector<int64_t> frontier = seeds;
  for (int l = layers - 1; l >= 1; --l) {
    std::vector<int64_t> ptr, idx;
    graph_->Neighbors(frontier, info_.fanouts[static_cast<size_t>(l)],
                      MixSeed(rng_seed, static_cast<uint64_t>(l)), &ptr, &idx);
    blocks[static_cast<size_t>(l)] = ToBlock(frontier, std::move(ptr), idx);
    frontier = blocks[static_cast<size_t>(l)].src_nodes;
  }
  // Layer 1's inputs: cached rows, and layer 0 for the others.
  const size_t dim = static_cast<size_t>(cache_->dim());
  std::vector<float> h1(frontier.size() * dim);
  std::vector<int64_t> misses;
  std::vector<size_t> miss_at;
  cache_->lookups += frontier.size();
  for (size_t i = 0; i < frontier.size(); ++i) {
    if (const float* row = cache_->Find(frontier[i])) {
      std::memcpy(h1.data() + i * dim, row, dim * sizeof(float));
      ++cache_->hits;
    } else {
      misses.push_back(frontier[i]);
      miss_at.push_back(i);
    }
  }
  if (!misses.empty()) {
    MiniBatch first = graph_->Batch(misses, {info_.fanouts[0]}, rng_seed);
    std::vector<float> rows;
    runner_->FirstLayer(first, &rows);
    graph_->Recycle(std::move(first));
    if (rows.size() != misses.size() * dim) {
      throw DataError("the first layer gave " + std::to_string(rows.size()) + " values for " +
                      std::to_string(misses.size()) + " rows of " + std::to_string(dim));
    }
    for (size_t k = 0; k < misses.size(); ++k) {
      std::memcpy(h1.data() + miss_at[k] * dim, rows.data() + k * dim, dim * sizeof(float));
      cache_->Put(misses[k], rows.data() + k * dim);
    }
  }
  runner_->UpperLayers(blocks, h1.data(), static_cast<int64_t>(seeds.size()), embedding, out);
}

Answer GraphEngine::Run(const Query& q) {
  // A link model answers both: nodes' embeddings, edges' scores.
  if (q.edge_query != info_.edge_model && info_.task != "link") {
    throw BadRequest(info_.edge_model
                         ? "this is a --task " + info_.task +
                               " model: a query names edges ([k, 2] source, destination)"
                         : std::string("this model predicts nodes: a query names node_ids"));
  }
  return q.edge_query ? RunEdges(q) : RunNodes(q);
}

Answer GraphEngine::RunEdges(const Query& q) {
  const int64_t k = q.rows();
  if (static_cast<int64_t>(q.edge_features.size()) != k * info_.edge_feature_dim) {
    throw BadRequest("edge_features: " + std::to_string(q.edge_features.size()) + " values for " +
                     std::to_string(k) + " edges of " + std::to_string(info_.edge_feature_dim));
  }
  // The ends' rows: the distinct existing ends (in first-seen order) as a
  // node query, then the query's new nodes.
  Query nodes;
  nodes.num_new = q.num_new;
  nodes.new_features = q.new_features;
  nodes.new_edges = q.new_edges;
  std::unordered_map<int64_t, int64_t> row_of;
  std::vector<int64_t> ends(q.edges.size());
  for (size_t i = 0; i < q.edges.size(); ++i) {
    const int64_t v = q.edges[i];
    if (v < 0) {
      if (v < -q.num_new) {
        throw BadRequest(
            "edges: node " + std::to_string(v) + " is not a new node (" +
            (q.num_new > 0
                 ? "there are " + std::to_string(q.num_new) + ": -1..-" + std::to_string(q.num_new)
                 : std::string("the request has no new_features rows")) +
            (info_.user_ids ? "; negative ids name new nodes, so a negative id of gnn-partition "
                              "--node_ids cannot be asked here)"
                            : ")"));
      }
      continue;  // placed after the existing ends, below
    }
    const auto [it, fresh] = row_of.emplace(v, static_cast<int64_t>(nodes.node_ids.size()));
    if (fresh) {
      if (graph_->GraphId(v) < 0) throw BadRequest("edges: " + NotANode(v));
      nodes.node_ids.push_back(v);
    }
    ends[i] = it->second;
  }
  const int64_t existing = static_cast<int64_t>(nodes.node_ids.size());
  for (size_t i = 0; i < q.edges.size(); ++i) {
    if (q.edges[i] < 0) ends[i] = existing - q.edges[i] - 1;  // -1 -> existing, ...
  }
  const Answer rows = RunNodes(nodes);
  std::vector<int64_t> heads(static_cast<size_t>(k)), tails(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    heads[static_cast<size_t>(i)] = ends[static_cast<size_t>(2 * i)];
    tails[static_cast<size_t>(i)] = ends[static_cast<size_t>(2 * i + 1)];
  }
  Answer out;
  out.rows = k;
  out.classes = info_.edge_outputs;
  if (k > 0) {
    runner_->DecodeEdges(rows.logits, rows.classes, heads, tails, q.edge_features, &out.logits);
  }
  return out;
}

Answer GraphEngine::RunNodes(const Query& q) {
  const int64_t n = info_.num_nodes;
  if (q.num_new == 0 && !q.new_edges.empty()) {
    throw BadRequest("new_edges: there are no new nodes (new_features has no rows)");
  }
  if (q.num_new > 0 && info_.edge_data) {
    throw BadRequest(
        std::string("new_features: this model reads its edges' data (edge weights or features), "
                    "which a query's new edges cannot give yet; ask about existing nodes") +
        (info_.task == "link" ? " (node_ids, or edges between them)"
         : info_.edge_model   ? " (edges between them)"
                              : " (node_ids)"));
  }
  // Distinct seeds (graph ids) and each answer row's seed.
  std::vector<int64_t> seeds;
  std::vector<int64_t> seed_of;
  seed_of.reserve(static_cast<size_t>(q.rows()));
  SeedNumbering position(&seeds);
  for (int64_t id : q.node_ids) {
    const int64_t g = graph_->GraphId(id);
    if (g < 0) throw BadRequest("node_ids: " + NotANode(id));
    seed_of.push_back(position.Add(g));
  }
  for (int64_t j = 0; j < q.num_new; ++j) {
    seed_of.push_back(static_cast<int64_t>(seeds.size()));
    seeds.push_back(n + j);
  }
  Answer out;
  out.rows = q.rows();
  out.classes = info_.classes;
  out.emb_dim = q.embedding ? info_.emb_dim : 0;
  if (seeds.empty()) return out;

  Answer distinct;
  if (cache_ && q.num_new == 0) {
    RunCached(seeds, q.embedding, &distinct);
  } else {
    MiniBatch mb = q.num_new == 0 ? graph_->Batch(seeds, info_.fanouts, info_.sample_seed)
                                  : BatchWithNewNodes(q, seeds, ExtraInEdges(q));
    runner_->Run(mb, static_cast<int64_t>(seeds.size()), q.embedding, &distinct);
    graph_->Recycle(std::move(mb));
  }
  out.logits.resize(static_cast<size_t>(out.rows * out.classes));
  out.embedding.resize(static_cast<size_t>(out.rows * out.emb_dim));
  for (int64_t r = 0; r < out.rows; ++r) {
    const int64_t s = seed_of[static_cast<size_t>(r)];
    std::copy_n(distinct.logits.begin() + s * out.classes, out.classes,
                out.logits.begin() + r * out.classes);
    std::copy_n(distinct.embedding.begin() + s * out.emb_dim, out.emb_dim,
                out.embedding.begin() + r * out.emb_dim);
  }
  return out;
}

std::string GraphEngine::NotANode(int64_t id) const {
  return std::to_string(id) + " is not a node of " + info_.graph_name +
         (info_.user_ids ? std::string(" (ids are those of gnn-partition --node_ids)")
                         : " (input ids are 0.." + std::to_string(info_.num_nodes - 1) + ")");
}

std::unordered_map<int64_t, std::vector<int64_t>> GraphEngine::ExtraInEdges(const Query& q) const {
  const int64_t n = info_.num_nodes;
  auto graph_id = [&](int64_t v) -> int64_t {
    if (v < 0) {
      if (v < -q.num_new) {
        throw BadRequest("new_edges: node " + std::to_string(v) + " is not a new node (there are " +
                         std::to_string(q.num_new) + ": -1..-" + std::to_string(q.num_new) + ")");
      }
      return n - v - 1;  // -1 -> n, -2 -> n + 1, ...
    }
    const int64_t g = graph_->GraphId(v);
    if (g < 0) throw BadRequest("new_edges: " + NotANode(v));
    return g;
  };
  std::unordered_map<int64_t, std::vector<int64_t>> extra;
  for (size_t e = 0; e + 1 < q.new_edges.size(); e += 2) {
    const int64_t s = q.new_edges[e], d = q.new_edges[e + 1];
    if (s >= 0 && d >= 0) {
      throw BadRequest("new_edges: row " + std::to_string(e / 2) + " (" + std::to_string(s) + ", " +
                       std::to_string(d) +
                       ") joins two existing nodes; each edge must have a new node (-1..-m)");
    }
    const int64_t gs = graph_id(s), gd = graph_id(d);
    if (gs == gd) continue;  // self-loops are dropped, as partitioning drops them
    extra[gd].push_back(gs);
    if (info_.undirected) extra[gs].push_back(gd);
  }
  for (auto& [dst, srcs] : extra) {
    std::sort(srcs.begin(), srcs.end());
    srcs.erase(std::unique(srcs.begin(), srcs.end()), srcs.end());
  }
  return extra;
}

MiniBatch GraphEngine::BatchWithNewNodes(
    const Query& q, const std::vector<int64_t>& seeds,
    const std::unordered_map<int64_t, std::vector<int64_t>>& extra) {
  const int64_t n = info_.num_nodes;
  const int layers = static_cast<int>(info_.fanouts.size());
  const uint64_t rng_seed = info_.sample_seed;
  MiniBatch mb;
  mb.seeds = seeds;
  mb.feature_dim = info_.feature_dim;
  mb.blocks.resize(static_cast<size_t>(layers));
  std::vector<int64_t> frontier = seeds;
  for (int l = layers - 1; l >= 0; --l) {
    std::vector<int64_t> existing;
    for (int64_t v : frontier) {
      if (v < n) existing.push_back(v);
    }
    std::vector<int64_t> ptr{0}, idx;
    if (!existing.empty()) {
      graph_->Neighbors(existing, info_.fanouts[static_cast<size_t>(l)], MixSeed(rng_seed, l), &ptr,
                        &idx);
    }
    std::vector<int64_t> block_ptr{0}, block_idx;
    size_t k = 0;
    for (int64_t v : frontier) {
      if (v < n) {
        block_idx.insert(block_idx.end(), idx.begin() + ptr[k], idx.begin() + ptr[k + 1]);
        ++k;
      }
      const auto it = extra.find(v);
      if (it != extra.end())
        block_idx.insert(block_idx.end(), it->second.begin(), it->second.end());
      block_ptr.push_back(static_cast<int64_t>(block_idx.size()));
    }
    mb.blocks[static_cast<size_t>(l)] = ToBlock(frontier, std::move(block_ptr), block_idx);
    frontier = mb.blocks[static_cast<size_t>(l)].src_nodes;
  }
  // Layer 0's rows: the graph's, then the query's for new nodes.
  std::vector<int64_t> existing;
  for (int64_t v : frontier) {
    if (v < n) existing.push_back(v);
  }
  NoInitVector<float> rows;
  if (!existing.empty()) graph_->Features(existing, &rows);
  const int64_t dim = info_.feature_dim;
  mb.features.resize(frontier.size() * static_cast<size_t>(dim));
  size_t k = 0;
  for (size_t i = 0; i < frontier.size(); ++i) {
    const float* from = frontier[i] < n ? rows.data() + (k++) * dim
                                        : q.new_features.data() + (frontier[i] - n) * dim;
    std::copy_n(from, dim, mb.features.begin() + static_cast<int64_t>(i) * dim);
  }
  return mb;
}

}  // namespace gnn
