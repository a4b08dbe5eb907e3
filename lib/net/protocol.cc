#include "net/protocol.h"

#include <algorithm>
#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <sstream>

namespace gnn::net {

template <class Archive>
void serialize(Archive& ar, Field& f) {
  uint16_t key = static_cast<uint16_t>(f.key);
  ar(key, f.value);
  f.key = static_cast<Key>(key);
}

template <class Archive>
void serialize(Archive& ar, Header& h) {
  ar(h.magic, h.version, h.type, h.request_id, h.taken_bytes, h.frame_bytes, h.fields, h.text);
}

namespace {

// A read-only streambuf over a frame, so decoding does not copy it.
class FrameBuf : public std::streambuf {
 public:
  FrameBuf(const char* data, size_t size) {
    char* p = const_cast<char*>(data);
    setg(p, p, p + size);
  }
};

}  // namespace

const char* MsgTypeName(MsgType type) {
  switch (type) {
    case MsgType::kError:
      return "Error";
    case MsgType::kHello:
      return "Hello";
    case MsgType::kHelloReply:
      return "HelloReply";
    case MsgType::kPing:
      return "Ping";
    case MsgType::kPong:
      return "Pong";
    case MsgType::kSample:
      return "Sample";
    case MsgType::kSampleReply:
      return "SampleReply";
    case MsgType::kPullFeatures:
      return "PullFeatures";
    case MsgType::kPullFeaturesReply:
      return "PullFeaturesReply";
    case MsgType::kPullLabels:
      return "PullLabels";
    case MsgType::kPullLabelsReply:
      return "PullLabelsReply";
    case MsgType::kPullOrigIds:
      return "PullOrigIds";
    case MsgType::kPullTargets:
      return "PullTargets";
    case MsgType::kPullSparseRows:
      return "PullSparseRows";
    case MsgType::kSparseRowsReply:
      return "SparseRowsReply";
    case MsgType::kMetadata:
      return "Metadata";
    case MsgType::kMetadataReply:
      return "MetadataReply";
    case MsgType::kShutdown:
      return "Shutdown";
    case MsgType::kShutdownReply:
      return "ShutdownReply";
    case MsgType::kSeedBatch:
      return "SeedBatch";
    case MsgType::kMiniBatch:
      return "MiniBatch";
    case MsgType::kStop:
      return "Stop";
    case MsgType::kSplitNodes:
      return "SplitNodes";
    case MsgType::kSplitNodesReply:
      return "SplitNodesReply";
    case MsgType::kTypedSample:
      return "TypedSample";
    case MsgType::kTypedSampleReply:
      return "TypedSampleReply";
    case MsgType::kPullTyped:
      return "PullTyped";
    case MsgType::kEmbPull:
      return "EmbPull";
    case MsgType::kEmbPush:
      return "EmbPush";
    case MsgType::kEmbSave:
      return "EmbSave";
    case MsgType::kEmbBlob:
      return "EmbBlob";
    case MsgType::kEmbRestore:
      return "EmbRestore";
    case MsgType::kEmbAck:
      return "EmbAck";
    case MsgType::kSampleAggregate:
      return "SampleAggregate";
    case MsgType::kSampleAggregateReply:
      return "SampleAggregateReply";
    case MsgType::kMeshPart:
      return "MeshPart";
    case MsgType::kTypedSeedBatch:
      return "TypedSeedBatch";
    case MsgType::kTypedMiniBatch:
      return "TypedMiniBatch";
    case MsgType::kPullSums:
      return "PullSums";
    case MsgType::kPullTypedSums:
      return "PullTypedSums";
  }
  return "Unknown";
}

std::string KeyName(Key key) {
  // Indexed by Key's number (0 is none).
  static constexpr const char* kNames[] = {
      nullptr,       "code",       "machine",       "server",
      "node_start",  "node_end",   "feature_dim",   "classes",
      "trainer",     "sampler",    "fanout",        "replace",
      "rng_seed",    "coding",     "edge_data",     "edge_dim",
      "format",      "dim",        "mask",          "offset",
      "count",       "epoch",      "index",         "blocks",
      "input_means", "wire_bytes", "cache_lookups", "cache_hits",
      "label_width", "sparse",     "relations",     "relation_width",
      "ntype",       "emb_type",   "emb_dim",       "emb_optimizer",
      "emb_lr_bits", "emb_seed",   "begin",         "end",
      "rows",        "own",        "source",        "piece",
      "pieces",      "layers",     "types",         "cols",
      "has_values",  "embedding",  "exclude"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Key::kExclude) + 1,
                "a name for every key");
  const auto k = static_cast<size_t>(key);
  if (k < sizeof(kNames) / sizeof(kNames[0]) && kNames[k]) return kNames[k];
  return "key" + std::to_string(k);
}

const int64_t* Header::Find(Key key) const {
  for (const Field& f : fields) {
    if (f.key == key) return &f.value;
  }
  return nullptr;
}

int64_t* Header::Find(Key key) {
  for (Field& f : fields) {
    if (f.key == key) return &f.value;
  }
  return nullptr;
}

std::string Header::DebugString() const {
  std::ostringstream s;
  s << MsgTypeName(msg_type()) << "(type=" << type << " id=" << request_id << " v" << version;
  for (const Field& f : fields) s << " " << KeyName(f.key) << "=" << f.value;
  if (!frame_bytes.empty()) {
    s << " frames=[";
    for (size_t i = 0; i < frame_bytes.size(); ++i) s << (i ? "," : "") << frame_bytes[i];
    s << "]";
  }
  if (!text.empty()) s << " text=" << text.size() << "B";
  s << ")";
  return s.str();
}

Message MakeMessage(MsgType type, uint64_t request_id, std::vector<Field> fields,
                    std::string text) {
  Message m;
  m.header.type = static_cast<uint16_t>(type);
  m.header.request_id = request_id;
  m.header.fields = std::move(fields);
  m.header.text = std::move(text);
  return m;
}

void AddFrame(Message* m, zmq::message_t frame) {
  m->header.frame_bytes.push_back(frame.size());
  m->frames.push_back(std::move(frame));
}

IdCoding ParseIdCoding(const std::string& name, const std::string& flag) {
  if (name == "int64") return IdCoding::kInt64;
  if (name == "varint") return IdCoding::kVarint;
  throw ConfigError(flag + " must be int64 or varint, got '" + name + "'");
}

const char* IdCodingName(IdCoding c) { return c == IdCoding::kVarint ? "varint" : "int64"; }

IdCoding IdCodingOf(int64_t v, MsgType type) {
  if (v != 0 && v != 1) {
    throw ProtocolError(std::string("malformed ") + MsgTypeName(type) + ": id coding " +
                        std::to_string(v));
  }
  return static_cast<IdCoding>(v);
}

namespace {

// Zigzag: small magnitudes of either sign -> small unsigned values.
inline uint64_t Zigzag(uint64_t d) { return (d << 1) ^ (0 - (d >> 63)); }
inline uint64_t Unzigzag(uint64_t z) { return (z >> 1) ^ (0 - (z & 1)); }
inline size_t VarintBytes(uint64_t z) {
  return 1 + static_cast<size_t>(63 - __builtin_clzll(z | 1)) / 7;
}

}  // namespace

void AddInts(Message* m, const int64_t* values, size_t count, IdCoding coding) {
  if (coding == IdCoding::kInt64) {
    AddArray(m, values, count);
    return;
  }
  // Differences in uint64 arithmetic: any two int64s, no overflow.
  size_t bytes = 0;
  uint64_t prev = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t v = static_cast<uint64_t>(values[i]);
    bytes += VarintBytes(Zigzag(v - prev));
    prev = v;
  }
  zmq::message_t frame(bytes);
  auto* out = static_cast<uint8_t*>(frame.data());
  prev = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t v = static_cast<uint64_t>(values[i]);
    uint64_t z = Zigzag(v - prev);
    prev = v;
    while (z >= 0x80) {
      *out++ = static_cast<uint8_t>(z | 0x80);
      z >>= 7;
    }
    *out++ = static_cast<uint8_t>(z);
  }
  AddFrame(m, std::move(frame));
}

std::vector<int64_t> ReadInts(const Message& m, size_t i, IdCoding coding, size_t max_values) {
  auto fail = [&](const std::string& what) {
    throw ProtocolError("frame " + std::to_string(i) + " of " + m.header.DebugString() + " " +
                        what);
  };
  if (coding == IdCoding::kInt64) {
    size_t n = 0;
    const int64_t* p = m.Array<int64_t>(i, &n);
    if (n > max_values) fail("holds more than " + std::to_string(max_values) + " values");
    return std::vector<int64_t>(p, p + n);
  }
  if (i >= m.frames.size()) fail("is missing");
  const auto* p = static_cast<const uint8_t*>(m.frames[i].data());
  const uint8_t* end = p + m.frames[i].size();
  // Every value takes a byte at least: count the last bytes (top bit
  // clear) to size the output once, and bound it before allocating.
  size_t n = 0;
  for (const uint8_t* q = p; q < end; ++q) n += (*q & 0x80) == 0;
  if (n > max_values) fail("holds more than " + std::to_string(max_values) + " values");
  if (p < end && (end[-1] & 0x80) != 0) fail("ends inside a varint");
  std::vector<int64_t> out(n);
  uint64_t prev = 0;
  for (size_t k = 0; k < n; ++k) {
    uint64_t z = 0;
    for (int shift = 0;; shift += 7) {
      const uint8_t b = *p++;
      // The 10th byte may carry only the 64th bit.
      if (shift == 63 && b > 1) fail("has a varint longer than 64 bits");
      z |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    prev += Unzigzag(z);
    out[k] = static_cast<int64_t>(prev);
  }
  return out;
}

Message MakeError(uint64_t request_id, ErrorCode code, const std::string& text) {
  return MakeMessage(MsgType::kError, request_id, {{Key::kCode, code}}, text);
}

zmq::message_t EncodeHeader(const Header& header) {
  std::ostringstream out;
  {
    cereal::PortableBinaryOutputArchive ar(out);
    ar(const_cast<Header&>(header));
  }
  std::string bytes = out.str();
  return zmq::message_t(bytes.data(), bytes.size());
}

Header DecodeHeader(const zmq::message_t& frame, uint64_t* request_id_out) {
  if (frame.size() > kMaxHeaderBytes) {
    throw ProtocolError("header frame of " + std::to_string(frame.size()) +
                        " bytes exceeds the limit of " + std::to_string(kMaxHeaderBytes));
  }
  if (frame.size() < 4)
    throw ProtocolError("header frame too short (" + std::to_string(frame.size()) + " bytes)");
  Header h;
  // Strings and vectors carry their own lengths: bound them by the frame
  // size before cereal allocates, so a forged length cannot exhaust memory.
  FrameBuf buf(static_cast<const char*>(frame.data()), frame.size());
  std::istream in(&buf);
  try {
    cereal::PortableBinaryInputArchive ar(in);
    ar(h.magic, h.version, h.type, h.request_id);
    if (h.magic != kMagic) throw ProtocolError("bad magic (not a gnn message)");
    if (request_id_out) *request_id_out = h.request_id;
    if (h.version != kProtocolVersion) {
      throw VersionMismatchError("protocol version " + std::to_string(h.version) +
                                 " (this side speaks " + std::to_string(kProtocolVersion) + ")");
    }
    if (h.type == 0 || h.type > kMaxMsgType) {
      throw UnknownTypeError("unknown message type " + std::to_string(h.type));
    }
    ar(h.taken_bytes);
    // Peek each length prefix: cereal's size_type is uint64.
    auto bounded = [&](auto& vec, size_t elem) {
      uint64_t n = 0;
      ar(cereal::make_size_tag(n));
      if (n > frame.size() / elem + 1) throw ProtocolError("header array length out of bounds");
      vec.resize(n);
      for (auto& x : vec) ar(x);
    };
    bounded(h.frame_bytes, sizeof(uint64_t));
    bounded(h.fields, sizeof(uint16_t) + sizeof(int64_t));
    uint64_t tn = 0;
    ar(cereal::make_size_tag(tn));
    if (tn > frame.size()) throw ProtocolError("header text length out of bounds");
    h.text.resize(tn);
    if (tn) ar(cereal::binary_data(&h.text[0], tn));
  } catch (const ProtocolError&) {
    throw;
  } catch (const std::exception& e) {
    throw ProtocolError(std::string("truncated or malformed header: ") + e.what());
  }
  if (in.rdbuf()->in_avail() != 0) throw ProtocolError("trailing bytes after header");
  if (h.frame_bytes.size() > kMaxArrayFrames) {
    throw ProtocolError("too many array frames (" + std::to_string(h.frame_bytes.size()) + ")");
  }
  for (uint64_t b : h.frame_bytes) {
    if (b > kMaxFrameBytes)
      throw ProtocolError("array frame of " + std::to_string(b) + " bytes exceeds the limit");
  }
  return h;
}

Message Decode(std::vector<zmq::message_t>&& parts, uint64_t* request_id_out) {
  if (parts.empty()) throw ProtocolError("empty message");
  Message m;
  m.header = DecodeHeader(parts[0], request_id_out);
  if (parts.size() - 1 != m.header.frame_bytes.size()) {
    throw ProtocolError(m.header.DebugString() + ": header announces " +
                        std::to_string(m.header.frame_bytes.size()) + " array frames, got " +
                        std::to_string(parts.size() - 1));
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].size() != m.header.frame_bytes[i - 1]) {
      throw ProtocolError(m.header.DebugString() + ": array frame " + std::to_string(i - 1) +
                          " has " + std::to_string(parts[i].size()) + " bytes, header says " +
                          std::to_string(m.header.frame_bytes[i - 1]));
    }
    m.frames.push_back(std::move(parts[i]));
  }
  return m;
}

FieldReader::FieldReader(const Message& m, MsgType type, std::initializer_list<Key> allowed,
                         std::initializer_list<Key> lists)
    : m_(m), type_(type) {
  if (m.header.msg_type() != type) Malformed("got " + m.header.DebugString());
  const std::vector<Field>& f = m.header.fields;
  for (size_t i = 0; i < f.size(); ++i) {
    if (std::find(allowed.begin(), allowed.end(), f[i].key) == allowed.end()) {
      Malformed("it takes no field " + KeyName(f[i].key));
    }
    if (std::find(lists.begin(), lists.end(), f[i].key) != lists.end()) continue;
    for (size_t j = 0; j < i; ++j) {
      if (f[j].key == f[i].key) Malformed("field " + KeyName(f[i].key) + " given twice");
    }
  }
}

int64_t FieldReader::Get(Key key) const {
  const int64_t* v = m_.header.Find(key);
  if (!v) Malformed("no field " + KeyName(key));
  return *v;
}

int64_t FieldReader::Get(Key key, int64_t absent) const {
  const int64_t* v = m_.header.Find(key);
  return v ? *v : absent;
}

bool FieldReader::Flag(Key key) const {
  const int64_t* v = m_.header.Find(key);
  if (v && *v != 1) Malformed("flag " + KeyName(key) + " = " + std::to_string(*v));
  return v != nullptr;
}

std::vector<int64_t> FieldReader::List(Key key, size_t max) const {
  std::vector<int64_t> out;
  for (const Field& f : m_.header.fields) {
    if (f.key != key) continue;
    if (out.size() == max) Malformed("more than " + std::to_string(max) + " " + KeyName(key));
    out.push_back(f.value);
  }
  return out;
}

void FieldReader::Frames(size_t frames) const {
  if (m_.frames.size() != frames) {
    Malformed("expected " + std::to_string(frames) + " array frames, got " +
              m_.header.DebugString());
  }
}

void FieldReader::Malformed(const std::string& what) const {
  throw ProtocolError(std::string("malformed ") + MsgTypeName(type_) + ": " + what);
}

}  // namespace gnn::net
