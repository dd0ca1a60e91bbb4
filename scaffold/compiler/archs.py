"""CUDA architectures: parse ``8.0`` / ``9.0a`` / ``12.0+PTX``, pick them, make nvcc flags."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scaffold.buildconfig import KernelSection
from scaffold.errors import BuildConfigError, InvalidOptionError, KscaffoldError, ToolchainError

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


@dataclass(frozen=True)
class ArchPolicy:
    """Which CUDA archs each kernel is compiled for.

    In order of precedence:

    1. the archs asked for (``--cuda-archs``), for every kernel;
    2. else the capabilities of the visible GPUs, for fast local iteration;
    3. else the kernel's own ``cuda-capabilities`` from build.toml;
    4. else kernel-builder's default list for the toolkit's version (:func:`default_arch_list`):
       CUDA >= 13.0: 7.5 8.0 8.6 8.7 8.9 9.0 10.0 11.0 12.0 12.1+PTX;
       12.8-12.9: 7.0 7.2 7.5 8.0 8.6 8.7 8.9 9.0 10.0 10.1 12.0+PTX;
       older: 7.0 7.2 7.5 8.0 8.6 8.7 8.9 9.0+PTX.

    Every arch is checked against what nvcc supports, whatever its source.
    """

    override: tuple[CudaArch, ...] | None
    supported: frozenset[str]
    cuda_version: tuple[int, int]

    def for_kernel(self, kernel: KernelSection) -> tuple[CudaArch, ...]:
        if self.override is not None:
            return self.override
        if kernel.cuda_capabilities is not None:
            return parse_arch_list(
                kernel.cuda_capabilities,
                supported=self.supported,
                origin=f"build.toml: kernel.{kernel.label}.cuda-capabilities",
                error=BuildConfigError,
            )
        return parse_arch_list(
            default_arch_list(self.cuda_version),
            supported=self.supported,
            origin=f"the default archs of CUDA {self.cuda_version[0]}.{self.cuda_version[1]}",
            error=BuildConfigError,
        )


def make_arch_policy(
    requested: Sequence[str] | None,
    *,
    supported: frozenset[str],
    cuda_version: tuple[int, int],
    visible_gpus: Callable[[], Sequence[tuple[int, int]]],
) -> ArchPolicy:
    """Apply steps 1 and 2 of :class:`ArchPolicy`; ``visible_gpus`` is called only if needed."""
    override: tuple[CudaArch, ...] | None = None
    if requested is not None:
        override = parse_arch_list(requested, supported=supported, origin="--cuda-archs")
    else:
        gpus = visible_gpus()
        if gpus:
            override = parse_arch_list(
                [f"{major}.{minor}" for major, minor in gpus],
                supported=supported,
                origin="the visible GPU",
                error=ToolchainError,
                hint=" Install a newer CUDA toolkit, or pass --cuda-archs to build for others.",
            )
    return ArchPolicy(override=override, supported=supported, cuda_version=cuda_version)
