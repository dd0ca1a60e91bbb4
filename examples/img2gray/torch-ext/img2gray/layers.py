"""img2gray's ops as layers for ``kernels.kernelize``: one ``nn.Module`` per op.

A model marks a module with ``@use_kernel_forward_from_hub("<layer>")``; ``kernelize``, given a
mapping from that layer name to this kernel, then replaces the module's ``forward`` with the
layer's. kernels takes a layer's ``forward`` only: a layer keeps no state (no ``__init__``, no
members but ``can_torch_compile`` and ``has_backward``), and its ``forward`` takes what the
module's ``forward`` takes.
"""

from __future__ import annotations

import torch

from . import (
    img2gray,
)

__all__ = [
    "Img2gray",
]


class Img2gray(torch.nn.Module):
    """``img2gray(image)`` as a layer: ``forward(image)`` returns it.

    ``kernelize`` gives its ``forward`` to each module of a model marked
    ``@use_kernel_forward_from_hub("Img2gray")``.
    """

    #: The op has a fake implementation: torch.compile traces it without a graph break.
    can_torch_compile = True
    #: The op has an autograd formula (register_autograd in __init__.py).
    has_backward = True

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return img2gray(image)
