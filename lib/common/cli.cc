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
#include <sstream>
#include <thread>

#include "common/build_info.h"
#include "common/error.h"
#include "common/launch_env.h"
#include "common/log.h"

namespace gnn {

namespace {
int Fail(const std::string& program, const std::string& message, int code) {
  std::string line = program + ": error: " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  return code;
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// Every long flag of `app` ("--num_epochs"), help and config included.
std::vector<std::string> LongFlags(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
  }
  return names;
}

std::string DidYouMean(const std::string& name, const std::vector<std::string>& candidates) {
  const std::string close = ClosestName(name, candidates);
  return close.empty() ? "" : " (did you mean " + close + "?)";
}

// The unknown flags and stray words CLI11 left over, as one sentence.
std::string ExtrasMessage(const CLI::App& app) {
  std::vector<std::string> flags, words;
  for (const std::string& a : app.remaining()) {
    if (a.size() > 1 && a[0] == '-') {
      flags.push_back(a.substr(0, a.find('=')));
    } else {
      words.push_back(a);
    }
  }
  if (!flags.empty()) {
    std::string m = "unknown flag " + flags[0] + DidYouMean(flags[0], LongFlags(app));
    for (size_t i = 1; i < flags.size(); ++i) {
      m += (i == 1 ? "; also unknown: " : ", ") + flags[i] + DidYouMean(flags[i], LongFlags(app));
    }
    return m;
  }
  std::string m = "unexpected argument";
  for (const std::string& w : words) m += " '" + w + "'";
  return m + " (every value follows its flag, e.g. --num_epochs 3)";
}

// CLI11 says "INI was not able to parse <key>" for a config file's key that
// names no flag; say which file, which key, and what was meant.
std::string ConfigKeyMessage(const CLI::App& app, const std::string& what) {
  static const std::string kPrefix = "INI was not able to parse ";
  if (what.rfind(kPrefix, 0) != 0) return what;
  const std::string key = what.substr(kPrefix.size());
  std::string file = "the config file";
  const CLI::Option* config = app.get_config_ptr();
  if (config != nullptr && !config->results().empty()) file = config->results().back();
  const size_t dot = key.find('.');
  if (dot != std::string::npos) {
    // CLI11 reports a section's opening ("train.++") before its keys.
    return file + ": a [" + key.substr(0, dot) +
           "] section is not read: put its keys at the top, before any section";
  }
  const std::string flag = "--" + key;
  std::string m = file + ": unknown key '" + key + "'";
  std::string close = ClosestName(flag, LongFlags(app));
  if (!close.empty()) m += " (did you mean " + close.substr(2) + "?)";
  return m;
}

// A flag given twice takes its last value, as argparse does (DGL's
// scripts are argparse): CLI11's default refuses the second. Lists (a
// positional command, several values) and options with a policy of their
// own (flags) keep theirs.
void TakeLastValues(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_multi_option_policy() == CLI::MultiOptionPolicy::Throw &&
        opt->get_items_expected_max() <= 1) {
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
  }
}

}  // namespace

std::string VersionLine(const std::string& program) {
  return program + " (gnn " GNN_VERSION ", commit " GNN_GIT_COMMIT ", " GNN_BUILD_TYPE
                   " build; " GNN_BUILT_WITH ")";
}

std::string ClosestName(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(name, c);
    if (d < best_distance) best = c, best_distance = d;
  }
  // A slip of a few letters, or one name inside the other (--epochs).
  const size_t allowed = std::max<size_t>(2, name.size() / 4);
  if (best_distance <= allowed) return best;
  for (const std::string& c : candidates) {
    if (name.size() > 4 && c.find(name.substr(2)) != std::string::npos) return c;
  }
  return "";
}

void WatchLauncherStdin(const std::string& program, double grace_s) {
  // When the launcher (or its ssh connection) goes, our stdout/stderr go
  // with it, possibly before stdin's EOF reaches the thread below: a log
  // line written then must fail with EPIPE, not kill us by SIGPIPE before
  // the clean stop (a server killed so leaves its shared memory behind).
  ::signal(SIGPIPE, SIG_IGN);
  std::thread([program, grace_s] {
    // The launcher's stop line may arrive in pieces: keep the tail.
    const std::string stop = kLauncherStopLine;
    std::string seen;
    char buf[256];
    while (seen.find(stop) == std::string::npos) {
      ssize_t n = ::read(0, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::string line = program + ": launcher gone (stdin closed), stopping\n";
        ssize_t ignored = ::write(2, line.data(), line.size());
        (void)ignored;
        break;
      }
      seen.append(buf, static_cast<size_t>(n));
      if (seen.size() > 2 * stop.size()) seen.erase(0, seen.size() - 2 * stop.size());
    }
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

CLI::Option* AddSecondsOption(CLI::App& app, const std::string& name,
                              std::chrono::duration<double>* out, const std::string& help) {
  std::ostringstream def;
  def << out->count();
  return app
      .add_option_function<double>(
          name, [out](double s) { *out = std::chrono::duration<double>(s); }, help)
      ->default_str(def.str());
}

void JobSecretFromEnv(const CLI::App& app, std::string* secret_file, bool* insecure) {
  FlagFromEnv(app, "--secret_file", launch_env::kSecretFile, secret_file);
  FlagFromEnv(app, "--insecure", launch_env::kInsecure, insecure);
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
  app.set_version_flag("--version", VersionLine(program), "print the version and build, and exit");
  // A config file's unknown key is an error, as an unknown flag is.
  app.allow_config_extras(CLI::config_extras_mode::error);
  TakeLastValues(app);
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
  } catch (const CLI::ExtrasError&) {
    return Fail(program, ExtrasMessage(app) + " (see --help)", kExitConfig);
  } catch (const CLI::ConfigError& e) {
    return Fail(program, ConfigKeyMessage(app, e.what()), kExitConfig);
  } catch (const CLI::ParseError& e) {
    return Fail(program, std::string(e.what()) + " (see --help)", kExitConfig);
  }
  const char* watch = std::getenv(launch_env::kWatchStdin);
  if (watch && std::string(watch) == "1") {
    ShowLogRole(false);  // gnn-launch prefixes every line it forwards
    WatchLauncherStdin(program, stop_grace_s);
  }
  try {
    body();
    return kExitOk;
  } catch (const std::bad_alloc&) {
    return Fail(program, "out of memory", kExitError);
  } catch (const std::exception& e) {
    return Fail(program, e.what(), ExitCodeOf(e));
  }
}

}  // namespace gnn
