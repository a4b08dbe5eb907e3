// The wire protocol (docs/ARCHITECTURE.md): one request = one ZeroMQ multipart message,
// a header frame (cereal portable binary) followed by raw little-endian
// array frames. Every message type of every role is in MsgType; numbers are
// never reused.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/error.h"

namespace gnn::net {

constexpr uint32_t kMagic = 0x314e4e47;  // "GNN1" as little-endian bytes
// 2: every header carries taken_bytes (the reply window, net/peer_window.h).
// 3: relation ids in the narrowest width that holds them (TypedSampleReply,
//    TypedMiniBatch: an int says 1, 2 or 4 bytes per id).
// 4: id frames of the batch requests and replies as varints (IdCoding: an
//    optional last int says which).
// 5: typed graphs' first layer at the owners (PullTypedSums; TypedMiniBatch's
//    input_means int and means frame) and embedding rows and gradients in a
//    row format (EmbPull, EmbPush: an optional int after the coding's).
// 6: multi-label and regression labels: PullTargets (float32 label rows in a
//    PullFeaturesReply) and MiniBatch's label_width int (its labels frame
//    then holds float32 rows).
// 7: edge data with a sample (SampleRequest's optional 5th int asks for it;
//    SampleReply's ints {coding, edge width} and a float32 frame of rows).
// 8: sparse feature rows on the wire (PullSparseRows, SparseRowsReply;
//    MiniBatch's sparse flag and three trailing CSR frames).
// 9: named header fields (Field, Key) in place of positional ints: a
//    field a message does not need is left out, not padded, and a new one
//    is a new key, never a position.
constexpr uint16_t kProtocolVersion = 9;
constexpr uint32_t kMaxArrayFrames = 32;
constexpr uint64_t kMaxFrameBytes = uint64_t{4} << 30;  // one array frame
constexpr size_t kMaxHeaderBytes = 64 << 10;
// Bounds that keep any peer from making a process buffer without limit.
// A request frame a server accepts (ids; clients send far less).
constexpr int64_t kMaxRequestBytes = int64_t{64} << 20;
// A PullFeatures / PullLabels reply a server builds: larger pulls are split
// by the client and refused by the server.
constexpr int64_t kMaxPullReplyBytes = int64_t{64} << 20;
// Neighbour ids one Sample reply may hold (512 MiB).
constexpr int64_t kMaxSampledPerRequest = int64_t{1} << 26;
// Widest edge data a sample carries (the partitioner's bound on edge
// feature columns).
constexpr int64_t kMaxEdgeDataWidth = 65536;
// Whole messages a socket queues for one peer before it pushes back (a
// client's unread replies; a server's requests not yet taken by a worker):
// each at most a frame limit, so what one peer can park is bounded.
constexpr int kMaxQueuedMessages = 1000;
// One frame any client or sampler socket accepts (a Sample reply's ids, a
// mini-batch's features); larger frames are dropped by ZeroMQ unread.
constexpr int64_t kMaxReplyBytes = int64_t{1} << 30;
// Bytes of replies a server lets one peer leave untaken (sent, or queued
// to send, but not yet read by the peer's application): past it, replies to
// that peer become a small kErrBusy Error until it reads. A reply to a peer
// with nothing outstanding always goes, so one peer holds at most this plus
// one reply. gnn-server's --peer_window_mb.
constexpr int64_t kDefaultPeerWindowBytes = int64_t{256} << 20;
// What a client keeps in flight on one connection, by the replies it
// expects: half a server's window, so the two never disagree.
constexpr int64_t kClientWindowBytes = kDefaultPeerWindowBytes / 2;
// Requests a client keeps in flight on one connection at most (later ones
// wait for earlier replies), so its socket queues at most this many
// replies plus a few late ones (kClientQueuedReplies): a server cannot park
// more there than that many messages.
constexpr int kClientMaxInFlight = 256;
constexpr int kClientQueuedReplies = kClientMaxInFlight + 16;

// How the id frames of the batch messages travel (and their offsets,
// counts and labels): int64 little-endian, or varints: each value's
// difference from the one before it (the first's from 0), zigzag-mapped
// (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...) and written 7 bits a byte, low
// bits first, the top bit set on every byte but a value's last (LEB128).
// Offsets and counts take a byte each, ids in increasing order 1-3.
enum class IdCoding : int64_t { kInt64 = 0, kVarint = 1 };
// "int64" / "varint" <-> IdCoding; ConfigError naming `flag` otherwise.
IdCoding ParseIdCoding(const std::string& name, const std::string& flag);
const char* IdCodingName(IdCoding c);

// The names of header fields (protocol 9 on): one numbering for every
// message type. Numbers are part of the protocol: never renumber or reuse.
// Each type's comment below lists the fields it takes; a field in [ ] may
// be left out (then it reads as the default its struct states), and
// `name...` is a list: the key repeated, in order.
enum class Key : uint16_t {
  kCode = 1,  // an ErrorCode
  kMachine = 2,
  kServer = 3,
  kNodeStart = 4,
  kNodeEnd = 5,
  kFeatureDim = 6,
  kClasses = 7,
  kTrainer = 8,
  kSampler = 9,
  kFanout = 10,
  kReplace = 11,
  kRngSeed = 12,
  kCoding = 13,    // an IdCoding; absent: int64
  kEdgeData = 14,  // a flag: 1 when set, absent when not
  kEdgeDim = 15,
  kFormat = 16,  // a RowFormat; absent: float32
  kDim = 17,
  kMask = 18,
  kOffset = 19,
  kCount = 20,
  kEpoch = 21,
  kIndex = 22,
  kBlocks = 23,
  kInputMeans = 24,  // a flag
  kWireBytes = 25,
  kCacheLookups = 26,
  kCacheHits = 27,
  kLabelWidth = 28,
  kSparse = 29,  // a flag
  kRelations = 30,
  kRelationWidth = 31,
  kNtype = 32,
  kEmbType = 33,  // an embedding spec (net/typed_messages.h EmbSpec) is the
  kEmbDim = 34,   // five fields kEmbType .. kEmbSeed
  kEmbOptimizer = 35,
  kEmbLrBits = 36,
  kEmbSeed = 37,
  kBegin = 38,
  kEnd = 39,
  kRows = 40,
  kOwn = 41,
  kSource = 42,
  kPiece = 43,
  kPieces = 44,
  kLayers = 45,
  kTypes = 46,
  kCols = 47,
  kHasValues = 48,  // a flag
  kEmbedding = 49,  // a flag
  kExclude = 50,    // a flag: the message carries excluded edges (a frame of pairs)
};
// "fanout", "rng_seed", ...; "key<N>" for a number this side does not know.
std::string KeyName(Key key);

// One named header field.
struct Field {
  Key key{};
  int64_t value = 0;
  bool operator==(const Field& o) const { return key == o.key && value == o.value; }
};

// Message types. Numbers are part of the protocol: never renumber or reuse.
// Retired numbers: (none yet).
enum class MsgType : uint16_t {
  // "fields:" lists each type's header fields by Key name ([ ] may be left
  // out, `name...` is a list); "[ids]": an id frame, int64 or varints as the
  // message's coding field says (absent: int64); a reply codes its frames
  // as its request did; format: float32 rows, or bfloat16 with format 1.
  kError = 1,       // text: message; fields: {code}
  kHello = 2,       // text: "graph_name\nconfig_sha256\njob_id"; a gnn-sampler's to its
                    // trainer's pool adds fields {trainer, sampler}
  kHelloReply = 3,  // fields: {machine, server, node_start, node_end, feature_dim, classes}
  kPing = 4,
  kPong = 5,               // fields: {machine, server}
  kSample = 6,             // fields: {fanout, replace, rng_seed[, coding][, edge_data]};
                           // frames: seeds[ids]
  kSampleReply = 7,        // fields: {[coding][, edge_dim W]}; frames: indptr[ids, n+1],
                           // indices[ids][, edge rows float32 [E, W] with edge_dim]
  kPullFeatures = 8,       // fields: {[format][, coding]}; frames: ids[ids]
  kPullFeaturesReply = 9,  // fields: {dim[, format]}; frames: rows[n*dim] of the format
  kPullLabels = 10,        // fields: {[coding]}; frames: ids[ids]
  kPullLabelsReply = 11,   // fields: {[coding]}; frames: labels[ids]
  kMetadata = 12,
  kMetadataReply = 13,  // text: JSON
  kShutdown = 14,       // text: job_id
  kShutdownReply = 15,
  kSeedBatch = 16,        // trainer -> gnn-sampler. fields: {epoch, index, rng_seed, replace,
                          // fanout... (at most 16)}; frames: seeds[int64], optional excluded
                          // edge pairs[int64, 2k] (link, edge tasks)
  kMiniBatch = 17,        // gnn-sampler -> trainer. fields: {index, blocks, feature_dim[,
                          // input_means][, wire_bytes][, cache_lookups][, cache_hits][,
                          // label_width][, edge_dim][, sparse]}; frames: net/batch_codec.h
  kStop = 18,             // trainer -> gnn-sampler: no more batches
  kSplitNodes = 19,       // fields: {mask (0 train, 1 valid, 2 test), offset, count}
  kSplitNodesReply = 20,  // frames: ids[int64]: the mask's nodes [offset, offset+count) in id order
  // Heterogeneous graphs (net/typed_messages.h). An embedding spec is the
  // fields {emb_type, emb_dim, emb_optimizer, emb_lr_bits, emb_seed}.
  kTypedSample = 21,       // fields: {replace, rng_seed, relations R, fanout... (R of
                           // them)[, coding]}; frames: seeds[ids]
  kTypedSampleReply = 22,  // fields: {relation_width[, coding]}; frames: indptr[ids, n+1],
                           // indices[ids], etypes[uint8|uint16|int32 by the width]
  kPullTyped = 23,         // fields: {ntype[, format][, coding]}; frames: ids[ids]
                           // -> PullFeaturesReply
  kEmbPull = 24,           // fields: {spec[, coding][, format]}; frames: ids[ids]
                           // -> PullFeaturesReply
  kEmbPush = 25,           // fields: {spec[, coding][, format]}; frames: ids[ids],
                           // grads[n*dim of the format] -> EmbAck
  kEmbSave = 26,           // fields: {spec, begin, end} (rows) -> EmbBlob
  kEmbBlob = 27,           // frames: bytes[uint8] (EmbeddingTable::Save)
  kEmbRestore = 28,        // fields: {spec, begin}; frames: bytes[uint8] -> EmbAck
  kEmbAck = 29,            // fields: {rows}
  // Sample and aggregate at the owner (sampling/owner_aggregate.h).
  kSampleAggregate = 30,       // fields: {fanout, replace, rng_seed[, format][, coding][,
                               // own]}; frames: dsts[ids] (own: only the first own dsts'
                               // own rows wanted; absent: all)
  kSampleAggregateReply = 31,  // fields: {dim[, format][, coding][, own]}; frames:
                               // rows[(own+n)*dim] (own rows, then the held
                               // neighbours' sums), counts[ids, n], remote
                               // indptr[ids, n+1], remote ids[ids] (servers send each
                               // destination's in increasing order; any order decodes)
  // The trainers' collectives (net/mesh.h), request id = the collective's
  // sequence number.
  kMeshPart = 32,  // fields: {source, piece, pieces}; frames: bytes[uint8]
  // Heterogeneous batches between a trainer and its gnn-samplers (net/batch_codec.h).
  kTypedSeedBatch = 33,  // fields: {epoch, index, rng_seed, replace, layers, relations};
                         // frames: seeds[int64], fanouts[int32, layers x relations],
                         // optional excluded (head, tail) pairs[int64]
  kTypedMiniBatch = 34,  // fields: {index, blocks, types, relation_width[, wire_bytes][,
                         // cache_lookups][, cache_hits][, input_means]}; frames:
                         // seeds, labels, features of every featured type (type order),
                         // then per block src_nodes, indptr, indices, etypes (narrow)
  // The sums of groups of rows at their owner (DistGraph::SampleAggregate's
  // neighbours held elsewhere; sampling/owner_aggregate.h SumRowGroups).
  kPullSums = 35,  // fields: {[format][, coding]}; frames: ids[ids], group indptr[ids, g+1]
                   // -> PullFeaturesReply with g rows: row k the sum of group k's rows
  // The same for a typed graph's rows: feature rows of a node type, or an
  // embedding table's (DistGraph's typed first layer at the owners).
  kPullTypedSums = 36,  // fields: {ntype[, format][, coding][, embedding, spec]}; frames:
                        // ids[ids], group indptr[ids, g+1] -> PullFeaturesReply, g rows
  // The nodes' ids in the input dataset (orig_nids): gnn-serve's map from
  // the ids users send to the graph's.
  kPullOrigIds = 37,  // fields: {[coding]}; frames: ids[ids] -> PullLabelsReply of input ids
  // Multi-label and regression graphs' labels: float32 rows of the
  // partition's label width.
  kPullTargets = 38,  // fields: {[coding]}; frames: ids[ids] -> PullFeaturesReply (float32)
  // Sparse-feature partitions' rows as they are stored (CSR), not made
  // dense: each row's count of stored entries, their column ids, and their
  // values unless every value is 1.
  kPullSparseRows = 39,   // fields: {[format][, coding]}; frames: ids[ids]
  kSparseRowsReply = 40,  // fields: {cols[, format][, coding][, has_values]}; frames:
                          // counts[ids], columns[nnz] (int32, or varints with coding 1)[,
                          // values[nnz] of the format, with has_values]
};

// Largest MsgType value; types above it are unknown.
constexpr uint16_t kMaxMsgType = 40;

const char* MsgTypeName(MsgType type);

// Error codes carried by kError.
enum ErrorCode : int32_t {
  kErrMalformed = 1,  // header or frames do not match
  kErrVersion = 2,    // protocol version mismatch
  kErrUnknownType = 3,
  kErrBadRequest = 4,  // well-formed but invalid (node not owned, bad fanout)
  kErrMismatch = 5,    // handshake: graph/config/job does not match
  kErrInternal = 6,
  kErrNotAllowed = 7,  // e.g. shutdown from another job
  kErrBusy = 8,        // the peer's reply window is full: it is not reading its replies
};

// Decoding failures that deserve their own error code in replies.
class VersionMismatchError : public ProtocolError {
 public:
  using ProtocolError::ProtocolError;
};
class UnknownTypeError : public ProtocolError {
 public:
  using ProtocolError::ProtocolError;
};

struct Header {
  uint32_t magic = kMagic;
  uint16_t version = kProtocolVersion;
  uint16_t type = 0;
  uint64_t request_id = 0;
  // A request's: bytes of replies (all their frames) the sender has taken
  // from this peer's socket so far, on this connection; 0 elsewhere. A
  // server subtracts it from what it has sent there to know what the peer
  // has not taken (net/peer_window.h).
  uint64_t taken_bytes = 0;
  std::vector<uint64_t> frame_bytes;  // byte size of each array frame that follows
  std::vector<Field> fields;          // small type-specific parameters, by name
  std::string text;                   // type-specific text

  MsgType msg_type() const { return static_cast<MsgType>(type); }
  // Appends a field (a list's next value when `key` is there already).
  void Add(Key key, int64_t value) { fields.push_back({key, value}); }
  // The value of the first field `key`, or null.
  const int64_t* Find(Key key) const;
  int64_t* Find(Key key);
  std::string DebugString() const;
};

// A decoded message: the header and its array frames (zero-copy).
struct Message {
  Header header;
  std::vector<zmq::message_t> frames;

  // Array frame i viewed as T; checks the size is a multiple of sizeof(T).
  template <typename T>
  const T* Array(size_t i, size_t* count) const {
    if (i >= frames.size() || frames[i].size() % sizeof(T) != 0) {
      throw ProtocolError("frame " + std::to_string(i) + " of " + header.DebugString() +
                          " is missing or not a whole number of elements");
    }
    *count = frames[i].size() / sizeof(T);
    return static_cast<const T*>(frames[i].data());
  }
  template <typename T>
  std::vector<T> CopyArray(size_t i) const {
    size_t n = 0;
    const T* p = Array<T>(i, &n);
    return std::vector<T>(p, p + n);
  }
};

// Builds a message. Array frames are copied into ZeroMQ buffers once.
Message MakeMessage(MsgType type, uint64_t request_id, std::vector<Field> fields = {},
                    std::string text = {});
template <typename T>
void AddArray(Message* m, const T* data, size_t count) {
  zmq::message_t frame(count * sizeof(T));
  if (count) std::memcpy(frame.data(), data, count * sizeof(T));
  m->header.frame_bytes.push_back(frame.size());
  m->frames.push_back(std::move(frame));
}
template <typename T, typename Alloc>
void AddArray(Message* m, const std::vector<T, Alloc>& v) {
  AddArray(m, v.data(), v.size());
}
// Adds an already-filled frame without copying.
void AddFrame(Message* m, zmq::message_t frame);
// Adds `count` values as one frame in `coding`.
void AddInts(Message* m, const int64_t* values, size_t count, IdCoding coding);
inline void AddInts(Message* m, const std::vector<int64_t>& v, IdCoding coding) {
  AddInts(m, v.data(), v.size(), coding);
}
// Array frame i's values in `coding`. Throws ProtocolError for a frame that
// is not whole values (a varint cut short or longer than 64 bits) or holds
// more than `max_values` (so a frame of 1-byte varints cannot decode into
// more memory than an int64 frame of the caller's limit).
std::vector<int64_t> ReadInts(const Message& m, size_t i, IdCoding coding, size_t max_values);
// A coding int off the wire: 0 or 1, else ProtocolError naming `type`.
IdCoding IdCodingOf(int64_t v, MsgType type);
// Values a decoded request / reply frame may hold: its byte limit in int64s.
constexpr size_t kMaxRequestValues = static_cast<size_t>(kMaxRequestBytes) / sizeof(int64_t);
constexpr size_t kMaxReplyValues = static_cast<size_t>(kMaxReplyBytes) / sizeof(int64_t);

Message MakeError(uint64_t request_id, ErrorCode code, const std::string& text);

zmq::message_t EncodeHeader(const Header& header);

// Decodes and validates a header frame: size limit, cereal decoding, magic,
// version, known type, frame count limit. Throws ProtocolError naming what is
// wrong; the error's request id is recoverable through `request_id_out`
// whenever the header decoded.
Header DecodeHeader(const zmq::message_t& frame, uint64_t* request_id_out = nullptr);

// Decodes parts = [header, arrays...] and checks the arrays against the
// header (count and byte sizes). Throws ProtocolError.
Message Decode(std::vector<zmq::message_t>&& parts, uint64_t* request_id_out = nullptr);

// A decoded message's fields, read by name. The constructor checks the
// message is of `type`, that each field's key is one of `allowed` (the
// fields the type takes) and that none repeats unless `lists` names it;
// each getter throws ProtocolError naming the type and the field (one a
// message must have and does not, a flag other than 1), never reads
// outside the header.
class FieldReader {
 public:
  FieldReader(const Message& m, MsgType type, std::initializer_list<Key> allowed,
              std::initializer_list<Key> lists = {});
  // A field the message must have.
  int64_t Get(Key key) const;
  // A field it may leave out: `absent` then.
  int64_t Get(Key key, int64_t absent) const;
  bool Has(Key key) const { return m_.header.Find(key) != nullptr; }
  // A flag: present means set, and its value must be 1.
  bool Flag(Key key) const;
  // A list's values in order (none when absent); more than `max` is malformed.
  std::vector<int64_t> List(Key key, size_t max) const;
  // Throws unless the message has `frames` array frames.
  void Frames(size_t frames) const;
  // Throws "malformed <type>: <what>".
  [[noreturn]] void Malformed(const std::string& what) const;

 private:
  const Message& m_;
  MsgType type_;
};

}  // namespace gnn::net
