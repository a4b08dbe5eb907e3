// gnn-launch: start servers and trainers on every machine of an ip_config
// (DGL's tools/launch.py). The last stdout line is rank 0's JSON summary
// with "wall_time_s" added.
#include "cluster/launch_main.h"

int main(int argc, char** argv) { return gnn::LaunchMain(argc, argv); }
