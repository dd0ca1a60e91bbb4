"""Benchmarks of img2gray's img2gray.

`kernels benchmark .` (run from the project root) finds the Benchmark subclass below, times each
workload and checks it against its reference. Running this file directly loads the kernel from
build/ (the CUDA build when a GPU is visible; `--backend cpu` for the CPU one) and compares it, in
one run, with the PyTorch reference in eager mode, the reference under torch.compile, and a plain
copy of the image's bytes (the memory-bandwidth ceiling of an op that reads and writes each byte
once).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch
from kernels.benchmark import Benchmark

# Workload name -> (image shape, dtype).
WORKLOADS: dict[str, tuple[tuple[int, ...], torch.dtype]] = {
    "uint8_1080p": ((1080, 1920, 3), torch.uint8),
    "float32_1080p": ((1080, 1920, 3), torch.float32),
    "float16_4x720p": ((4, 720, 1280, 3), torch.float16),
}


def make_image(name: str, device: str | torch.device) -> torch.Tensor:
    shape, dtype = WORKLOADS[name]
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, dtype=dtype, device=device)
    return torch.rand(shape, device=device).to(dtype)


def reference(image: torch.Tensor) -> torch.Tensor:
    """Compute img2gray in plain PyTorch (bit-exact for uint8)."""
    if image.dtype == torch.uint8:
        r, g, b = image.to(torch.int32).unbind(-1)
        return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).to(torch.uint8)
    r, g, b = image.float().unbind(-1)
    return (r * 0.299 + g * 0.587 + b * 0.114).to(image.dtype)


class Img2grayBenchmark(Benchmark):
    """One setup_/benchmark_/verify_ trio per workload."""

    seed = 0

    def _setup(self, name: str) -> None:
        self.image = make_image(name, self.device)
        self.out = torch.empty(self.image.shape[:-1], dtype=self.image.dtype, device=self.device)

    def _run(self) -> None:
        self.kernel.img2gray(self.image, out=self.out)

    def _verify(self) -> torch.Tensor:
        return reference(self.image)

    def setup_uint8_1080p(self) -> None:
        self._setup("uint8_1080p")

    def benchmark_uint8_1080p(self) -> None:
        self._run()

    def verify_uint8_1080p(self) -> torch.Tensor:
        return self._verify()

    def setup_float32_1080p(self) -> None:
        self._setup("float32_1080p")

    def benchmark_float32_1080p(self) -> None:
        self._run()

    def verify_float32_1080p(self) -> torch.Tensor:
        return self._verify()

    def setup_float16_4x720p(self) -> None:
        self._setup("float16_4x720p")

    def benchmark_float16_4x720p(self) -> None:
        self._run()

    def verify_float16_4x720p(self) -> torch.Tensor:
        return self._verify()


def time_ms(fn: Callable[[], object], device: torch.device, iters: int = 50) -> float:
    """Mean milliseconds per call after a warm-up: CUDA events on a GPU, wall clock on the CPU."""
    for _ in range(5):
        fn()
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(device)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / iters
    begin = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - begin) * 1e3 / iters


def report(
    name: str,
    kernel: ModuleType,
    compiled_reference: Callable[[torch.Tensor], torch.Tensor],
    device: torch.device,
) -> str:
    """One table row: the kernel's time and bandwidth, and how the alternatives compare."""
    torch.manual_seed(0)
    image = make_image(name, device)
    out = torch.empty(image.shape[:-1], dtype=image.dtype, device=device)
    kernel.img2gray(image, out=out)
    torch.testing.assert_close(out, reference(image))
    copy_target = torch.empty_like(image)
    kernel_ms = time_ms(lambda: kernel.img2gray(image, out=out), device)
    eager_ms = time_ms(lambda: reference(image), device)
    compiled_ms = time_ms(lambda: compiled_reference(image), device)
    copy_ms = time_ms(lambda: copy_target.copy_(image), device)
    kernel_gbps = (image.nbytes + out.nbytes) / kernel_ms / 1e6  # bytes read and written
    copy_gbps = 2 * image.nbytes / copy_ms / 1e6
    return (
        f"{name:<16}{kernel_ms:>11.4f}{kernel_gbps:>9.1f}{eager_ms / kernel_ms:>10.2f}"
        f"{compiled_ms / kernel_ms:>11.2f}{copy_gbps:>11.1f}{100 * kernel_gbps / copy_gbps:>11.1f}"
    )


def main() -> None:
    from kernels import get_local_kernel

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--backend",
        choices=["cuda", "cpu"],
        default="cuda" if torch.cuda.is_available() else "cpu",
        help="the build to benchmark (default: cuda when a GPU is visible, else cpu)",
    )
    device = torch.device(parser.parse_args().backend)
    kernel = get_local_kernel(Path(__file__).resolve().parents[1], backend=device.type)
    compiled_reference = torch.compile(reference)
    print(f"img2gray on {torch.cuda.get_device_name(device) if device.type == 'cuda' else 'CPU'}")
    header = ("workload", "kernel ms", "GB/s", "eager x", "compile x", "copy GB/s", "% of copy")
    print("{:<16}{:>11}{:>9}{:>10}{:>11}{:>11}{:>11}".format(*header))
    for name in WORKLOADS:
        print(report(name, kernel, compiled_reference, device))
    print("eager x, compile x: how many times longer the reference takes than the kernel.")


if __name__ == "__main__":
    main()
