"""Run the locally built rnx kernel once and compare it with PyTorch.

    kscaffold build
    python example.py [--device cuda]

The kernel is loaded exactly as users load it from the Hub, through `kernels`, from build/.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from kernels import get_local_kernel

PROJECT_ROOT = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()

    backend = "cuda" if args.device.startswith("cuda") else "cpu"
    try:
        kernel = get_local_kernel(PROJECT_ROOT, backend=backend)
    except FileNotFoundError as error:
        build = PROJECT_ROOT / "build"
        sys.exit(f"No {backend} build in {build}: run `kscaffold build` first.\n{error}")

    x = torch.randn(1024, 4096, device=args.device)
    weight = torch.rand(4096, device=args.device) + 0.5
    y = kernel.rms_norm(x, weight, 1e-6)
    expected = torch.nn.functional.rms_norm(x, (4096,), weight, 1e-6)
    torch.testing.assert_close(y, expected)
    print(f"rms_norm on {args.device}: matches torch.nn.functional.rms_norm ({x.shape[0]} rows)")


if __name__ == "__main__":
    main()
