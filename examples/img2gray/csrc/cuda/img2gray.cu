// The CUDA implementation of img2gray: one thread per pixel, in a grid-stride loop.

#include <algorithm>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "img2gray.h"
#include "registration.h"

namespace img2gray {
namespace {

constexpr int kThreadsPerBlock = 256;
// Blocks per multiprocessor at most; past that, each thread loops over several pixels.
constexpr int64_t kMaxBlocksPerSM = 32;

// 64-bit indices throughout: a batch of images can hold more than 2^31 values.
template <typename scalar_t>
__global__ void img2gray_kernel(
    const scalar_t* __restrict__ rgb, scalar_t* __restrict__ gray, int64_t num_pixels) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < num_pixels;
       i += stride) {
    const scalar_t* pixel = rgb + 3 * i;
    gray[i] = luma(pixel[0], pixel[1], pixel[2]);
  }
}

// Writes the grayscale of `rgb` into `gray`: both contiguous, on the current device, checked.
void run(const at::Tensor& rgb, at::Tensor& gray) {
  const int64_t num_pixels = gray.numel();
  if (num_pixels == 0) {
    return;  // A launch with 0 blocks is an error.
  }
  const int64_t max_blocks =
      kMaxBlocksPerSM * at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const auto blocks = static_cast<unsigned int>(
      std::min((num_pixels + kThreadsPerBlock - 1) / kThreadsPerBlock, max_blocks));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND3(
      at::kByte, at::kHalf, at::kBFloat16, rgb.scalar_type(), "img2gray_cuda", [&] {
        img2gray_kernel<scalar_t><<<blocks, kThreadsPerBlock, 0, stream>>>(
            rgb.const_data_ptr<scalar_t>(), gray.mutable_data_ptr<scalar_t>(), num_pixels);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
}

}  // namespace

at::Tensor img2gray_cuda(const at::Tensor& image) {
  check_image(image);
  const at::cuda::OptionalCUDAGuard device_guard(image.device());
  const at::Tensor rgb = image.contiguous();
  at::Tensor gray = at::empty(gray_shape(image), image.options());
  run(rgb, gray);
  return gray;
}

void img2gray_out_cuda(at::Tensor& out, const at::Tensor& image) {
  check_image(image);
  check_out(out, image);  // Before the guard: out or image may be on the CPU.
  const at::cuda::OptionalCUDAGuard device_guard(image.device());
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

TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CUDA, m) {
  m.impl("img2gray", &img2gray::img2gray_cuda);
  m.impl("img2gray_out", &img2gray::img2gray_out_cuda);
}
