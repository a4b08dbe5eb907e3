// Who may talk to a job's sockets. Every ZeroMQ socket of a job uses CURVE
// (authenticated, encrypted) with keys derived from a secret and the job id:
// every process of the job holds the secret (a 0600 file gnn-launch makes
// per job, or a cluster secret on every machine) and so derives the same
// keys; a ZAP handler on each listening context admits only peers that
// present the job's client key. A stranger without the secret completes no
// handshake and gets nothing. Plaintext needs an explicit --insecure.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <zmq.hpp>

namespace gnn::net {

// A secret file holds at least this many bytes (64 hex digits when made
// by WriteSecretFile).
constexpr size_t kMinSecretBytes = 32;

class JobKeys {
 public:
  // Plaintext, unauthenticated (--insecure).
  static JobKeys Insecure();
  // The job's keys: HMAC-SHA256 of the secret over the job id, then one
  // CURVE key pair for servers and one for clients.
  static JobKeys Derive(const std::string& secret, const std::string& job_id);

  bool secure() const { return secure_; }
  // Sets a socket up as the job's listening side / connecting side, before
  // bind / connect. No-op when insecure.
  void MakeServer(zmq::socket_t& socket) const;
  void MakeClient(zmq::socket_t& socket) const;
  // The client public key in raw bytes (what ZAP requests carry).
  const std::array<uint8_t, 32>& client_public() const { return client_public_; }
  // The server public key (Z85); public, but derived from the secret.
  const std::string& server_public_z85() const { return server_public_z85_; }
  // A token only the job's processes can compute (e.g. for the rendezvous).
  std::string Token(const std::string& purpose) const;

 private:
  bool secure_ = false;
  std::string job_key_;  // raw 32 bytes
  std::string server_public_z85_, server_secret_z85_, client_public_z85_, client_secret_z85_;
  std::array<uint8_t, 32> client_public_{};
};

// Reads a secret file: a regular file owned by this user with no
// permission bits for group or others (as ssh demands of private keys),
// holding at least kMinSecretBytes bytes (trailing whitespace ignored).
// ConfigError naming the file and what is wrong.
std::string ReadSecretFile(const std::string& path);

// A fresh random secret: 64 hex digits from /dev/urandom.
std::string NewSecret();

// Writes `secret` to `path` with mode 0600, atomically (a unique
// temporary, fsynced, then renamed). ConfigError naming the file on failure.
void WriteSecretFile(const std::string& path, const std::string& secret);

// A process's keys from its flags: --insecure gives plaintext (and a
// warning in the log naming `who`); otherwise the secret file is required
// (ConfigError saying where one comes from) and so is the job id.
JobKeys ResolveJobKeys(const std::string& secret_file, bool insecure, const std::string& job_id,
                       const std::string& who);

// The ZAP handler of one context: CURVE peers presenting the job's client
// key are admitted, any other peer is refused (counted, and logged the
// first few times). Create it before binding a server socket in `ctx` and
// destroy it after closing that socket. Does nothing when keys are insecure.
class Authenticator {
 public:
  Authenticator(zmq::context_t& ctx, const JobKeys& keys, std::string who);
  ~Authenticator();
  Authenticator(const Authenticator&) = delete;
  Authenticator& operator=(const Authenticator&) = delete;
  int64_t refused() const { return refused_.load(); }

 private:
  void Serve(zmq::socket_t& socket);
  std::array<uint8_t, 32> allowed_{};
  std::string who_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> refused_{0};
  std::thread thread_;
};

}  // namespace gnn::net
