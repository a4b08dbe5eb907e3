// gnn-serve: online predictions of a model gnn-train --save_model wrote,
// over the live partitions, through the Open Inference Protocol v2
// (HTTP/JSON, Triton's binary tensor extension). Standalone on a
// 1-partition config, or started by gnn-launch on every machine.
#include "train/serve_main.h"

int main(int argc, char** argv) { return gnn::ServeMain(argc, argv); }
