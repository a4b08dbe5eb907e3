#include "common/cli.h"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <thread>

#include "common/error.h"

namespace gnn {

namespace {
int Fail(const std::string& program, const std::string& message, int code) {
  std::string line = program + ": error: " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  return code;
}
}  // namespace

void WatchLauncherStdin(const std::string& program, double grace_s) {
  // When the launcher (or its ssh connection) goes, our stdout/stderr go
  // with it, possibly before stdin's EOF reaches the thread below: a log
  // line written then must fail with EPIPE, not kill us by SIGPIPE before
  // the clean stop (a server killed so leaves its shared memory behind).
  ::signal(SIGPIPE, SIG_IGN);
  std::thread([program, grace_s] {
    char buf[256];
    while (true) {
      ssize_t n = ::read(0, buf, sizeof(buf));
      if (n > 0 || (n < 0 && errno == EINTR)) continue;
      break;
    }
    std::string line = program + ": launcher gone (stdin closed), stopping\n";
    ssize_t ignored = ::write(2, line.data(), line.size());
    (void)ignored;
    ::kill(::getpid(), SIGTERM);
    std::this_thread::sleep_for(std::chrono::duration<double>(grace_s));
    std::_Exit(kExitPeer);
  }).detach();
}

void FlagFromEnv(const CLI::App& app, const char* flag, const char* env, std::string* out) {
  const char* v = std::getenv(env);
  if (v && (!flag || app.count(flag) == 0)) *out = v;
}

void FlagFromEnv(const CLI::App& app, const char* flag, const char* env, int* out) {
  const char* v = std::getenv(env);
  if (!v || (flag && app.count(flag) != 0)) return;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || x < INT32_MIN || x > INT32_MAX) {
    throw ConfigError(std::string(env) + "='" + v + "' is not an integer" +
                      (flag ? std::string(" (for ") + flag + ")" : std::string()));
  }
  *out = static_cast<int>(x);
}

void FlagFromEnv(const CLI::App& app, const char* flag, const char* env, bool* out) {
  const char* v = std::getenv(env);
  if (!v || (flag && app.count(flag) != 0)) return;
  const std::string s = v;
  if (s == "1" || s == "true") {
    *out = true;
  } else if (!(s == "0" || s == "false" || s.empty())) {
    throw ConfigError(std::string(env) + "='" + v + "' is not 1 or 0" +
                      (flag ? std::string(" (for ") + flag + ")" : std::string()));
  }
}

void AddJobSecretFlags(CLI::App& app, std::string* secret_file, bool* insecure) {
  app.add_option("--secret_file", *secret_file,
                 "the job's secret (mode 0600; gnn-launch passes one): only its holders take part");
  app.add_flag("--insecure", *insecure,
               "plaintext, no authentication (anyone on the network may read the graph or join)");
}

void JobSecretFromEnv(const CLI::App& app, std::string* secret_file, bool* insecure) {
  FlagFromEnv(app, "--secret_file", "GNN_SECRET_FILE", secret_file);
  FlagFromEnv(app, "--insecure", "GNN_INSECURE", insecure);
}

std::vector<std::string> NormalizeFlagSpellings(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;  // what follows is not ours
    if (a.size() < 4 || a.compare(0, 2, "--") != 0) continue;
    const size_t eq = a.find('=');
    std::string name = a.substr(0, eq);
    if (name.find('-', 2) == std::string::npos) continue;
    std::replace(name.begin() + 2, name.end(), '-', '_');
    if (app.get_option_no_throw(name) != nullptr) {
      a = name + (eq == std::string::npos ? "" : a.substr(eq));
    }
  }
  return args;
}

int RunMain(CLI::App& app, int argc, char** argv, const std::function<void()>& body,
            double stop_grace_s) {
  const std::string program = app.get_name();
  try {
    std::vector<std::string> args = NormalizeFlagSpellings(app, argc, argv);
    std::vector<char*> ptrs;
    for (auto& a : args) ptrs.push_back(a.data());
    app.parse(static_cast<int>(ptrs.size()), ptrs.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return Fail(program, std::string(e.what()) + " (see --help)", kExitConfig);
  }
  const char* watch = std::getenv("GNN_WATCH_STDIN");
  if (watch && std::string(watch) == "1") WatchLauncherStdin(program, stop_grace_s);
  try {
    body();
    return kExitOk;
  } catch (const ConfigError& e) {
    return Fail(program, e.what(), kExitConfig);
  } catch (const DataError& e) {
    return Fail(program, e.what(), kExitData);
  } catch (const ProtocolError& e) {
    return Fail(program, e.what(), kExitProtocol);
  } catch (const TimeoutError& e) {
    return Fail(program, e.what(), kExitTimeout);
  } catch (const PeerError& e) {
    return Fail(program, e.what(), kExitPeer);
  } catch (const std::bad_alloc&) {
    return Fail(program, "out of memory", kExitError);
  } catch (const std::exception& e) {
    return Fail(program, e.what(), kExitError);
  }
}

}  // namespace gnn
