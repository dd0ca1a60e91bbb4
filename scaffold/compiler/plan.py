"""What one build variant compiles, and with which flags (kernel-builder's CMake, by hand).

A variant compiles the ``[torch]`` sources plus the ``[kernel.*]`` tables whose backend is the
variant's: the CUDA variant has no CPU kernels and the CPU variant no CUDA ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from scaffold.buildconfig import BuildConfig, KernelSection
from scaffold.compiler.archs import ArchPolicy, CudaArch
from scaffold.compiler.toolchain import CudaToolkit, TorchInstall
from scaffold.errors import BuildConfigError
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
) -> VariantPlan:
    """Compile steps and link flags for ``backend``; ``archs`` is required for CUDA.

    ``dependency_dirs`` maps a kernel table's label to the include folders of the libraries it
    ``depends`` on (see :mod:`scaffold.compiler.deps`).
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
    tables += [
        (f"kernel.{k.label}", k.src, k.include, k.cxx_flags, k) for k in config.kernels_for(backend)
    ]
    for owner, sources, include, cxx_flags, kernel in tables:
        for source in sources:
            suffix = PurePosixPath(source).suffix.lower()
            if suffix in HEADER_SUFFIXES:
                continue
            if suffix in CXX_SUFFIXES:
                flags = [std, "-O3", "-fPIC", "-fno-gnu-unique", *openmp, *defines]
                flags += includes(include, kernel)
                step = CompileStep(source, "cxx", (*flags, *cxx_flags))
            elif suffix in CUDA_SUFFIXES and kernel is not None and cuda is not None:
                assert archs is not None
                kernel_archs = archs.for_kernel(kernel)
                compiled_archs.update(kernel_archs)
                flags = [
                    "-ccbin", str(tools.cxx), std, "-O3", "--expt-relaxed-constexpr",
                    "-Xcompiler", "-fPIC", "-Xcompiler", "-fno-gnu-unique",
                    *(f for flag in openmp for f in ("-Xcompiler", flag)),
                    *defines, *includes(include, kernel),
                    *(flag for arch in kernel_archs for flag in arch.gencode_flags()),
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
        link += ["-lc10_cuda", "-ltorch_cuda", "-L" + str(cuda.lib_dir), "-lcudart"]
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
