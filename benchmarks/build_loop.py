"""How long kscaffold's inner loop takes on the img2gray example: not a test, a measurement.

Prints, in seconds: a cold build, a no-op rebuild, the first edit after a commit (the op namespace
gains its ``_dirty`` suffix, so every file recompiles), and a one-file edit after that (only that
file recompiles). Run it with the environment's own ``kscaffold``::

    python benchmarks/build_loop.py [--backend cpu|cuda] [--cuda-archs 9.0]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def kscaffold(*args: str, cwd: Path) -> float:
    """Run ``kscaffold args`` and return its wall time; stop with its output if it fails."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "scaffold", *args], cwd=cwd, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"kscaffold {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return elapsed


def touch_kernel(source: Path, note: str) -> None:
    source.write_text(source.read_text() + f"// {note}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--cuda-archs", default=None)
    options = parser.parse_args()
    build = ["build", "--backend", options.backend]
    if options.cuda_archs:
        build += ["--cuda-archs", options.cuda_archs]

    with tempfile.TemporaryDirectory(prefix="kscaffold-build-loop-") as scratch:
        root = Path(scratch)
        kscaffold(
            "new", "img2gray", "--example", "img2gray", "--backends", "cuda,cpu",
            "--dest", str(root / "img2gray"), cwd=root,
        )  # fmt: skip
        project = root / "img2gray"
        suffix = "cpp" if options.backend == "cpu" else "cu"
        source = project / "csrc" / options.backend / f"img2gray.{suffix}"
        timings = {
            "cold build": kscaffold(*build, cwd=project),
            "no-op rebuild": kscaffold(*build, cwd=project),
        }
        touch_kernel(source, "first edit")
        timings["first edit after a commit (all files)"] = kscaffold(*build, cwd=project)
        touch_kernel(source, "second edit")
        timings["one-file rebuild"] = kscaffold(*build, cwd=project)
        timings["no-op rebuild again"] = kscaffold(*build, cwd=project)

    print(f"img2gray, {options.backend} backend:")
    for label, seconds in timings.items():
        print(f"  {label:<40} {seconds:6.2f} s")


if __name__ == "__main__":
    main()
