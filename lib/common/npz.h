// .npz files: a zip archive of .npy members, as np.savez (stored),
// np.savez_compressed and scipy.sparse.save_npz (deflated) write them,
// zip64 included.
#pragma once

#include <map>
#include <string>

namespace gnn {

// Every member of the archive at `path`, keyed by its name without ".npy",
// as the bytes of a whole .npy file (ParseNpyHeader reads them); each is
// CRC-checked. DataError naming the file (and the member) when it is not a
// zip archive, is truncated or corrupt, or uses a compression other than
// stored or deflate.
std::map<std::string, std::string> ReadNpz(const std::string& path);

}  // namespace gnn
