"""The kernel-builder release a generated ``flake.nix`` pins, and what its Nix build makes.

kernel-builder's builder reads one ``build.toml`` edition: its ``main`` moves on (edition 6
after ``kernels`` 0.17.2) and an unpinned flake input then refuses every edition-5 project. The
template pins the input to the release that matches the project's edition; :data:`PINS` is the
one place that pairs them, so ``kscaffold update`` moves pin and edition together.
"""

from __future__ import annotations

from collections.abc import Iterable

#: The ``build.toml`` edition the template writes.
EDITION = 5
#: Edition → the kernel-builder release (a tag of github:huggingface/kernels) that builds it.
PINS: dict[int, str] = {5: "v0.17.2"}
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


def pinned_input(edition: int = EDITION) -> str:
    """The flake input URL for a project of ``edition``."""
    return f"{FLAKE_INPUT}/{PINS[edition]}"


def flake_variants(backends: Iterable[str]) -> tuple[str, ...]:
    """The variants the pinned Nix build makes for ``backends``, sorted."""
    return tuple(sorted(v for backend in backends for v in FLAKE_VARIANTS.get(backend, ())))
