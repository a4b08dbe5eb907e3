// A Python with the `tensorboard` package, to check event files with
// TensorBoard's own reader.
#pragma once

#include <string>

namespace gnn::test {

// A Python that imports `tensorboard`: a venv made once in the user's cache
// folder and reused. Returns "" and says why in *why when there is none
// (no python3, no network for pip).
std::string TensorBoardPython(std::string* why);

}  // namespace gnn::test
