// The CPU implementation of img2gray: one pass over the pixels, split across threads.
//
// A released kernel must run on any CPU of its platform, so it is compiled for the baseline ISA.
// On x86-64 the pixel loop is compiled a second time for AVX2 + F16C and picked at run time when
// the CPU has them: the compiler then vectorizes the stride-3 loads, and float16 converts eight
// values per instruction instead of one at a time in software. Both paths compute the same
// values, bit for bit (no FMA contraction: AVX2 alone has no FMA instructions).

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/macros/Macros.h>
#include <torch/library.h>

#include "img2gray.h"
#include "registration.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define IMG2GRAY_HAS_AVX2_PATH 1
#include <immintrin.h>
#else
#define IMG2GRAY_HAS_AVX2_PATH 0
#endif

namespace img2gray {
namespace {

// Pixels per parallel_for chunk: enough work to be worth a thread.
constexpr int64_t kGrainSize = 32768;

// The per-pixel loop both paths compile: plain enough for the compiler to vectorize.
template <typename scalar_t>
C10_ALWAYS_INLINE void convert_pixels(const scalar_t* rgb, scalar_t* gray, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    gray[i] = luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
  }
}

#if IMG2GRAY_HAS_AVX2_PATH

template <typename scalar_t>
__attribute__((target("avx2,f16c"))) void convert_pixels_avx2(
    const scalar_t* rgb, scalar_t* gray, int64_t count) {
  convert_pixels(rgb, gray, count);
}

// float16: the compiler cannot vectorize c10::Half's software conversions, so the channels are
// split into planes (a loop it does vectorize) and converted with F16C, eight pixels at a time.
template <>
__attribute__((target("avx2,f16c"))) void convert_pixels_avx2<c10::Half>(
    const c10::Half* rgb, c10::Half* gray, int64_t count) {
  // Pixels per block: the block's three channel planes stay in L1.
  constexpr int64_t kBlock = 512;
  constexpr int64_t kLanes = 8;
  alignas(32) uint16_t red[kBlock], green[kBlock], blue[kBlock];
  const auto* bits = reinterpret_cast<const uint16_t*>(rgb);
  // The weights luma() uses, and the same order of operations.
  const __m256 red_weight = _mm256_set1_ps(0.299f);
  const __m256 green_weight = _mm256_set1_ps(0.587f);
  const __m256 blue_weight = _mm256_set1_ps(0.114f);

  for (int64_t start = 0; start < count; start += kBlock) {
    const int64_t size = std::min(kBlock, count - start);
    const uint16_t* pixels = bits + 3 * start;
    for (int64_t i = 0; i < size; ++i) {
      red[i] = pixels[3 * i];
      green[i] = pixels[3 * i + 1];
      blue[i] = pixels[3 * i + 2];
    }
    const int64_t vectorized = size - size % kLanes;
    for (int64_t i = 0; i < vectorized; i += kLanes) {
      const __m256 r = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(red + i)));
      const __m256 g = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(green + i)));
      const __m256 b = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(blue + i)));
      const __m256 sum = _mm256_add_ps(
          _mm256_add_ps(_mm256_mul_ps(r, red_weight), _mm256_mul_ps(g, green_weight)),
          _mm256_mul_ps(b, blue_weight));
      _mm_storeu_si128(
          reinterpret_cast<__m128i*>(gray + start + i),
          _mm256_cvtps_ph(sum, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    convert_pixels(rgb + 3 * (start + vectorized), gray + start + vectorized, size - vectorized);
  }
}

// Whether this CPU runs the AVX2 + F16C path. IMG2GRAY_CPU_PORTABLE=1 forces the portable one,
// so that tests can check that both paths agree.
bool use_avx2_path() {
  static const bool use = [] {
    const char* portable = std::getenv("IMG2GRAY_CPU_PORTABLE");
    const bool forced_portable = portable != nullptr && std::strcmp(portable, "1") == 0;
    return !forced_portable && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  }();
  return use;
}

#endif  // IMG2GRAY_HAS_AVX2_PATH

template <typename scalar_t>
void convert_range(const scalar_t* rgb, scalar_t* gray, int64_t count) {
#if IMG2GRAY_HAS_AVX2_PATH
  if (use_avx2_path()) {
    convert_pixels_avx2(rgb, gray, count);
    return;
  }
#endif
  convert_pixels(rgb, gray, count);
}

// Writes the grayscale of `rgb` into `gray`: both contiguous, already checked.
void run(const at::Tensor& rgb, at::Tensor& gray) {
  const int64_t num_pixels = gray.numel();
  if (num_pixels == 0) {
    return;
  }
  AT_DISPATCH_FLOATING_TYPES_AND3(
      at::kByte, at::kHalf, at::kBFloat16, rgb.scalar_type(), "img2gray_cpu", [&] {
        const scalar_t* rgb_data = rgb.const_data_ptr<scalar_t>();
        scalar_t* gray_data = gray.mutable_data_ptr<scalar_t>();
        at::parallel_for(0, num_pixels, kGrainSize, [&](int64_t begin, int64_t end) {
          convert_range(rgb_data + 3 * begin, gray_data + begin, end - begin);
        });
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
