"""The class name of an op's layer in a generated project's ``layers.py``.

The template computes the same name (``template/project/_shared/layer_name.jinja``); this is the
rule in Python, for kscaffold's own code and tests.
"""

from __future__ import annotations


def layer_class_name(op: str) -> str:
    """The layer class of the op ``op`` (a valid op name: lowercase snake case).

    Each ``_``-separated word is capitalised (``img2gray`` → ``Img2gray``, ``fused_add`` →
    ``FusedAdd``); a word that starts with a digit keeps its ``_`` (``rope_2d`` → ``Rope_2d``),
    so that ``rope_2d`` and ``rope2d`` (``Rope2d``) stay two classes: no two op names give one
    class name, since upper case marks where a letter word began and ``_`` where a digit word did.
    """
    return "".join(
        f"_{part}" if part[:1].isdigit() else part.capitalize() for part in op.split("_")
    )
