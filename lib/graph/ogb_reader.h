// Reader for OGB's raw node-property-prediction layout, no Python:
//   <folder>/raw/{edge,node-feat,node-label,num-node-list,num-edge-list}.csv.gz
//   <folder>/split/<split>/{train,valid,test}.csv.gz
// Parsed arrays are cached as .npy (like OGB's processed/); the cache is
// rebuilt when any raw file's size or mtime changes.
#pragma once

#include <string>

#include "graph/dataset.h"

namespace gnn {

// Reads (or loads from cache) the dataset in `folder`. The dataset name is
// the folder's base name with '_' as '-'. Throws DataError naming the file
// (and line, for malformed CSV).
Dataset ReadOgbFolder(const std::string& folder, const DatasetOptions& options);

// Writes `d` in the same raw layout (gzip CSV) under `folder`, split name
// `split`. Used by gnn-dataset and tests. Throws DataError.
void WriteOgbFolder(const Dataset& d, const std::string& folder, const std::string& split);

}  // namespace gnn
