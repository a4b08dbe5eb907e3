#include "net/security.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/sha256.h"
#include "net/ports.h"

namespace gnn::net {

namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
constexpr int kLoggedRefusals = 5;

std::string Z85(const std::array<uint8_t, 32>& bytes) {
  char out[41];
  if (!zmq_z85_encode(out, bytes.data(), bytes.size())) throw Error("cannot Z85-encode a key");
  return std::string(out, 40);
}

// A CURVE key pair whose secret key is `seed` (any 32 bytes are a valid
// Curve25519 secret); the public key is computed by libzmq.
void KeyPair(const std::array<uint8_t, 32>& seed, std::string* public_z85,
             std::string* secret_z85) {
  *secret_z85 = Z85(seed);
  char pub[41];
  if (zmq_curve_public(pub, secret_z85->c_str()) != 0) {
    throw Error("libzmq has no CURVE support (built without libsodium): use --insecure");
  }
  *public_z85 = std::string(pub, 40);
}

std::string Bytes(const std::array<uint8_t, 32>& a) { return std::string(a.begin(), a.end()); }

std::string Trimmed(std::string s) {
  while (!s.empty() &&
         (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) {
    s.pop_back();
  }
  return s;
}

}  // namespace

JobKeys JobKeys::Insecure() { return JobKeys(); }

JobKeys JobKeys::Derive(const std::string& secret, const std::string& job_id) {
  if (secret.size() < kMinSecretBytes) {
    throw ConfigError("a job secret needs at least " + std::to_string(kMinSecretBytes) + " bytes");
  }
  if (job_id.empty()) throw ConfigError("a secure job needs a job id (--job_id)");
  JobKeys k;
  k.secure_ = true;
  k.job_key_ = Bytes(HmacSha256(secret, "gnn job keys v1\n" + job_id));
  KeyPair(HmacSha256(k.job_key_, "curve server"), &k.server_public_z85_, &k.server_secret_z85_);
  KeyPair(HmacSha256(k.job_key_, "curve client"), &k.client_public_z85_, &k.client_secret_z85_);
  zmq_z85_decode(k.client_public_.data(), k.client_public_z85_.c_str());
  return k;
}

void JobKeys::MakeServer(zmq::socket_t& socket) const {
  if (!secure_) return;
  socket.set(zmq::sockopt::curve_server, true);
  socket.set(zmq::sockopt::curve_secretkey, server_secret_z85_);
  // Peers are told apart by the ZAP handler, which every server context has.
  socket.set(zmq::sockopt::zap_domain, "gnn");
}

void JobKeys::MakeClient(zmq::socket_t& socket) const {
  if (!secure_) return;
  socket.set(zmq::sockopt::curve_serverkey, server_public_z85_);
  socket.set(zmq::sockopt::curve_publickey, client_public_z85_);
  socket.set(zmq::sockopt::curve_secretkey, client_secret_z85_);
}

std::string JobKeys::Token(const std::string& purpose) const {
  if (!secure_) return "";
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : HmacSha256(job_key_, "token\n" + purpose)) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

std::string ReadSecretFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw ConfigError(CannotMessage("open secret file", path, errno));
  }
  if (!S_ISREG(st.st_mode)) throw ConfigError("secret file " + path + " is not a regular file");
  if (st.st_uid != ::getuid())
    throw ConfigError("secret file " + path + " is not owned by this user");
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw ConfigError(
        "secret file " + path + " has mode " + mode +
        ": others may read it; chmod 600 it (and make a new secret if it was shared)");
  }
  std::string text;
  try {
    text = ReadFile(path);
  } catch (const DataError& e) {
    throw ConfigError(std::string("secret file: ") + e.what());
  }
  std::string secret = Trimmed(text);
  if (secret.size() < kMinSecretBytes) {
    throw ConfigError("secret file " + path + " holds " + std::to_string(secret.size()) +
                      " bytes; a secret needs at least " + std::to_string(kMinSecretBytes));
  }
  return secret;
}

std::string NewSecret() {
  uint8_t raw[32];
  {
    std::ifstream urandom("/dev/urandom", std::ios::binary);
    if (!urandom.read(reinterpret_cast<char*>(raw), sizeof(raw))) {
      throw Error("cannot read /dev/urandom for a job secret");
    }
  }
  static const char* hex = "0123456789abcdef";
  std::string text;
  for (uint8_t b : raw) {
    text += hex[b >> 4];
    text += hex[b & 15];
  }
  return text;
}

void WriteSecretFile(const std::string& path, const std::string& secret) {
  const std::string text = secret + "\n";
  std::string tmp = path + ".XXXXXX";
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());  // mode 0600
  if (fd < 0) throw ConfigError(CannotMessage("write secret file", path, errno));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(name.data(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(name.data());
    throw ConfigError(CannotMessage("write secret file", path, err));
  }
}

JobKeys ResolveJobKeys(const std::string& secret_file, bool insecure, const std::string& job_id,
                       const std::string& who) {
  if (insecure) {
    GNN_LOG(kWarn) << who << ": --insecure: plaintext and unauthenticated: anyone who can reach "
                   << "its ports can read the graph and stop the job";
    return JobKeys::Insecure();
  }
  if (secret_file.empty()) {
    throw ConfigError(who + " needs the job's secret: --secret_file (gnn-launch passes one; " +
                      "per-node launches: a cluster secret on every machine, shipped by gnn-copy "
                      "--secret_file) or --insecure for plaintext");
  }
  return JobKeys::Derive(ReadSecretFile(secret_file), job_id);
}

Authenticator::Authenticator(zmq::context_t& ctx, const JobKeys& keys, std::string who)
    : allowed_(keys.client_public()), who_(std::move(who)) {
  if (!keys.secure()) return;
  auto socket = std::make_shared<zmq::socket_t>(ctx, zmq::socket_type::rep);
  socket->set(zmq::sockopt::linger, 0);
  BindRetrying(*socket, kZapEndpoint);  // before any server socket of ctx binds
  thread_ = std::thread([this, socket] { Serve(*socket); });
}

Authenticator::~Authenticator() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Authenticator::Serve(zmq::socket_t& socket) {
  std::vector<zmq::message_t> req;
  while (!stop_) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    try {
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) <= 0) continue;
      req.clear();
      while (true) {
        zmq::message_t part;
        if (!socket.recv(part, zmq::recv_flags::none)) break;
        const bool more = part.more();
        req.push_back(std::move(part));
        if (!more) break;
      }
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      if (e.num() == ETERM) return;
      throw;
    }
    // ZAP 1.0: version, request id, domain, address, identity, mechanism,
    // credentials (CURVE: the client's 32-byte public key).
    const bool well_formed = req.size() >= 6 && req[0].to_string() == "1.0";
    const bool admitted = well_formed && req.size() == 7 && req[5].to_string() == "CURVE" &&
                          req[6].size() == allowed_.size() &&
                          std::memcmp(req[6].data(), allowed_.data(), allowed_.size()) == 0;
    if (!admitted) {
      const int64_t n = ++refused_;
      if (n <= kLoggedRefusals) {
        GNN_LOG(kWarn) << who_ << " refused a connection from "
                       << (req.size() > 3 ? req[3].to_string() : std::string("?"))
                       << ": it does not hold the job's key"
                       << (n == kLoggedRefusals ? " (further refusals are not logged)" : "");
      }
    }
    std::vector<std::string> reply = {"1.0",
                                      req.size() > 1 ? req[1].to_string() : "",
                                      admitted ? "200" : "400",
                                      admitted ? "OK" : "not this job's key",
                                      "",
                                      ""};
    try {
      for (size_t i = 0; i < reply.size(); ++i) {
        socket.send(zmq::buffer(reply[i]),
                    i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
      }
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
    }
  }
}

}  // namespace gnn::net
