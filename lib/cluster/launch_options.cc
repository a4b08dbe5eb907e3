#include "cluster/launch_options.h"

#include <cctype>
#include <iostream>
#include <sstream>

#include "cluster/launch_plan.h"
#include "common/error.h"

namespace gnn {

namespace {

constexpr int kMaxRestarts = 1000;
constexpr double kMaxBackoffS = 3600;

}  // namespace

void LaunchOptions::Validate() const {
  if (num_trainers < 1) throw ConfigError("--num_trainers must be >= 1");
  if (num_samplers < 0) throw ConfigError("--num_samplers must be >= 0");
  if (num_servers < 1) throw ConfigError("--num_servers must be >= 1");
  if (part_config.empty()) throw ConfigError("--part_config is required");
  if (ip_config.empty()) throw ConfigError("--ip_config is required");
  ssh.Validate();
  if (machine_id < -1) throw ConfigError("--machine_id must be >= 0");
  if (!(server_ready_timeout.count() > 0))
    throw ConfigError("--server_ready_timeout_s must be > 0");
  if (machine_id >= 0 && ssh.force)
    throw ConfigError("--machine_id (per-node mode, no ssh) and --force_ssh exclude each other");
  if (!(peer_timeout.count() > 0)) throw ConfigError("--peer_timeout_s must be > 0");
  if (!(peer_grace.count() >= 0)) throw ConfigError("--peer_grace_s must be >= 0");
  if (master_port < 1 || master_port > 65535)
    throw ConfigError("--master_port out of range [1, 65535]");
  if (grace.count() < 0) throw ConfigError("--grace_s must be >= 0");
  if (max_restarts < 0 || max_restarts > kMaxRestarts)
    throw ConfigError("--max_restarts must be in [0, " + std::to_string(kMaxRestarts) + "]");
  if (!(restart_backoff.count() >= 0 && restart_backoff.count() <= kMaxBackoffS))
    throw ConfigError("--restart_backoff_s must be in [0, " + std::to_string(kMaxBackoffS) + "]");
  if (FirstWord(command, nullptr).empty()) throw ConfigError("the trainer command is missing");
  if (num_omp_threads < 0) throw ConfigError("--num_omp_threads must be >= 0");
  if (num_server_threads < 0) throw ConfigError("--num_server_threads must be >= 0");
  for (const std::string& e : extra_envs) ParseExtraEnvs(e);  // each one checked
}

namespace {

// A variable name: a letter or '_', then letters, digits and '_'.
size_t NameLength(const std::string& text, size_t at) {
  size_t end = at;
  while (end < text.size() &&
         (std::isalpha(static_cast<unsigned char>(text[end])) || text[end] == '_' ||
          (end > at && std::isdigit(static_cast<unsigned char>(text[end]))))) {
    ++end;
  }
  return end - at;
}

// True for "NAME=..." at `at`.
bool StartsAssignment(const std::string& text, size_t at) {
  const size_t n = NameLength(text, at);
  return n > 0 && at + n < text.size() && text[at + n] == '=';
}

}  // namespace

std::vector<std::string> ParseExtraEnvs(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (!StartsAssignment(word, 0)) {
      throw ConfigError("--extra_envs: '" + word + "' is not NAME=value");
    }
    size_t begin = 0;
    for (size_t comma = word.find(','); comma != std::string::npos;
         comma = word.find(',', comma + 1)) {
      if (!StartsAssignment(word, comma + 1)) continue;
      out.push_back(word.substr(begin, comma - begin));
      begin = comma + 1;
    }
    out.push_back(word.substr(begin));
  }
  for (const std::string& e : out) {
    if (e.rfind("GNN_", 0) == 0) {
      throw ConfigError("--extra_envs: " + e.substr(0, e.find('=')) +
                        " is gnn-launch's own variable (use its flag)");
    }
  }
  return out;
}

std::vector<std::string> GatherExtraEnvWords(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i + 1 < args.size(); ++i) {
    if (args[i] == "--") break;
    if (args[i] != "--extra_envs" && args[i] != "--extra-envs") continue;
    while (i + 2 < args.size() && StartsAssignment(args[i + 2], 0) &&
           args[i + 2].find_first_of(" \t") == std::string::npos) {
      args[i + 1] += " " + args[i + 2];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i + 2));
    }
  }
  return args;
}

void WarnIgnored(const LaunchOptions& o) {
  if (o.keep_alive) {
    std::cerr << "gnn-launch: warning: --keep_alive is ignored: each gnn-launch starts its own "
                 "servers and stops them with its job (no server outlives it to be reused)\n";
  }
  if (!o.graph_format.empty()) {
    std::cerr << "gnn-launch: warning: --graph_format " << o.graph_format
              << " is ignored: gnn-server always holds in-edges as CSC, the one format it "
                 "samples from\n";
  }
}

}  // namespace gnn
