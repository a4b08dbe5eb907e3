// The one place where a binary's errors become an error line and exit code.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace gnn {

// Parses argv with `app`, then runs `body`. A flag given twice takes its
// last value (as argparse does). Help prints and returns 0; a flag
// error (an unknown flag, or an unknown key in a --config file, each with a
// "did you mean"), or a gnn::Error / std::exception from body, prints one line
// "<program>: error: <message>" on stderr and returns a non-zero exit code
// (see ExitCode in common/error.h).
//
// With GNN_WATCH_STDIN=1 in the environment (gnn-launch sets it), the
// binary also watches its stdin: EOF means the launcher or its ssh
// connection is gone, and the process stops itself (WatchLauncherStdin),
// exiting hard if its clean stop takes longer than `stop_grace_s`.
//
// Long flags are also accepted in their hyphenated spelling (DGL's
// train_dist.py uses --num-epochs, --graph-name, ...): --num-epochs 5 and
// --num-epochs=5 mean --num_epochs; help shows the underscore spelling.
int RunMain(CLI::App& app, int argc, char** argv, const std::function<void()>& body,
            double stop_grace_s = 10);

// "gnn-partition (gnn 0.1.0, commit 3d1864d..., Release build; METIS,
// PT-Scotch ..., no CUDA)": what --version prints (every binary has it).
std::string VersionLine(const std::string& program);

// The candidate closest to `name` by edit distance when it is a slip of a
// few letters (or contains name's words, as --num_epochs contains
// --epochs); "" when none is close. For "did you mean" in error lines.
std::string ClosestName(const std::string& name, const std::vector<std::string>& candidates);

// argv with every "--a-b[=v]" whose "--a_b" is an option of `app` rewritten
// to "--a_b[=v]" (up to a bare "--").
std::vector<std::string> NormalizeFlagSpellings(const CLI::App& app, int argc, char** argv);

// What gnn-launch writes to a process's stdin before it closes it on a
// normal stop (the job is done, failed elsewhere or was interrupted):
// WatchLauncherStdin then stops the process without a word.
inline constexpr char kLauncherStopLine[] = "@gnn stop\n";

// Ignores SIGPIPE (the launcher's pipes may close first) and starts a
// thread that waits for kLauncherStopLine or EOF on stdin, then (for EOF
// alone: "<program>: launcher gone (stdin closed), stopping") sends this
// process SIGTERM (its normal, clean stop) and, if it is still alive
// `grace_s` later, exits with kExitPeer.
void WatchLauncherStdin(const std::string& program, double grace_s);

// Launcher environment, read once at the top of main: fills *out from the
// environment variable `env` unless `flag` was given on the command line
// (flags win; a null `flag`: the environment only). A malformed number is
// a ConfigError naming the variable.
void FlagFromEnv(const CLI::App& app, const char* flag, const char* env, std::string* out);
void FlagFromEnv(const CLI::App& app, const char* flag, const char* env, int* out);
// --secret_file and --insecure, the flags of every binary that joins a job
// (net/security.h resolves them to the job's keys), and their launcher
// environment (GNN_SECRET_FILE, GNN_INSECURE) read after parsing.
void AddJobSecretFlags(CLI::App& app, std::string* secret_file, bool* insecure);
void JobSecretFromEnv(const CLI::App& app, std::string* secret_file, bool* insecure);

// A flag in seconds, as users type them (fractions allowed), stored as a
// duration; help shows the default in seconds.
CLI::Option* AddSecondsOption(CLI::App& app, const std::string& name,
                              std::chrono::duration<double>* out, const std::string& help);

// A switch: "1" or "true" sets it, "0", "false" or "" leave it off.
void FlagFromEnv(const CLI::App& app, const char* flag, const char* env, bool* out);

}  // namespace gnn
