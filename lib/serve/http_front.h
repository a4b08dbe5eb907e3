// gnn-serve's HTTP side (cpp-httplib): the Open Inference Protocol's
// routes, bearer tokens, HTTPS, the request limits and deadline, the
// status codes of every refusal, and /metrics in Prometheus' text format.
// Handler threads parse a request and wait on the Batcher; they never
// touch the graph.
//
//   GET  /v2/health/live, /v2/health/ready        (no token needed)
//   GET  /v2                                      server metadata
//   GET  /v2/models/<graph_name>[/versions/1]     model metadata
//   GET  /v2/models/<graph_name>[/versions/1]/ready
//   POST /v2/models/<graph_name>[/versions/1]/infer
//   GET  /metrics
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "serve/batcher.h"
#include "serve/oip.h"
#include "serve/serving.h"

namespace CLI {
class App;
}

namespace gnn {

// gnn-serve's own flags (the graph's and the job's are gnn-train's).
struct ServeOptions {
  int http_port = 8000;   // --http_port (+ the machine's index on a shared host)
  std::string http_host;  // --http_host: default the machine's ip_config address
  int http_threads = 0;   // --http_threads: 0 = max_queue + 8
  BatcherOptions batch;   // --max_batch_nodes, --max_wait_ms, --max_queue
  RequestLimits limits;   // --max_request_nodes
  std::chrono::milliseconds deadline{10000};  // --deadline_ms
  std::string token_file;  // --token_file: require Authorization: Bearer <its text>
  std::string tls_cert;    // --tls_cert / --tls_key: HTTPS
  std::string tls_key;
  std::string fan_out;           // --fan_out: default every neighbour at every layer
  int64_t layer_cache_mb = 256;  // --layer_cache_mb: first-layer rows kept (0: off)
};
void RegisterServeFlags(CLI::App& app, ServeOptions* o);
// ConfigError naming the first bad flag; reads the token file.
void ValidateServeOptions(const ServeOptions& o, std::string* token);

class HttpFront {
 public:
  // `token` empty: no authentication.
  HttpFront(const ServeOptions& options, const std::string& token, Batcher& batcher,
            const ModelInfo& info);
  ~HttpFront();
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  // Binds host:port; ConfigError naming them (busy, not this machine's,
  // unreadable certificate) when it cannot.
  void Bind(const std::string& host, int port);
  // Serves on this thread until Stop().
  void Serve();
  // Stops Serve(); a no-op before Serve() runs (wait for Running()).
  void Stop();
  bool Running() const;
  // The Prometheus text of /metrics.
  std::string MetricsText() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gnn
