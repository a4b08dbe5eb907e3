// Error hierarchy. Thrown where input is checked, caught only at the top of
// each binary (apps/*/main.cc via gnn::RunMain), which prints one line and
// maps the class to an exit code.
#pragma once

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

}  // namespace gnn
