// gnn-partition: split a graph into partitions for distributed training
// (flags as DGL's partition_graph.py).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "common/cli.h"
#include "common/error.h"
#include "common/log.h"
#include "net/ip_config.h"
#include "partition/partition.h"
#ifdef GNN_WITH_PTSCOTCH
#include "dist_partition/dist_partition.h"

namespace {

// gnn-partition --distributed --ip_config FILE, started by hand: run this
// very command again under mpirun, one process per ip_config machine, in
// its order (machine i writes part<i>/ on machine i). Hosts of several
// lines must be on consecutive lines (mpirun places a host's processes
// together). Does not return unless mpirun cannot be started.
void RelaunchUnderMpirun(const std::string& ip_config, int argc, char** argv) {
  const std::vector<gnn::MachineAddress> machines = gnn::ReadIpConfig(ip_config);
  std::vector<std::pair<std::string, int>> runs;
  for (const gnn::MachineAddress& m : machines) {
    if (!runs.empty() && runs.back().first == m.host) {
      ++runs.back().second;
      continue;
    }
    for (const auto& r : runs) {
      if (r.first == m.host) {
        throw gnn::ConfigError(ip_config + ":" + std::to_string(m.line) + ": host " + m.host +
                               " appears on lines apart; --distributed needs a host's lines "
                               "next to each other");
      }
    }
    runs.emplace_back(m.host, 1);
  }
  std::string hosts;
  for (const auto& [host, slots] : runs) {
    hosts += (hosts.empty() ? "" : ",") + host + ":" + std::to_string(slots);
  }
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  // Not bound to one core: gnn-partition uses every core of its machine.
  std::vector<std::string> words = {"mpirun", "--quiet", "--bind-to",
                                    "none",   "-np",     std::to_string(machines.size()),
                                    "--host", hosts};
  if (::geteuid() == 0) words.push_back("--allow-run-as-root");
  words.push_back(ec ? std::string(argv[0]) : self);
  for (int i = 1; i < argc; ++i) words.push_back(argv[i]);
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  GNN_LOG(kInfo) << "starting " << machines.size() << " machines with mpirun --host " << hosts;
  ::execvp("mpirun", args.data());
  throw gnn::ConfigError(
      std::string("--distributed --ip_config starts its machines with mpirun: ") +
      std::strerror(errno) + " (apt install openmpi-bin)");
}

}  // namespace
#endif

int main(int argc, char** argv) {
  gnn::PartitionOptions o;
  bool quiet = false;
  CLI::App app{"Partition a graph for distributed GNN training.", "gnn-partition"};
  app.add_option("--dataset", o.data.dataset,
                 "ogbn-* name under --root, a path to an OGB raw folder, or synthetic:<preset>")
      ->required();
  app.add_option("--root", o.data.root, "folder holding OGB datasets")->capture_default_str();
  app.add_option("--dataset_dir", o.data.root, "DGL's partition_graph.py name for --root");
  app.add_option("--split", o.data.split, "split folder under split/ (default: the only one)");
  app.add_option("--cache_dir", o.data.cache_dir,
                 "where parsed arrays are cached (default: <dataset>/processed)");
  app.add_flag(
      "--no_cache", [&](int64_t) { o.data.use_cache = false; },
      "do not read or write the parse cache");
  app.add_option("--num_parts", o.num_parts, "number of partitions")->capture_default_str();
  app.add_option("--part_method", o.part_method,
                 "metis, stream (one-pass greedy, any size) or random")
      ->capture_default_str();
  app.add_flag("--balance_train", o.balance_train, "balance train nodes across partitions");
  app.add_flag("--balance_edges", o.balance_edges, "balance in-edges across partitions");
  app.add_flag("--undirected", o.undirected,
               "add the reverse of every edge (the default for known undirected datasets: "
               "ogbn-products, ogbn-proteins, Cora, CiteSeer, PubMed, synthetic:)");
  app.add_flag("--directed", o.directed,
               "keep the edges as listed, even for a known undirected dataset");
  app.add_option("--output", o.output, "output folder")->capture_default_str();
  app.add_option("--graph_name", o.graph_name, "graph name (default: the dataset's)");
  app.add_option("--seed", o.data.seed, "random seed")->capture_default_str();
  app.add_option("--num_trainers_per_machine", o.num_trainers_per_machine,
                 "accepted for DGL compatibility")
      ->capture_default_str();
  app.add_option("--num_threads", o.num_threads, "threads (0 = all cores)")->capture_default_str();
  app.add_option(
         "--val_edges", o.val_edges,
         "fraction of undirected edges held out for link evaluation (gnn-train --task link)")
      ->capture_default_str();
  app.add_flag("--overwrite", o.overwrite, "replace an existing output folder");
  bool distributed = false;
  std::string ip_config;
  double wait_timeout = 1800;
  int64_t sparsify = 16;
  app.add_flag("--distributed", distributed,
               "partition across machines (one process per machine, under mpirun or Slurm, or "
               "started here with --ip_config): each reads its chunks of a chunked dataset and "
               "writes its own part<i>/ (PT-Scotch)");
  app.add_option("--ip_config", ip_config,
                 "with --distributed: the machines, one per line (mpirun is started over them "
                 "unless already under an MPI launcher)");
  app.add_option("--wait_timeout", wait_timeout,
                 "with --distributed: seconds to wait for the other machines at each step")
      ->capture_default_str();
  app.add_option("--sparsify", sparsify,
                 "with --distributed: PT-Scotch sees each edge {u,v} with probability "
                 "min(1, K / max(deg u, deg v)), so hubs bring ~K edges (0 = every edge; the cut "
                 "is counted on the whole graph)")
      ->capture_default_str();
  app.add_flag("--quiet", quiet, "no progress lines on stderr");

  int quiet_exit = 0;
  const int code = gnn::RunMain(app, argc, argv, [&] {
    gnn::SetLogRole("partition");
    if (quiet) gnn::SetLogLevel(gnn::LogLevel::kWarn);
    o.data.num_threads = o.num_threads;
    if (!distributed && !ip_config.empty()) {
      throw gnn::ConfigError("--ip_config is for --distributed");
    }
    if (distributed) {
#ifdef GNN_WITH_PTSCOTCH
      gnn::DistributedOptions d;
      d.wait_timeout_s = wait_timeout;
      d.sparsify = sparsify;
      d.Validate();
      if (!ip_config.empty()) {
        if (!gnn::UnderMpiLauncher()) RelaunchUnderMpirun(ip_config, argc, argv);
        d.machines = static_cast<int>(gnn::ReadIpConfig(ip_config).size());
      }
      if (app.count("--num_parts") == 0) o.num_parts = 0;  // one per machine
      int rank = 0;
      try {
        gnn::PartitionResult r = gnn::RunDistributedPartition(o, d, &argc, &argv, &rank);
        if (rank == 0) {
          std::cout << gnn::FormatPartitionReport(r.report) << "partition config: " << r.config_path
                    << std::endl;
        }
      } catch (const gnn::JobFailed& e) {
        quiet_exit = e.code();
      }
      return;
#else
      throw gnn::ConfigError(
          "this gnn-partition was built without MPI and PT-Scotch (apt install libptscotch-dev "
          "libopenmpi-dev openmpi-bin, then rebuild): --distributed is not available");
#endif
    }
    gnn::PartitionResult r = gnn::RunPartition(o);
    std::cout << gnn::FormatPartitionReport(r.report) << "partition config: " << r.config_path
              << std::endl;
  });
  return code != 0 ? code : quiet_exit;
}
