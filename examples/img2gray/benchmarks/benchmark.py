"""Benchmarks of img2gray's img2gray: the per-op parts; harness.py does the rest.

Run from the project root (one file per op: benchmarks/benchmark*.py):

    python benchmarks/<this file> [--backend cpu] [--sizes 1080p,8K] [--dtypes uint8]
                                  [--json PATH] [--plot PATH] [--markdown PATH]

loads the build from build/, checks it against the reference, then prints per workload: µs per
call, GB/s, % of a device copy of the same bytes, and how many times faster than the reference in
eager mode and under torch.compile (see harness.py). `kernels benchmark .` runs the few workloads
in HUB_WORKLOADS through the Img2grayBenchmark class below.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import KernelsBenchmark, Op, Workload, main  # noqa: E402

# Image sizes (height, width), smallest first, then batches of 1080p frames.
SIZES: dict[str, tuple[int, ...]] = {
    "224x224": (224, 224),
    "720p": (720, 1280),
    "1080p": (1080, 1920),
    "4K": (2160, 3840),
    "8K": (4320, 7680),
    "8x1080p": (8, 1080, 1920),
    "64x1080p": (64, 1080, 1920),
}
DTYPES = (torch.uint8, torch.float16, torch.float32)
HUB_WORKLOADS = ("uint8 1080p", "uint8 8K", "float16 1080p", "float32 1080p")


def make_image(workload: Workload, device: torch.device) -> torch.Tensor:
    if workload.dtype == torch.uint8:
        return torch.randint(0, 256, workload.shape, dtype=torch.uint8, device=device)
    return torch.rand(workload.shape, device=device).to(workload.dtype)


def reference(image: torch.Tensor) -> torch.Tensor:
    """img2gray in plain PyTorch (bit-exact for uint8)."""
    if image.dtype == torch.uint8:
        r, g, b = image.to(torch.int32).unbind(-1)
        return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).to(torch.uint8)
    r, g, b = image.float().unbind(-1)
    return (r * 0.299 + g * 0.587 + b * 0.114).to(image.dtype)


OP = Op(
    name="img2gray",
    workloads=[
        Workload(size, (*shape, 3), dtype) for dtype in DTYPES for size, shape in SIZES.items()
    ],
    make_input=make_image,
    make_out=lambda image: image.new_empty(image.shape[:-1]),
    reference=reference,
    call_out=lambda kernel, image, out: kernel.img2gray(image, out=out),
    call=lambda kernel, image: kernel.img2gray(image),
    hub_workloads=HUB_WORKLOADS,
)


class Img2grayBenchmark(KernelsBenchmark):
    """`kernels benchmark .`: a setup_/benchmark_/verify_ trio per workload in HUB_WORKLOADS."""

    op = OP


if __name__ == "__main__":
    main(OP)
