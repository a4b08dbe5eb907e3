// Requests and replies of heterogeneous graphs: typed sampling, typed
// feature pulls and the embedding rows servers keep for featureless node
// types (pull, push of gradients, save and restore for checkpoints). Same
// contract as messages.h: one Encode and Decode per struct, shapes checked
// on decode, replies checked against their request and named by peer.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "net/messages.h"
#include "net/protocol.h"

namespace gnn::net {

// Which table and how it learns: every embedding request carries it (as the
// fields emb_type, emb_dim, emb_optimizer, emb_lr_bits: the double's bits,
// and emb_seed), and a server refuses one that disagrees with the table it
// already has.
struct EmbSpec {
  int64_t ntype = 0;
  int64_t dim = 0;
  int64_t optimizer = 0;  // SparseOptimizerKind
  double lr = 0;
  uint64_t seed = 0;
  bool operator==(const EmbSpec& o) const;
  std::string DebugString() const;
};

// More relations than any real schema has; bounds a request's fanout list
// and the relation ids a reply may carry.
constexpr int64_t kMaxRelations = 4096;

// Relation ids on the wire: the narrowest of uint8, uint16 and int32 that
// holds every id of the array (uint8 for any graph of up to 256 relations,
// uint16 up to 65536), its width in bytes given beside it in the message's
// relation_width field. RelationWidth: 1, 2 or 4 for `etypes` (DataError
// for an id outside [0, 2^31)).
int RelationWidth(const std::vector<int64_t>& etypes);
// Appends `etypes` as one frame of RelationWidth(etypes) bytes per id and
// returns that width.
int AddRelations(Message* m, const std::vector<int64_t>& etypes);
// Frame `frame` of `m` as relation ids of `width` bytes; ProtocolError for
// another width than 1, 2 or 4, a frame that is not whole ids, or an id
// outside [0, num_rels).
std::vector<int64_t> ReadRelations(const Message& m, size_t frame, int64_t width, int64_t num_rels);

struct TypedSampleRequest {
  std::vector<int64_t> seeds;
  std::vector<int64_t> fanouts;  // one per relation
  bool replace = false;
  uint64_t rng_seed = 0;
  IdCoding coding = IdCoding::kInt64;  // of the seeds, and of the reply's ids and offsets
  // Ask for each sampled edge's row of the partition's edge_feat.npy too
  // (field edge_data, sent only when set).
  bool edge_data = false;
  std::string DebugString() const;
  Message Encode(uint64_t request_id) const;
  static TypedSampleRequest Decode(const Message& m);
};

struct TypedSampleReply {
  std::vector<int64_t> indptr, indices, etypes;
  IdCoding coding = IdCoding::kInt64;  // of indptr and indices
  // Asked for (TypedSampleRequest::edge_data): [indices.size(), edge_dim]
  // float32, a 4th frame, its width in field edge_dim.
  int64_t edge_dim = 0;
  std::vector<float> edge_data{};
  // etypes travel in the narrowest width that holds them (RelationWidth).
  Message Encode(uint64_t request_id) const;
  // Shapes only (relation ids below kMaxRelations).
  static TypedSampleReply Decode(const Message& m);
  // Also: one row per asked seed, no relation's run longer than its fanout
  // (and runs in relation order), ids inside [0, num_nodes), and edge rows
  // `edge_dim` wide exactly when asked.
  static TypedSampleReply Decode(const Message& m, const TypedSampleRequest& asked,
                                 int64_t num_nodes, const std::string& peer, int64_t edge_dim = 0);
};

struct PullTyped {
  int64_t ntype = 0;
  std::vector<int64_t> ids;
  RowFormat format = RowFormat::kFloat32;  // of the reply's rows (sent only when narrow)
  IdCoding coding = IdCoding::kInt64;      // of the ids (sent only when varints)
  Message Encode(uint64_t request_id) const;
  static PullTyped Decode(const Message& m);
};

// The sums of groups of rows at their owner (DistGraph's typed first layer
// with --aggregate_at_owner: RGCN's per-relation means): row k of the reply
// (a PullFeaturesReply, in `format`) is the sum of the rows of
// ids[group_ptr[k], group_ptr[k + 1]): feature rows of node type `ntype`,
// or, with `embedding`, the rows of the embedding table `spec`
// (spec.ntype). Summed in float32 at the server.
struct PullTypedSums {
  int64_t ntype = 0;
  bool embedding = false;
  EmbSpec spec;  // with embedding
  std::vector<int64_t> ids;
  std::vector<int64_t> group_ptr = {0};  // [groups + 1]
  RowFormat format = RowFormat::kFloat32;
  IdCoding coding = IdCoding::kInt64;  // of the ids and offsets

  size_t num_groups() const { return group_ptr.empty() ? 0 : group_ptr.size() - 1; }
  // The node type whose rows are summed.
  int64_t row_type() const { return embedding ? spec.ntype : ntype; }
  Message Encode(uint64_t request_id) const;
  static PullTypedSums Decode(const Message& m);
};

// A PullSums or PullTypedSums too big for one request goes in pieces:
// GroupPieces cuts groups (offsets group_ptr into their ids) into runs of
// at most max_groups groups and at most max_ids ids (a bigger group alone
// makes one), as [first, end) group ranges in order; TakeGroups appends
// groups [first, end) of `all` to `piece` (whose other fields are set).
std::vector<std::pair<size_t, size_t>> GroupPieces(const std::vector<int64_t>& group_ptr,
                                                   size_t max_ids, size_t max_groups);
template <class Groups>
void TakeGroups(const Groups& all, size_t first, size_t end, Groups* piece) {
  const int64_t b = all.group_ptr[first];
  piece->ids.insert(piece->ids.end(), all.ids.begin() + b, all.ids.begin() + all.group_ptr[end]);
  const int64_t shift = piece->group_ptr.back() - b;
  for (size_t g = first; g < end; ++g) piece->group_ptr.push_back(all.group_ptr[g + 1] + shift);
}

// Embedding rows and their gradients travel in `format` (--wire_dtype):
// float32, or bfloat16 (a format field, sent only when narrow). The table,
// its optimizer state and every update stay float32 at the server.
struct EmbPull {
  EmbSpec spec;
  std::vector<int64_t> ids;
  IdCoding coding = IdCoding::kInt64;      // of the ids (sent only when varints)
  RowFormat format = RowFormat::kFloat32;  // of the reply's rows
  Message Encode(uint64_t request_id) const;
  static EmbPull Decode(const Message& m);
};

struct EmbPush {
  EmbSpec spec;
  std::vector<int64_t> ids;
  std::vector<float> grads;                // [ids.size(), spec.dim]
  IdCoding coding = IdCoding::kInt64;      // of the ids (sent only when varints)
  RowFormat format = RowFormat::kFloat32;  // of the gradients on the wire
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
