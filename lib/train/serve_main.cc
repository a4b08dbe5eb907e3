#include "train/serve_main.h"

#include <pthread.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <iostream>
#include <thread>

#include "common/cli.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/parallel.h"
#include "net/ip_config.h"
#include "net/security.h"
#include "partition/config.h"
#include "serve/batcher.h"
#include "serve/http_front.h"
#include "serve/serve_graph.h"
#include "train/blas_kernels.h"
#include "train/cluster/collective.h"
#include "train/options/train_flags.h"
#include "train/serve/served_model.h"

namespace gnn {

namespace {

// SIGINT and SIGTERM are blocked in every thread (set before any starts)
// and taken by this one, which stops the HTTP server: a clean stop.
void WaitForStopSignal(HttpFront* front, std::atomic<bool>* stopping,
                       const std::atomic<bool>* served) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  if (stopping->exchange(true)) return;  // the server stopped by itself
  GNN_LOG(kInfo) << "stopping (" << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ")";
  // A signal that came while it loaded: Stop() only stops a running server.
  while (!front->Running() && !served->load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  front->Stop();
}

void Serve(TrainOptions& o, const ServeOptions& s, bool check_only) {
  std::string token;
  ValidateServeOptions(s, &token);
  Served v = LoadServed(o, s);
  const auto [host, port] = ListenAddress(o, s);
  if (check_only) {
    std::cout << "gnn-serve: the flags, " << o.part_config << " and " << o.restore_model_path
              << " check out" << std::endl;
    return;
  }
  const int threads = o.num_omp_threads > 0 ? o.num_omp_threads : CoreShare(o);
  torch::set_num_threads(threads);
  std::unique_ptr<ServeGraph> graph;
  if (o.standalone) {
    graph = OpenLocalServeGraph(v.config, o.part_config, o.verify_checksums, threads,
                                o.ReadsEdgeData());
  } else {
    const net::JobKeys keys = net::ResolveJobKeys(o.secret_file, o.insecure, o.job_id, "gnn-serve");
    graph = OpenDistServeGraph(GraphOptionsOf(o, keys), v.config);
  }
  GraphEngine engine(std::move(graph), MakeTorchRunner(v.model, v.info.task == "link"), v.info);
  Batcher batcher(engine, s.batch);
  HttpFront front(s, token, batcher, engine.info());
  front.Bind(host, port);
  std::atomic<bool> stopping{false}, served{false};
  std::thread stopper(WaitForStopSignal, &front, &stopping, &served);
  std::string fan;
  for (int f : v.info.fanouts) fan += (fan.empty() ? "" : ",") + std::to_string(f);
  GNN_LOG(kInfo) << "serving " << o.model << " (" << o.restore_model_path << ") on "
                 << v.config.graph_name << " at " << (s.tls_cert.empty() ? "http" : "https")
                 << "://" << host << ":" << port << "/v2/models/" << v.config.graph_name
                 << "/infer (fan-out " << fan << ", "
                 << (o.standalone ? "standalone" : "distributed")
                 << (token.empty() ? "" : ", bearer token") << ")";
  front.Serve();
  served = true;
  if (!stopping.exchange(true)) pthread_kill(stopper.native_handle(), SIGTERM);
  batcher.Stop();
  stopper.join();
  GNN_LOG(kInfo) << "stopped";
}

}  // namespace

int ServeMain(int argc, char** argv) {
  UseBestBlasKernels(argv);
  // Before any thread starts (the launcher's stdin watcher included), so
  // that only WaitForStopSignal takes them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  TrainOptions o;
  ServeOptions s;
  CLI::App app{
      "Answer predictions of a model gnn-train --save_model wrote over the live partitions "
      "(Open Inference Protocol v2, HTTP/JSON).",
      "gnn-serve"};
  app.set_config("--config", "", "read flags from a config file (TOML/INI)");
  app.add_option("--part_config", o.part_config, "path to <graph>.json (gnn-partition's output)");
  app.add_option("--graph_name", o.graph_name, "checked against the partition config");
  app.add_flag("--standalone", o.standalone, "serve a 1-partition config from memory, no servers");
  app.add_option("--restore_model_path", o.restore_model_path,
                 "a file gnn-train --save_model wrote");
  app.add_option("--embed_layer", o.embed_layer,
                 "the layer the 'embedding' output is (1-based; -1: the last hidden layer)")
      ->capture_default_str();
  app.add_option("--fan_out", s.fan_out,
                 "neighbours sampled per layer, input layer first, to bound latency (default: "
                 "every neighbour, as gnn-train --inference)");
  app.add_option("--num_omp_threads", o.num_omp_threads,
                 "LibTorch threads (0: this machine's cores)")
      ->capture_default_str();
  app.add_option("--verify_checksums", o.verify_checksums,
                 "--standalone: check the partition files' checksums as they load")
      ->capture_default_str();
  RegisterClusterFlags(app, &o);
  RegisterServeFlags(app, &s);
  bool quiet = false;
  app.add_flag("--quiet", quiet, "only warnings and errors on stderr");
  bool check_only = false;
  app.add_flag("--check_only", check_only,
               "check the flags, the partition config and the model file, then exit (gnn-launch "
               "does this before it starts anything)");
  return RunMain(app, argc, argv, [&] {
    ClusterFlagsFromEnv(app, &o);
    SetLogRole(o.standalone ? std::string("serve") : "serve " + std::to_string(o.machine_id));
    if (quiet) SetLogLevel(LogLevel::kWarn);
    Serve(o, s, check_only);
  });
}

}  // namespace gnn
