"""rnx: RMS normalisation as a PyTorch custom op.

``rms_norm(x, weight, eps)`` normalises the last dimension of ``x`` by its root mean square and
scales it by ``weight``, as ``torch.nn.functional.rms_norm``, accumulating in float32. It shows a
reduction done well: one pass over memory, the row kept in registers, CUB for the sums.

Example::

    import torch
    from kernels import get_kernel

    rnx = get_kernel("OWNER/rnx", version=1)
    x = torch.randn(8, 4096, dtype=torch.bfloat16, device="cuda")
    weight = torch.ones(4096, dtype=torch.bfloat16, device="cuda")
    y = rnx.rms_norm(x, weight, 1e-6)
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ._ops import add_op_namespace_prefix, ops

__all__ = ["SUPPORTED_DTYPES", "rms_norm"]

#: The dtypes rms_norm accepts (x, weight and the result share one).
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def rms_norm(
    x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6, *, out: torch.Tensor | None = None
) -> torch.Tensor:
    """Normalise the last dimension of ``x`` by its root mean square, then scale by ``weight``.

    ``y = x / sqrt(mean(x**2, dim=-1) + eps) * weight``, as ``torch.nn.functional.rms_norm(x,
    (x.shape[-1],), weight, eps)``, accumulated in float32 (float64 for float64 inputs) and
    rounded once to the dtype of ``x``.

    Args:
        x: A tensor of one or more dimensions and a dtype in ``SUPPORTED_DTYPES``; any
            strides.
        weight: One value per column, shape ``(x.shape[-1],)``, with the dtype and device of ``x``.
        eps: Added to the mean square before the square root; finite and not negative.
        out: Optional tensor to write the result into: the shape, dtype and device of ``x``, and
            any strides. It may be ``x`` itself, to normalise in place.

    Returns:
        The normalised tensor, with the shape and dtype of ``x``; ``out`` itself when it is given.

    Raises:
        RuntimeError: If an argument breaks one of the rules above; the message says which.
    """
    if out is None:
        if (x.requires_grad or weight.requires_grad) and torch.is_grad_enabled():
            # The op with the autograd formula registered below.
            return ops.rms_norm(x, weight, eps)
        # The same kernel without the Python autograd layer in front: several µs a call faster.
        return ops.rms_norm_no_grad(x, weight, eps)
    ops.rms_norm_out(out, x, weight, eps)
    return out


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _check_inputs(x: torch.Tensor, weight: torch.Tensor, eps: float) -> None:
    # The checks of csrc/rms_norm.h, with their messages.
    torch._check(
        x.dim() >= 1,
        lambda: "rms_norm: x must have at least 1 dimension (the one normalised), got 0",
    )
    torch._check(
        x.dtype in SUPPORTED_DTYPES,
        lambda: (
            f"rms_norm: x has dtype {_dtype_name(x.dtype)}, but the supported dtypes are "
            "float32, float16, bfloat16 and float64"
        ),
    )
    torch._check(
        weight.dim() == 1 and weight.shape[0] == x.shape[-1],
        lambda: (
            f"rms_norm: weight must have shape [{x.shape[-1]}] "
            f"(the last dimension of x), got {list(weight.shape)}"
        ),
    )
    torch._check(
        weight.dtype == x.dtype,
        lambda: (
            f"rms_norm: weight must have the dtype of x, {_dtype_name(x.dtype)}, "
            f"got {_dtype_name(weight.dtype)}"
        ),
    )
    torch._check(
        weight.device == x.device,
        lambda: (
            f"rms_norm: weight and x must be on the same device, got weight on {weight.device} "
            f"and x on {x.device}"
        ),
    )
    torch._check(
        math.isfinite(eps) and eps >= 0,
        lambda: f"rms_norm: eps must be finite and >= 0, got {eps:f}",
    )


@torch.library.register_fake(add_op_namespace_prefix("rms_norm"))
@torch.library.register_fake(add_op_namespace_prefix("rms_norm_no_grad"))
def _rms_norm_fake(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    # What torch.compile and the meta device see: the input checks and the result's shape.
    _check_inputs(x, weight, eps)
    return x.new_empty(x.shape)


@torch.library.register_fake(add_op_namespace_prefix("rms_norm_out"))
def _rms_norm_out_fake(
    out: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, eps: float
) -> None:
    # The out= op under torch.compile and on the meta device: the input checks (the kernel checks
    # out against x when it runs).
    _check_inputs(x, weight, eps)


def _rms_norm_setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _rms_norm_backward(
    ctx: Any, grad: torch.Tensor
) -> tuple[torch.Tensor | None, torch.Tensor | None, None]:
    # With s = 1 / sqrt(mean(x^2) + eps) per row and g = grad * weight:
    #   d x = s * g - x * s^3 * mean(g * x),  d weight = sum over rows of grad * x * s,
    # in float32 (float64 for float64), the precision of the forward pass.
    x, weight = ctx.saved_tensors
    opmath = torch.float64 if x.dtype == torch.float64 else torch.float32
    x_, grad_ = x.to(opmath), grad.to(opmath)
    scale = torch.rsqrt(x_.square().mean(-1, keepdim=True) + ctx.eps)
    grad_x = grad_weight = None
    if ctx.needs_input_grad[0]:
        g = grad_ * weight.to(opmath)
        grad_x = (scale * g - x_ * scale.pow(3) * (g * x_).mean(-1, keepdim=True)).to(x.dtype)
    if ctx.needs_input_grad[1]:
        grad_weight = (grad_ * x_ * scale).reshape(-1, x.shape[-1]).sum(0).to(weight.dtype)
    return grad_x, grad_weight, None


torch.library.register_autograd(
    add_op_namespace_prefix("rms_norm"), _rms_norm_backward, setup_context=_rms_norm_setup_context
)


# Last, since the layers call the wrappers above; `kernels.kernelize` looks for this attribute.
from . import layers as layers  # noqa: E402
