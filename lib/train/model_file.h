// --save_model's file: the model's parameters as the state dict that
// `torch.save(model.state_dict(), path)` writes (torch's zip format, an
// OrderedDict of named tensors), so `model.load_state_dict(torch.load(path))`
// works in Python with torch.load's defaults, weights_only=True included
// (torch >= 2.6's default; torch.jit's pickle of a typed Dict is refused
// there). What the model is (model, widths, layers, fan-out, ...) travels
// with it as `torch.load(path)._metadata["gnn"]`, a plain dict: the
// attribute PyTorch's own state dicts carry (module prefix -> metadata),
// which load_state_dict reads only for the model's own module names.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gnn {

// The file's bytes: `params` in order (float, double, half, bfloat16,
// int32 or int64 tensors; copied to CPU, contiguous), `meta` a JSON object of
// strings, integers, booleans, arrays and objects (no floats: torch 1.13's
// weights_only unpickler reads none). Throws std::invalid_argument for
// other dtypes or JSON values.
std::vector<char> StateDictFileBytes(
    const std::vector<std::pair<std::string, torch::Tensor>>& params, const nlohmann::json& meta);

// Writes `module`'s named parameters and `meta` to `path` atomically.
// Throws DataError naming `path` when it cannot be written.
void SaveModelFile(const std::string& path, const torch::nn::Module& module,
                   const nlohmann::json& meta);

}  // namespace gnn
