"""Convert a photograph to grayscale with the locally built img2gray kernel.

    kscaffold build
    python example.py photo.jpg gray.png [--device cuda]

The kernel is loaded exactly as users load it from the Hub, through `kernels`, from build/.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from kernels import get_local_kernel
from PIL import Image

PROJECT_ROOT = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image", type=Path, help="an RGB photograph (any format Pillow reads)")
    parser.add_argument("output", type=Path, help="where to write the grayscale image")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()

    backend = "cuda" if args.device.startswith("cuda") else "cpu"
    try:
        kernel = get_local_kernel(PROJECT_ROOT, backend=backend)
    except FileNotFoundError as error:
        sys.exit(f"No {backend} build in {PROJECT_ROOT / 'build'}: run `kscaffold build` first.\n{error}")

    rgb = np.array(Image.open(args.image).convert("RGB"))
    image = torch.from_numpy(rgb).to(args.device)
    gray = kernel.img2gray(image).cpu().numpy()
    Image.fromarray(gray).save(args.output)

    pillow = np.asarray(Image.fromarray(rgb).convert("L"))
    differing = int((gray != pillow).sum())
    print(f"{args.image} ({rgb.shape[1]}x{rgb.shape[0]}) -> {args.output} on {args.device}")
    print(f"pixels differing from Pillow's convert('L'): {differing}")
    if differing:
        sys.exit(1)


if __name__ == "__main__":
    main()

