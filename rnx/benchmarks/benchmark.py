"""Benchmarks of rnx's rms_norm: the per-op parts; harness.py does the rest.

Run from the project root (one file per op: benchmarks/benchmark*.py):

    python benchmarks/<this file> [--backend cpu] [--sizes 4096x8192] [--dtypes bfloat16]
                                  [--json PATH] [--plot PATH] [--markdown PATH]

loads the build from build/, checks it against torch.nn.functional.rms_norm, then prints per
workload: µs per call, GB/s (x read and the result written; the weight is a row, left out), % of a
device copy of the same bytes, and how many times faster than rms_norm in eager mode and under
torch.compile (see harness.py). `kernels benchmark .` runs the few workloads in HUB_WORKLOADS
through the RmsNormBenchmark class below.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import KernelsBenchmark, Op, Workload, main  # noqa: E402

# Shapes (rows..., columns), smallest first: a few rows, rows of a warp, LLM hidden sizes, a batch
# of sequences, and rows too long to keep in registers.
SIZES: dict[str, tuple[int, ...]] = {
    "64x4096": (64, 4096),
    "4096x1024": (4096, 1024),
    "4096x4096": (4096, 4096),
    "4096x8192": (4096, 8192),
    "32768x4096": (32768, 4096),
    "8x2048x4096": (8, 2048, 4096),
    "1024x65536": (1024, 65536),
}
DTYPES = (torch.bfloat16, torch.float16, torch.float32)
HUB_WORKLOADS = ("bfloat16 4096x8192", "bfloat16 32768x4096", "float32 4096x4096")
EPS = 1e-6

# The weight of each row length and dtype, made with the input: the op reads it, but the timing
# is of x and the result.
WEIGHTS: dict[tuple[int, torch.dtype], torch.Tensor] = {}


def make_input(workload: Workload, device: torch.device) -> torch.Tensor:
    columns = workload.shape[-1]
    weight = WEIGHTS.get((columns, workload.dtype))
    if weight is None or weight.device != device:
        weight = (torch.rand(columns, device=device) + 0.5).to(workload.dtype)
        WEIGHTS[(columns, workload.dtype)] = weight
    return torch.randn(workload.shape, device=device).to(workload.dtype)


def weight_for(x: torch.Tensor) -> torch.Tensor:
    return WEIGHTS[(x.shape[-1], x.dtype)]


def reference(x: torch.Tensor) -> torch.Tensor:
    """rms_norm in plain PyTorch."""
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight_for(x), EPS)


OP = Op(
    name="rms_norm",
    workloads=[Workload(size, shape, dtype) for dtype in DTYPES for size, shape in SIZES.items()],
    make_input=make_input,
    make_out=torch.empty_like,
    reference=reference,
    call_out=lambda kernel, x, out: kernel.rms_norm(x, weight_for(x), EPS, out=out),
    call=lambda kernel, x: kernel.rms_norm(x, weight_for(x), EPS),
    hub_workloads=HUB_WORKLOADS,
)


class RmsNormBenchmark(KernelsBenchmark):
    """`kernels benchmark .`: a setup_/benchmark_/verify_ trio per workload in HUB_WORKLOADS."""

    op = OP


if __name__ == "__main__":
    main(OP)
