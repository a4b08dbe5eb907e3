// gnn-copy: ship partition i (plus the partition config, ip_config and an
// optional script folder) to machine i of an ip_config and verify the
// checksums where it lands (DGL's tools/copy_files.py; cluster/copy_main.h).
#include "cluster/copy_main.h"

int main(int argc, char** argv) { return gnn::CopyMain(argc, argv); }
