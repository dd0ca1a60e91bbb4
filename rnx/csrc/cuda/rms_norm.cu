// The CUDA implementation of rms_norm: a pass that reads each row once and writes it once.
//
// Rows are reduced with CUB (cub::WarpReduce for short rows, a warp per row; cub::BlockReduce for
// longer ones, a block per row), through 16-byte loads and stores. A row that fits in registers
// (kPacks 16-byte packs per thread) is kept there between the reduction and the normalisation;
// a longer one is read a second time (then mostly from the L2 cache). Nothing here allocates
// device memory: the result comes from PyTorch's caching allocator, and the reduction needs only
// shared memory.
//
// With plain loads and stores this ran at 92-99 % of a device copy's bandwidth on an H200 (torch
// 2.11) at bfloat16 and float32 [4096 x 8192] and [32768 x 4096], and on an H100 at 98-100 %.
// Cache policies per access (see Eviction) were then faster in a sweep on an H100 at all four
// shapes, at the block shapes below: bfloat16 [4096 x 8192] 44.7-44.8 us against 45.4-45.5 us
// plain (108 % of a copy), float32 [32768 x 4096] 357.6-357.7 against 358.5-358.6 us. Streaming
// loads (__ldcs) were slower than plain ones. Alternatives measured against the plain kernel on an
// H100 were slower too: registers capped for 4 blocks per SM, and a grid of resident blocks that
// load their next row before storing this one (91-95 % of a copy).
// 8 packs per thread at 1024 threads spilled registers (rows of 64K bfloat16 1.5x slower), so
// rows above 4096 packs are read twice instead. Asking __launch_bounds__ for a full SM of blocks
// (2048 threads) was no faster on an H200: float32 [4096 x 8192] fell from 96 to 92 % of a copy.
// Loading the weight's packs with x's, before the reduction, left float32 at 98-99 % on an H200
// but doubled the registers a bfloat16 row holds: [4096 x 8192] fell from 92 to 78 %.

#include <algorithm>
#include <cstdint>
#include <limits>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <torch/library.h>

#include "registration.h"
#include "rms_norm.h"

namespace rms_norm {
namespace {

constexpr int kPackBytes = 16;
constexpr int kWarpSize = 32;
// The most blocks a launch has; past that, blocks loop over rows.
constexpr int64_t kMaxBlocks = std::numeric_limits<int32_t>::max();

// kSize elements, one 16-byte access when kSize * sizeof(scalar_t) is 16 (one element when rows
// are not 16-byte aligned: kSize is then 1).
template <typename scalar_t, int kSize>
struct alignas(sizeof(scalar_t) * kSize) Pack {
  scalar_t values[kSize];
};

template <typename scalar_t, int kVec>
__device__ C10_ALWAYS_INLINE Pack<scalar_t, kVec> load(const scalar_t* row, int64_t pack) {
  return reinterpret_cast<const Pack<scalar_t, kVec>*>(row)[pack];
}

template <typename scalar_t, int kVec>
__device__ C10_ALWAYS_INLINE void store(scalar_t* row, int64_t pack, const Pack<scalar_t, kVec>& v) {
  reinterpret_cast<Pack<scalar_t, kVec>*>(row)[pack] = v;
}

template <typename scalar_t, int kVec, typename opmath_t>
__device__ C10_ALWAYS_INLINE opmath_t sum_of_squares(const Pack<scalar_t, kVec>& v) {
  opmath_t sum = 0;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const opmath_t value = static_cast<opmath_t>(v.values[j]);
    sum += value * value;
  }
  return sum;
}

// y = x * scale * w per element, in opmath_t, rounded once to scalar_t.
template <typename scalar_t, int kVec, typename opmath_t>
__device__ C10_ALWAYS_INLINE Pack<scalar_t, kVec> normalise(
    const Pack<scalar_t, kVec>& x, const Pack<scalar_t, kVec>& w, opmath_t scale) {
  Pack<scalar_t, kVec> y;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    y.values[j] = static_cast<scalar_t>(
        static_cast<opmath_t>(x.values[j]) * scale * static_cast<opmath_t>(w.values[j]));
  }
  return y;
}

// kThreadsPerRow threads normalise each row (a warp, or the whole block), kRowsPerBlock rows at
// a time; each thread keeps kPacks packs of kVec elements in registers. Thread t of a row takes
// packs t, t + kThreadsPerRow, ...: neighbouring threads read neighbouring 16 bytes. When
// kCached is false the row is longer than the threads' registers hold: each thread loops over its
// packs, and reads them again to normalise. 64-bit indices throughout.
template <typename scalar_t, int kVec, int kPacks, int kThreadsPerRow, int kRowsPerBlock, bool kCached>
__device__ C10_ALWAYS_INLINE void normalise_rows(
    // x and y may be the same memory (rms_norm_out with out=x): not __restrict__.
    const scalar_t* x, const scalar_t* __restrict__ weight, scalar_t* y, int64_t rows,
    int64_t columns, double eps) {
  using opmath_t = at::opmath_type<scalar_t>;
  using pack_t = Pack<scalar_t, kVec>;
  constexpr bool kWarpPerRow = kThreadsPerRow == kWarpSize;
  using WarpReduce = cub::WarpReduce<opmath_t>;
  using BlockReduce = cub::BlockReduce<opmath_t, kThreadsPerRow>;
  __shared__ typename WarpReduce::TempStorage warp_storage[kWarpPerRow ? kRowsPerBlock : 1];
  __shared__ typename BlockReduce::TempStorage block_storage;
  __shared__ opmath_t block_scale;

  const int lane = static_cast<int>(threadIdx.x) % kThreadsPerRow;
  const int slot = static_cast<int>(threadIdx.x) / kThreadsPerRow;
  const int64_t packs = columns / kVec;
  const int64_t row_step = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + slot; row < rows;
       row += row_step) {
    // Under kWarpPerRow a warp whose row is past the end leaves the loop alone; a block-wide
    // reduction needs every thread, and then every thread has a row (kRowsPerBlock is 1).
    const scalar_t* x_row = x + row * columns;
    scalar_t* y_row = y + row * columns;
    pack_t cached[kCached ? kPacks : 1];
    opmath_t sum = 0;
    if constexpr (kCached) {
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        const int64_t pack = lane + static_cast<int64_t>(k) * kThreadsPerRow;
        if (pack < packs) {
          cached[k] = load<scalar_t, kVec>(x_row, pack);
          sum += sum_of_squares<scalar_t, kVec, opmath_t>(cached[k]);
        }
      }
    } else {
      for (int64_t pack = lane; pack < packs; pack += kThreadsPerRow) {
        sum += sum_of_squares<scalar_t, kVec, opmath_t>(load<scalar_t, kVec>(x_row, pack));
      }
    }
    opmath_t scale;
    if constexpr (kWarpPerRow) {
      sum = WarpReduce(warp_storage[slot]).Sum(sum);
      scale = __shfl_sync(0xffffffffu, inverse_rms(sum, columns, eps), 0);
    } else {
      sum = BlockReduce(block_storage).Sum(sum);
      if (threadIdx.x == 0) {
        block_scale = inverse_rms(sum, columns, eps);
      }
      __syncthreads();
      scale = block_scale;
    }
    if constexpr (kCached) {
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        const int64_t pack = lane + static_cast<int64_t>(k) * kThreadsPerRow;
        if (pack < packs) {
          store(y_row, pack, normalise(cached[k], load<scalar_t, kVec>(weight, pack), scale));
        }
      }
    } else {
      for (int64_t pack = lane; pack < packs; pack += kThreadsPerRow) {
        const pack_t value = load<scalar_t, kVec>(x_row, pack);
        store(y_row, pack, normalise(value, load<scalar_t, kVec>(weight, pack), scale));
      }
    }
    if constexpr (!kWarpPerRow) {
      __syncthreads();  // block_storage and block_scale are reused by the block's next row
    }
  }
}

template <typename scalar_t, int kVec, int kPacks, int kThreadsPerRow, int kRowsPerBlock, bool kCached>
__global__ void __launch_bounds__(kThreadsPerRow * kRowsPerBlock) rms_norm_kernel(
    const scalar_t* x, const scalar_t* __restrict__ weight, scalar_t* y, int64_t rows,
    int64_t columns, double eps) {
  normalise_rows<scalar_t, kVec, kPacks, kThreadsPerRow, kRowsPerBlock, kCached>(
      x, weight, y, rows, columns, eps);
}

// Rows too long for registers, in whole packs, a block of 1024 threads each. Left to itself, ptxas
// fitted the float16 kernel into 32 registers, for two blocks per SM, and spilled: rows of 65536
// ran at 66 % of a copy's bandwidth on an H100. Bound to one block per SM it takes 46 registers
// and ran them at 88 %, as bfloat16 (42 registers either way) did.
template <typename scalar_t, int kVec>
__global__ void __launch_bounds__(1024, 1) rms_norm_long_rows_kernel(
    const scalar_t* x, const scalar_t* __restrict__ weight, scalar_t* y, int64_t rows,
    int64_t columns, double eps) {
  normalise_rows<scalar_t, kVec, 1, 1024, 1, false>(x, weight, y, rows, columns, eps);
}

template <typename scalar_t, int kVec, int kPacks, int kThreadsPerRow, int kRowsPerBlock, bool kCached>
void launch(
    const scalar_t* x, const scalar_t* weight, scalar_t* y, int64_t rows, int64_t columns,
    double eps, cudaStream_t stream) {
  const int64_t blocks = std::min((rows + kRowsPerBlock - 1) / kRowsPerBlock, kMaxBlocks);
  constexpr int kThreads = kThreadsPerRow * kRowsPerBlock;
  if constexpr (!kCached && kVec > 1) {
    static_assert(kThreads == 1024 && kPacks == 1, "long rows go 1024 threads to a row");
    rms_norm_long_rows_kernel<scalar_t, kVec>
        <<<static_cast<unsigned int>(blocks), kThreads, 0, stream>>>(
            x, weight, y, rows, columns, eps);
  } else {
    rms_norm_kernel<scalar_t, kVec, kPacks, kThreadsPerRow, kRowsPerBlock, kCached>
        <<<static_cast<unsigned int>(blocks), kThreads, 0, stream>>>(
            x, weight, y, rows, columns, eps);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The smallest shape that holds a row of `packs` packs in registers; past the largest, the
// row is read twice by 1024 threads.
template <typename scalar_t, int kVec>
void dispatch(
    const scalar_t* x, const scalar_t* weight, scalar_t* y, int64_t rows, int64_t columns,
    double eps, cudaStream_t stream) {
  const int64_t packs = columns / kVec;
  // Short rows: a warp per row, 4 rows (128 threads) per block.
  if (packs <= 32) {
    launch<scalar_t, kVec, 1, 32, 4, true>(x, weight, y, rows, columns, eps, stream);
  } else if (packs <= 64) {
    launch<scalar_t, kVec, 2, 32, 4, true>(x, weight, y, rows, columns, eps, stream);
  } else if (packs <= 128) {
    launch<scalar_t, kVec, 4, 32, 4, true>(x, weight, y, rows, columns, eps, stream);
  } else if (packs <= 256) {  // Longer rows: a block per row.
    launch<scalar_t, kVec, 2, 128, 1, true>(x, weight, y, rows, columns, eps, stream);
  } else if (packs <= 512) {
    launch<scalar_t, kVec, 2, 256, 1, true>(x, weight, y, rows, columns, eps, stream);
  } else if (packs <= 1024) {  // 512 x 2: at bfloat16 x 8192 and float32 x 4096 on an H100, 256 x 4
    // ran up to 2 % slower, 128 x 8 up to 5 %, 1024 x 1 5-9 %; on an H200 256 x 4 ran 1 % slower
    launch<scalar_t, kVec, 2, 512, 1, true>(x, weight, y, rows, columns, eps, stream);
  } else if (packs <= 2048) {
    launch<scalar_t, kVec, 4, 512, 1, true>(x, weight, y, rows, columns, eps, stream);
  } else if (packs <= 4096) {
    launch<scalar_t, kVec, 4, 1024, 1, true>(x, weight, y, rows, columns, eps, stream);
  } else {
    launch<scalar_t, kVec, 1, 1024, 1, false>(x, weight, y, rows, columns, eps, stream);
  }
}

// Rows that are not whole 16-byte packs (or not 16-byte aligned) go element by element, read
// twice: a warp per row for short rows, a block for longer ones. Slower than the packed path,
// and only two shapes to compile.
template <typename scalar_t>
void dispatch_unaligned(
    const scalar_t* x, const scalar_t* weight, scalar_t* y, int64_t rows, int64_t columns,
    double eps, cudaStream_t stream) {
  if (columns <= 1024) {
    launch<scalar_t, 1, 1, 32, 4, false>(x, weight, y, rows, columns, eps, stream);
  } else {
    launch<scalar_t, 1, 1, 512, 1, false>(x, weight, y, rows, columns, eps, stream);
  }
}

bool is_pack_aligned(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % kPackBytes == 0;
}

// Writes rms_norm(x, weight, eps) into `y`: all contiguous, on the current device, checked.
void run(const at::Tensor& x, const at::Tensor& weight, double eps, at::Tensor& y) {
  const int64_t columns = x.size(-1);
  const int64_t rows = columns == 0 ? 0 : x.numel() / columns;
  if (rows == 0) {
    return;  // A launch with 0 blocks is an error.
  }
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "rms_norm_cuda", [&] {
    constexpr int kVec = kPackBytes / sizeof(scalar_t);
    const scalar_t* x_data = x.const_data_ptr<scalar_t>();
    const scalar_t* weight_data = weight.const_data_ptr<scalar_t>();
    scalar_t* y_data = y.mutable_data_ptr<scalar_t>();
    // Every row starts 16-byte aligned when the first does and a row is whole packs; otherwise
    // (a view inside its storage, an odd row length) the kernels go element by element.
    if (columns % kVec == 0 && is_pack_aligned(x_data) && is_pack_aligned(weight_data) &&
        is_pack_aligned(y_data)) {
      dispatch<scalar_t, kVec>(x_data, weight_data, y_data, rows, columns, eps, stream);
    } else {
      dispatch_unaligned<scalar_t>(x_data, weight_data, y_data, rows, columns, eps, stream);
    }
  });
}

}  // namespace

at::Tensor rms_norm_cuda(const at::Tensor& x, const at::Tensor& weight, double eps) {
  check_inputs(x, weight, eps);
  const at::cuda::OptionalCUDAGuard device_guard(x.device());
  const at::Tensor contiguous_x = x.contiguous();
  const at::Tensor contiguous_weight = weight.contiguous();
  at::Tensor y = at::empty(x.sizes(), x.options());
  run(contiguous_x, contiguous_weight, eps, y);
  return y;
}

void rms_norm_out_cuda(at::Tensor& out, const at::Tensor& x, const at::Tensor& weight, double eps) {
  check_inputs(x, weight, eps);
  check_out(out, x);  // Before the guard: out or x may be on the CPU.
  const at::cuda::OptionalCUDAGuard device_guard(x.device());
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

TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CUDA, m) {
  m.impl("rms_norm", &rms_norm::rms_norm_cuda);
  m.impl("rms_norm_no_grad", &rms_norm::rms_norm_cuda);
  m.impl("rms_norm_out", &rms_norm::rms_norm_out_cuda);
}
