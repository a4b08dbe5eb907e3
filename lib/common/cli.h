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

}  // namespace gnn
