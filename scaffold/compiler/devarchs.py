"""The CUDA archs a development build asks for when no GPU is visible.

A release carries machine code for many archs (each kernel's ``cuda-capabilities``, else
kernel-builder's list for the toolkit): compiling them all on every edit takes minutes on a
laptop whose CPU cannot run any of them anyway. Without ``--cuda-archs``, without a visible GPU
and unless the release set is asked for, ``kscaffold build`` therefore requests one arch per CUDA
kernel, as if it had been given with ``--cuda-archs``: the *oldest* of that kernel's release
archs that the local nvcc compiles. Code that compiles for the oldest target rarely fails on a
newer one, while the reverse (a feature used that older GPUs lack) is the usual release failure.

This module only decides what is *requested*; which archs each kernel table then compiles is
:mod:`scaffold.compiler.archs`' business, exactly as for ``--cuda-archs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scaffold.compiler.archs import CudaArch, default_arch_list
from scaffold.project.buildconfig import KernelSection


@dataclass(frozen=True)
class DevelopmentArchs:
    """What a development build requests instead of a kernel's release archs, and why."""

    #: The archs to request, as ``--cuda-archs`` would spell them (``("7.5",)``).
    requested: tuple[str, ...]
    #: Every arch the release set carries, over all CUDA kernels (for "all N" in the message).
    release: tuple[str, ...]
    #: Where the release archs come from: build.toml, kernel-builder's list, or both.
    release_origin: str

    def describe(self) -> str:
        """One sentence for the build output: what is compiled and how to compile the rest."""
        chosen = " and ".join(self.requested)
        whose = "the release set" if len(self.requested) == 1 else "each CUDA kernel's release set"
        count = len(self.release)
        return (
            f"No CUDA GPU is visible: compiling CUDA for {chosen} only, the oldest arch of "
            f"{whose} ({count} archs from {self.release_origin}). Build all of them with "
            "`kscaffold build --release` (or the Nix release build, `nix run .#build-and-copy -L`)."
        )


def release_archs(kernel: KernelSection, cuda_version: tuple[int, int]) -> tuple[str, ...]:
    """The archs ``kernel`` is released for: its cuda-capabilities, else kernel-builder's list."""
    if kernel.cuda_capabilities is not None:
        return kernel.cuda_capabilities
    return default_arch_list(cuda_version)


def development_archs(
    kernels: Sequence[KernelSection],
    *,
    supported: frozenset[str],
    cuda_version: tuple[int, int],
) -> DevelopmentArchs | None:
    """One arch per CUDA kernel (usually one in all), or None to leave the choice as it is.

    For each kernel, the oldest of its release archs that nvcc ``supported`` lists, without
    ``+PTX``; kernels that agree share it. None when there is no CUDA kernel, or when a kernel
    has no arch nvcc compiles or an entry that does not parse: the usual arch choice then runs
    and reports the problem by name.
    """
    requested: set[CudaArch] = set()
    release: set[str] = set()
    origins: set[str] = set()
    for kernel in kernels:
        origins.add(
            "build.toml's cuda-capabilities"
            if kernel.cuda_capabilities is not None
            else f"kernel-builder's list for CUDA {cuda_version[0]}.{cuda_version[1]}"
        )
        try:
            archs = sorted(CudaArch.parse(text) for text in release_archs(kernel, cuda_version))
        except ValueError:
            return None
        release.update(str(CudaArch(a.major, a.minor, a.suffix)) for a in archs)
        compilable = [a for a in archs if f"{a.major}{a.minor}" in supported]
        if not compilable:
            return None
        oldest = compilable[0]
        requested.add(CudaArch(oldest.major, oldest.minor, oldest.suffix))
    if not requested:
        return None
    return DevelopmentArchs(
        requested=tuple(str(arch) for arch in sorted(requested)),
        release=tuple(str(arch) for arch in sorted(CudaArch.parse(a) for a in release)),
        release_origin=" and ".join(sorted(origins)),
    )
