// A graph from the plain files most users have before any framework: an
// edge list (CSV/TSV with or without a header, gzip or not, or .npy
// [E, 2]), node features (.npy float16/32/64), labels (.npy int32/int64),
// train/valid/test nodes (id lists or 0/1 masks, .npy or one per line),
// and optionally the user's own node ids. gnn-partition and gnn-dataset
// take them in place of --dataset.
#pragma once

#include <string>

#include "graph/dataset.h"

namespace CLI {
class App;
}

namespace gnn {

// --edges ... --node_ids (shared by gnn-partition and gnn-dataset).
void AddPlainFileFlags(CLI::App& app, PlainFiles* files);

// Reads the files: every header and shape first (the feature, label and
// id files must agree on N), then the edges, the splits and the arrays.
// Node features are stored float32 (a conversion is said in one line).
// With node_ids, edges and splits name the user's ids, mapped to rows
// 0..N-1 in the node_ids file's order; Dataset::user_ids keeps them.
// Every problem is one DataError naming the file, its line or row, and
// the fix.
// keep_sparse: a SciPy sparse --node_feat stays CSR rows
// (Dataset::sparse_features), never densified.
Dataset LoadPlainFiles(const PlainFiles& files, bool ignore_edge_data, bool keep_sparse = false);

}  // namespace gnn
