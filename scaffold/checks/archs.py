"""cuda-capabilities: known to kernel-builder, kept by its build, and compilable by the local nvcc.

kernel-builder does not compile a kernel's ``cuda-capabilities`` as written: it intersects them
with its own target list for the CUDA toolkit at hand, keeping for each target the newest listed
arch of the same major version at or below it (``+PTX`` archs also match newer majors; ``a``/``f``
archs only their exact target). An arch that no target picks is dropped without a word; this
rule warns about it (the rest of the table still builds).
"""

from __future__ import annotations

from collections.abc import Sequence

from scaffold.checks.base import Context, Finding, error, warning
from scaffold.compiler.archs import CudaArch, default_arch_list, loose_intersection
from scaffold.compiler.toolchain import find_cuda_toolkit, nvcc_supported_archs
from scaffold.errors import ToolchainError
from scaffold.project.editions import kernel_table_backend
from scaffold.vocabulary import BUILD_TOML

#: The CUDA toolkits kernel-builder releases are built with, by the target lists they use.
RELEASE_TOOLKITS: tuple[tuple[int, int], ...] = ((12, 6), (12, 8), (13, 0))


def _base(arch: CudaArch) -> tuple[int, int]:
    return arch.major, arch.minor


def kept_archs(archs: Sequence[CudaArch], targets: Sequence[str]) -> set[CudaArch]:
    """The archs kernel-builder compiles out of ``archs`` for a toolkit with ``targets``."""
    bases = sorted({CudaArch.parse(target).base for target in targets})
    return set(loose_intersection(archs, bases))


def known_archs() -> list[str]:
    """Every base arch kernel-builder targets with some release toolkit, oldest first."""
    bases = {
        _base(CudaArch.parse(target.removesuffix("+PTX")))
        for toolkit in RELEASE_TOOLKITS
        for target in default_arch_list(toolkit)
    }
    return [f"{major}.{minor}" for major, minor in sorted(bases)]


def _local_nvcc() -> tuple[frozenset[str], str] | None:
    try:
        toolkit = find_cuda_toolkit()
        return nvcc_supported_archs(toolkit.nvcc), f"{toolkit.version[0]}.{toolkit.version[1]}"
    except ToolchainError:
        return None


def check_cuda_capabilities(context: Context) -> list[Finding]:
    """Each CUDA kernel's cuda-capabilities are well formed, kept by kernel-builder, and local."""
    tables = [
        (label, table)
        for label, table in context.kernels.items()
        if kernel_table_backend(table) == "cuda" and "cuda-capabilities" in table
    ]
    findings: list[Finding] = []
    parsed: list[tuple[str, str, CudaArch]] = []
    for label, table in tables:
        location = f"{BUILD_TOML} [kernel.{label}]"
        values = table["cuda-capabilities"]
        if not isinstance(values, list) or not values:
            findings.append(
                error(
                    location,
                    'cuda-capabilities must be a non-empty list of strings such as "9.0".',
                    'Write e.g. cuda-capabilities = ["8.0", "9.0", "12.0+PTX"], or remove '
                    "the key to build kernel-builder's default list.",
                )
            )
            continue
        archs: list[CudaArch] = []
        for value in values:
            try:
                archs.append(CudaArch.parse(str(value)))
            except ValueError as problem:
                findings.append(
                    error(
                        location,
                        f"cuda-capabilities entry '{value}' is not a CUDA arch: {problem}.",
                        f"Use one of {', '.join(known_archs())} (optionally with 'a', 'f' or "
                        "'+PTX').",
                    )
                )
        findings.extend(_dropped(location, archs))
        parsed.extend((label, location, arch) for arch in archs)
    if parsed:
        findings.extend(_unsupported_locally(parsed))
    return findings


def _dropped(location: str, archs: list[CudaArch]) -> list[Finding]:
    kept_anywhere: set[CudaArch] = set()
    for toolkit in RELEASE_TOOLKITS:
        kept_anywhere |= kept_archs(archs, default_arch_list(toolkit))
    findings: list[Finding] = []
    known = ", ".join(known_archs())
    for arch in archs:
        if arch in kept_anywhere:
            continue
        replacement = next(
            (other for other in archs if other.suffix and _base(other) == _base(arch)), None
        )
        if replacement is not None and not arch.suffix:
            findings.append(
                warning(
                    location,
                    f"cuda-capabilities lists both {arch} and {replacement}: kernel-builder "
                    f"builds only {replacement} and drops {arch}.",
                    f'Remove "{arch}" (or "{replacement}" if you meant the portable one).',
                )
            )
            continue
        findings.append(
            warning(
                location,
                f"cuda-capabilities entry {arch} is not an arch kernel-builder builds for with "
                f"any CUDA toolkit ({known}): it is dropped silently.",
                f'Replace "{arch}" with the nearest of {known} at or below it, or add +PTX '
                f"to an older arch to cover it.",
            )
        )
    return findings


def _unsupported_locally(parsed: list[tuple[str, str, CudaArch]]) -> list[Finding]:
    local = _local_nvcc()
    if local is None:
        return [
            warning(
                parsed[0][1],
                "nvcc was not found, so cuda-capabilities could not be checked against the local "
                "CUDA toolkit (release builds use kernel-builder's own toolkits).",
                "Install the CUDA toolkit or set CUDA_HOME to check that `kscaffold build` can "
                "compile every listed arch.",
            )
        ]
    supported, version = local
    return [
        warning(
            location,
            f"cuda-capabilities entry {arch} is not supported by the local nvcc (CUDA {version}), "
            "so it cannot be compiled on this machine.",
            f"Build with --cuda-archs set to archs this nvcc supports, install a CUDA toolkit "
            f'that supports {arch}, or remove "{arch}".',
        )
        for _, location, arch in parsed
        if f"{arch.major}{arch.minor}" not in supported
    ]
