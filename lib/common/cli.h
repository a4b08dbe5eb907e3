// The one place where a binary's errors become an error line and exit code.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace gnn {

// Parses argv with `app`, then runs `body`. Help prints and returns 0; a flag
// error, or a gnn::Error / std::exception from body, prints one line
// "<program>: error: <message>" on stderr and returns a non-zero exit code
// (see ExitCode in common/error.h).
int RunMain(CLI::App& app, int argc, char** argv, const std::function<void()>& body);

// Launcher environment, read once at the top of main: fills *out from the
// environment variable `env` unless `flag` was given on the command line
// (flags win). A malformed number is a ConfigError naming the variable.
void FlagFromEnv(const CLI::App& app, const char* flag, const char* env, std::string* out);
void FlagFromEnv(const CLI::App& app, const char* flag, const char* env, int* out);

}  // namespace gnn
