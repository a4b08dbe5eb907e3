// Error hierarchy. Thrown where input is checked, caught only at the top of
// each binary (apps/*/main.cc via gnn::RunMain), which prints one line and
// maps the class to an exit code.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace gnn {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Bad flags, bad option values, inconsistent configuration files.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// Missing, corrupt or malformed input data (files, arrays, checksums).
class DataError : public Error {
 public:
  using Error::Error;
};

// A peer sent something that violates the wire protocol.
class ProtocolError : public Error {
 public:
  using Error::Error;
};

// A deadline passed while waiting for something.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// A peer process or host failed or could not be reached.
class PeerError : public Error {
 public:
  using Error::Error;
};

// Process exit codes, one per error class (documented in README).
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,
  kExitConfig = 2,
  kExitData = 3,
  kExitProtocol = 4,
  kExitTimeout = 5,
  kExitPeer = 6,
};

// The exit code of `e`'s class: 2 ConfigError, 3 DataError, 4 ProtocolError,
// 5 TimeoutError, 6 PeerError, 1 anything else. The one mapping from an
// error to a code (RunMain, gnn-launch's checks).
inline int ExitCodeOf(const std::exception& e) {
  if (dynamic_cast<const ConfigError*>(&e)) return kExitConfig;
  if (dynamic_cast<const DataError*>(&e)) return kExitData;
  if (dynamic_cast<const ProtocolError*>(&e)) return kExitProtocol;
  if (dynamic_cast<const TimeoutError*>(&e)) return kExitTimeout;
  if (dynamic_cast<const PeerError*>(&e)) return kExitPeer;
  return kExitError;
}

// Throws an error of `e`'s class (as ExitCodeOf sees it) saying `message`:
// one line that sums up several errors keeps the first one's exit code.
[[noreturn]] inline void ThrowAs(const std::exception& e, const std::string& message) {
  switch (ExitCodeOf(e)) {
    case kExitConfig:
      throw ConfigError(message);
    case kExitData:
      throw DataError(message);
    case kExitProtocol:
      throw ProtocolError(message);
    case kExitTimeout:
      throw TimeoutError(message);
    case kExitPeer:
      throw PeerError(message);
    default:
      throw Error(message);
  }
}

}  // namespace gnn
