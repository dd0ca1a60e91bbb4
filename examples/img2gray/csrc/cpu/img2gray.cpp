// The CPU implementation of img2gray: one pass over the pixels, split across threads.

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "img2gray.h"
#include "registration.h"

namespace img2gray {
namespace {

// Pixels per parallel_for chunk: enough work to be worth a thread.
constexpr int64_t kGrainSize = 32768;

template <typename scalar_t>
void convert(const scalar_t* rgb, scalar_t* gray, int64_t num_pixels) {
  at::parallel_for(0, num_pixels, kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const scalar_t* pixel = rgb + 3 * i;
      gray[i] = luma(pixel[0], pixel[1], pixel[2]);
    }
  });
}

// Writes the grayscale of `rgb` into `gray`: both contiguous, already checked.
void run(const at::Tensor& rgb, at::Tensor& gray) {
  const int64_t num_pixels = gray.numel();
  if (num_pixels == 0) {
    return;
  }
  AT_DISPATCH_FLOATING_TYPES_AND3(
      at::kByte, at::kHalf, at::kBFloat16, rgb.scalar_type(), "img2gray_cpu", [&] {
        convert<scalar_t>(
            rgb.const_data_ptr<scalar_t>(), gray.mutable_data_ptr<scalar_t>(), num_pixels);
      });
}

}  // namespace

at::Tensor img2gray_cpu(const at::Tensor& image) {
  check_image(image);
  const at::Tensor rgb = image.contiguous();
  at::Tensor gray = at::empty(gray_shape(image), image.options());
  run(rgb, gray);
  return gray;
}

void img2gray_out_cpu(at::Tensor& out, const at::Tensor& image) {
  check_image(image);
  check_out(out, image);
  const at::Tensor rgb = image.contiguous();
  if (can_write_directly(out, rgb)) {
    run(rgb, out);
    return;
  }
  at::Tensor gray = at::empty(gray_shape(image), image.options());
  run(rgb, gray);
  out.copy_(gray);
}

}  // namespace img2gray

TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, m) {
  m.impl("img2gray", &img2gray::img2gray_cpu);
  m.impl("img2gray_out", &img2gray::img2gray_out_cpu);
}
