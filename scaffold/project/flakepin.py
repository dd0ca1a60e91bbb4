"""The kernel-builder release a generated ``flake.nix`` pins, and what its Nix build makes.

kernel-builder's builder reads one ``build.toml`` edition: its ``main`` moves on (edition 6
after ``kernels`` 0.17.2) and an unpinned flake input then refuses every edition-5 project. The
template pins the input to the release that matches the project's edition; :data:`PINS` is the
one place that pairs them, so ``kscaffold update`` moves pin and edition together.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from scaffold.errors import InvalidOptionError

#: The ``build.toml`` edition the template writes.
EDITION = 5
#: Edition → the kernel-builder release (a tag of github:huggingface/kernels) that builds it.
PINS: dict[int, str] = {5: "v0.17.2"}
#: The editions the template renders: the released one, and 6 for a project moved to it with
#: ``kscaffold update --edition 6 --kernel-builder REF`` (a revision of kernel-builder's main).
EDITIONS_WRITTEN: tuple[int, ...] = (5, 6)
FLAKE_INPUT = "github:huggingface/kernels"

#: What ``nix run .#build-and-copy`` builds for each backend on Linux (kernel-builder's
#: ``nix-builder/build-variants.json`` of the 0.17 series): the variants a full release carries.
FLAKE_VARIANTS: dict[str, tuple[str, ...]] = {
    "cpu": tuple(
        f"torch{torch}-cxx11-cpu-{arch}-linux"
        for torch in ("212", "213")
        for arch in ("x86_64", "aarch64")
    ),
    "cuda": tuple(
        f"torch{torch}-cxx11-{cuda}-{arch}-linux"
        for torch in ("212", "213")
        for cuda in ("cu126", "cu130", "cu132")
        for arch in ("x86_64", "aarch64")
    ),
}


#: A tag, branch or commit of github:huggingface/kernels, as a flake URL's ref may name it.
_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(?:/[A-Za-z0-9._-]+)*")


def pinned_input(edition: int = EDITION, ref: str | None = None) -> str:
    """The flake input URL for a project of ``edition`` (at ``ref`` when it names one)."""
    return f"{FLAKE_INPUT}/{ref or PINS[edition]}"


def check_ref(ref: str) -> str:
    """``ref`` if it can name a revision of kernel-builder in a flake URL, else an error."""
    if not _REF.fullmatch(ref) or ".." in ref or ref.endswith((".", ".lock")):
        raise InvalidOptionError(
            f"'{ref}' is not a revision of github:huggingface/kernels: give a commit, tag or "
            "branch, e.g. --kernel-builder 03dd3532d47037340a77a5bf23684d6d0394b73d."
        )
    return ref


def flake_variants(backends: Iterable[str]) -> tuple[str, ...]:
    """The variants the pinned Nix build makes for ``backends``, sorted."""
    return tuple(sorted(v for backend in backends for v in FLAKE_VARIANTS.get(backend, ())))
