#include "serve/http_front.h"

#include <httplib.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <mutex>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"

namespace gnn {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

void RegisterServeFlags(CLI::App& app, ServeOptions* o) {
  app.add_option("--http_port", o->http_port,
                 "HTTP port (machines that share a host: this + the machine's index on it)")
      ->capture_default_str();
  app.add_option("--http_host", o->http_host,
                 "address to bind (default: this machine's ip_config address; 127.0.0.1 with "
                 "--standalone)");
  app.add_option("--http_threads", o->http_threads,
                 "HTTP handler threads (0: --max_queue + 8, so a request over the queue is "
                 "refused at once)")
      ->capture_default_str();
  app.add_option("--max_batch_nodes", o->batch.max_batch_nodes,
                 "nodes of concurrent requests answered together at most (an edge model's "
                 "requests: both ends of every edge)")
      ->capture_default_str();
  app.add_option_function<double>(
         "--max_wait_ms",
         [o](double ms) {
           o->batch.max_wait =
               std::chrono::microseconds(static_cast<int64_t>(std::max(0.0, ms) * 1000));
         },
         "after a request arrives, wait at most this long for others to batch with it")
      ->default_str("1");
  app.add_option("--max_queue", o->batch.max_queue,
                 "requests in flight at most; more are answered 503 at once")
      ->capture_default_str();
  app.add_option("--max_request_nodes", o->limits.max_nodes,
                 "nodes (existing and new; an edge model's requests: both ends of every edge) "
                 "one request may ask for; more: 400")
      ->capture_default_str();
  app.add_option_function<int64_t>(
         "--deadline_ms", [o](int64_t ms) { o->deadline = std::chrono::milliseconds(ms); },
         "answer 504 when a request is not answered within this")
      ->default_str(std::to_string(o->deadline.count()));
  app.add_option("--layer_cache_mb", o->layer_cache_mb,
                 "MiB of first-layer rows kept across requests (GraphSAGE and GAT models: a "
                 "node's row depends on the node alone; 0: off)")
      ->capture_default_str();
  app.add_option("--token_file", o->token_file,
                 "require 'Authorization: Bearer <the file's text>' (health checks excepted)");
  app.add_option("--tls_cert", o->tls_cert,
                 "serve HTTPS with this PEM certificate (and --tls_key)");
  app.add_option("--tls_key", o->tls_key, "the PEM private key of --tls_cert");
}

void ValidateServeOptions(const ServeOptions& o, std::string* token) {
  if (o.http_port < 0 || o.http_port > 65535) {
    throw ConfigError("--http_port " + std::to_string(o.http_port) + " is not a port");
  }
  if (o.batch.max_batch_nodes < 1) throw ConfigError("--max_batch_nodes must be at least 1");
  if (o.batch.max_queue < 1) throw ConfigError("--max_queue must be at least 1");
  if (o.limits.max_nodes < 1) throw ConfigError("--max_request_nodes must be at least 1");
  if (o.deadline.count() < 1) throw ConfigError("--deadline_ms must be at least 1");
  if (o.layer_cache_mb < 0) throw ConfigError("--layer_cache_mb must be 0 (off) or more");
  if (o.http_threads < 0) throw ConfigError("--http_threads must be 0 (automatic) or more");
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    throw ConfigError("--tls_cert and --tls_key go together");
  }
  for (const std::string* f : {&o.tls_cert, &o.tls_key}) {
    if (!f->empty() && !PathExists(*f)) {
      throw ConfigError((f == &o.tls_cert ? "--tls_cert " : "--tls_key ") + *f +
                        ": No such file or directory");
    }
  }
  token->clear();
  if (o.token_file.empty()) return;
  if (!PathExists(o.token_file)) {
    throw ConfigError("--token_file " + o.token_file + ": No such file or directory");
  }
  *token = ReadFile(o.token_file);
  const auto not_space = [](char c) { return !std::isspace(static_cast<unsigned char>(c)); };
  token->erase(token->begin(), std::find_if(token->begin(), token->end(), not_space));
  token->erase(std::find_if(token->rbegin(), token->rend(), not_space).base(), token->end());
  if (token->empty()) throw ConfigError("--token_file " + o.token_file + " is empty");
  if (token->find_first_of(" \t\r\n") != std::string::npos) {
    throw ConfigError("--token_file " + o.token_file + " holds more than one word");
  }
}

namespace {

// Latency buckets of the infer histogram (seconds).
constexpr std::array<double, 14> kBuckets = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
                                             0.2,   0.5,   1.0,   2.0,  5.0,  10.0, 30.0};

// A small set of route labels keeps /metrics' series bounded.
std::string RouteOf(const std::string& path) {
  if (path.rfind("/v2/health", 0) == 0) return "health";
  if (path.size() > 6 && path.compare(path.size() - 6, 6, "/infer") == 0) return "infer";
  if (path == "/metrics") return "metrics";
  if (path.rfind("/v2", 0) == 0) return "metadata";
  return "other";
}

long long ResidentBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// Constant-time comparison of the presented token with ours.
bool SameToken(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i % std::max<size_t>(b.size(), 1)];
  return diff == 0;
}

int HttpStatus(QueryStatus s) {
  switch (s) {
    case QueryStatus::kOk:
      return 200;
    case QueryStatus::kBadRequest:
      return 400;
    case QueryStatus::kDeadline:
      return 504;
    case QueryStatus::kFailed:
      return 500;
    default:
      return 503;
  }
}

}  // namespace

struct HttpFront::Impl {
  ServeOptions options;
  std::string token;
  Batcher& batcher;
  const ModelInfo& info;
  std::unique_ptr<httplib::Server> server;
  Clock::time_point started = Clock::now();

  mutable std::mutex mu;
  std::map<std::pair<std::string, int>, int64_t> requests;  // (route, status) -> count
  std::array<int64_t, kBuckets.size()> buckets{};           // infer latencies, not cumulative
  int64_t infer_count = 0;
  double infer_seconds = 0;

  Impl(const ServeOptions& o, const std::string& t, Batcher& b, const ModelInfo& i)
      : options(o), token(t), batcher(b), info(i) {}

  static void Reply(httplib::Response& res, int status, const std::string& error) {
    res.status = status;
    res.set_content(ErrorBody(error), "application/json");
    if (status == 503) res.set_header("Retry-After", "1");
  }

  void Observe(double seconds) {
    std::lock_guard<std::mutex> lock(mu);
    for (size_t b = 0; b < kBuckets.size(); ++b) {
      if (seconds <= kBuckets[b]) {
        ++buckets[b];
        break;
      }
    }
    ++infer_count;
    infer_seconds += seconds;
  }

  bool KnownModel(const httplib::Request& req, httplib::Response& res) const {
    const std::string name = req.matches[1];
    const std::string version = req.matches.size() > 2 ? std::string(req.matches[2]) : "";
    if (name != info.graph_name) {
      Reply(res, 404,
            "unknown model '" + name + "' (this server serves '" + info.graph_name + "')");
      return false;
    }
    if (!version.empty() && version != "1") {
      Reply(res, 404, "model '" + name + "' has version 1 only, not '" + version + "'");
      return false;
    }
    return true;
  }

  void Infer(const httplib::Request& req, httplib::Response& res) {
    const Clock::time_point start = Clock::now();
    if (!KnownModel(req, res)) return;
    int64_t header_length = -1;
    if (req.has_header("Inference-Header-Content-Length")) {
      const std::string v = req.get_header_value("Inference-Header-Content-Length");
      try {
        size_t used = 0;
        header_length = std::stoll(v, &used);
        if (used != v.size() || header_length < 0) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        Reply(res, 400, "Inference-Header-Content-Length '" + v + "' is not a byte count");
        return;
      }
    }
    InferRequest request;
    try {
      request = ParseInferRequest(req.body, header_length, info, options.limits);
    } catch (const BadRequest& e) {
      Reply(res, 400, e.what());
      return;
    }
    QueryResult result = batcher.Submit(std::move(request.query), start + options.deadline);
    if (result.status != QueryStatus::kOk) {
      Reply(res, HttpStatus(result.status), result.error);
    } else {
      InferResponse out = EncodeInferResponse(request, result.answer, info);
      if (out.header_length >= 0) {
        res.set_header("Inference-Header-Content-Length", std::to_string(out.header_length));
      }
      res.status = 200;
      res.set_content(std::move(out.body), out.content_type);
    }
    Observe(std::chrono::duration<double>(Clock::now() - start).count());
  }

  void Routes() {
    httplib::Server& s = *server;
    s.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(json{{"live", true}}.dump(), "application/json");
    });
    auto ready = [this](const httplib::Request& req, httplib::Response& res) {
      if (req.matches.size() > 1 && !KnownModel(req, res)) return;
      const bool ok = batcher.ready();
      res.status = ok ? 200 : 503;
      res.set_content(json{{"ready", ok}}.dump(), "application/json");
    };
    s.Get("/v2/health/ready", ready);
    s.Get(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/ready)", ready);
    s.Get("/v2", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(
          json{{"name", "gnn-serve"}, {"version", "1"}, {"extensions", {"binary_tensor_data"}}}
              .dump(),
          "application/json");
    });
    s.Get(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)",
          [this](const httplib::Request& req, httplib::Response& res) {
            if (!KnownModel(req, res)) return;
            res.set_content(ModelMetadata(info).dump(), "application/json");
          });
    s.Post(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/infer)",
           [this](const httplib::Request& req, httplib::Response& res) { Infer(req, res); });
    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(Metrics(), "text/plain; version=0.0.4");
    });
    // Every route a token guards, answered before routing.
    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (token.empty() || req.path.rfind("/v2/health/", 0) == 0) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      const std::string auth = req.get_header_value("Authorization");
      if (auth.rfind("Bearer ", 0) == 0 && SameToken(auth.substr(7), token)) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      res.set_header("WWW-Authenticate", "Bearer");
      Reply(res, 401,
            auth.empty() ? "this server needs 'Authorization: Bearer <token>'" : "wrong token");
      return httplib::Server::HandlerResponse::Handled;
    });
    // httplib calls this outside its own try: nothing may escape it.
    s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      try {
        std::string what = "HTTP " + std::to_string(res.status);
        if (res.status == 404) what = "no route " + req.method + " " + req.path;
        if (res.status == 413) {
          what = req.get_header_value("Content-Type") == "application/x-www-form-urlencoded"
                     ? "a form-encoded body over 8 KB: send Content-Type: application/json "
                       "(curl: -H 'Content-Type: application/json')"
                     : "the body is over this server's limit for --max_request_nodes";
        }
        res.set_content(ErrorBody(what), "application/json");
      } catch (...) {
        res.set_content("{\"error\": \"HTTP error\"}", "application/json");
      }
    });
    s.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "internal error";
          try {
            std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          Reply(res, 500, what);
        });
    s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu);
      ++requests[{RouteOf(req.path), res.status}];
    });
  }

  std::string Metrics() const {
    std::ostringstream m;
    std::lock_guard<std::mutex> lock(mu);
    m << "# HELP gnn_serve_requests_total HTTP requests answered, by route and status code.\n"
      << "# TYPE gnn_serve_requests_total counter\n";
    for (const auto& [key, n] : requests) {
      m << "gnn_serve_requests_total{route=\"" << key.first << "\",code=\"" << key.second << "\"} "
        << n << "\n";
    }
    m << "# HELP gnn_serve_infer_duration_seconds Time from an infer request's arrival to its "
         "answer.\n"
      << "# TYPE gnn_serve_infer_duration_seconds histogram\n";
    int64_t cumulative = 0;
    for (size_t b = 0; b < kBuckets.size(); ++b) {
      cumulative += buckets[b];
      m << "gnn_serve_infer_duration_seconds_bucket{le=\"" << kBuckets[b] << "\"} " << cumulative
        << "\n";
    }
    m << "gnn_serve_infer_duration_seconds_bucket{le=\"+Inf\"} " << infer_count << "\n"
      << "gnn_serve_infer_duration_seconds_sum " << std::setprecision(17) << infer_seconds
      << std::setprecision(6) << "\n"
      << "gnn_serve_infer_duration_seconds_count " << infer_count << "\n";
    const BatcherStats st = batcher.stats();
    // Whole numbers print whole (the stream's 6 digits would round counts
    // past a million); others with every digit a double has.
    auto gauge = [&](const char* name, const char* help, const char* type, double v) {
      m << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n"
        << name << " ";
      if (v == std::floor(v) && std::abs(v) < 1e15) {
        m << static_cast<int64_t>(v);
      } else {
        m << std::setprecision(17) << v << std::setprecision(6);
      }
      m << "\n";
    };
    gauge("gnn_serve_queue_depth", "Requests waiting for the worker.", "gauge",
          static_cast<double>(batcher.queued()));
    gauge("gnn_serve_in_flight", "Infer requests submitted and not yet answered.", "gauge",
          static_cast<double>(batcher.in_flight()));
    gauge("gnn_serve_ready", "1 when every partition answers.", "gauge", batcher.ready() ? 1 : 0);
    gauge("gnn_serve_batches_total", "Model runs (each answers one or more requests).", "counter",
          static_cast<double>(st.batches));
    gauge("gnn_serve_queries_total", "Infer requests answered by the model.", "counter",
          static_cast<double>(st.queries));
    gauge("gnn_serve_nodes_total", "Rows of outputs answered: nodes, or an edge model's edges.",
          "counter", static_cast<double>(st.nodes));
    gauge("gnn_serve_new_nodes_total", "New nodes (new_features rows) answered.", "counter",
          static_cast<double>(st.new_nodes));
    gauge("gnn_serve_busy_seconds_total", "Time the worker spent running the model.", "counter",
          st.busy_seconds);
    gauge("process_resident_memory_bytes", "Resident memory of gnn-serve.", "gauge",
          static_cast<double>(ResidentBytes()));
    gauge("gnn_serve_uptime_seconds", "Seconds since gnn-serve started.", "gauge",
          std::chrono::duration<double>(Clock::now() - started).count());
    return m.str();
  }
};

HttpFront::HttpFront(const ServeOptions& options, const std::string& token, Batcher& batcher,
                     const ModelInfo& info)
    : impl_(std::make_unique<Impl>(options, token, batcher, info)) {
  const ServeOptions& o = impl_->options;
  if (!o.tls_cert.empty()) {
    auto tls = std::make_unique<httplib::SSLServer>(o.tls_cert.c_str(), o.tls_key.c_str());
    if (!tls->is_valid()) {
      throw ConfigError("--tls_cert " + o.tls_cert + " / --tls_key " + o.tls_key +
                        ": not a PEM certificate and its private key");
    }
    impl_->server = std::move(tls);
  } else {
    impl_->server = std::make_unique<httplib::Server>();
  }
  httplib::Server& s = *impl_->server;
  const int threads = o.http_threads > 0 ? o.http_threads : static_cast<int>(o.batch.max_queue) + 8;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // A busy port is an error (httplib's default SO_REUSEPORT would share it).
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // A request row's JSON at most: a new node's features, or an asked
  // edge's own.
  const int64_t row_bytes =
      16 * std::max<int64_t>({1, impl_->info.feature_dim, impl_->info.edge_feature_dim}) + 64;
  s.set_payload_max_length(
      static_cast<size_t>((int64_t{64} << 20) + o.limits.max_nodes * row_bytes));
  // Headers and body leave in two writes: without TCP_NODELAY a reused
  // keep-alive connection waits ~40 ms for the client's delayed ACK.
  s.set_tcp_nodelay(true);
  // A connection holds a handler thread while it lives: bounded, so idle
  // or slow clients cannot keep every thread (and a stop) waiting long.
  s.set_keep_alive_max_count(1000);
  s.set_keep_alive_timeout(5);
  s.set_read_timeout(std::chrono::seconds(10));
  s.set_write_timeout(std::chrono::seconds(10));
  impl_->Routes();
}

HttpFront::~HttpFront() = default;

void HttpFront::Bind(const std::string& host, int port) {
  if (!impl_->server->bind_to_port(host, port)) {
    throw ConfigError("--http_port " + std::to_string(port) + ": cannot listen on " + host + ":" +
                      std::to_string(port) + " (in use, or not an address of this machine)");
  }
}

void HttpFront::Serve() { impl_->server->listen_after_bind(); }

void HttpFront::Stop() { impl_->server->stop(); }

bool HttpFront::Running() const { return impl_->server->is_running(); }

std::string HttpFront::MetricsText() const { return impl_->Metrics(); }

}  // namespace gnn
