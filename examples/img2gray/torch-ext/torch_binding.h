#pragma once

// The schemas of the img2gray ops, declared once for every backend. Each backend's source
// under csrc/ registers its implementations with TORCH_LIBRARY_IMPL_EXPAND.

#include <torch/library.h>

inline void define_img2gray_ops(torch::Library& ops) {
  // Grayscale of channels-last RGB images: (..., height, width, 3) -> (..., height, width).
  ops.def("img2gray(Tensor image) -> Tensor");
  // The same without an autograd formula, for calls that need no gradient: it skips the Python
  // autograd layer in front of the op above, several µs a call.
  ops.def("img2gray_no_grad(Tensor image) -> Tensor");
  // The same, written into a preallocated `out` of shape (..., height, width).
  ops.def("img2gray_out(Tensor(a!) out, Tensor image) -> ()");
}
