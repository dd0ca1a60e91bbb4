#pragma once

// What every backend of img2gray shares: the input checks, so that each backend accepts the same
// inputs and rejects the rest with the same messages, and the per-pixel formula, so that each
// backend computes the same values.

#include <cstdint>
#include <string>

#include <ATen/MemoryOverlap.h>
#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/macros/Macros.h>
#include <c10/util/Exception.h>

namespace img2gray {

// The dtype's name as Python prints it without "torch." (uint8, float32, ...).
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
    case c10::ScalarType::Byte:
    case c10::ScalarType::Float:
    case c10::ScalarType::Half:
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Double:
      return true;
    default:
      return false;
  }
}

// `image` must be channels-last RGB, (..., height, width, 3), of a supported dtype.
inline void check_image(const at::Tensor& image) {
  TORCH_CHECK(
      image.dim() >= 3,
      "img2gray: image must have at least 3 dimensions, (..., height, width, 3), got ",
      std::to_string(image.dim()), " with shape ", shape_string(image.sizes()));
  TORCH_CHECK(
      image.size(-1) == 3,
      "img2gray: the last dimension of image must be 3 (R, G, B, channels-last), got shape ",
      shape_string(image.sizes()));
  TORCH_CHECK(
      is_supported_dtype(image.scalar_type()),
      "img2gray: image has dtype ", dtype_name(image.scalar_type()),
      ", but the supported dtypes are uint8, float32, float16, bfloat16 and float64");
}

// The shape of the result: the image's shape without its channel dimension.
inline c10::IntArrayRef gray_shape(const at::Tensor& image) {
  return image.sizes().slice(0, image.dim() - 1);
}

// `out` must be able to take the grayscale of `image` (already checked with check_image).
inline void check_out(const at::Tensor& out, const at::Tensor& image) {
  TORCH_CHECK(
      out.device() == image.device(),
      "img2gray: out and image must be on the same device, got out on ", out.device(),
      " and image on ", image.device());
  TORCH_CHECK(
      out.scalar_type() == image.scalar_type(),
      "img2gray: out must have the dtype of image, ", dtype_name(image.scalar_type()),
      ", got ", dtype_name(out.scalar_type()));
  TORCH_CHECK(
      out.sizes() == gray_shape(image),
      "img2gray: out must have shape ", shape_string(gray_shape(image)),
      " (the shape of image without its last dimension), got ", shape_string(out.sizes()));
  at::assert_no_internal_overlap(out);
}

// Whether the result can be written straight into `out`: it is contiguous and shares no memory
// with `image`. Otherwise the backends compute into a temporary and copy it into `out`.
inline bool can_write_directly(const at::Tensor& out, const at::Tensor& image) {
  return out.is_contiguous() &&
         at::get_overlap_status(out, image) == at::MemOverlapStatus::No;
}

// uint8: Pillow's Image.convert("L"), bit for bit. The ITU-R 601-2 luma weights in 16-bit fixed
// point (they sum to 65536), rounded to nearest; the largest sum, 255 * 65536 + 0x8000, fits in
// 32 bits.
C10_HOST_DEVICE inline uint8_t luma(uint8_t r, uint8_t g, uint8_t b) {
  const uint32_t sum = static_cast<uint32_t>(r) * 19595u + static_cast<uint32_t>(g) * 38470u +
                       static_cast<uint32_t>(b) * 7471u + 0x8000u;
  return static_cast<uint8_t>(sum >> 16);
}

// Floating point: the same weights, computed in float (double for float64), then rounded once to
// the image's dtype.
template <typename scalar_t>
C10_HOST_DEVICE inline scalar_t luma(scalar_t r, scalar_t g, scalar_t b) {
  using opmath_t = at::opmath_type<scalar_t>;
  const opmath_t gray = static_cast<opmath_t>(r) * static_cast<opmath_t>(0.299) +
                        static_cast<opmath_t>(g) * static_cast<opmath_t>(0.587) +
                        static_cast<opmath_t>(b) * static_cast<opmath_t>(0.114);
  return static_cast<scalar_t>(gray);
}

}  // namespace img2gray
