#pragma once

// The schemas of the rnx ops, declared once for every backend. Each backend's source
// under csrc/ registers its implementations with TORCH_LIBRARY_IMPL_EXPAND.

#include <torch/library.h>

inline void define_rnx_ops(torch::Library& ops) {
  // Root-mean-square normalisation over the last dimension of x, scaled by weight (one value per
  // column): x / sqrt(mean(x^2) + eps) * weight, as torch.nn.functional.rms_norm.
  ops.def("rms_norm(Tensor x, Tensor weight, float eps) -> Tensor");
  // The same without an autograd formula, for calls that need no gradient: it skips the Python
  // autograd layer in front of the op above, several µs a call.
  ops.def("rms_norm_no_grad(Tensor x, Tensor weight, float eps) -> Tensor");
  // The same, written into a preallocated `out` of x's shape (which may be x).
  ops.def("rms_norm_out(Tensor(a!) out, Tensor x, Tensor weight, float eps) -> ()");
}
