"""CUDA from pip: the toolkit NVIDIA's wheels install into a Python environment.

``nvidia-cuda-nvcc``, ``nvidia-cuda-runtime`` and ``nvidia-cuda-cccl`` (13.x) together unpack a
relocatable toolkit into ``site-packages/nvidia/cu13/``: ``bin/nvcc`` (whose ``nvcc.profile``
finds ``nvvm/`` and adds ``include/cccl`` itself), ``include/cuda_runtime.h`` and
``lib/libcudart.so.13``. torch's own CUDA wheels already put the runtime library there. On a GPU
machine that has torch but no CUDA toolkit, one ``pip install`` of the compiler makes CUDA
kernels buildable, with no system package and no CUDA_HOME.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

#: The pip packages that make a complete toolkit: compiler, runtime headers and library, CCCL,
#: and the two that nvcc depends on without pinning them (its front end's headers and cicc):
#: left to pip, nvcc 13.0 got cicc 13.5, whose PTX 9.5 its ptxas (PTX 9.0) refused.
PIP_PACKAGES = (
    "nvidia-cuda-nvcc",
    "nvidia-cuda-runtime",
    "nvidia-cuda-cccl",
    "nvidia-cuda-crt",
    "nvidia-nvvm",
)


def pip_toolkit_homes() -> tuple[Path, ...]:
    """``nvidia/cu<N>`` folders importable by this Python that hold nvcc and the runtime headers.

    Every folder of the ``nvidia`` namespace package counts: the environment's site-packages and
    a ``pip install --target`` folder on PYTHONPATH alike. Newest CUDA major first.
    """
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return ()
    homes = [
        home
        for location in spec.submodule_search_locations
        for home in Path(location).glob("cu[0-9]*")
        if (home / "bin" / "nvcc").is_file() and (home / "include" / "cuda_runtime.h").is_file()
    ]
    return tuple(sorted(homes, key=lambda home: -int(home.name.removeprefix("cu"))))


def pip_requirements(cuda_version: str) -> tuple[str, ...]:
    """The packages of a toolkit matching torch's CUDA (``13.0``), quoted for a shell."""
    major_minor = ".".join(cuda_version.split(".")[:2])
    return tuple(f'"{name}=={major_minor}.*"' for name in PIP_PACKAGES)


def pip_install_line(cuda_version: str) -> str:
    """The one command that installs a toolkit matching torch's CUDA (``13.0``) into this Python."""
    return "pip install " + " ".join(pip_requirements(cuda_version))


def gpu_present() -> bool:
    """Whether this Linux machine has an NVIDIA GPU (its device files), without importing torch."""
    return any(Path("/dev").glob("nvidia[0-9]*"))
