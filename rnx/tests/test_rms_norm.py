"""Tests of rnx's rms_norm op on every backend built under build/."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
import torch
from kernels import (
    LocalLayerRepository,
    Mode,
    kernelize,
    use_kernel_forward_from_hub,
    use_kernel_mapping,
)

from .conftest import BACKENDS, load_kernel, requires_cpu_and_cuda

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
EPS = 1e-6

# Row lengths that take every path of the kernels: 1 column, odd lengths (no whole 16-byte
# packs), a warp per row, a block per row, and rows too long to keep in registers; no rows, and
# rows of no columns.
SHAPES = {
    "1-column": (5, 1),
    "7": (7,),
    "3x7": (3, 7),
    "2x3x64": (2, 3, 64),
    "65x1024": (65, 1024),
    "2x4097": (2, 4097),
    "3x8192": (3, 8192),
    "2x40000": (2, 40000),
    "0x16": (0, 16),
    "4x0": (4, 0),
}

needs_cuda_backend = pytest.mark.skipif(
    "cuda" not in BACKENDS or not torch.cuda.is_available(),
    reason="needs the CUDA backend and a CUDA GPU",
)


def dtype_id(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def random_input(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """Normal values (some rows scaled up, some down), made in float64 and rounded to dtype."""
    generator = torch.Generator().manual_seed(hash(shape) % 2**31)
    x = torch.randn(shape, dtype=torch.float64, generator=generator)
    if x.dim() >= 2:
        x *= torch.rand((*shape[:-1], 1), dtype=torch.float64, generator=generator) * 8 + 0.01
    return x.to(dtype).to(device)


def random_weight(
    columns: int, dtype: torch.dtype, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """One value per column, of either sign, around 1 in size."""
    generator = torch.Generator().manual_seed(columns)
    weight = torch.rand(columns, dtype=torch.float64, generator=generator) + 0.5
    weight[::3] *= -1
    return weight.to(dtype).to(device)


def reference(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """The op in float64 from the same (rounded) inputs, rounded once to the dtype of x."""
    x64, weight64 = x.double(), weight.double()
    scale = torch.rsqrt(x64.square().mean(-1, keepdim=True) + eps)
    return (x64 * scale * weight64).to(x.dtype)


# --- correctness -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", list(SHAPES.values()), ids=list(SHAPES))
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_matches_reference(
    kernel: ModuleType, device: torch.device, dtype: torch.dtype, shape: tuple[int, ...]
) -> None:
    x = random_input(shape, dtype, device)
    weight = random_weight(shape[-1], dtype, device)
    y = kernel.rms_norm(x, weight, EPS)
    assert (y.shape, y.dtype, y.device) == (x.shape, dtype, x.device)
    # One rounding apart at most: the kernel rounds its float32 result, the reference its float64.
    torch.testing.assert_close(y, reference(x, weight))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=dtype_id)
def test_matches_torch_rms_norm(
    kernel: ModuleType, device: torch.device, dtype: torch.dtype
) -> None:
    x = random_input((9, 4096), dtype, device)
    weight = random_weight(4096, dtype, device)
    expected = torch.nn.functional.rms_norm(x, (4096,), weight, 1e-5)
    torch.testing.assert_close(kernel.rms_norm(x, weight, 1e-5), expected)


def test_eps(kernel: ModuleType, device: torch.device) -> None:
    # Rows of zeros take eps alone: 0 * 1/sqrt(eps) is 0, never NaN; eps = 0 makes them NaN.
    x = torch.zeros(2, 8, device=device)
    weight = torch.ones(8, device=device)
    assert kernel.rms_norm(x, weight, 0.5).eq(0).all()
    assert kernel.rms_norm(x, weight, 0.0).isnan().all()
    small = random_input((3, 16), torch.float32, device) * 1e-3
    torch.testing.assert_close(
        kernel.rms_norm(small, torch.ones(16, device=device), 1e-2),
        reference(small, torch.ones(16, device=device), 1e-2),
    )


def test_many_rows(kernel: ModuleType, device: torch.device) -> None:
    # More rows than blocks are worth launching at once, short and long rows.
    for shape in [(70_001, 32), (3001, 2048)]:
        x = random_input(shape, torch.bfloat16, device)
        weight = random_weight(shape[-1], torch.bfloat16, device)
        torch.testing.assert_close(kernel.rms_norm(x, weight), reference(x, weight))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
def test_large_results(kernel: ModuleType, device: torch.device, dtype: torch.dtype) -> None:
    # From 16 MiB the CPU kernel stores float32 and float64 past the caches; rows of an odd
    # length start at every alignment.
    columns = 2053
    rows = (16 << 20) // (columns * dtype.itemsize) + 3
    x = random_input((rows, columns), dtype, device)
    weight = random_weight(columns, dtype, device)
    expected = reference(x, weight)
    torch.testing.assert_close(kernel.rms_norm(x, weight, EPS), expected)
    assert kernel.rms_norm(x, weight, EPS, out=x) is x
    torch.testing.assert_close(x, expected)


# --- out= and strides --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 7), (2, 3, 64), (0, 16)], ids=["3x7", "2x3x64", "0x16"])
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_out(
    kernel: ModuleType, device: torch.device, dtype: torch.dtype, shape: tuple[int, ...]
) -> None:
    x = random_input(shape, dtype, device)
    weight = random_weight(shape[-1], dtype, device)
    out = torch.full(shape, 7.0, dtype=dtype, device=device)
    result = kernel.rms_norm(x, weight, EPS, out=out)
    assert result is out
    torch.testing.assert_close(out, reference(x, weight))


def test_out_is_the_input(kernel: ModuleType, device: torch.device) -> None:
    for shape in [(65, 1024), (2, 40000)]:
        x = random_input(shape, torch.float32, device)
        weight = random_weight(shape[-1], torch.float32, device)
        expected = reference(x, weight)
        assert kernel.rms_norm(x, weight, EPS, out=x) is x
        torch.testing.assert_close(x, expected)


def test_out_overlapping_the_input(kernel: ModuleType, device: torch.device) -> None:
    buffer = random_input((9, 64), torch.float32, device)
    x, out = buffer[:-1], buffer[1:]  # out is x shifted by one row
    weight = random_weight(64, torch.float32, device)
    expected = reference(x, weight)
    kernel.rms_norm(x, weight, EPS, out=out)
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("offset", [1, 3], ids=["offset1", "offset3"])
def test_not_at_the_start_of_their_memory(
    kernel: ModuleType, device: torch.device, offset: int
) -> None:
    # Contiguous, but not aligned for the 16-byte loads and stores of the fast path.
    x = random_input((4 * 1024 + offset,), torch.float16, device)[offset:].view(4, 1024)
    weight = random_weight(1024 + offset, torch.float16, device)[offset:]
    out = torch.empty(4 * 1024 + offset, dtype=torch.float16, device=device)[offset:].view(4, 1024)
    kernel.rms_norm(x, weight, EPS, out=out)
    torch.testing.assert_close(out, reference(x, weight))
    torch.testing.assert_close(kernel.rms_norm(x, weight, EPS), reference(x, weight))


NON_CONTIGUOUS_INPUTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    # Each row contiguous, the rows further apart than a row.
    "strided-rows": lambda base: base[:, 0],
    # Each row strided.
    "column-slice": lambda base: base[:, 0, ::2],
    "transposed": lambda base: base[:, 0].t(),
    "broadcast-rows": lambda base: base[:1, 0].expand(5, -1),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize(
    "view", list(NON_CONTIGUOUS_INPUTS.values()), ids=list(NON_CONTIGUOUS_INPUTS)
)
def test_non_contiguous_input(
    kernel: ModuleType,
    device: torch.device,
    dtype: torch.dtype,
    view: Callable[[torch.Tensor], torch.Tensor],
) -> None:
    x = view(random_input((12, 3, 16), dtype, device))
    assert not x.is_contiguous()
    weight = random_weight(x.shape[-1], dtype, device)
    torch.testing.assert_close(kernel.rms_norm(x, weight, EPS), reference(x, weight))


def test_non_contiguous_weight_and_out(kernel: ModuleType, device: torch.device) -> None:
    x = random_input((7, 13), torch.float32, device)
    weight = random_weight(26, torch.float32, device)[::2]
    out = torch.empty(13, 7, device=device).t()
    kernel.rms_norm(x, weight, EPS, out=out)
    torch.testing.assert_close(out, reference(x, weight))


# --- errors ------------------------------------------------------------------------------------

# x and weight on a device.
MakeInputs = Callable[[str | torch.device], tuple[torch.Tensor, torch.Tensor]]

BAD_INPUTS: dict[str, tuple[MakeInputs, str]] = {
    "int32": (
        lambda device: (
            torch.zeros(4, 5, dtype=torch.int32, device=device),
            torch.ones(5, dtype=torch.int32, device=device),
        ),
        r"x has dtype int32, but the supported dtypes are float32, float16, bfloat16 and float64",
    ),
    "0-dims": (
        lambda device: (torch.zeros((), device=device), torch.ones(1, device=device)),
        r"x must have at least 1 dimension \(the one normalised\), got 0",
    ),
    "weight-length": (
        lambda device: (torch.zeros(4, 5, device=device), torch.ones(4, device=device)),
        r"weight must have shape \[5\] \(the last dimension of x\), got \[4\]",
    ),
    "weight-2d": (
        lambda device: (torch.zeros(4, 5, device=device), torch.ones(4, 5, device=device)),
        r"weight must have shape \[5\] \(the last dimension of x\), got \[4, 5\]",
    ),
    "weight-dtype": (
        lambda device: (
            torch.zeros(4, 5, dtype=torch.bfloat16, device=device),
            torch.ones(5, device=device),
        ),
        r"weight must have the dtype of x, bfloat16, got float32",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS.values()), ids=list(BAD_INPUTS))
def test_rejects_bad_input(
    kernel: ModuleType,
    device: torch.device,
    case: tuple[MakeInputs, str],
) -> None:
    make_inputs, message = case
    x, weight = make_inputs(device)
    with pytest.raises(RuntimeError, match=message):
        kernel.rms_norm(x, weight, EPS)
    with pytest.raises(RuntimeError, match=message):
        kernel.rms_norm(x, weight, EPS, out=torch.empty(x.shape, device=device))


@pytest.mark.parametrize("case", list(BAD_INPUTS.values()), ids=list(BAD_INPUTS))
def test_fake_rejects_bad_input_like_the_kernel(
    kernel: ModuleType,
    case: tuple[MakeInputs, str],
) -> None:
    # The meta device runs the fake implementation, which torch.compile traces with.
    make_inputs, message = case
    with pytest.raises(RuntimeError, match=message):
        kernel.rms_norm(*make_inputs("meta"), EPS)


@pytest.mark.parametrize("eps", [-1.0, float("nan"), float("inf")], ids=["negative", "nan", "inf"])
def test_rejects_bad_eps(kernel: ModuleType, device: torch.device, eps: float) -> None:
    for on in (device, "meta"):
        with pytest.raises(RuntimeError, match=r"eps must be finite and >= 0, got"):
            kernel.rms_norm(torch.zeros(4, 5, device=on), torch.ones(5, device=on), eps)


def test_fake_has_the_result_shape(kernel: ModuleType) -> None:
    x = torch.empty(2, 4, 5, dtype=torch.float16, device="meta")
    y = kernel.rms_norm(x, torch.empty(5, dtype=torch.float16, device="meta"))
    assert (y.shape, y.dtype, y.device.type) == ((2, 4, 5), torch.float16, "meta")


BAD_OUTS: dict[str, tuple[Callable[[torch.device], torch.Tensor], str]] = {
    "shape": (
        lambda device: torch.empty(5, 4, device=device),
        r"out must have the shape of x, \[4, 5\], got \[5, 4\]",
    ),
    "dtype": (
        lambda device: torch.empty(4, 5, dtype=torch.float64, device=device),
        r"out must have the dtype of x, float32, got float64",
    ),
    "overlapping": (
        lambda device: torch.empty(1, 5, device=device).expand(4, 5),
        r"more than one element of the written-to tensor refers to a single memory location",
    ),
}


@pytest.mark.parametrize("case", list(BAD_OUTS.values()), ids=list(BAD_OUTS))
def test_rejects_bad_out(
    kernel: ModuleType,
    device: torch.device,
    case: tuple[Callable[[torch.device], torch.Tensor], str],
) -> None:
    make_out, message = case
    x, weight = torch.zeros(4, 5, device=device), torch.ones(5, device=device)
    with pytest.raises(RuntimeError, match=message):
        kernel.rms_norm(x, weight, EPS, out=make_out(device))


DIFFERENT_DEVICES = {
    # Where x, weight and out are; and the refusal.
    "weight-on-cpu": (("cuda", "cpu", "cuda"), r"weight and x must be on the same device"),
    "x-on-cpu": (("cpu", "cuda", "cuda"), r"weight and x must be on the same device"),
    "out-on-cpu": (("cuda", "cuda", "cpu"), r"out and x must be on the same device"),
}


@needs_cuda_backend
@pytest.mark.parametrize("case", list(DIFFERENT_DEVICES.values()), ids=list(DIFFERENT_DEVICES))
def test_rejects_tensors_on_different_devices(case: tuple[tuple[str, str, str], str]) -> None:
    kernel = load_kernel("cuda")
    (x_device, weight_device, out_device), message = case
    x = torch.zeros(4, 5, device=x_device)
    weight = torch.ones(5, device=weight_device)
    with pytest.raises(RuntimeError, match=message):
        kernel.rms_norm(x, weight, EPS, out=torch.empty(4, 5, device=out_device))
    if x_device != weight_device:
        with pytest.raises(RuntimeError, match=message):
            kernel.rms_norm(x, weight, EPS)


# --- PyTorch integration -----------------------------------------------------------------------

OPCHECK_CASES = {
    "float32-3x7": ((3, 7), torch.float32, False),
    "float32-2x3x64-grad": ((2, 3, 64), torch.float32, True),
    "float16-65x1024": ((65, 1024), torch.float16, False),
    "bfloat16-2x4097": ((2, 4097), torch.bfloat16, False),
    "float64-5x1-grad": ((5, 1), torch.float64, True),
    "float32-0x16": ((0, 16), torch.float32, False),
}


@pytest.mark.parametrize("case", list(OPCHECK_CASES.values()), ids=list(OPCHECK_CASES))
def test_opcheck(
    kernel: ModuleType, device: torch.device, case: tuple[tuple[int, ...], torch.dtype, bool]
) -> None:
    shape, dtype, requires_grad = case
    x = random_input(shape, dtype, device).requires_grad_(requires_grad)
    weight = random_weight(shape[-1], dtype, device).requires_grad_(requires_grad)
    detached = (x.detach(), weight.detach(), EPS)
    torch.library.opcheck(kernel.ops.rms_norm.default, (x, weight, EPS))
    torch.library.opcheck(kernel.ops.rms_norm_no_grad.default, detached)
    # Initialised: opcheck copies out, and a copy of unwritten memory is an initcheck error.
    out = torch.zeros(shape, dtype=dtype, device=device)
    torch.library.opcheck(kernel.ops.rms_norm_out.default, (out, *detached))


@pytest.mark.parametrize("shape", [(3, 7), (2, 2, 33)], ids=["3x7", "2x2x33"])
def test_gradient(kernel: ModuleType, device: torch.device, shape: tuple[int, ...]) -> None:
    # The kernel computes float64 in double on every backend, so gradcheck runs the kernel's own
    # forward pass against the autograd formula (itself float64 torch ops).
    x = random_input(shape, torch.float64, device).requires_grad_()
    weight = random_weight(shape[-1], torch.float64, device).requires_grad_()

    def normalise(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return kernel.rms_norm(x, weight, 1e-3)

    assert torch.autograd.gradcheck(normalise, (x, weight))


def test_gradient_matches_torch_rms_norm(kernel: ModuleType, device: torch.device) -> None:
    x = random_input((6, 40), torch.float32, device).requires_grad_()
    weight = random_weight(40, torch.float32, device).requires_grad_()
    grad = random_input((6, 40), torch.float32, device)
    ours = torch.autograd.grad(kernel.rms_norm(x, weight, 1e-5), (x, weight), grad)
    theirs = torch.autograd.grad(
        torch.nn.functional.rms_norm(x, (40,), weight, 1e-5), (x, weight), grad
    )
    torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("use_out", [False, True], ids=["functional", "out"])
def test_torch_compile(kernel: ModuleType, device: torch.device, use_out: bool) -> None:
    def residual_rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        shifted = x * 2 - 0.5
        if use_out:
            return kernel.rms_norm(shifted, weight, EPS, out=torch.empty_like(shifted)) + x
        return kernel.rms_norm(shifted, weight, EPS) + x

    x = random_input((31, 33), torch.float32, device)
    weight = random_weight(33, torch.float32, device)
    compiled = torch.compile(residual_rms_norm, fullgraph=True)
    torch.testing.assert_close(compiled(x, weight), residual_rms_norm(x, weight))


@requires_cpu_and_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_cpu_and_cuda_agree(dtype: torch.dtype) -> None:
    for shape in [(3, 67, 129), (5, 4096), (2, 40000)]:
        x = random_input(shape, dtype)
        weight = random_weight(shape[-1], dtype)
        on_cpu = load_kernel("cpu").rms_norm(x, weight, EPS)
        on_cuda = load_kernel("cuda").rms_norm(x.cuda(), weight.cuda(), EPS)
        # The sums are added in different orders: a rounding apart at most.
        torch.testing.assert_close(on_cuda.cpu(), on_cpu)


# --- what the shared production tests need of this op ------------------------------------------

PRODUCTION_SHAPE = (1031, 4097)
PRODUCTION_DTYPE = torch.bfloat16
ODD_SHAPES = [(1,), (7, 13), (3, 5, 17), (1031,), (2, 0, 3)]
HUGE_ROW: tuple[int, ...] | None = None  # a reduction along each row, not an elementwise op
HUGE_DTYPE = torch.float16


def production_input(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, seed: int
) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=torch.float64, generator=generator).to(dtype).to(device)


def production_call(
    kernel: ModuleType, x: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    # The weight is made on x's stream each call: graph capture and the leak count see it too.
    weight = torch.linspace(0.5, 1.5, x.shape[-1], dtype=x.dtype, device=x.device)
    if out is None:
        return kernel.rms_norm(x, weight, EPS)
    return kernel.rms_norm(x, weight, EPS, out=out)


def production_out_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape


# --- production: streams, CUDA graphs, leaks, determinism, int64 indexing, fake shapes ------------
#
# Shared by every op; an op opts in by defining, before this part, the hooks it calls:
# production_input(shape, dtype, device, seed), production_call(kernel, x, out=None),
# production_out_shape(shape), PRODUCTION_SHAPE and PRODUCTION_DTYPE (a sample), ODD_SHAPES (input
# shapes for the fake), and HUGE_ROW and HUGE_DTYPE: an input of shape (rows, *HUGE_ROW) whose
# result's first dimension is rows too, or HUGE_ROW = None for an op that is not elementwise.

ON_CUDA = pytest.mark.parametrize(
    "backend",
    [
        pytest.param(
            "cuda",
            id="cuda",
            marks=pytest.mark.skipif(
                "cuda" not in BACKENDS or not torch.cuda.is_available(),
                reason="needs the CUDA backend and a CUDA GPU",
            ),
        )
    ],
)


def production_out(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(production_out_shape(tuple(x.shape)), dtype=x.dtype, device=x.device)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two results are equal bit for bit (NaNs included)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)))


def gpu_busy_work(device: torch.device) -> None:
    """Queue a kernel that spins for about 100 ms on the current stream."""
    # torch.cuda._sleep is the spin kernel PyTorch's own stream tests use: it touches no memory,
    # so it costs the same under every compute-sanitizer tool (cuBLAS's matrix products, the
    # alternative, use Hopper's asynchronous barriers, which the tools follow very slowly).
    clock_hz = torch.cuda.get_device_properties(device).clock_rate * 1000
    torch.cuda._sleep(int(0.1 * (clock_hz or 2e9)))


@ON_CUDA
def test_runs_on_a_side_stream_without_syncing(kernel: ModuleType, device: torch.device) -> None:
    import os

    x = production_input(PRODUCTION_SHAPE, PRODUCTION_DTYPE, device, 1)
    expected = production_call(kernel, x)
    poison = production_input(PRODUCTION_SHAPE, PRODUCTION_DTYPE, device, 2)
    buffer = poison.clone()
    torch.cuda.synchronize(device)
    side = torch.cuda.Stream(device)
    with torch.cuda.stream(side):
        gpu_busy_work(device)
        busy_done = torch.cuda.Event()
        busy_done.record()
        buffer.copy_(x)  # The op must see x: queued on the side stream after the busy work.
        # Any synchronizing call PyTorch makes inside the op raises here.
        torch.cuda.set_sync_debug_mode("error")
        try:
            result = production_call(kernel, buffer)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        # Had the op synchronized the device or the stream, the busy work would be over.
        returned_early = not busy_done.query()
        done = torch.cuda.Event()
        done.record()
    torch.cuda.current_stream(device).wait_event(done)
    # compute-sanitizer serializes kernel launches, so there only the order can be checked.
    if not os.environ.get("KSCAFFOLD_SANITIZER"):
        assert returned_early, "the op waited for work queued before it: a hidden synchronization"
    assert same_bits(result, expected), "the op did not run on the current (side) stream"


@ON_CUDA
def test_cuda_graph_replay_matches_eager(kernel: ModuleType, device: torch.device) -> None:
    import os

    if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1":
        # Capture takes its memory from the caching allocator's private pool; without the
        # allocator (as under kscaffold sanitize) every allocation is a cudaMalloc, which a capture
        # refuses.
        pytest.skip("CUDA graphs need PyTorch's caching allocator, switched off here")
    static_x = production_input(PRODUCTION_SHAPE, PRODUCTION_DTYPE, device, 1)
    static_out = production_out(static_x)
    warm_up = torch.cuda.Stream(device)  # as torch.cuda.graphs' documentation does
    warm_up.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(warm_up):
        for _ in range(2):
            production_call(kernel, static_x)
            production_call(kernel, static_x, out=static_out)
    torch.cuda.current_stream(device).wait_stream(warm_up)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_result = production_call(kernel, static_x)
        production_call(kernel, static_x, out=static_out)
    for seed in (3, 4):
        x = production_input(PRODUCTION_SHAPE, PRODUCTION_DTYPE, device, seed)
        static_x.copy_(x)
        graph.replay()
        torch.cuda.synchronize(device)
        expected = production_call(kernel, x)
        assert same_bits(static_result, expected), f"allocating form, replay with seed {seed}"
        assert same_bits(static_out, expected), f"out= form, replay with seed {seed}"


@ON_CUDA
def test_repeated_calls_leave_no_memory_behind(kernel: ModuleType, device: torch.device) -> None:
    x = production_input(PRODUCTION_SHAPE, PRODUCTION_DTYPE, device, 1)
    out = production_out(x)
    production_call(kernel, x)
    production_call(kernel, x, out=out)
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    for _ in range(100):
        production_call(kernel, x)
        production_call(kernel, x, out=out)
    torch.cuda.synchronize(device)
    assert torch.cuda.memory_allocated(device) == before


@ON_CUDA
def test_two_calls_are_bit_identical(kernel: ModuleType, device: torch.device) -> None:
    x = production_input(PRODUCTION_SHAPE, PRODUCTION_DTYPE, device, 5)
    first, second = production_call(kernel, x), production_call(kernel, x)
    out = production_out(x)
    production_call(kernel, x, out=out)
    assert same_bits(first, second) and same_bits(first, out)


#: More result elements than a signed 32-bit index reaches, and room past 2^31 for the rows
#: checked across it (the edge below) before the rows checked at the end.
HUGE_ROWS = 2**31 + 10007


def huge_input(places: dict[str, int], edge: int, device: torch.device) -> torch.Tensor:
    """Zeros of HUGE_ROWS rows, with `edge` rows of sample values from each place on."""
    x = torch.zeros((HUGE_ROWS, *HUGE_ROW), dtype=HUGE_DTYPE, device=device)
    for seed, first in enumerate(places.values()):
        x[first : first + edge] = production_input((edge, *HUGE_ROW), HUGE_DTYPE, device, seed)
    return x


@ON_CUDA
def test_far_end_of_more_than_2_31_elements(kernel: ModuleType, device: torch.device) -> None:
    import os

    if HUGE_ROW is None:
        pytest.skip("the op is not elementwise: no input of more than 2^31 rows to slice")
    if os.environ.get("KSCAFFOLD_SANITIZER"):
        pytest.skip("under compute-sanitizer: its shadow state for 2^31 elements is too large")
    shape = (HUGE_ROWS, *HUGE_ROW)
    result_shape = production_out_shape(shape)
    item = torch.empty((), dtype=HUGE_DTYPE).element_size()
    need = (torch.Size(shape).numel() + torch.Size(result_shape).numel()) * item
    free, _ = torch.cuda.mem_get_info(device)
    if free < need + 2**30:
        pytest.skip(
            f"needs {need / 2**30:.1f} GiB of free GPU memory (input and result) and 1 GiB "
            f"to spare; {free / 2**30:.1f} GiB is free"
        )
    edge = 4099  # rows checked at each place: the start, across 2^31, the end
    places = {"start": 0, "2^31": 2**31 - edge // 2, "end": HUGE_ROWS - edge}
    assert places["2^31"] + edge <= places["end"], "the places overlap: raise HUGE_ROWS"
    for form in ("allocating", "out="):
        x = huge_input(places, edge, device)
        if form == "out=":
            got = torch.zeros(result_shape, dtype=HUGE_DTYPE, device=device)
            production_call(kernel, x, out=got)
        else:
            got = production_call(kernel, x)
        del x
        for seed, (place, first) in enumerate(places.items()):
            rows = production_input((edge, *HUGE_ROW), HUGE_DTYPE, device, seed)
            assert same_bits(got[first : first + edge], production_call(kernel, rows)), (
                f"{form} form: wrong rows at the {place} of {HUGE_ROWS} rows"
            )
        del got


def shape_id(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "scalar"


@pytest.mark.parametrize("shape", ODD_SHAPES, ids=shape_id)
def test_fake_tensors_propagate_shapes(
    kernel: ModuleType, device: torch.device, shape: tuple[int, ...]
) -> None:
    # FakeTensorMode is what torch.compile traces with; PyTorch exposes it under torch._subclasses.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(shape, dtype=PRODUCTION_DTYPE, device=device)
        y = production_call(kernel, x)
        out = production_call(kernel, x, out=production_out(x))
    for result in (y, out):
        assert tuple(result.shape) == production_out_shape(shape)
        assert result.dtype == PRODUCTION_DTYPE and result.device == x.device


class ReferenceLayer(torch.nn.Module):
    """A model's own RMS norm (the reference), with the state torch.nn.RMSNorm has."""

    def __init__(self, hidden_size: int = 33) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, hidden_size))
        self.eps = EPS

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return reference(x, self.weight, self.eps)


# --- kernelize: the op as the layer of a model -------------------------------------------------

#: The op's layer in layers.py, and the name a model's module asks kernels for.
LAYER = "RmsNorm"

#: kernelize's modes: inference or training, each also with torch.compile.
KERNELIZE_MODES = {
    "inference": Mode.INFERENCE,
    "training": Mode.TRAINING,
    "inference-compile": Mode.INFERENCE | Mode.TORCH_COMPILE,
    "training-compile": Mode.TRAINING | Mode.TORCH_COMPILE,
}


# The op's test defines ReferenceLayer, a model's own module for the op, with its state.
ReferenceLayer = use_kernel_forward_from_hub(LAYER)(ReferenceLayer)


class SmallModel(torch.nn.Module):
    """A model that scales its input by a learnt factor, then applies the layer."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(1.5))
        self.layer = ReferenceLayer()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x * self.scale)


def kernelized(
    kernel: ModuleType, device: torch.device, mode: Mode, *, fallback: bool = False
) -> SmallModel:
    """A SmallModel on `device` kernelized with the layer of the build `kernel` was loaded from."""
    # The loaded build's own folder, build/<variant>/, so that kernels takes this variant
    # whatever backend it would pick for the machine.
    variant = Path(kernel.__file__).parent
    repository = LocalLayerRepository(repo_path=variant, layer_name=LAYER)
    model = SmallModel().to(device)
    with use_kernel_mapping({LAYER: {device.type: repository}}, inherit_mapping=False):
        return kernelize(model, mode=mode, device=device.type, use_fallback=fallback)


@pytest.mark.parametrize("mode", list(KERNELIZE_MODES.values()), ids=list(KERNELIZE_MODES))
def test_kernelize_uses_the_layer(kernel: ModuleType, device: torch.device, mode: Mode) -> None:
    layer = getattr(kernel.layers, LAYER)
    if (Mode.TRAINING in mode and not layer.has_backward) or (
        Mode.TORCH_COMPILE in mode and not layer.can_torch_compile
    ):
        # What the layer says it cannot do, kernels refuses, or falls back from.
        with pytest.raises(ValueError, match="does not support mode"):
            kernelized(kernel, device, mode)
        model = kernelized(kernel, device, mode, fallback=True)
        assert model.layer.forward.__func__ is ReferenceLayer.forward
        return
    model = kernelized(kernel, device, mode)
    assert model.layer.forward.__func__ is layer.forward, "kernelize kept the module's forward"
    expected = SmallModel().to(device)
    run = torch.compile(model, fullgraph=True) if Mode.TORCH_COMPILE in mode else model
    x = random_input((5, 33), torch.float32, device)
    if Mode.INFERENCE in mode:
        with torch.no_grad():
            torch.testing.assert_close(run(x), expected(x))
        return
    ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    y, y_expected = run(ours), expected(theirs)
    torch.testing.assert_close(y, y_expected)
    grad = torch.rand_like(y)
    y.backward(grad)
    y_expected.backward(grad)
    torch.testing.assert_close(ours.grad, theirs.grad)
    torch.testing.assert_close(model.scale.grad, expected.scale.grad)
