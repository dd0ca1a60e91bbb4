// The CPU implementation of img2gray: one pass over the pixels, split across threads.
//
// A released kernel must run on any CPU of its platform, so it is compiled for the baseline ISA.
// On x86-64 the pixel loop is compiled again for SSSE3 and for AVX2 + F16C, and the best one the
// CPU has is picked at run time. uint8 images are deinterleaved with byte shuffles (pshufb) and
// weighted with 16-bit multiply-adds (pmaddwd), 16 or 32 pixels per step, in the same 32-bit fixed
// point as luma(); float16 is deinterleaved the same way and converted with F16C, eight values per
// instruction. Every path computes the same values, bit for bit (no FMA contraction: the float
// paths multiply and add separately, in luma()'s order).

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/macros/Macros.h>
#include <torch/library.h>

#include "img2gray.h"
#include "registration.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define IMG2GRAY_HAS_X86_PATHS 1
#include <immintrin.h>
#else
#define IMG2GRAY_HAS_X86_PATHS 0
#endif

namespace img2gray {
namespace {

// Pixels per parallel_for chunk: enough work (tens of microseconds) to be worth waking a thread;
// smaller images stay on the calling thread.
constexpr int64_t kGrainSize = 1 << 17;

// The per-pixel loop every path ends with (and the whole of the portable path).
template <typename scalar_t>
C10_ALWAYS_INLINE void convert_pixels(const scalar_t* rgb, scalar_t* gray, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    gray[i] = luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
  }
}

#if IMG2GRAY_HAS_X86_PATHS

// uint8 in 16-bit multiply-adds. luma() needs r*19595 + g*38470 + b*7471 + 0x8000; 38470 does not
// fit a signed 16-bit weight, so G is counted twice at half weight: pmaddwd of the words (R, G)
// with (19595, 19235) plus pmaddwd of (G, B) with (19235, 7471) is exactly that sum less 0x8000,
// in 32 bits, never above 255 * 65536 + 0x8000.
//
// Each shuffle takes 4 pixels (12 bytes) from one 16-byte load and spreads them into 8 words.
#define IMG2GRAY_RG_WORDS 0, -1, 1, -1, 3, -1, 4, -1, 6, -1, 7, -1, 9, -1, 10, -1
#define IMG2GRAY_GB_WORDS 1, -1, 2, -1, 4, -1, 5, -1, 7, -1, 8, -1, 10, -1, 11, -1
#define IMG2GRAY_RG_WEIGHTS 19595, 19235, 19595, 19235, 19595, 19235, 19595, 19235
#define IMG2GRAY_GB_WEIGHTS 19235, 7471, 19235, 7471, 19235, 7471, 19235, 7471

// 4 pixels' gray values (as 32-bit lanes) from a 16-byte load whose first 12 bytes are the pixels.
__attribute__((target("ssse3"))) C10_ALWAYS_INLINE __m128i gray4_ssse3(__m128i pixels) {
  const __m128i rg = _mm_shuffle_epi8(pixels, _mm_setr_epi8(IMG2GRAY_RG_WORDS));
  const __m128i gb = _mm_shuffle_epi8(pixels, _mm_setr_epi8(IMG2GRAY_GB_WORDS));
  const __m128i sum = _mm_add_epi32(
      _mm_add_epi32(
          _mm_madd_epi16(rg, _mm_setr_epi16(IMG2GRAY_RG_WEIGHTS)),
          _mm_madd_epi16(gb, _mm_setr_epi16(IMG2GRAY_GB_WEIGHTS))),
      _mm_set1_epi32(0x8000));
  return _mm_srli_epi32(sum, 16);
}

__attribute__((target("ssse3"))) void convert_uint8_ssse3(
    const uint8_t* rgb, uint8_t* gray, int64_t count) {
  // 16 pixels per step, read as four 16-byte loads at 12-byte steps: the last load reads 4 bytes
  // past the step's 48, so the loop stops while those bytes are still pixels.
  int64_t i = 0;
  for (; i + 18 <= count; i += 16) {
    const uint8_t* p = rgb + 3 * i;
    const __m128i g0 = gray4_ssse3(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m128i g1 = gray4_ssse3(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 12)));
    const __m128i g2 = gray4_ssse3(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 24)));
    const __m128i g3 = gray4_ssse3(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 36)));
    const __m128i packed =
        _mm_packus_epi16(_mm_packs_epi32(g0, g1), _mm_packs_epi32(g2, g3));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(gray + i), packed);
  }
  convert_pixels(rgb + 3 * i, gray + i, count - i);
}

// The AVX2 form of gray4_ssse3: the low 128-bit lane takes 4 pixels, the high lane 4 others.
__attribute__((target("avx2"))) C10_ALWAYS_INLINE __m256i gray8_avx2(
    const uint8_t* low, const uint8_t* high) {
  const __m256i pixels = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(low))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(high)), 1);
  const __m256i rg = _mm256_shuffle_epi8(
      pixels, _mm256_setr_epi8(IMG2GRAY_RG_WORDS, IMG2GRAY_RG_WORDS));
  const __m256i gb = _mm256_shuffle_epi8(
      pixels, _mm256_setr_epi8(IMG2GRAY_GB_WORDS, IMG2GRAY_GB_WORDS));
  const __m256i sum = _mm256_add_epi32(
      _mm256_add_epi32(
          _mm256_madd_epi16(rg, _mm256_setr_epi16(IMG2GRAY_RG_WEIGHTS, IMG2GRAY_RG_WEIGHTS)),
          _mm256_madd_epi16(gb, _mm256_setr_epi16(IMG2GRAY_GB_WEIGHTS, IMG2GRAY_GB_WEIGHTS))),
      _mm256_set1_epi32(0x8000));
  return _mm256_srli_epi32(sum, 16);
}

__attribute__((target("avx2"))) void convert_uint8_avx2(
    const uint8_t* rgb, uint8_t* gray, int64_t count) {
  // 32 pixels per step. Register k holds pixels 4k..4k+3 in its low lane and 16+4k..16+4k+3 in
  // its high lane, so that the in-lane packs below leave all 32 in order. The last load reads 4
  // bytes past the step's 96, so the loop stops while those bytes are still pixels.
  int64_t i = 0;
  for (; i + 34 <= count; i += 32) {
    const uint8_t* p = rgb + 3 * i;
    const __m256i g0 = gray8_avx2(p, p + 48);
    const __m256i g1 = gray8_avx2(p + 12, p + 60);
    const __m256i g2 = gray8_avx2(p + 24, p + 72);
    const __m256i g3 = gray8_avx2(p + 36, p + 84);
    const __m256i packed =
        _mm256_packus_epi16(_mm256_packs_epi32(g0, g1), _mm256_packs_epi32(g2, g3));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(gray + i), packed);
  }
  convert_uint8_ssse3(rgb + 3 * i, gray + i, count - i);
}

#undef IMG2GRAY_RG_WORDS
#undef IMG2GRAY_GB_WORDS
#undef IMG2GRAY_RG_WEIGHTS
#undef IMG2GRAY_GB_WEIGHTS

// float16: 8 pixels (three 16-byte loads) split into R, G and B vectors of 8 halves by shuffling
// each load's words into place and or-ing the three, then converted with F16C and weighted in
// float, in luma()'s order.
__attribute__((target("avx2,f16c"))) C10_ALWAYS_INLINE __m128i half_plane(
    __m128i a, __m128i b, __m128i c, __m128i from_a, __m128i from_b, __m128i from_c) {
  return _mm_or_si128(
      _mm_or_si128(_mm_shuffle_epi8(a, from_a), _mm_shuffle_epi8(b, from_b)),
      _mm_shuffle_epi8(c, from_c));
}

__attribute__((target("avx2,f16c"))) void convert_half_avx2(
    const c10::Half* rgb, c10::Half* gray, int64_t count) {
  // Channel k of pixel j is half 3j+k of the step: in load a (halves 0-7), b (8-15) or c (16-23).
  // Each mask picks the two bytes of the halves its load holds, -1 (zero) where another supplies.
  const __m128i r_a = _mm_setr_epi8(0, 1, 6, 7, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i r_b = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 3, 8, 9, 14, 15, -1, -1, -1, -1);
  const __m128i r_c = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 4, 5, 10, 11);
  const __m128i g_a = _mm_setr_epi8(2, 3, 8, 9, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i g_b = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 4, 5, 10, 11, -1, -1, -1, -1, -1, -1);
  const __m128i g_c = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 6, 7, 12, 13);
  const __m128i b_a = _mm_setr_epi8(4, 5, 10, 11, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b_b = _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 6, 7, 12, 13, -1, -1, -1, -1, -1, -1);
  const __m128i b_c = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 3, 8, 9, 14, 15);
  const __m256 red_weight = _mm256_set1_ps(0.299f);
  const __m256 green_weight = _mm256_set1_ps(0.587f);
  const __m256 blue_weight = _mm256_set1_ps(0.114f);
  const auto* bits = reinterpret_cast<const uint8_t*>(rgb);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const uint8_t* p = bits + 6 * i;
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32));
    const __m256 r = _mm256_cvtph_ps(half_plane(a, b, c, r_a, r_b, r_c));
    const __m256 g = _mm256_cvtph_ps(half_plane(a, b, c, g_a, g_b, g_c));
    const __m256 bl = _mm256_cvtph_ps(half_plane(a, b, c, b_a, b_b, b_c));
    const __m256 sum = _mm256_add_ps(
        _mm256_add_ps(_mm256_mul_ps(r, red_weight), _mm256_mul_ps(g, green_weight)),
        _mm256_mul_ps(bl, blue_weight));
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(gray + i),
        _mm256_cvtps_ph(sum, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  convert_pixels(rgb + 3 * i, gray + i, count - i);
}

// The other dtypes: the plain loop, which the compiler vectorizes for AVX2.
template <typename scalar_t>
__attribute__((target("avx2,f16c"))) void convert_pixels_avx2(
    const scalar_t* rgb, scalar_t* gray, int64_t count) {
  convert_pixels(rgb, gray, count);
}

enum class Isa { kPortable, kSsse3, kAvx2 };

// The best path this CPU runs. For tests that check that the paths agree, IMG2GRAY_CPU_ISA=ssse3
// or =portable caps the choice, and IMG2GRAY_CPU_PORTABLE=1 forces the portable loop.
Isa cpu_isa() {
  static const Isa isa = [] {
    Isa best = Isa::kPortable;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) {
      best = Isa::kAvx2;
    } else if (__builtin_cpu_supports("ssse3")) {
      best = Isa::kSsse3;
    }
    const char* portable = std::getenv("IMG2GRAY_CPU_PORTABLE");
    const char* cap = std::getenv("IMG2GRAY_CPU_ISA");
    if ((portable != nullptr && std::strcmp(portable, "1") == 0) ||
        (cap != nullptr && std::strcmp(cap, "portable") == 0)) {
      return Isa::kPortable;
    }
    if (cap != nullptr && std::strcmp(cap, "ssse3") == 0 && best == Isa::kAvx2) {
      return Isa::kSsse3;
    }
    return best;
  }();
  return isa;
}

#endif  // IMG2GRAY_HAS_X86_PATHS

template <typename scalar_t>
void convert_range(const scalar_t* rgb, scalar_t* gray, int64_t count) {
#if IMG2GRAY_HAS_X86_PATHS
  const Isa isa = cpu_isa();
  if constexpr (std::is_same_v<scalar_t, uint8_t>) {
    if (isa == Isa::kAvx2) {
      convert_uint8_avx2(rgb, gray, count);
      return;
    }
    if (isa == Isa::kSsse3) {
      convert_uint8_ssse3(rgb, gray, count);
      return;
    }
  } else if constexpr (std::is_same_v<scalar_t, c10::Half>) {
    if (isa == Isa::kAvx2) {
      convert_half_avx2(rgb, gray, count);
      return;
    }
  } else {
    if (isa == Isa::kAvx2) {
      convert_pixels_avx2(rgb, gray, count);
      return;
    }
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
  m.impl("img2gray_no_grad", &img2gray::img2gray_cpu);
  m.impl("img2gray_out", &img2gray::img2gray_out_cpu);
}
