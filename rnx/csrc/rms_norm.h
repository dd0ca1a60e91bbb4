#pragma once

// What every backend of rms_norm shares: the input checks, so that each backend accepts the same
// inputs and rejects the rest with the same messages, and the per-row scale, so that each backend
// computes the same values.

#include <cmath>
#include <string>

#include <ATen/MemoryOverlap.h>
#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/macros/Macros.h>
#include <c10/util/Exception.h>

namespace rms_norm {

// The dtype's name as Python prints it without "torch." (float32, int64, ...).
inline auto dtype_name(c10::ScalarType dtype) {
  return c10::getDtypeNames(dtype).first;
}

// A shape as Python prints a list, "[4, 5]". Formatted with std::to_string, not streamed, so the
// messages below never need std::ostream's number formatting, which crashed libraries built with
// torch.utils.cpp_extension on one machine (kscaffold build links libstdc++ so that it works).
inline std::string shape_string(const c10::IntArrayRef& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(sizes[i]);
  }
  return text + "]";
}

inline bool is_supported_dtype(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float:
    case c10::ScalarType::Half:
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Double:
      return true;
    default:
      return false;
  }
}

// `x` has at least one dimension (rows are everything but the last, which is normalised) and a
// supported dtype; `weight` is one value per column, of x's dtype and device; eps is finite and
// not negative.
inline void check_inputs(const at::Tensor& x, const at::Tensor& weight, double eps) {
  TORCH_CHECK(
      x.dim() >= 1, "rms_norm: x must have at least 1 dimension (the one normalised), got 0");
  TORCH_CHECK(
      is_supported_dtype(x.scalar_type()),
      "rms_norm: x has dtype ", dtype_name(x.scalar_type()),
      ", but the supported dtypes are float32, float16, bfloat16 and float64");
  TORCH_CHECK(
      weight.dim() == 1 && weight.size(0) == x.size(-1),
      "rms_norm: weight must have shape [", std::to_string(x.size(-1)),
      "] (the last dimension of x), got ", shape_string(weight.sizes()));
  TORCH_CHECK(
      weight.scalar_type() == x.scalar_type(),
      "rms_norm: weight must have the dtype of x, ", dtype_name(x.scalar_type()), ", got ",
      dtype_name(weight.scalar_type()));
  TORCH_CHECK(
      weight.device() == x.device(),
      "rms_norm: weight and x must be on the same device, got weight on ", weight.device(),
      " and x on ", x.device());
  TORCH_CHECK(
      std::isfinite(eps) && eps >= 0, "rms_norm: eps must be finite and >= 0, got ",
      std::to_string(eps));
}

// `out` must be able to take rms_norm(x, ...) (x already checked with check_inputs).
inline void check_out(const at::Tensor& out, const at::Tensor& x) {
  TORCH_CHECK(
      out.device() == x.device(),
      "rms_norm: out and x must be on the same device, got out on ", out.device(), " and x on ",
      x.device());
  TORCH_CHECK(
      out.scalar_type() == x.scalar_type(),
      "rms_norm: out must have the dtype of x, ", dtype_name(x.scalar_type()), ", got ",
      dtype_name(out.scalar_type()));
  TORCH_CHECK(
      out.sizes() == x.sizes(),
      "rms_norm: out must have the shape of x, ", shape_string(x.sizes()), ", got ",
      shape_string(out.sizes()));
  at::assert_no_internal_overlap(out);
}

// Whether the result can be written straight into `out`: it is contiguous and either shares no
// memory with x and weight or is exactly x (each row is read whole before it is written).
// Otherwise the backends compute into a temporary and copy it into `out`.
inline bool can_write_directly(
    const at::Tensor& out, const at::Tensor& x, const at::Tensor& weight) {
  if (!out.is_contiguous() || at::get_overlap_status(out, weight) != at::MemOverlapStatus::No) {
    return false;
  }
  const at::MemOverlapStatus overlap = at::get_overlap_status(out, x);
  return overlap == at::MemOverlapStatus::No || overlap == at::MemOverlapStatus::Full;
}

// The scale of one row from its sum of squares, in float (double for float64): every backend
// divides once per row, so that they agree to the last bit on the scale itself.
template <typename opmath_t>
C10_HOST_DEVICE inline opmath_t inverse_rms(opmath_t sum_of_squares, int64_t columns, double eps) {
  return opmath_t(1) /
         std::sqrt(sum_of_squares / static_cast<opmath_t>(columns) + static_cast<opmath_t>(eps));
}

}  // namespace rms_norm
