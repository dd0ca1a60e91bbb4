"""Find what a build needs on this machine: torch's install, a C++ compiler, nvcc and ninja.

Importing torch costs seconds, so a no-op rebuild must not do it: the version comes from
``torch/version.py`` and the one fact that needs the import (the C++ ABI) is cached per install.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sysconfig
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ninja

from scaffold.compiler.pipcuda import pip_install_line, pip_toolkit_homes
from scaffold.errors import ToolchainError
from scaffold.outputs.manifest import write_atomically

#: First torch release whose extensions are built as C++20 (kernel-builder does the same).
_CXX20_SINCE = (2, 12)


@dataclass(frozen=True)
class TorchInstall:
    """The torch a build compiles against (the one importable by this Python)."""

    root: Path
    version: str
    cuda: str | None
    cxx11_abi: bool
    #: Whether ATen parallelizes with OpenMP. Its ``at::parallel_for`` is inline and runs in
    #: parallel only in code compiled with ``-fopenmp``: without it a kernel runs on one thread.
    openmp: bool = False

    @property
    def major_minor(self) -> tuple[int, int]:
        match = re.match(r"(\d+)\.(\d+)", self.version)
        if match is None:
            raise ToolchainError(f"Cannot read torch's version '{self.version}' in {self.root}.")
        return int(match[1]), int(match[2])

    @property
    def cxx_standard(self) -> str:
        return "c++20" if self.major_minor >= _CXX20_SINCE else "c++17"

    @property
    def include_dirs(self) -> tuple[Path, ...]:
        return (self.root / "include", self.root / "include" / "torch" / "csrc" / "api" / "include")

    @property
    def lib_dir(self) -> Path:
        return self.root / "lib"


def find_torch(cache_dir: Path) -> TorchInstall:
    """Locate torch without importing it, except once per install to learn its C++ ABI."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise ToolchainError("torch is not installed: pip install torch")
    root = Path(next(iter(spec.submodule_search_locations))).resolve()
    version_py = root / "version.py"
    values = _read_assignments(version_py, ("__version__", "cuda"))
    version = values.get("__version__")
    if version is None:
        raise ToolchainError(f"{version_py} has no __version__: reinstall torch.")
    stat = version_py.stat()
    key = [str(root), stat.st_mtime_ns, stat.st_size]
    cache = cache_dir / "torch.json"
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        abi = cached["cxx11_abi"] if cached.get("key") == key else None
    except (OSError, ValueError, RecursionError, KeyError, TypeError):
        abi = None
    if not isinstance(abi, bool):
        abi = _probe_cxx11_abi()
        write_atomically(cache, json.dumps({"key": key, "cxx11_abi": abi}) + "\n")
    return TorchInstall(
        root=root,
        version=version,
        cuda=values.get("cuda"),
        cxx11_abi=abi,
        openmp=aten_uses_openmp(root / "include" / "ATen" / "Config.h"),
    )


def aten_uses_openmp(aten_config: Path) -> bool:
    """Whether torch's ATen/Config.h says its parallel backend is OpenMP."""
    try:
        text = aten_config.read_text(encoding="utf-8")
    except OSError as error:
        raise ToolchainError(f"Cannot read {aten_config}: {error}; reinstall torch.") from error
    return re.search(r"^#define AT_PARALLEL_OPENMP 1\s*$", text, re.MULTILINE) is not None


def _read_assignments(path: Path, names: tuple[str, ...]) -> dict[str, str]:
    """String constants assigned at module level (``cuda: Optional[str] = '13.0'`` included)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError) as error:
        raise ToolchainError(f"Cannot read {path}: {error}; reinstall torch.") from error
    found: dict[str, str] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        constant = value.value if isinstance(value, ast.Constant) else None
        if isinstance(target, ast.Name) and target.id in names and isinstance(constant, str):
            found[target.id] = constant
    return found


def _import_torch() -> Any:
    # torch warns at import about optional packages (numpy) the build never uses.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch
    return torch


def _probe_cxx11_abi() -> bool:
    torch = _import_torch()  # seconds: reached only when the cached answer is missing or stale
    return bool(torch.compiled_with_cxx11_abi())


def visible_gpu_capabilities() -> tuple[tuple[int, int], ...]:
    """Compute capabilities of the CUDA GPUs this process can see (none without a GPU)."""
    torch = _import_torch()  # needed only when no arch was given, and only for a CUDA build
    if not torch.cuda.is_available():
        return ()
    capabilities = {torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())}
    return tuple(sorted(capabilities))


@dataclass(frozen=True)
class CudaToolkit:
    """A CUDA toolkit with nvcc, its headers and its runtime library."""

    home: Path
    version: tuple[int, int]
    #: Whether it is the toolkit of NVIDIA's pip packages (``site-packages/nvidia/cu13``).
    from_pip: bool = False

    @property
    def nvcc(self) -> Path:
        return self.home / "bin" / "nvcc"

    @property
    def include_dir(self) -> Path:
        return self.home / "include"

    @property
    def lib_dir(self) -> Path:
        lib64 = self.home / "lib64"
        return lib64 if lib64.is_dir() else self.home / "lib"

    @property
    def cudart_flag(self) -> str:
        """How to link the CUDA runtime: pip's wheels ship only ``libcudart.so.13``, no link."""
        if (self.lib_dir / "libcudart.so").exists():
            return "-lcudart"
        versioned = sorted(self.lib_dir.glob("libcudart.so.*"), key=lambda path: len(path.name))
        return f"-l:{versioned[0].name}" if versioned else "-lcudart"


def cuda_include_dirs(toolkit: CudaToolkit, torch: TorchInstall) -> tuple[Path, ...]:
    """Header folders for CUDA code: the toolkit's, plus the CUDA library wheels torch uses.

    ATen's CUDA headers include cuBLAS and cuSPARSE headers, which a toolkit installed with
    only nvcc and the runtime lacks; torch's CUDA builds pull those libraries in as ``nvidia-*``
    wheels whose headers match the libraries torch loads. They come after the toolkit's own.
    """
    dirs = [toolkit.include_dir]
    if not (toolkit.include_dir / "cusparse.h").is_file():
        wheels = torch.root.parent / "nvidia"
        combined = wheels / f"cu{toolkit.version[0]}" / "include"  # CUDA 13 wheels: one folder
        dirs += [combined] if combined.is_dir() else sorted(wheels.glob("*/include"))
    return tuple(dirs)


_INSTALL_CUDA = "install the CUDA toolkit or set CUDA_HOME to its folder"


def torch_cuda_version() -> str | None:
    """The CUDA version the installed torch was built with (``13.0``), read without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    version_py = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        return _read_assignments(version_py, ("cuda",)).get("cuda")
    except ToolchainError:
        return None


def find_cuda_toolkit() -> CudaToolkit:
    """The toolkit of CUDA_HOME or CUDA_PATH, else nvcc's on PATH, else pip's, else the system's.

    torch's cpp_extension order, with the toolkit NVIDIA's pip packages installed into this
    Python (:mod:`scaffold.compiler.pipcuda`) before /usr/local/cuda: it was installed for
    this environment.

    The toolkit folder holds ``bin/nvcc`` and ``include/cuda_runtime.h``. nvcc on PATH may be a
    wrapper script outside the toolkit, so it is only used when its real location is inside one.
    """
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(variable)
        if value:
            home = Path(value)
            if not _is_toolkit(home):
                raise ToolchainError(
                    f"{variable}={value} is not a CUDA toolkit (no bin/nvcc and "
                    f"include/cuda_runtime.h there): {_INSTALL_CUDA}."
                )
            return _toolkit(home)
    on_path = shutil.which("nvcc")
    if on_path and _is_toolkit(Path(on_path).resolve().parent.parent):
        return _toolkit(Path(on_path).resolve().parent.parent)
    for home in pip_toolkit_homes():
        return _toolkit(home, from_pip=True)
    if _is_toolkit(Path("/usr/local/cuda")):
        return _toolkit(Path("/usr/local/cuda"))
    cuda = torch_cuda_version()
    pip_hint = (
        f", or install NVIDIA's CUDA {cuda} compiler into this Python: {pip_install_line(cuda)}"
        if cuda
        else ""
    )
    raise ToolchainError(f"nvcc was not found: {_INSTALL_CUDA}{pip_hint}.")


def find_cuda_tool(name: str) -> Path | None:
    """A CUDA developer tool (``ncu``, ``compute-sanitizer``): the toolkit's, else on PATH.

    The toolkit is CUDA_HOME, CUDA_PATH or /usr/local/cuda; pip's toolkit carries neither tool.
    """
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for home in filter(None, homes):
        candidate = Path(home) / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    return Path(found) if found else None


def _is_toolkit(home: Path) -> bool:
    return (home / "bin" / "nvcc").is_file() and (home / "include" / "cuda_runtime.h").is_file()


def _toolkit(home: Path, *, from_pip: bool = False) -> CudaToolkit:
    return CudaToolkit(
        home=home.resolve(), version=_nvcc_version(home / "bin" / "nvcc"), from_pip=from_pip
    )


@functools.cache
def _nvcc_version(nvcc: Path) -> tuple[int, int]:
    output = _run_tool([str(nvcc), "--version"])
    match = re.search(r"release (\d+)\.(\d+)", output)
    if match is None:
        raise ToolchainError(f"Cannot read the CUDA version from `{nvcc} --version`:\n{output}")
    return int(match[1]), int(match[2])


@functools.cache
def nvcc_supported_archs(nvcc: Path) -> frozenset[str]:
    """Virtual archs nvcc can target, as digits without suffix (``75``, ``90``, ``120``)."""
    output = _run_tool([str(nvcc), "--list-gpu-arch"])
    return frozenset(re.findall(r"compute_(\d+)", output))


def _run_tool(command: list[str]) -> str:
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as error:
        raise ToolchainError(f"Cannot run {command[0]}: {error}") from error
    if result.returncode != 0:
        raise ToolchainError(
            f"`{' '.join(command)}` failed ({result.returncode}):\n{result.stdout}{result.stderr}"
        )
    return result.stdout


def find_cxx() -> Path:
    """The C++ compiler: CXX if set, else g++ (kernel-builder's flags are GCC's), else c++."""
    wanted = os.environ.get("CXX")
    for name in [wanted] if wanted else ["g++", "c++"]:
        found = shutil.which(name)
        if found:
            return Path(found)
    if wanted:
        raise ToolchainError(f"CXX={wanted} was not found: set CXX to an installed C++ compiler.")
    raise ToolchainError("No C++ compiler found: install g++ (apt-get install g++) or set CXX.")


def shared_cxx_runtime(cxx: Path) -> Path | None:
    """The shared C++ runtime ``cxx`` links against (``libstdc++.so.6``), None if it has none.

    kscaffold links it by path, ahead of torch's libraries. Linked the usual way with Ubuntu's
    g++ 13 against torch 2.11, a kernel library did not depend on libstdc++.so.6, and the first
    number it formatted through ``std::ostream`` (``TORCH_CHECK(ok, "got ", n)``) crashed the
    process; torch.utils.cpp_extension's builds there do the same.
    """
    try:
        answer = subprocess.run(
            [str(cxx), "-print-file-name=libstdc++.so.6"],
            capture_output=True, text=True, timeout=60, check=False,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    path = Path(answer)
    # A compiler that does not know the file prints its bare name back.
    if not (path.is_absolute() and path.is_file()):
        return None
    return Path(os.path.normpath(path))  # drops "lib/gcc/x86_64-linux-gnu/12/../../.." only


def find_ninja() -> Path:
    """The ninja of the ``ninja`` package this Python has, else the one on PATH."""
    bundled = Path(ninja.BIN_DIR) / "ninja"
    if ninja.BIN_DIR and bundled.is_file():
        return bundled
    found = shutil.which("ninja")
    if found:
        return Path(found)
    raise ToolchainError("ninja was not found: pip install ninja")


def python_include_dir() -> Path:
    """Where ``Python.h`` is, for the module init function every kernel library defines."""
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").is_file():
        raise ToolchainError(
            f"Python's headers are missing ({include}/Python.h): install the Python development "
            "package (e.g. apt-get install python3-dev)."
        )
    return include
