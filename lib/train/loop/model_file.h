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

// Writes `module`'s named parameters (DglKey's names for meta["model"]),
// then `extra` named tensors (an RGCN's learned node embeddings), and
// `meta` to `path` atomically.
// Throws DataError naming `path` when it cannot be written.
void SaveModelFile(const std::string& path, const torch::nn::Module& module,
                   const nlohmann::json& meta,
                   const std::vector<std::pair<std::string, torch::Tensor>>& extra = {});

// A model file read back (--restore_model_path): its named tensors in file
// order, and its metadata `_metadata["gnn"]` (null when the file has none,
// as a state dict torch.save wrote from Python).
struct ModelFile {
  std::vector<std::pair<std::string, torch::Tensor>> params;
  nlohmann::json meta;
};
// Reads a state dict file without Python: torch's zip format with a pickle
// of an (Ordered)dict of tensors, as --save_model and torch.save write it.
// Anything else (a missing, truncated or foreign file, a pickle that calls
// anything but the tensor and OrderedDict constructors) is a DataError
// naming `path` and what is wrong.
ModelFile ReadModelFile(const std::string& path);
ModelFile ParseModelFileBytes(const std::vector<char>& bytes, const std::string& what);

// The saved names of `model`'s parameters (--model graphsage|gat|gcn|rgcn)
// are those of DGL 2.x's modules (SAGEConv, GATConv, GraphConv,
// RelGraphConv) under "layers.<i>.": this maps a parameter's name here to
// the file's. SAGEConv keeps its bias in fc_self; GATConv's linear
// residual has none (its bias is the layer's), the same sum either way;
// RelGraphConv's relation weights are its TypedLinear's (linear_r.W,
// linear_r.coeff).
std::string DglKey(const std::string& model, const std::string& key);

// Copies the file's tensors into `module`'s parameters of the same (DGL)
// names and shapes: every parameter must be in the file and every tensor
// in the file must be a parameter (PyTorch's strict=True); otherwise a
// DataError naming `what` and the first key that differs.
void LoadParams(torch::nn::Module& module, const std::string& model, const ModelFile& file,
                const std::string& what);

}  // namespace gnn
