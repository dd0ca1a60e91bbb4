"""img2gray: RGB to grayscale conversion as a PyTorch custom op.

Images are channels-last, ``(..., height, width, 3)``, with any number of leading batch
dimensions. The gray value is the ITU-R 601-2 luma ``0.299 R + 0.587 G + 0.114 B``; for ``uint8``
images it is computed in fixed point and matches Pillow's ``Image.convert("L")`` bit for bit.

Example::

    import torch
    from kernels import get_kernel

    img2gray = get_kernel("OWNER/img2gray", version=1)
    image = torch.randint(0, 256, (480, 640, 3), dtype=torch.uint8, device="cuda")
    gray = img2gray.img2gray(image)  # (480, 640), uint8
"""

from __future__ import annotations

import torch

from ._ops import add_op_namespace_prefix, ops

__all__ = ["SUPPORTED_DTYPES", "img2gray"]

#: The image dtypes img2gray accepts; the result has the image's dtype.
SUPPORTED_DTYPES = (torch.uint8, torch.float32, torch.float16, torch.bfloat16, torch.float64)

#: The luma weights of R, G and B (ITU-R 601-2).
_WEIGHTS = (0.299, 0.587, 0.114)


def img2gray(image: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """Convert RGB images to grayscale.

    Args:
        image: Channels-last RGB images, shape ``(..., height, width, 3)``, of a dtype in
            ``SUPPORTED_DTYPES``. Any strides; a non-contiguous image is read correctly.
        out: Optional tensor to write the result into: shape ``image.shape[:-1]``, the dtype and
            device of ``image``, and any strides.

    Returns:
        The grayscale images, shape ``(..., height, width)``, with the dtype of ``image``; ``out``
        itself when it is given.

    Raises:
        RuntimeError: If ``image`` or ``out`` breaks one of the rules above; the message says which.
    """
    if out is None:
        if image.requires_grad and torch.is_grad_enabled():
            # The op with the autograd formula registered below.
            return ops.img2gray(image)
        # The same kernel without the Python autograd layer in front: several µs a call faster.
        return ops.img2gray_no_grad(image)
    ops.img2gray_out(out, image)
    return out


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _check_image(image: torch.Tensor) -> None:
    # The same checks and messages as check_image in csrc/img2gray.h.
    torch._check(
        image.dim() >= 3,
        lambda: (
            "img2gray: image must have at least 3 dimensions, (..., height, width, 3), "
            f"got {image.dim()} with shape {list(image.shape)}"
        ),
    )
    torch._check(
        image.shape[-1] == 3,
        lambda: (
            "img2gray: the last dimension of image must be 3 (R, G, B, channels-last), "
            f"got shape {list(image.shape)}"
        ),
    )
    torch._check(
        image.dtype in SUPPORTED_DTYPES,
        lambda: (
            f"img2gray: image has dtype {_dtype_name(image.dtype)}, but the supported dtypes "
            "are uint8, float32, float16, bfloat16 and float64"
        ),
    )


@torch.library.register_fake(add_op_namespace_prefix("img2gray"))
@torch.library.register_fake(add_op_namespace_prefix("img2gray_no_grad"))
def _img2gray_fake(image: torch.Tensor) -> torch.Tensor:
    # What torch.compile and the meta device see: the checks and the result's shape and dtype.
    _check_image(image)
    return image.new_empty(image.shape[:-1])


@torch.library.register_fake(add_op_namespace_prefix("img2gray_out"))
def _img2gray_out_fake(out: torch.Tensor, image: torch.Tensor) -> None:
    # The out= op under torch.compile and on the meta device: the image checks (the kernel checks
    # out against the image when it runs).
    _check_image(image)


def _img2gray_backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
    # The op is linear in each pixel: d gray / d (R, G, B) = the weights.
    return torch.stack([grad * weight for weight in _WEIGHTS], dim=-1)


torch.library.register_autograd(add_op_namespace_prefix("img2gray"), _img2gray_backward)


# Last, since the layers call the wrappers above; `kernels.kernelize` looks for this attribute.
from . import layers as layers  # noqa: E402
