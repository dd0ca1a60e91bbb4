#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

// TORCH_EXTENSION_NAME is the op namespace (_rnx_<backend>_<uid>), set by the build.
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) { define_rnx_ops(ops); }

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
