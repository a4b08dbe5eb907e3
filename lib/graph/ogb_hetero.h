// Reader and writer for OGB's raw heterogeneous layout (ogbn-mag's):
//   raw/num-node-dict.csv.gz           header of node types, one row of counts
//   raw/triplet-type-list.csv.gz       one "src,rel,dst" per relation
//   raw/relations/<src>___<rel>___<dst>/{edge,num-edge-list,edge_reltype}.csv.gz
//   raw/node-feat/<type>/node-feat.csv.gz      for types with features
//   raw/node-label/<type>/node-label.csv.gz    the target type
//   raw/nodetype-has-label.csv.gz      header of types, one row True/False
//   split/<split>/<type>/{train,valid,test}.csv.gz, split/<split>/nodetype-has-split.csv.gz
#pragma once

#include <string>

#include "graph/dataset.h"
#include "graph/hetero.h"

namespace gnn {

// Reads the dataset in `folder` (name: the folder's base name with '_' as
// '-'; split: options.split or the only one). DataError naming the file
// (and line) when something is missing or malformed.
HeteroDataset ReadOgbHeteroFolder(const std::string& folder, const DatasetOptions& options);

// Writes `d` in that layout under `folder`, split name `split`.
void WriteOgbHeteroFolder(const HeteroDataset& d, const std::string& folder,
                          const std::string& split);

}  // namespace gnn
