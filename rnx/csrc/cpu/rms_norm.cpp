// The CPU implementation of rms_norm: rows split across threads with at::parallel_for; each row
// summed, then scaled, in float (double for float64; float16 and bfloat16 are converted).
//
// A released kernel is compiled for the baseline ISA, where at::vec::Vectorized is its portable
// form, arrays with a loop per operation: on a 2-core AMD EPYC that ran float32 [4096 x 4096] 4x
// slower than the plain loops below, which the compiler vectorises itself (16 independent partial
// sums, so that no reassociation is needed). A row is read twice, the second time from the cache.
//
// float16 and bfloat16 are converted with branch-free arithmetic on their bits, bit for bit as
// c10's conversions, so that the loops over them vectorise too (c10's float16 conversion
// branches, which kept the whole row scalar), and the weight is converted once per call. On x86
// processors with AVX2 and F16C they run in hand-vectorised loops instead, eight values an
// instruction, with the same sums in the same order. In the benchmark on a 2-core Xeon that took
// float16 from 0.18-0.22x torch.compile to 1.2-3.2x, and bfloat16 [4096 x 4096] from 1.4-1.6x
// to 2.2-2.6x and [4096 x 1024] from 0.75-1.23x to 0.98-1.14x.
//
// A float32 or float64 result of 16 MiB or more is written with non-temporal (streaming) stores
// on x86, as an ordinary store first reads the line it writes, and the next row is prefetched
// meanwhile. In the benchmark on a 2-core Xeon that took float32 [4096 x 4096] from 29-31 to
// 70-78 % of a copy's bandwidth, [4096 x 8192] from 57 to 83 % and [1024 x 65536] from 56 to 98 %.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <c10/util/BFloat16-math.h>
#include <torch/library.h>

#include "registration.h"
#include "rms_norm.h"

namespace rms_norm {
namespace {

// Elements per parallel_for chunk: enough work to be worth waking a thread.
constexpr int64_t kGrainElements = 32768;
// Partial sums of squares per row: as many as two 256-bit vectors of float hold.
constexpr int kLanes = 16;
// From this many bytes of result, float32 and float64 rows are stored past the caches.
constexpr size_t kStreamingBytes = size_t{16} << 20;

// Whether normalise_row can stream scalar_t's stores on this machine.
template <typename scalar_t>
constexpr bool kCanStream =
#if defined(__SSE2__)
    std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, double>;
#else
    false;
#endif

#if defined(__SSE2__)
// y[0:16 bytes] = x * scale * weight, stored past the caches; y is 16-byte aligned.
inline void stream_scaled(const float* x, const float* weight, float scale, float* y) {
  const __m128 scaled = _mm_mul_ps(_mm_loadu_ps(x), _mm_set1_ps(scale));
  _mm_stream_ps(y, _mm_mul_ps(scaled, _mm_loadu_ps(weight)));
}

inline void stream_scaled(const double* x, const double* weight, double scale, double* y) {
  const __m128d scaled = _mm_mul_pd(_mm_loadu_pd(x), _mm_set1_pd(scale));
  _mm_stream_pd(y, _mm_mul_pd(scaled, _mm_loadu_pd(weight)));
}
#endif

// float16's bits as float: normal numbers rebiased by a multiply, subnormal ones by a subtraction.
inline float widen(c10::Half value) {
  const uint32_t shifted = uint32_t{value.x} << 16;
  const uint32_t sign = shifted & 0x80000000u;
  const uint32_t twice = shifted + shifted;  // the sign shifted out
  const float normal = std::bit_cast<float>((twice >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float subnormal = std::bit_cast<float>((twice >> 17) | (126u << 23)) - 0.5f;
  const uint32_t is_subnormal = 0u - uint32_t{twice < (1u << 27)};
  return std::bit_cast<float>(
      sign | (std::bit_cast<uint32_t>(subnormal) & is_subnormal) |
      (std::bit_cast<uint32_t>(normal) & ~is_subnormal));
}

inline float widen(c10::BFloat16 value) {
  return std::bit_cast<float>(uint32_t{value.x} << 16);
}

// float to float16, rounding to nearest even: the float's own rounding does it, after scaling
// the value to where float16's last mantissa bit is float's; a NaN becomes float16's quiet NaN.
inline c10::Half narrow(float value, c10::Half) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t twice = bits + bits;
  const uint32_t sign = bits & 0x80000000u;
  const float magnitude = std::bit_cast<float>(bits & 0x7fffffffu) * 0x1.0p+112f * 0x1.0p-110f;
  const uint32_t bias = std::max(twice & 0xFF000000u, 0x71000000u);
  const uint32_t rounded =
      std::bit_cast<uint32_t>(std::bit_cast<float>((bias >> 1) + 0x07800000u) + magnitude);
  const uint32_t finite = ((rounded >> 13) & 0x7C00u) + (rounded & 0x0FFFu);
  const uint32_t is_nan = 0u - uint32_t{twice > 0xFF000000u};
  return c10::Half(
      static_cast<uint16_t>((sign >> 16) | (0x7E00u & is_nan) | (finite & ~is_nan)),
      c10::Half::from_bits());
}

inline c10::BFloat16 narrow(float value, c10::BFloat16) {
  return c10::BFloat16(c10::detail::round_to_nearest_even(value), c10::BFloat16::from_bits());
}

// Reduced-precision rows: widened in chunks into a float buffer, summed as float rows are, then
// scaled in one pass; `weight` is already float.
constexpr int64_t kChunk = 1024;

template <typename scalar_t>
C10_ALWAYS_INLINE void normalise_reduced_row(
    const scalar_t* x, const float* weight, scalar_t* y, int64_t columns, double eps) {
  float lanes[kLanes] = {};
  float tail = 0;
  float chunk[kChunk];
  for (int64_t start = 0; start < columns; start += kChunk) {
    const int64_t length = std::min(kChunk, columns - start);
    for (int64_t i = 0; i < length; ++i) {
      chunk[i] = widen(x[start + i]);
    }
    int64_t i = 0;
    for (; i + kLanes <= length; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) {
        lanes[j] += chunk[i + j] * chunk[i + j];
      }
    }
    for (; i < length; ++i) {
      tail += chunk[i] * chunk[i];
    }
  }
  float sum = tail;
  for (int j = 0; j < kLanes; ++j) {
    sum += lanes[j];
  }
  const float scale = inverse_rms(sum, columns, eps);
  for (int64_t i = 0; i < columns; ++i) {
    y[i] = narrow(widen(x[i]) * scale * weight[i], scalar_t{});
  }
}

// Rows [begin, end) of a reduced-precision x.
template <typename scalar_t>
void normalise_reduced_rows(
    const scalar_t* x, const float* weight, scalar_t* y, int64_t columns, double eps,
    int64_t begin, int64_t end) {
  for (int64_t row = begin; row < end; ++row) {
    normalise_reduced_row(x + row * columns, weight, y + row * columns, columns, eps);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// Eight float16 or bfloat16 values from `values` as float, and sixteen floats back, rounded to
// nearest even as c10 rounds (bfloat16's NaN is c10's 0x7FC0).
__attribute__((target("avx2,f16c"), always_inline)) inline __m256 load8(const c10::Half* values) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values)));
}

__attribute__((target("avx2,f16c"), always_inline)) inline void store16(
    c10::Half* values, __m256 low, __m256 high) {
  constexpr int kRounding = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  _mm_storeu_si128(reinterpret_cast<__m128i*>(values), _mm256_cvtps_ph(low, kRounding));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(values + 8), _mm256_cvtps_ph(high, kRounding));
}

__attribute__((target("avx2"), always_inline)) inline __m256 load8(const c10::BFloat16* values) {
  const __m256i wide =
      _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// The bfloat16 bits of eight floats, each in the low half of a 32-bit lane.
__attribute__((target("avx2"), always_inline)) inline __m256i round_to_bfloat16(__m256 floats) {
  const __m256i bits = _mm256_castps_si256(floats);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(bits, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF))), 16);
  const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(floats, floats, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, _mm256_set1_epi32(0x7FC0), is_nan);
}

__attribute__((target("avx2"), always_inline)) inline void store16(
    c10::BFloat16* values, __m256 low, __m256 high) {
  // The pack works within each 128-bit half, giving low 0-3, high 0-3, low 4-7, high 4-7.
  const __m256i packed = _mm256_packus_epi32(round_to_bfloat16(low), round_to_bfloat16(high));
  _mm256_storeu_si256(
      reinterpret_cast<__m256i*>(values), _mm256_permute4x64_epi64(packed, 0b11011000));
}

// Reduced-precision rows eight values an instruction, float16 through the processor's own
// conversions (F16C, which AVX2 processors have). The sums and products are
// normalise_reduced_row's, in its order, and neither path uses FMA, so the result does not depend
// on the machine (only a float16 NaN's payload may differ). Written by hand because the
// compiler's own vectorising of normalise_reduced_row for AVX2 packs 16-bit values slowly:
// bfloat16 rows took about 20 % longer that way.
template <typename scalar_t>
__attribute__((target("avx2,f16c"))) void normalise_reduced_rows_avx2_f16c(
    const scalar_t* x, const float* weight, scalar_t* y, int64_t columns, double eps,
    int64_t begin, int64_t end) {
  for (int64_t row = begin; row < end; ++row) {
    const scalar_t* x_row = x + row * columns;
    scalar_t* y_row = y + row * columns;
    __m256 low_lanes = _mm256_setzero_ps();
    __m256 high_lanes = _mm256_setzero_ps();
    float tail = 0;
    int64_t i = 0;
    for (int64_t start = 0; start < columns; start += kChunk) {
      const int64_t length = std::min(kChunk, columns - start);
      for (i = start; i + kLanes <= start + length; i += kLanes) {
        const __m256 low = load8(x_row + i);
        const __m256 high = load8(x_row + i + 8);
        low_lanes = _mm256_add_ps(low_lanes, _mm256_mul_ps(low, low));
        high_lanes = _mm256_add_ps(high_lanes, _mm256_mul_ps(high, high));
      }
      for (; i < start + length; ++i) {
        const float value = widen(x_row[i]);
        tail += value * value;
      }
    }
    float lanes[kLanes];
    _mm256_storeu_ps(lanes, low_lanes);
    _mm256_storeu_ps(lanes + 8, high_lanes);
    float sum = tail;
    for (int j = 0; j < kLanes; ++j) {
      sum += lanes[j];
    }
    const float scale = inverse_rms(sum, columns, eps);
    const __m256 scale_vector = _mm256_set1_ps(scale);
    for (i = 0; i + kLanes <= columns; i += kLanes) {
      const __m256 low = _mm256_mul_ps(load8(x_row + i), scale_vector);
      const __m256 high = _mm256_mul_ps(load8(x_row + i + 8), scale_vector);
      store16(
          y_row + i, _mm256_mul_ps(low, _mm256_loadu_ps(weight + i)),
          _mm256_mul_ps(high, _mm256_loadu_ps(weight + i + 8)));
    }
    for (; i < columns; ++i) {
      y_row[i] = narrow(widen(x_row[i]) * scale * weight[i], scalar_t{});
    }
  }
}

// Whether this processor runs normalise_reduced_rows_avx2_f16c, asked once (after libgcc has
// read the CPUID, which a static initialiser could not count on).
bool has_avx2_f16c() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("f16c") != 0;
  }();
  return has;
}
#endif

template <typename scalar_t>
void normalise_row(
    const scalar_t* x, const scalar_t* weight, scalar_t* y, int64_t columns, double eps,
    bool stream) {
  using opmath_t = at::opmath_type<scalar_t>;
  opmath_t lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= columns; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const opmath_t value = static_cast<opmath_t>(x[i + j]);
      lanes[j] += value * value;
    }
  }
  opmath_t sum = 0;
  for (int j = 0; j < kLanes; ++j) {
    sum += lanes[j];
  }
  for (; i < columns; ++i) {
    const opmath_t value = static_cast<opmath_t>(x[i]);
    sum += value * value;
  }
  const opmath_t scale = inverse_rms(sum, columns, eps);
  const auto store_one = [&](int64_t column) {
    y[column] = static_cast<scalar_t>(
        static_cast<opmath_t>(x[column]) * scale * static_cast<opmath_t>(weight[column]));
  };
  i = 0;
#if defined(__SSE2__)
  if constexpr (kCanStream<scalar_t>) {
    if (stream) {
      // Ordinary stores up to y's first 16-byte boundary, then 16 bytes a store. The next row
      // (after x's last, a harmless prefetch) is fetched meanwhile, as streaming pulls nothing in.
      constexpr int64_t kVec = 16 / sizeof(scalar_t);
      const int64_t head = std::min<int64_t>(
          columns, (16 - reinterpret_cast<std::uintptr_t>(y) % 16) % 16 / sizeof(scalar_t));
      for (; i < head; ++i) {
        store_one(i);
      }
      for (; i + kVec <= columns; i += kVec) {
        _mm_prefetch(reinterpret_cast<const char*>(x + columns + i), _MM_HINT_T0);
        stream_scaled(x + i, weight + i, scale, y + i);
      }
    }
  }
#endif
  for (; i < columns; ++i) {
    store_one(i);
  }
}

// The rows of x, normalised into y, as scalar_t: a template, so that only the path for
// scalar_t's kind of float is compiled for it.
template <typename scalar_t>
void run_rows(
    const at::Tensor& x, const at::Tensor& weight, double eps, at::Tensor& y, int64_t rows,
    int64_t columns) {
  const int64_t grain = std::max<int64_t>(1, kGrainElements / columns);
  const scalar_t* x_data = x.const_data_ptr<scalar_t>();
  scalar_t* y_data = y.mutable_data_ptr<scalar_t>();
  if constexpr (c10::is_reduced_floating_point_v<scalar_t>) {
    const at::Tensor float_weight = weight.to(at::kFloat);
    const float* weight_data = float_weight.const_data_ptr<float>();
    at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
#if defined(__x86_64__) && defined(__GNUC__)
      if (has_avx2_f16c()) {
        normalise_reduced_rows_avx2_f16c(x_data, weight_data, y_data, columns, eps, begin, end);
        return;
      }
#endif
      normalise_reduced_rows(x_data, weight_data, y_data, columns, eps, begin, end);
    });
  } else {
    const scalar_t* weight_data = weight.const_data_ptr<scalar_t>();
    const bool stream = kCanStream<scalar_t> && y.nbytes() >= kStreamingBytes;
    at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        normalise_row(
            x_data + row * columns, weight_data, y_data + row * columns, columns, eps, stream);
      }
#if defined(__SSE2__)
      if (stream) {
        _mm_sfence();  // this thread's streamed stores are seen before parallel_for returns
      }
#endif
    });
  }
}

// Writes rms_norm(x, weight, eps) into `y`: all contiguous and checked; y may be x.
void run(const at::Tensor& x, const at::Tensor& weight, double eps, at::Tensor& y) {
  const int64_t columns = x.size(-1);
  const int64_t rows = columns == 0 ? 0 : x.numel() / columns;
  if (rows == 0) {
    return;
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "rms_norm_cpu", [&] {
    run_rows<scalar_t>(x, weight, eps, y, rows, columns);
  });
}

}  // namespace

at::Tensor rms_norm_cpu(const at::Tensor& x, const at::Tensor& weight, double eps) {
  check_inputs(x, weight, eps);
  const at::Tensor contiguous_x = x.contiguous();
  const at::Tensor contiguous_weight = weight.contiguous();
  at::Tensor y = at::empty(x.sizes(), x.options());
  run(contiguous_x, contiguous_weight, eps, y);
  return y;
}

void rms_norm_out_cpu(at::Tensor& out, const at::Tensor& x, const at::Tensor& weight, double eps) {
  check_inputs(x, weight, eps);
  check_out(out, x);
  const at::Tensor contiguous_x = x.contiguous();
  const at::Tensor contiguous_weight = weight.contiguous();
  if (can_write_directly(out, contiguous_x, contiguous_weight)) {
    run(contiguous_x, contiguous_weight, eps, out);
    return;
  }
  at::Tensor y = at::empty(x.sizes(), x.options());
  run(contiguous_x, contiguous_weight, eps, y);
  out.copy_(y);
}

}  // namespace rms_norm

TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, m) {
  m.impl("rms_norm", &rms_norm::rms_norm_cpu);
  m.impl("rms_norm_no_grad", &rms_norm::rms_norm_cpu);
  m.impl("rms_norm_out", &rms_norm::rms_norm_out_cpu);
}
