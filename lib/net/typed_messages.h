// Requests and replies of heterogeneous graphs: typed sampling, typed
// feature pulls and the embedding rows servers keep for featureless node
// types (pull, push of gradients, save and restore for checkpoints). Same
// contract as messages.h: one Encode and Decode per struct, shapes checked
// on decode, replies checked against their request and named by peer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net/messages.h"
#include "net/protocol.h"

namespace gnn::net {

// Which table and how it learns: every embedding request carries it, and a
// server refuses one that disagrees with the table it already has.
struct EmbSpec {
  int64_t ntype = 0;
  int64_t dim = 0;
  int64_t optimizer = 0;  // SparseOptimizerKind
  double lr = 0;
  uint64_t seed = 0;
  bool operator==(const EmbSpec& o) const;
  std::string DebugString() const;
};

struct TypedSampleRequest {
  std::vector<int64_t> seeds;
  std::vector<int64_t> fanouts;  // one per relation
  bool replace = false;
  uint64_t rng_seed = 0;
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static TypedSampleRequest Decode(const Message& m);
};

struct TypedSampleReply {
  std::vector<int64_t> indptr, indices, etypes;
  Message Encode(uint64_t request_id) const;
  static TypedSampleReply Decode(const Message& m);
  // Also: one row per asked seed, no relation's run longer than its fanout
  // (and runs in relation order), ids inside [0, num_nodes).
  static TypedSampleReply Decode(const Message& m, const TypedSampleRequest& asked,
                                 int64_t num_nodes, const std::string& peer);
};

struct PullTyped {
  int64_t ntype = 0;
  std::vector<int64_t> ids;
  Message Encode(uint64_t request_id) const;
  static PullTyped Decode(const Message& m);
};

struct EmbPull {
  EmbSpec spec;
  std::vector<int64_t> ids;
  Message Encode(uint64_t request_id) const;
  static EmbPull Decode(const Message& m);
};

struct EmbPush {
  EmbSpec spec;
  std::vector<int64_t> ids;
  std::vector<float> grads;  // [ids.size(), spec.dim]
  Message Encode(uint64_t request_id) const;
  static EmbPush Decode(const Message& m);
};

struct EmbSave {
  EmbSpec spec;
  int64_t begin = 0, end = 0;  // rows of the partition's range of the type
  Message Encode(uint64_t request_id) const;
  static EmbSave Decode(const Message& m);
};

struct EmbRestore {
  EmbSpec spec;
  int64_t begin = 0;
  std::string bytes;
  Message Encode(uint64_t request_id) const;
  static EmbRestore Decode(const Message& m);
};

struct EmbBlob {
  std::string bytes;
  Message Encode(uint64_t request_id) const;
  static EmbBlob Decode(const Message& m, const std::string& peer);
};

struct EmbAck {
  int64_t rows = 0;
  Message Encode(uint64_t request_id) const;
  static EmbAck Decode(const Message& m, int64_t expected_rows, const std::string& peer);
};

}  // namespace gnn::net
