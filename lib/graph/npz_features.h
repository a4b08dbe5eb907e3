// --node_feat FILE.npz (graph/plain_files.h): NumPy's np.savez of one
// array, or a SciPy sparse matrix saved by scipy.sparse.save_npz.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/sparse_rows.h"

namespace gnn {

// --node_feat FILE.npz: np.savez's one array, or the matrix of
// scipy.sparse.save_npz (csr, csc or coo; repeated entries add up, as
// SciPy's toarray adds them), densified to float32 [rows, cols], or with
// `keep_sparse` kept as CSR rows (`sparse`; a csr matrix as it is, whose
// column ids must then be sorted and distinct within each row, as
// SciPy's has_canonical_format says). Every index is checked: one line
// naming the file.
struct NpzFeatures {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;
  bool is_sparse = false;
  SparseRows sparse;
};
NpzFeatures ReadNpzFeatures(const std::string& path, bool keep_sparse);

}  // namespace gnn
