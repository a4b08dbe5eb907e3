// Precompiled header of the trainer library: LibTorch's headers cost ~25 s
// per translation unit, so they are parsed once.
#pragma once
#include <torch/torch.h>
