#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

// TORCH_EXTENSION_NAME is the op namespace (_img2gray_<backend>_<uid>), set by the build.
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) { define_img2gray_ops(ops); }

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
