// gnn-launch's whole command line (DGL's tools/launch.py flags): parses
// them, checks the job (every problem one line), then starts servers and
// trainers on every machine and supervises them until the job ends.
#pragma once

namespace gnn {

// Returns the process's exit code: the job's, or the first problem's
// class. Installs SIGINT/SIGTERM/SIGHUP handlers that stop the job
// everywhere. Call from main, once.
int LaunchMain(int argc, char** argv);

}  // namespace gnn
