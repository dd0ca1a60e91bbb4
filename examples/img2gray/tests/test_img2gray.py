"""Tests of img2gray's img2gray op on every backend built under build/."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from kernels import (
    LocalLayerRepository,
    Mode,
    kernelize,
    use_kernel_forward_from_hub,
    use_kernel_mapping,
)
from PIL import Image

from .conftest import BACKENDS, PROJECT_ROOT, load_kernel, requires_cpu_and_cuda

FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
DTYPES = [torch.uint8, *FLOAT_DTYPES]

# Shapes of the gray result, (..., height, width): sizes that are no multiple of a block size,
# zero to two batch dimensions, and empty tensors.
SHAPES = {
    "1x1": (1, 1),
    "7x13": (7, 13),
    "3x5x17": (3, 5, 17),
    "2x3x9x11": (2, 3, 9, 11),
    "129x257": (129, 257),
    "0x5": (0, 5),
    "0x4x6": (0, 4, 6),
}

needs_cuda_backend = pytest.mark.skipif(
    "cuda" not in BACKENDS or not torch.cuda.is_available(),
    reason="needs the CUDA backend and a CUDA GPU",
)


def dtype_id(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def random_image(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """Make random RGB images of gray shape `shape`: uint8 over 0..255, floats over [0, 1)."""
    generator = torch.Generator().manual_seed(hash(shape) % 2**31)
    if dtype == torch.uint8:
        image = torch.randint(0, 256, (*shape, 3), dtype=torch.uint8, generator=generator)
    else:
        image = torch.rand((*shape, 3), dtype=torch.float64, generator=generator).to(dtype)
    return image.to(device)


def reference(image: torch.Tensor) -> torch.Tensor:
    """Compute img2gray in plain PyTorch."""
    if image.dtype == torch.uint8:
        r, g, b = image.to(torch.int32).unbind(-1)
        return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).to(torch.uint8)
    opmath = torch.float64 if image.dtype == torch.float64 else torch.float32
    r, g, b = image.to(opmath).unbind(-1)
    return (r * 0.299 + g * 0.587 + b * 0.114).to(image.dtype)


def pillow_gray(image: torch.Tensor) -> torch.Tensor:
    """Pillow's Image.convert("L") of each (height, width, 3) uint8 image in `image`."""
    frames = image.cpu().reshape(-1, *image.shape[-3:]).numpy()
    grays = [np.asarray(Image.fromarray(frame).convert("L")) for frame in frames]
    return torch.from_numpy(np.stack(grays)).reshape(image.shape[:-1])


def photo_like(height: int, width: int, seed: int) -> torch.Tensor:
    """Make a uint8 image with smooth colour regions, edges and sensor-like noise."""
    generator = torch.Generator().manual_seed(seed)
    coarse = torch.rand(1, 3, 6, 8, generator=generator, dtype=torch.float64)
    smooth = torch.nn.functional.interpolate(
        coarse, size=(height, width), mode="bicubic", align_corners=False
    )[0].permute(1, 2, 0)
    noise = torch.randn(height, width, 3, generator=generator, dtype=torch.float64) * 0.03
    image = (smooth + noise).clamp(0, 1) * 255
    image[height // 3 : height // 2, : width // 4] = torch.tensor([255.0, 0.0, 0.0])  # saturated
    image[-1] = 0.0  # black
    image[:, -1] = 255.0  # white
    return image.round().to(torch.uint8)


# --- correctness -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", list(SHAPES.values()), ids=list(SHAPES))
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_matches_reference(
    kernel: ModuleType, device: torch.device, dtype: torch.dtype, shape: tuple[int, ...]
) -> None:
    image = random_image(shape, dtype, device)
    gray = kernel.img2gray(image)
    assert gray.shape == shape
    assert gray.dtype == dtype
    assert gray.device == image.device
    torch.testing.assert_close(gray, reference(image))


@pytest.mark.parametrize(
    "shape", [(1, 1), (7, 13), (3, 5, 17), (480, 640)], ids=["1x1", "7x13", "3x5x17", "480x640"]
)
def test_uint8_is_bit_exact_with_pillow(
    kernel: ModuleType, device: torch.device, shape: tuple[int, ...]
) -> None:
    image = random_image(shape, torch.uint8, device)
    torch.testing.assert_close(kernel.img2gray(image).cpu(), pillow_gray(image), rtol=0, atol=0)


@pytest.mark.parametrize("seed", [0, 1, 2], ids=lambda seed: f"seed{seed}")
def test_uint8_photo_like_image_is_bit_exact_with_pillow(
    kernel: ModuleType, device: torch.device, seed: int
) -> None:
    image = photo_like(241, 323, seed)
    gray = kernel.img2gray(image.to(device)).cpu()
    torch.testing.assert_close(gray, pillow_gray(image), rtol=0, atol=0)


def test_uint8_every_colour_is_bit_exact_with_pillow(
    kernel: ModuleType, device: torch.device
) -> None:
    # All 2^24 RGB colours, as a 4096 x 4096 image.
    codes = torch.arange(2**24, dtype=torch.int32)
    image = torch.stack([codes >> 16, (codes >> 8) & 255, codes & 255], dim=-1)
    image = image.to(torch.uint8).reshape(4096, 4096, 3)
    gray = kernel.img2gray(image.to(device)).cpu()
    torch.testing.assert_close(gray, pillow_gray(image), rtol=0, atol=0)


def test_reference_is_bit_exact_with_pillow() -> None:
    image = photo_like(64, 96, seed=3)
    torch.testing.assert_close(reference(image), pillow_gray(image), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_float_extremes(kernel: ModuleType, device: torch.device, dtype: torch.dtype) -> None:
    image = torch.tensor(
        [[[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]],
        dtype=dtype,
        device=device,
    )
    expected = torch.tensor([[0.0, 1.0, 0.299, 0.587, 0.114]], dtype=dtype, device=device)
    torch.testing.assert_close(kernel.img2gray(image), expected)


# The CPU backend run with its portable loop forced: the images in argv[1], results to argv[2].
PORTABLE_CPU_SCRIPT = """
import os, sys
from pathlib import Path
import torch
from kernels import get_local_kernel
kernel = get_local_kernel(Path(os.environ["PROJECT_ROOT"]), backend="cpu")
torch.save([kernel.img2gray(image) for image in torch.load(sys.argv[1])], sys.argv[2])
"""


def awkward_values(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """Make an image of `dtype` with values of many magnitudes, negatives, inf, nan, subnormals."""
    generator = torch.Generator().manual_seed(7)
    image = torch.randn((*shape, 3), generator=generator, dtype=torch.float64)
    image = image * 10.0 ** torch.randint(-6, 5, image.shape, generator=generator)
    special = torch.tensor([float("inf"), -float("inf"), float("nan"), 1e-7, -0.0, 6e4])
    image.view(-1)[: special.numel() * 5 : 5] = special.to(torch.float64)
    return image.to(dtype)


@pytest.mark.skipif("cpu" not in BACKENDS, reason="needs the CPU backend")
def test_cpu_vectorized_and_portable_paths_agree_exactly(tmp_path: Path) -> None:
    """The CPU backend's vectorized x86 path (AVX2 + F16C) and its portable loop, forced with
    IMG2GRAY_CPU_PORTABLE=1, compute exactly the same values. The size is no multiple of the vector
    width and spans several blocks and threads; the floats include inf, nan and subnormals."""
    images = [random_image((37, 1031), torch.uint8)]
    images += [awkward_values((37, 1031), dtype) for dtype in FLOAT_DTYPES]
    torch.save(images, tmp_path / "images.pt")
    subprocess.run(
        [sys.executable, "-c", PORTABLE_CPU_SCRIPT, tmp_path / "images.pt", tmp_path / "gray.pt"],
        env={**os.environ, "PROJECT_ROOT": str(PROJECT_ROOT), "IMG2GRAY_CPU_PORTABLE": "1"},
        check=True,
    )
    kernel = load_kernel("cpu")
    for image, portable in zip(images, torch.load(tmp_path / "gray.pt"), strict=True):
        torch.testing.assert_close(kernel.img2gray(image), portable, rtol=0, atol=0, equal_nan=True)


# --- out= and strides --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(7, 13), (2, 3, 9, 11), (0, 5)], ids=["7x13", "2x3x9x11", "0x5"])
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_out(
    kernel: ModuleType, device: torch.device, dtype: torch.dtype, shape: tuple[int, ...]
) -> None:
    image = random_image(shape, dtype, device)
    out = torch.full(shape, 7, dtype=dtype, device=device)
    result = kernel.img2gray(image, out=out)
    assert result is out
    torch.testing.assert_close(out, reference(image))


NON_CONTIGUOUS_OUTS: dict[str, Callable[[torch.device], torch.Tensor]] = {
    "transposed": lambda device: torch.empty(13, 7, device=device).t(),
    "strided": lambda device: torch.empty(7, 26, device=device)[:, ::2],
    "batch-permuted": lambda device: torch.empty(13, 7, 2, device=device).permute(2, 1, 0)[0],
}


@pytest.mark.parametrize(
    "make_out", list(NON_CONTIGUOUS_OUTS.values()), ids=list(NON_CONTIGUOUS_OUTS)
)
def test_non_contiguous_out(
    kernel: ModuleType, device: torch.device, make_out: Callable[[torch.device], torch.Tensor]
) -> None:
    out = make_out(device)
    assert not out.is_contiguous()
    image = random_image((7, 13), torch.float32, device)
    kernel.img2gray(image, out=out)
    torch.testing.assert_close(out, reference(image))


def test_out_aliasing_the_image(kernel: ModuleType, device: torch.device) -> None:
    image = random_image((7, 13), torch.float32, device)
    expected = reference(image)
    kernel.img2gray(image, out=image[..., 0])  # reads all of image before writing its R plane
    torch.testing.assert_close(image[..., 0], expected)


def test_contiguous_out_overlapping_the_image(kernel: ModuleType, device: torch.device) -> None:
    buffer = random_image((7, 13), torch.float32, device).flatten()
    image = buffer.view(7, 13, 3)
    expected = reference(image)
    out = buffer[2 * 7 * 13 :].view(7, 13)  # the last third of the image's memory
    kernel.img2gray(image, out=out)
    torch.testing.assert_close(out, expected)


NON_CONTIGUOUS_IMAGES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "column-slice": lambda base: base[:, ::2],
    "planar-permuted": lambda base: base.permute(2, 0, 1).contiguous().permute(1, 2, 0),
    "transposed": lambda base: base.transpose(0, 1),
    "rgba-slice": lambda base: torch.cat([base, base[..., :1]], dim=-1)[..., :3],
    "broadcast-batch": lambda base: base.expand(3, *base.shape),
}


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32], ids=dtype_id)
@pytest.mark.parametrize(
    "view", list(NON_CONTIGUOUS_IMAGES.values()), ids=list(NON_CONTIGUOUS_IMAGES)
)
def test_non_contiguous_image(
    kernel: ModuleType,
    device: torch.device,
    dtype: torch.dtype,
    view: Callable[[torch.Tensor], torch.Tensor],
) -> None:
    image = view(random_image((9, 14), dtype, device))
    assert not image.is_contiguous()
    torch.testing.assert_close(kernel.img2gray(image), reference(image.contiguous()))


# --- errors ------------------------------------------------------------------------------------

BAD_IMAGES: dict[str, tuple[Callable[[str | torch.device], torch.Tensor], str]] = {
    "int32": (
        lambda device: torch.zeros(4, 5, 3, dtype=torch.int32, device=device),
        r"image has dtype int32, but the supported dtypes are uint8, float32, float16, bfloat16",
    ),
    "bool": (
        lambda device: torch.zeros(4, 5, 3, dtype=torch.bool, device=device),
        r"image has dtype bool, but the supported dtypes are uint8",
    ),
    "4-channels": (
        lambda device: torch.zeros(4, 5, 4, device=device),
        r"the last dimension of image must be 3 .*got shape \[4, 5, 4\]",
    ),
    "channels-first": (
        lambda device: torch.zeros(3, 4, 5, device=device),
        r"the last dimension of image must be 3 .*got shape \[3, 4, 5\]",
    ),
    "2-dims": (
        lambda device: torch.zeros(5, 3, device=device),
        r"image must have at least 3 dimensions, .*got 2 with shape \[5, 3\]",
    ),
    "0-dims": (
        lambda device: torch.zeros((), device=device),
        r"image must have at least 3 dimensions, .*got 0 with shape \[\]",
    ),
}


@pytest.mark.parametrize("case", list(BAD_IMAGES.values()), ids=list(BAD_IMAGES))
def test_rejects_bad_image(
    kernel: ModuleType,
    device: torch.device,
    case: tuple[Callable[[str | torch.device], torch.Tensor], str],
) -> None:
    make_image, message = case
    with pytest.raises(RuntimeError, match=message):
        kernel.img2gray(make_image(device))
    with pytest.raises(RuntimeError, match=message):
        kernel.img2gray(make_image(device), out=torch.empty(4, 5, device=device))


@pytest.mark.parametrize("case", list(BAD_IMAGES.values()), ids=list(BAD_IMAGES))
def test_fake_rejects_bad_image_like_the_kernel(
    kernel: ModuleType, case: tuple[Callable[[str | torch.device], torch.Tensor], str]
) -> None:
    # The meta device runs the fake implementation, which torch.compile traces with.
    make_image, message = case
    with pytest.raises(RuntimeError, match=message):
        kernel.img2gray(make_image("meta"))


def test_fake_has_the_result_shape(kernel: ModuleType) -> None:
    gray = kernel.img2gray(torch.empty(2, 4, 5, 3, dtype=torch.bfloat16, device="meta"))
    assert (gray.shape, gray.dtype, gray.device.type) == ((2, 4, 5), torch.bfloat16, "meta")


BAD_OUTS: dict[str, tuple[Callable[[torch.device], torch.Tensor], str]] = {
    "shape": (
        lambda device: torch.empty(5, 4, device=device),
        r"out must have shape \[4, 5\] .*got \[5, 4\]",
    ),
    "rank": (
        lambda device: torch.empty(4, 5, 1, device=device),
        r"out must have shape \[4, 5\] .*got \[4, 5, 1\]",
    ),
    "dtype": (
        lambda device: torch.empty(4, 5, dtype=torch.float16, device=device),
        r"out must have the dtype of image, float32, got float16",
    ),
    "overlapping": (
        lambda device: torch.empty(1, 1, device=device).expand(4, 5),
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
    with pytest.raises(RuntimeError, match=message):
        kernel.img2gray(torch.zeros(4, 5, 3, device=device), out=make_out(device))


@needs_cuda_backend
@pytest.mark.parametrize("out_on_gpu", [True, False], ids=["out-on-gpu", "image-on-gpu"])
def test_rejects_image_and_out_on_different_devices(out_on_gpu: bool) -> None:
    kernel = load_kernel("cuda")
    image_device, out_device = ("cpu", "cuda") if out_on_gpu else ("cuda", "cpu")
    image = torch.zeros(4, 5, 3, device=image_device)
    out = torch.empty(4, 5, device=out_device)
    with pytest.raises(RuntimeError, match=r"out and image must be on the same device"):
        kernel.img2gray(image, out=out)


# --- PyTorch integration -----------------------------------------------------------------------

OPCHECK_CASES = {
    "uint8-3x5x17": ((3, 5, 17), torch.uint8, False),
    "float32-7x13": ((7, 13), torch.float32, False),
    "float32-7x13-grad": ((7, 13), torch.float32, True),
    "float16-2x3x9x11": ((2, 3, 9, 11), torch.float16, False),
    "bfloat16-0x5": ((0, 5), torch.bfloat16, False),
}


@pytest.mark.parametrize("case", list(OPCHECK_CASES.values()), ids=list(OPCHECK_CASES))
def test_opcheck(
    kernel: ModuleType, device: torch.device, case: tuple[tuple[int, ...], torch.dtype, bool]
) -> None:
    shape, dtype, requires_grad = case
    image = random_image(shape, dtype, device).requires_grad_(requires_grad)
    torch.library.opcheck(kernel.ops.img2gray.default, (image,))
    torch.library.opcheck(kernel.ops.img2gray_no_grad.default, (image.detach(),))
    # Initialised: opcheck copies out, and a copy of unwritten memory is an initcheck error.
    out = torch.zeros(shape, dtype=dtype, device=device)
    torch.library.opcheck(kernel.ops.img2gray_out.default, (out, image.detach()))


def test_gradient(kernel: ModuleType, device: torch.device) -> None:
    image = random_image((3, 4), torch.float64, device).requires_grad_()
    assert torch.autograd.gradcheck(kernel.img2gray, (image,))


@pytest.mark.parametrize("use_out", [False, True], ids=["functional", "out"])
def test_torch_compile(kernel: ModuleType, device: torch.device, use_out: bool) -> None:
    def brighten_and_gray(image: torch.Tensor) -> torch.Tensor:
        brighter = (image * 1.5).clamp(max=1.0)
        if use_out:
            out = torch.empty(brighter.shape[:-1], dtype=brighter.dtype, device=brighter.device)
            return kernel.img2gray(brighter, out=out) * 2
        return kernel.img2gray(brighter) * 2

    image = random_image((2, 31, 33), torch.float32, device)
    compiled = torch.compile(brighten_and_gray, fullgraph=True)
    torch.testing.assert_close(compiled(image), brighten_and_gray(image))


@requires_cpu_and_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_cpu_and_cuda_agree(dtype: torch.dtype) -> None:
    image = random_image((3, 67, 129), dtype)
    on_cpu = load_kernel("cpu").img2gray(image)
    on_cuda = load_kernel("cuda").img2gray(image.cuda())
    if dtype == torch.uint8:
        torch.testing.assert_close(on_cuda.cpu(), on_cpu, rtol=0, atol=0)
    else:
        torch.testing.assert_close(on_cuda.cpu(), on_cpu)


# --- what the shared production tests need of this op ------------------------------------------

PRODUCTION_SHAPE = (4, 129, 257, 3)
PRODUCTION_DTYPE = torch.uint8
ODD_SHAPES = [(1, 1, 3), (7, 13, 3), (3, 5, 17, 3), (2, 3, 9, 11, 3), (0, 5, 3), (0, 4, 6, 3)]
HUGE_ROW: tuple[int, ...] | None = (1, 3)  # per pixel: images of one column, height 2^31 and more
HUGE_DTYPE = torch.uint8


def production_input(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, seed: int
) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator).to(device)
    return torch.rand(shape, dtype=torch.float64, generator=generator).to(dtype).to(device)


def production_call(
    kernel: ModuleType, image: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    if out is None:
        return kernel.img2gray(image)
    return kernel.img2gray(image, out=out)


def production_out_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape[:-1]


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


# --- kernelize: the op as the layer of a model -------------------------------------------------

#: The op's layer in layers.py, and the name a model's module asks kernels for.
LAYER = "Img2gray"

#: kernelize's modes: inference or training, each also with torch.compile.
KERNELIZE_MODES = {
    "inference": Mode.INFERENCE,
    "training": Mode.TRAINING,
    "inference-compile": Mode.INFERENCE | Mode.TORCH_COMPILE,
    "training-compile": Mode.TRAINING | Mode.TORCH_COMPILE,
}


@use_kernel_forward_from_hub(LAYER)
class ReferenceLayer(torch.nn.Module):
    """A model's own module for the op (the reference) that kernelize may replace."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return reference(x)


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
    x = random_image((5, 7, 9), torch.float32, device)
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
