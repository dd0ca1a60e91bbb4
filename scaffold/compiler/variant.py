"""Names the ``kernels`` loader matches: the build variant folder and the op namespace."""

from __future__ import annotations

import platform
import re

from scaffold.compiler.toolchain import TorchInstall
from scaffold.errors import ToolchainError


def backend_tag(backend: str, torch: TorchInstall) -> str:
    """``cpu``, or ``cu130`` from torch's CUDA version (not nvcc's: the loader compares torch's)."""
    if backend == "cpu":
        return "cpu"
    if backend == "cuda":
        match = re.match(r"(\d+)\.(\d+)", torch.cuda or "")
        if match is None:
            raise ToolchainError(f"torch {torch.version} is not a CUDA build.")
        return f"cu{match[1]}{match[2]}"
    raise ToolchainError(f"kscaffold cannot build the {backend} backend.")


def variant_name(
    torch: TorchInstall,
    backend: str,
    *,
    machine: str | None = None,
    system: str | None = None,
    stable_abi: tuple[int, int] | None = None,
) -> str:
    """``torch213-cxx11-cpu-x86_64-linux``: torch minor, C++ ABI (Linux only), backend, CPU, OS.

    A variant built against torch's stable ABI is named for the torch version it targets, not
    the installed one, and carries no C++ ABI tag: ``torch-stable-abi211-cu130-x86_64-linux``
    (the loader takes it for that torch and every newer one).
    """
    system = (system or platform.system()).lower()
    machine = (machine or platform.machine()).lower()
    if machine == "arm64":
        machine = "aarch64"
    tail = f"{backend_tag(backend, torch)}-{machine}-{system}"
    if stable_abi is not None:
        return f"torch-stable-abi{stable_abi[0]}{stable_abi[1]}-{tail}"
    major, minor = torch.major_minor
    abi = ("-cxx11" if torch.cxx11_abi else "-cxx98") if system == "linux" else ""
    return f"torch{major}{minor}{abi}-{tail}"


def noarch_variant_name(backend: str) -> str:
    """``torch-cuda``: a pure-Python kernel's variant, one per backend, for any torch and system."""
    return f"torch-{backend}"


def ops_name(python_name: str, backend: str, uid: str) -> str:
    """The op namespace, module name and .so stem: ``_<python_name>_<backend>_<uid>``."""
    return f"_{python_name}_{backend}_{uid}"
