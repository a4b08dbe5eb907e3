// gnn-copy's whole command line (DGL's tools/copy_files.py): ships
// partition i (plus the partition config, ip_config and an optional script
// folder) to machine i of an ip_config and verifies the checksums where it
// lands. Re-running copies only what changed.
#pragma once

namespace CLI {
class App;
}

namespace gnn {

struct CopyOptions;

// Registers every gnn-copy flag on `app`, parsed into *o.
void RegisterCopyFlags(CLI::App& app, CopyOptions* o);

// Parses the flags and copies. Returns the process's exit code: 0, the
// first problem's class, or 128 + a signal that stopped it (the first
// SIGINT/SIGTERM/SIGHUP stops the copy cleanly, a second ends it at once).
// Call from main, once.
int CopyMain(int argc, char** argv);

}  // namespace gnn
