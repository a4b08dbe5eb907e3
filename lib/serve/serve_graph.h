// Where gnn-serve's neighbourhoods and rows come from: the one partition of
// a 1-part config in memory (--standalone), or the job's servers through a
// DistGraph (its local partition from shared memory, owner-side sums,
// narrow wire, hot-row cache); and the engine that turns a query into
// mini-batches for the model, new nodes included.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "client/dist_graph.h"
#include "common/memory.h"
#include "partition/config.h"
#include "sampling/block.h"
#include "serve/layer_cache.h"
#include "serve/serving.h"

namespace gnn {

class ServeGraph {
 public:
  virtual ~ServeGraph() = default;
  virtual const PartitionConfig& config() const = 0;
  // The graph's id of the node a request names (an input row, or the
  // user's id with gnn-partition --node_ids); -1 when it names none.
  virtual int64_t GraphId(int64_t id) const = 0;
  // All (fanout -1) or up to `fanout` in-neighbours of existing nodes
  // `dst`: CSR over dst with global ids.
  virtual void Neighbors(const std::vector<int64_t>& dst, int fanout, uint64_t rng_seed,
                         std::vector<int64_t>* ptr, std::vector<int64_t>* idx) = 0;
  // Feature rows [ids.size(), feature_dim] of existing nodes.
  virtual void Features(const std::vector<int64_t>& ids, NoInitVector<float>* out) = 0;
  // The seeds' mini-batch as training makes one (distributed: the data
  // plane's owner-side sums for a mean-aggregating first layer).
  virtual MiniBatch Batch(const std::vector<int64_t>& seeds, const std::vector<int>& fanouts,
                          uint64_t rng_seed) = 0;
  // A batch done with: its buffers serve the next one (no fresh pages for
  // every batch).
  virtual void Recycle(MiniBatch&& mb) = 0;
  // Whether every partition answers now; reconnects when it did not.
  virtual bool Probe() = 0;
};

// Partition 0 of a 1-partition config, loaded into memory.
// With `edge_data` its edges' data too (ModelInfo::edge_data).
std::unique_ptr<ServeGraph> OpenLocalServeGraph(const PartitionConfig& config,
                                                const std::string& part_config, bool verify,
                                                int threads, bool edge_data = false);
// The job's servers; connects (and maps input ids) on the first Probe.
std::unique_ptr<ServeGraph> OpenDistServeGraph(const DistGraphOptions& options,
                                               const PartitionConfig& config);

// Query -> Answer over a ServeGraph and a ModelRunner. A query of existing
// nodes only is one mini-batch of its distinct nodes as training samples
// it (ServeGraph::Batch); a query with new nodes is sampled here, layer by
// layer, on the graph plus its nodes and edges (new node j is graph id
// num_nodes + j), every row pulled as it is.
class GraphEngine : public Engine {
 public:
  GraphEngine(std::unique_ptr<ServeGraph> graph, std::unique_ptr<ModelRunner> runner,
              ModelInfo info);
  const ModelInfo& info() const override { return info_; }
  Answer Run(const Query& q) override;
  bool Probe() override { return graph_->Probe(); }

 private:
  // The query's new nodes and edges checked (BadRequest) and laid out as
  // extra in-neighbours per destination (graph ids, both ways on an
  // undirected graph, without repeats or self-loops).
  std::unordered_map<int64_t, std::vector<int64_t>> ExtraInEdges(const Query& q) const;
  // A mini-batch for `seeds` (graph ids, distinct) on the graph plus
  // `extra` in-edges; new nodes' rows from q.new_features.
  MiniBatch BatchWithNewNodes(const Query& q, const std::vector<int64_t>& seeds,
                              const std::unordered_map<int64_t, std::vector<int64_t>>& extra);
  // Existing nodes' answer through the first-layer cache: the layers above
  // sampled here, layer 0 computed only for the nodes the cache lacks.
  void RunCached(const std::vector<int64_t>& seeds, bool embedding, Answer* out);
  // A node query's rows; an edge query's: its ends' rows through the
  // decoder.
  Answer RunNodes(const Query& q);
  Answer RunEdges(const Query& q);
  // "<id> is not a node of <graph> (<which ids requests name>)".
  std::string NotANode(int64_t id) const;

  std::unique_ptr<ServeGraph> graph_;
  std::unique_ptr<ModelRunner> runner_;
  ModelInfo info_;
  std::unique_ptr<LayerCache> cache_;  // null: off (or a model whose rows it cannot keep)
};

}  // namespace gnn
