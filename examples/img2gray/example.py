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
from PIL import Image, ImageOps, UnidentifiedImageError

PROJECT_ROOT = Path(__file__).resolve().parent


def read_rgb(path: Path) -> np.ndarray:
    """The photograph as an HxWx3 uint8 array, turned upright as its EXIF orientation says."""
    try:
        with Image.open(path) as image:
            return np.array(ImageOps.exif_transpose(image).convert("RGB"))
    except (OSError, UnidentifiedImageError) as error:
        sys.exit(f"Cannot read {path} as an image: {error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image", type=Path, help="a photograph, in any format Pillow reads")
    parser.add_argument("output", type=Path, help="where to write the grayscale image")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda needs a CUDA GPU, and torch sees none: use --device cpu.")
    try:
        kernel = get_local_kernel(PROJECT_ROOT, backend=device.type)
    except FileNotFoundError as error:
        build = PROJECT_ROOT / "build"
        sys.exit(f"No {device.type} build in {build}: run `kscaffold build` first.\n{error}")

    rgb = read_rgb(args.image)
    gray = kernel.img2gray(torch.from_numpy(rgb).to(device)).cpu().numpy()
    try:
        Image.fromarray(gray).save(args.output)
    except (OSError, ValueError) as error:
        sys.exit(f"Cannot write {args.output}: {error}")

    pillow = np.asarray(Image.fromarray(rgb).convert("L"))
    differing = int((gray != pillow).sum())
    print(f"{args.image} ({rgb.shape[1]}x{rgb.shape[0]}) -> {args.output} on {device}")
    print(f"pixels differing from Pillow's convert('L'): {differing}")
    if differing:
        sys.exit(1)


if __name__ == "__main__":
    main()
