"""rnx's ops as layers for ``kernels.kernelize``: one ``nn.Module`` per op.

A model marks a module with ``@use_kernel_forward_from_hub("<layer>")``; ``kernelize``, given a
mapping from that layer name to this kernel, then replaces the module's ``forward`` with the
layer's. kernels takes a layer's ``forward`` only: a layer keeps no state (no ``__init__``, no
members but ``can_torch_compile`` and ``has_backward``), and its ``forward`` takes what the
module's ``forward`` takes.
"""

from __future__ import annotations

import torch

from . import (
    rms_norm,
)

__all__ = [
    "RmsNorm",
]


class RmsNorm(torch.nn.Module):
    """``rms_norm`` as a layer, with the replaced module's own ``weight`` and ``eps``.

    ``kernelize`` gives its ``forward`` to each module of a model marked
    ``@use_kernel_forward_from_hub("RmsNorm")``. The module keeps its state, named
    as ``torch.nn.RMSNorm`` names it (``weight``, ``eps``; ``None`` for no affine weight or
    the dtype's epsilon), and ``forward(x)`` normalises the last dimension of ``x``.
    """

    #: The op has a fake implementation: torch.compile traces it without a graph break.
    can_torch_compile = True
    #: The op has an autograd formula (register_autograd in __init__.py).
    has_backward = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = getattr(self, "weight", None)
        if weight is None:
            weight = torch.ones(x.shape[-1], dtype=x.dtype, device=x.device)
        eps = getattr(self, "eps", None)
        return rms_norm(x, weight, torch.finfo(x.dtype).eps if eps is None else eps)
