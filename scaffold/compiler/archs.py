"""CUDA architectures: parse ``8.0`` / ``9.0a`` / ``12.0+PTX``, pick them, make nvcc flags."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scaffold.errors import BuildConfigError, InvalidOptionError, KscaffoldError, ToolchainError
from scaffold.project.buildconfig import KernelSection

_ARCH = re.compile(r"^(\d{1,2})\.(\d)([af]?)(\+PTX)?$")
# Arch-specific ("a") targets exist from Hopper on, family ("f") targets from Blackwell on.
_SUFFIX_SINCE = {"a": 9, "f": 10}


@dataclass(frozen=True, order=True)
class CudaArch:
    """One compute capability to compile for; ``ptx`` also embeds PTX for newer GPUs to JIT."""

    major: int
    minor: int
    suffix: str = ""
    ptx: bool = False

    @classmethod
    def parse(cls, text: str) -> CudaArch:
        """Parse ``9.0``, ``9.0a``, ``10.0f`` or ``12.0+PTX``; ValueError says what is wrong."""
        match = _ARCH.match(text.strip())
        if match is None:
            raise ValueError("write it as major.minor, e.g. 8.0, 9.0a or 12.0+PTX")
        major, minor, suffix = int(match[1]), int(match[2]), match[3]
        if suffix and major < _SUFFIX_SINCE[suffix]:
            raise ValueError(f"'{suffix}' targets exist only from {_SUFFIX_SINCE[suffix]}.0 on")
        return cls(major, minor, suffix, bool(match[4]))

    @property
    def base(self) -> tuple[int, int]:
        """``(9, 0)`` for 9.0, 9.0a and 9.0+PTX alike."""
        return self.major, self.minor

    @property
    def code(self) -> str:
        """The arch as nvcc spells it, without prefix: ``90a`` for 9.0a."""
        return f"{self.major}{self.minor}{self.suffix}"

    def gencode_flags(self) -> list[str]:
        flags = ["-gencode", f"arch=compute_{self.code},code=sm_{self.code}"]
        if self.ptx:
            flags += ["-gencode", f"arch=compute_{self.code},code=compute_{self.code}"]
        return flags

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}{self.suffix}{'+PTX' if self.ptx else ''}"


def default_arch_list(cuda_version: tuple[int, int]) -> tuple[str, ...]:
    """kernel-builder's default archs for a toolkit version (what a release build carries)."""
    if cuda_version >= (13, 0):
        return ("7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0", "12.1+PTX")
    if cuda_version >= (12, 8):
        return ("7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.1", "12.0+PTX")
    return ("7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0+PTX")


def parse_arch_list(
    values: Sequence[str],
    *,
    supported: frozenset[str],
    origin: str,
    error: type[KscaffoldError] = InvalidOptionError,
    hint: str = "",
) -> tuple[CudaArch, ...]:
    """Parse and check archs against nvcc's ``supported`` list; refuse any bad one by name.

    ``values`` may hold comma- or space-separated lists. ``origin`` says where they came from
    (``--cuda-archs``, a build.toml key) for the message.
    """
    items = [part for value in values for part in re.split(r"[,\s]+", value) if part]
    if not items:
        raise error(f"{origin} lists no CUDA arch: give at least one, e.g. 9.0.")
    archs: list[CudaArch] = []
    for item in items:
        try:
            arch = CudaArch.parse(item)
        except ValueError as reason:
            raise error(f"{origin}: '{item}' is not a CUDA arch: {reason}.") from None
        if f"{arch.major}{arch.minor}" not in supported:
            raise error(
                f"{origin}: CUDA arch '{item}' is not supported by this nvcc; "
                f"supported archs: {', '.join(format_supported(supported))}.{hint}"
            )
        if arch not in archs:
            archs.append(arch)
    return tuple(sorted(archs))


def format_supported(supported: frozenset[str]) -> list[str]:
    """Show nvcc's ``90`` / ``120`` as ``9.0`` / ``12.0``, oldest first."""
    return [f"{code[:-1]}.{code[-1]}" for code in sorted(supported, key=int)]


def loose_intersection(
    capabilities: Sequence[CudaArch], targets: Sequence[tuple[int, int]]
) -> tuple[CudaArch, ...]:
    """The archs kernel-builder compiles a table with ``capabilities`` for, given ``targets``.

    kernel-builder's rule (its CMake ``cuda_archs_loose_intersection``): an ``a``/``f`` arch is
    kept when its base is a target, and that target is then taken; for every other target, the
    newest plain capability at or below it is kept, if it has the target's major version (SASS
    runs only within one major) or carries ``+PTX`` (PTX is compiled on the fly for newer GPUs).
    """
    remaining = set(targets)
    kept: set[CudaArch] = set()
    for arch in capabilities:
        if arch.suffix and arch.base in remaining:
            kept.add(arch)
    remaining -= {arch.base for arch in kept}
    plain = sorted((arch for arch in capabilities if not arch.suffix), key=lambda a: a.base)
    for target in sorted(remaining):
        best: CudaArch | None = None
        for arch in plain:
            if arch.base > target:
                break
            if arch.ptx or arch.major == target[0]:
                best = arch
        if best is not None:
            kept.add(best)
    return tuple(sorted(kept))


@dataclass(frozen=True)
class ArchPolicy:
    """Which CUDA archs each ``[kernel.*]`` table is compiled for.

    The *targets* are, in order of precedence, the archs asked for (``--cuda-archs``), else the
    capabilities of the visible GPUs (a fast local build), else kernel-builder's default list for
    the toolkit (:func:`default_arch_list`, what a release carries):

    - a table without ``cuda-capabilities`` is compiled for the targets as they are;
    - a table with them is compiled for their loose intersection with the targets
      (:func:`loose_intersection`), as kernel-builder does, so ``9.0a`` stays ``9.0a`` and a
      table declared only for ``10.0a`` gets nothing when the target is ``9.0``: it is skipped
      (:meth:`for_kernel` returns no arch), never compiled for an arch it did not declare.

    Every arch compiled is checked against what nvcc supports and refused by name otherwise.
    """

    requested: tuple[CudaArch, ...] | None
    #: Where the targets come from, for messages ("--cuda-archs", "the visible GPU").
    origin: str
    supported: frozenset[str]
    cuda_version: tuple[int, int]

    @property
    def default_archs(self) -> tuple[CudaArch, ...]:
        return tuple(CudaArch.parse(text) for text in default_arch_list(self.cuda_version))

    @property
    def targets(self) -> tuple[CudaArch, ...]:
        """The archs tables are compiled for, or intersected with."""
        return self.requested if self.requested is not None else self.default_archs

    def describe_targets(self) -> str:
        """``9.0 (the visible GPU)``, for notes and errors."""
        return f"{', '.join(str(arch) for arch in self.targets)} ({self.origin})"

    def for_kernel(self, kernel: KernelSection) -> tuple[CudaArch, ...]:
        """The archs to compile ``kernel`` for; empty when none of its capabilities is a target."""
        if kernel.cuda_capabilities is None:
            return self._supported_only(self.targets, self.origin, hint="")
        origin = f"build.toml: kernel.{kernel.label}.cuda-capabilities"
        declared: list[CudaArch] = []
        for text in kernel.cuda_capabilities:
            try:
                declared.append(CudaArch.parse(text))
            except ValueError as reason:
                message = f"{origin}: '{text}' is not a CUDA arch: {reason}."
                raise BuildConfigError(message) from None
        kept = loose_intersection(declared, sorted({arch.base for arch in self.targets}))
        return self._supported_only(
            kept, origin, hint=" Pass --cuda-archs with archs this nvcc supports."
        )

    def _supported_only(
        self, archs: Sequence[CudaArch], origin: str, *, hint: str
    ) -> tuple[CudaArch, ...]:
        for arch in archs:
            if f"{arch.major}{arch.minor}" not in self.supported:
                raise BuildConfigError(
                    f"{origin}: CUDA arch '{arch}' is not supported by this nvcc; supported "
                    f"archs: {', '.join(format_supported(self.supported))}.{hint}"
                )
        return tuple(archs)


def make_arch_policy(
    requested: Sequence[str] | None,
    *,
    supported: frozenset[str],
    cuda_version: tuple[int, int],
    visible_gpus: Callable[[], Sequence[tuple[int, int]]],
) -> ArchPolicy:
    """Pick the targets of :class:`ArchPolicy`; ``visible_gpus`` is called only if needed."""
    if requested is not None:
        archs = parse_arch_list(requested, supported=supported, origin="--cuda-archs")
        return ArchPolicy(archs, "--cuda-archs", supported, cuda_version)
    gpus = visible_gpus()
    if gpus:
        archs = parse_arch_list(
            [f"{major}.{minor}" for major, minor in gpus],
            supported=supported,
            origin="the visible GPU",
            error=ToolchainError,
            hint=" Install a newer CUDA toolkit, or pass --cuda-archs to build for others.",
        )
        return ArchPolicy(archs, "the visible GPU", supported, cuda_version)
    origin = f"the default archs of CUDA {cuda_version[0]}.{cuda_version[1]}"
    return ArchPolicy(None, origin, supported, cuda_version)
