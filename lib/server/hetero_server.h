// What a gnn-server answers for a heterogeneous partition: typed sampling,
// typed feature pulls, the target type's labels and splits, and the
// embedding rows of featureless node types with their sparse optimizer
// (DGL's DistEmbedding: rows live with their nodes, updates run there).
// The partition's arrays are read where they lie (the machine's shared
// memory segment).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "net/protocol.h"
#include "net/typed_messages.h"
#include "partition/config.h"
#include "partition/hetero_local.h"
#include "sampling/typed_sampler.h"
#include "store/embedding_table.h"

namespace gnn {

class HeteroServing {
 public:
  // `holds_embeddings`: this server keeps the partition's embedding tables
  // (server 0 of the first machine serving it); others refuse those requests.
  // `part` must outlive this.
  HeteroServing(const PartitionConfig& config, const HeteroPartitionView& part,
                bool holds_embeddings, std::string name);

  // The reply to `req`, or nullopt when its type is not one this answers.
  // Throws DataError / ProtocolError for bad requests (the worker turns
  // them into Error replies).
  std::optional<net::Message> Handle(const net::Message& req);

 private:
  net::Message OnTypedSample(const net::Message& req);
  net::Message OnPullTyped(const net::Message& req);
  net::Message OnPullLabels(const net::Message& req);
  net::Message OnPullOrigIds(const net::Message& req);
  net::Message OnSplitNodes(const net::Message& req);
  net::Message OnEmbedding(const net::Message& req);
  net::Message OnPullTypedSums(const net::Message& req);
  // The table of spec.ntype, made on first use; DataError when the type has
  // features, or the spec differs from the table's.
  EmbeddingTable& Table(const net::EmbSpec& spec);
  // Rows of type t's owned range for global ids; DataError when not owned.
  std::vector<int64_t> Rows(int t, const std::vector<int64_t>& ids) const;

  const PartitionConfig& config_;
  HeteroPartitionView part_;
  TypedCscView g_;
  bool holds_embeddings_;
  std::string name_;
  std::mutex mu_;  // guards creating tables
  std::vector<std::unique_ptr<EmbeddingTable>> tables_;
  std::vector<net::EmbSpec> specs_;
};

}  // namespace gnn
