// gnn-serve: a model saved by gnn-train --save_model answering prediction
// requests over the live partitions (the Open Inference Protocol over
// HTTP/JSON), standalone on a 1-part config or as the command gnn-launch
// starts on every machine in place of the trainer. The HTTP side, the
// queue and the graph are lib/serve's (no LibTorch); this room loads the
// model and runs its forward pass.
#pragma once

namespace gnn {

// main() of gnn-serve: serves until SIGINT / SIGTERM (exit 0), or exits
// with one error line and the error class's code before it listens.
int ServeMain(int argc, char** argv);

}  // namespace gnn
