// gnn-train: train a GNN on partitioned data (flags as DGL's train_dist.py
// and GraphStorm's), standalone or as one trainer of a gnn-launch job. The
// last stdout line is a JSON summary.
#include "train/trainer.h"

int main(int argc, char** argv) { return gnn::TrainMain(argc, argv); }
