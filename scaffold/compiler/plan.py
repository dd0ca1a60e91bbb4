"""What one build variant compiles, and with which flags (kernel-builder's CMake, by hand).

A variant compiles the ``[torch]`` sources plus the ``[kernel.*]`` tables whose backend is the
variant's: the CUDA variant has no CPU kernels and the CPU variant no CUDA ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from scaffold.compiler.archs import ArchPolicy, CudaArch
from scaffold.compiler.toolchain import CudaToolkit, TorchInstall
from scaffold.errors import BuildConfigError, ToolchainError
from scaffold.project.buildconfig import BuildConfig, KernelSection
from scaffold.vocabulary import (
    BUILD_TOML,
    CSRC_DIR,
    CUDA_SUFFIXES,
    CXX_SUFFIXES,
    HEADER_SUFFIXES,
    TORCH_EXT_DIR,
)

# (owner table, src, include, cxx-flags, kernel or None for [torch])
_SourceGroup = tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], KernelSection | None]

_BACKEND_DEFINES = {
    "cpu": ("-DCPU_KERNEL",),
    "cuda": ("-DCUDA_KERNEL", "-DUSE_CUDA=1", "-DENABLE_FP8"),
}

# What kernel-builder's nvcc commands inherit from torch: CMAKE_CUDA_FLAGS set by torch's CMake
# config (Caffe2/public/cuda.cmake) plus COMMON_NVCC_FLAGS of torch.utils.cpp_extension without
# its four __CUDA_NO_HALF*/BFLOAT16 defines. Kernels rely on them: `__device__` lambdas
# (thrust, CUB, ATen's gpu_kernel) do not compile without --expt-extended-lambda.
TORCH_NVCC_FLAGS: tuple[str, ...] = (
    "--expt-relaxed-constexpr",
    "--expt-extended-lambda",
    "-DONNX_NAMESPACE=onnx_c2",
    "-Xcudafe",
    # nvcc splits -X values at commas: one --diag_suppress per warning.
    ",".join(
        f"--diag_suppress={warning}"
        for warning in (
            "cc_clobber_ignored",
            "field_without_dll_interface",
            "base_class_has_different_dll_interface",
            "dll_interface_conflict_none_assumed",
            "dll_interface_conflict_dllexport_assumed",
            "bad_friend_decl",
        )
    ),
)

# kernel-builder builds with CMAKE_BUILD_TYPE=Release, which adds these to C++ and CUDA alike.
_RELEASE_FLAGS = ("-O3", "-DNDEBUG")


def torch_target_version(version: tuple[int, int]) -> str:
    """``TORCH_TARGET_VERSION`` of a stable-ABI build: ``(major << 56) | (minor << 48)`` in hex."""
    major, minor = version
    return f"0x{(major << 56) | (minor << 48):016x}"


@dataclass(frozen=True)
class CompileStep:
    """One source file to compile: ``tool`` is ``cxx`` or ``nvcc``."""

    source: str
    tool: str
    flags: tuple[str, ...]


@dataclass(frozen=True)
class VariantPlan:
    """Everything ninja needs for one variant, and what the installed variant records."""

    backend: str
    variant: str
    ops_name: str
    scratch: Path
    cxx: Path
    nvcc: Path | None
    steps: tuple[CompileStep, ...]
    link_flags: tuple[str, ...]
    #: CUDA archs compiled into the library (empty for CPU), for metadata.json.
    archs: tuple[CudaArch, ...]
    #: Why a ``[kernel.*]`` table was left out of this variant, one line each.
    notes: tuple[str, ...] = ()

    @property
    def so_name(self) -> str:
        return f"{self.ops_name}.abi3.so"

    @property
    def include_dir(self) -> Path:
        """Holds the generated ``registration.h``."""
        return self.scratch / "include"


@dataclass(frozen=True)
class Toolchain:
    """The tools and libraries found on this machine (``cuda`` is None for CPU-only builds)."""

    torch: TorchInstall
    cxx: Path
    python_include: Path
    cuda: CudaToolkit | None
    cuda_include_dirs: tuple[Path, ...] = ()
    #: ``libstdc++.so.6``, linked by path so the library shares torch's C++ runtime.
    cxx_runtime: Path | None = None


def plan_variant(
    config: BuildConfig,
    *,
    backend: str,
    variant: str,
    ops_name: str,
    scratch: Path,
    tools: Toolchain,
    archs: ArchPolicy | None,
    dependency_dirs: Mapping[str, tuple[Path, ...]] | None = None,
    stable_abi: tuple[int, int] | None = None,
) -> VariantPlan:
    """Compile steps and link flags for ``backend``; ``archs`` is required for CUDA.

    ``dependency_dirs`` maps a kernel table's label to the include folders of the libraries it
    ``depends`` on (see :mod:`scaffold.compiler.deps`). ``stable_abi`` is the torch version a
    stable-ABI variant targets (``TORCH_TARGET_VERSION``).

    A CUDA table left with no arch (see :class:`ArchPolicy`) or needing a newer toolkit
    (``cuda-minver``) is left out with a note; when that leaves the backend no table at all,
    the build is refused, naming each table and why.
    """
    project = config.project
    cuda = tools.cuda if backend == "cuda" else None
    if backend == "cuda" and (cuda is None or archs is None):
        raise ValueError("a CUDA plan needs a CUDA toolkit and an arch policy")
    defines = (
        f"-DTORCH_EXTENSION_NAME={ops_name}",
        "-DPy_LIMITED_API=0x03090000",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(tools.torch.cxx11_abi)}",
        *_BACKEND_DEFINES[backend],
    )
    if stable_abi is not None:
        defines += (f"-DTORCH_TARGET_VERSION={torch_target_version(stable_abi)}",)
    local_dirs = [project / CSRC_DIR, project / TORCH_EXT_DIR]
    system_dirs = [*tools.torch.include_dirs, tools.python_include]
    if cuda is not None:
        system_dirs += tools.cuda_include_dirs
    std = f"-std={tools.torch.cxx_standard}"
    # Every translation unit must see ATen's inline parallel_for the same way (one definition).
    openmp = ("-fopenmp",) if tools.torch.openmp else ()

    def includes(extra: tuple[str, ...], kernel: KernelSection | None) -> list[str]:
        local = [scratch / "include", *local_dirs, *(project / path for path in extra)]
        libraries = (dependency_dirs or {}).get(kernel.label, ()) if kernel is not None else ()
        system = [*libraries, *system_dirs]
        return [f"-I{d}" for d in local] + [f for d in system for f in ("-isystem", str(d))]

    steps: dict[str, CompileStep] = {}
    owners: dict[str, str] = {}
    compiled_archs: set[CudaArch] = set()
    tables: list[_SourceGroup] = [
        ("torch", config.torch.src, config.torch.include, config.torch.cxx_flags, None)
    ]
    kernel_archs: dict[str, tuple[CudaArch, ...]] = {}
    skipped: list[str] = []
    for k in config.kernels_for(backend):
        if cuda is not None and archs is not None:
            reason = _cuda_skip_reason(k, archs, cuda.version)
            if reason is not None:
                skipped.append(reason)
                continue
            kernel_archs[k.label] = archs.for_kernel(k)
        tables.append((f"kernel.{k.label}", k.src, k.include, k.cxx_flags, k))
    if skipped and len(tables) == 1:
        raise ToolchainError(
            f"Nothing of the {backend} backend can be built here: "
            + "; ".join(skipped)
            + ". Pass --cuda-archs with an arch the tables declare (a build for a GPU this "
            "machine does not have compiles, but does not run here)."
        )
    for owner, sources, include, cxx_flags, kernel in tables:
        for source in sources:
            suffix = PurePosixPath(source).suffix.lower()
            if suffix in HEADER_SUFFIXES:
                continue
            if suffix in CXX_SUFFIXES:
                flags = [std, *_RELEASE_FLAGS, "-fPIC", "-fno-gnu-unique", *openmp, *defines]
                flags += includes(include, kernel)
                step = CompileStep(source, "cxx", (*flags, *cxx_flags))
            elif suffix in CUDA_SUFFIXES and kernel is not None and cuda is not None:
                table_archs = kernel_archs[kernel.label]
                compiled_archs.update(table_archs)
                flags = [
                    "-ccbin", str(tools.cxx), std, *_RELEASE_FLAGS, *TORCH_NVCC_FLAGS,
                    "-Xcompiler", "-fPIC", "-Xcompiler", "-fno-gnu-unique",
                    *(f for flag in openmp for f in ("-Xcompiler", flag)),
                    *defines, *includes(include, kernel),
                    *(flag for arch in table_archs for flag in arch.gencode_flags()),
                ]  # fmt: skip
                step = CompileStep(source, "nvcc", (*flags, *kernel.cuda_flags))
            else:
                raise BuildConfigError(_cannot_compile(owner, source, backend))
            if source in owners:
                raise BuildConfigError(
                    f"{BUILD_TOML}: '{source}' is compiled by both [{owners[source]}] and "
                    f"[{owner}]: list it in one src only"
                )
            owners[source] = owner
            steps[source] = step

    # The C++ runtime comes first: the linker takes each std:: symbol from the first library that
    # has it, and torch's libraries export copies of many.
    link = [str(tools.cxx_runtime)] if tools.cxx_runtime is not None else []
    link += ["-L" + str(tools.torch.lib_dir), "-lc10", "-ltorch", "-ltorch_cpu"]
    if cuda is not None:
        link += ["-lc10_cuda", "-ltorch_cuda", "-L" + str(cuda.lib_dir), cuda.cudart_flag]
    # Links libgomp.so.1 by that name, which torch's own libraries have loaded already: one
    # OpenMP runtime and one thread pool in the process.
    link += openmp
    return VariantPlan(
        backend=backend,
        variant=variant,
        ops_name=ops_name,
        scratch=scratch,
        cxx=tools.cxx,
        nvcc=cuda.nvcc if cuda is not None else None,
        steps=tuple(steps.values()),
        link_flags=tuple(link),
        archs=tuple(sorted(compiled_archs)),
        notes=tuple(f"Skipping {reason}." for reason in skipped),
    )


def _cuda_skip_reason(
    kernel: KernelSection, archs: ArchPolicy, cuda_version: tuple[int, int]
) -> str | None:
    """Why kernel-builder's rules leave ``kernel`` out of this CUDA build, or None."""
    if kernel.cuda_minver is not None and cuda_version < kernel.cuda_minver:
        wanted = ".".join(str(part) for part in kernel.cuda_minver)
        return (
            f"[kernel.{kernel.label}]: it needs CUDA {wanted} (cuda-minver), this toolkit is "
            f"{cuda_version[0]}.{cuda_version[1]}"
        )
    if archs.for_kernel(kernel):
        return None
    declared = ", ".join(kernel.cuda_capabilities or ())
    return (
        f"[kernel.{kernel.label}]: none of its cuda-capabilities ({declared}) builds for "
        f"{archs.describe_targets()}"
    )


def _cannot_compile(owner: str, source: str, backend: str) -> str:
    suffix = PurePosixPath(source).suffix or "(none)"
    if suffix in CUDA_SUFFIXES:
        hint = 'CUDA sources belong in a [kernel.*] table with backend = "cuda"'
    else:
        known = sorted(CXX_SUFFIXES | CUDA_SUFFIXES | HEADER_SUFFIXES)
        hint = f"kscaffold compiles or skips only {', '.join(known)}"
    return (
        f"{BUILD_TOML}: [{owner}] src '{source}' cannot be built for the {backend} backend "
        f"(suffix {suffix}): {hint}"
    )
