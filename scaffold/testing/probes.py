"""What ``kscaffold doctor`` asks the machine, behind one small interface tests replace.

Each probe answers one question and never raises: an answer of None means "not here". The real
ones (:class:`SystemProbes`) run tools and read libraries; a test passes its own :class:`Probes`.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from scaffold.errors import KscaffoldError


@dataclass(frozen=True)
class GpuInfo:
    """One visible CUDA GPU."""

    index: int
    name: str
    capability: tuple[int, int]


@dataclass(frozen=True)
class TorchInfo:
    """The installed torch, and the build/ variant names it loads (one per backend it has)."""

    version: str
    cuda: str | None
    #: ``{"cpu": "torch214-cxx11-cpu-x86_64-linux", "cuda": "torch214-cxx11-cu130-..."}``.
    variants: dict[str, str]

    @property
    def cuda_version(self) -> tuple[int, int] | None:
        return parse_version(self.cuda)

    @property
    def major_minor(self) -> tuple[int, int] | None:
        return parse_version(self.version)


@dataclass(frozen=True)
class ToolkitInfo:
    """The CUDA toolkit a build would use."""

    nvcc: Path
    version: tuple[int, int]


@dataclass(frozen=True)
class CompilerInfo:
    """The host C++ compiler a build would use; ``version`` is its ``--version`` first line."""

    path: Path
    version: str


def parse_version(text: str | None) -> tuple[int, int] | None:
    """``(13, 0)`` from ``13.0``, ``2.14.1+cu130`` gives ``(2, 14)``; None if there is none."""
    match = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(match[1]), int(match[2])) if match else None


class Probes(Protocol):
    """The questions doctor asks; each answer None when the thing is absent."""

    def driver_cuda_version(self) -> tuple[int, int] | None:
        """The newest CUDA version the installed NVIDIA driver supports."""

    def toolkit(self) -> ToolkitInfo | None: ...

    def torch(self) -> TorchInfo | None: ...

    def gpus(self) -> list[GpuInfo]: ...

    def host_compiler(self) -> CompilerInfo | None: ...

    def host_compiler_rejected(self, nvcc: Path, cxx: Path) -> str | None:
        """Nvcc's complaint about ``cxx`` as its host compiler, None if it accepts it."""

    def ninja(self) -> Path | None: ...

    def nix(self) -> Path | None: ...

    def kernels_version(self) -> str | None: ...


class SystemProbes:
    """The probes of this machine."""

    def driver_cuda_version(self) -> tuple[int, int] | None:
        # cuDriverGetVersion needs no cuInit and no GPU, only the driver's libcuda.
        try:
            libcuda = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return None
        version = ctypes.c_int(0)
        if libcuda.cuDriverGetVersion(ctypes.byref(version)) != 0 or version.value <= 0:
            return None
        return version.value // 1000, (version.value % 1000) // 10

    def toolkit(self) -> ToolkitInfo | None:
        from scaffold.compiler.toolchain import find_cuda_toolkit

        try:
            found = find_cuda_toolkit()
        except KscaffoldError:
            return None
        return ToolkitInfo(found.nvcc, found.version)

    def torch(self) -> TorchInfo | None:
        from scaffold.compiler.toolchain import TorchInstall
        from scaffold.compiler.variant import variant_name

        try:
            import torch
        except ImportError:
            return None
        install = TorchInstall(
            root=Path(torch.__file__).parent,
            version=torch.__version__,
            cuda=torch.version.cuda,
            cxx11_abi=bool(torch.compiled_with_cxx11_abi()),
        )
        backends = ["cpu"] + (["cuda"] if install.cuda else [])
        variants = {backend: variant_name(install, backend) for backend in backends}
        return TorchInfo(install.version, install.cuda, variants)

    def gpus(self) -> list[GpuInfo]:
        try:
            import torch
        except ImportError:
            return []
        if not torch.cuda.is_available():
            return []
        return [
            GpuInfo(i, torch.cuda.get_device_name(i), torch.cuda.get_device_capability(i))
            for i in range(torch.cuda.device_count())
        ]

    def host_compiler(self) -> CompilerInfo | None:
        from scaffold.compiler.toolchain import find_cxx

        try:
            cxx = find_cxx()
            output = subprocess.run(
                [str(cxx), "--version"], capture_output=True, text=True, timeout=60, check=False
            ).stdout
        except (KscaffoldError, OSError, subprocess.SubprocessError):
            return None
        return CompilerInfo(cxx, (output.splitlines() or ["unknown version"])[0].strip())

    def host_compiler_rejected(self, nvcc: Path, cxx: Path) -> str | None:
        # nvcc's own check (crt/host_config.h: "#error -- unsupported GNU version!") runs when
        # the host compiler preprocesses a .cu file, so an empty one asks exactly that question.
        with tempfile.TemporaryDirectory(prefix="kscaffold-doctor-") as scratch:
            source = Path(scratch) / "empty.cu"
            source.write_text("", encoding="utf-8")
            command = [str(nvcc), "-ccbin", str(cxx), "-x", "cu", "-E", "-o", "/dev/null"]
            try:
                result = subprocess.run(
                    [*command, str(source)], capture_output=True, text=True, timeout=120,
                    check=False,
                )  # fmt: skip
            except (OSError, subprocess.SubprocessError) as error:
                return f"nvcc could not be run: {error}"
        if result.returncode == 0:
            return None
        return nvcc_complaint(result.stdout + result.stderr)

    def ninja(self) -> Path | None:
        from scaffold.compiler.toolchain import find_ninja

        try:
            return find_ninja()
        except KscaffoldError:
            return None

    def nix(self) -> Path | None:
        found = shutil.which("nix")
        return Path(found) if found else None

    def kernels_version(self) -> str | None:
        try:
            return importlib.metadata.version("kernels")
        except importlib.metadata.PackageNotFoundError:
            return None


def nvcc_complaint(output: str) -> str:
    """The sentence of an ``#error`` in nvcc's output, else its first error line, else all."""
    directive = re.search(r"#error\s*--\s*(.+?)(?: The nvcc flag|$)", output, re.MULTILINE)
    if directive:
        return directive[1].strip()
    for line in output.splitlines():
        if "error" in line.lower():
            return line.strip()
    return " ".join(output.split()) or "nvcc failed without output"
