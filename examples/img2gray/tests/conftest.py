"""Load img2gray the way its users will: through `kernels`, from this project's build/ folder."""

from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType

import pytest
import torch
from kernels import get_local_kernel

PROJECT_ROOT = Path(__file__).resolve().parents[1]
BACKENDS: tuple[str, ...] = ("cuda", "cpu")
NO_GPU = "needs a CUDA GPU: torch.cuda.is_available() is False"


@functools.cache
def load_kernel(backend: str) -> ModuleType:
    """The img2gray build for `backend` under build/, as `kernels` loads it."""
    try:
        return get_local_kernel(PROJECT_ROOT, backend=backend)
    except FileNotFoundError as error:
        pytest.fail(
            f"No {backend} build of img2gray in {PROJECT_ROOT / 'build'}: "
            f"run `kscaffold build` first.\n{error}",
            pytrace=False,
        )


def device_for(backend: str) -> torch.device:
    return torch.device("cuda" if backend == "cuda" else "cpu")


def _backend_param(backend: str) -> object:
    needs_gpu = backend == "cuda" and not torch.cuda.is_available()
    return pytest.param(backend, id=backend, marks=pytest.mark.skipif(needs_gpu, reason=NO_GPU))


@pytest.fixture(params=[_backend_param(backend) for backend in BACKENDS])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def kernel(backend: str) -> ModuleType:
    return load_kernel(backend)


@pytest.fixture
def device(backend: str) -> torch.device:
    return device_for(backend)


requires_cpu_and_cuda = pytest.mark.skipif(
    not {"cpu", "cuda"} <= set(BACKENDS) or not torch.cuda.is_available(),
    reason="CPU↔CUDA parity needs both backends and a CUDA GPU",
)


def skeleton_sources(backend: str, op: str | None = None) -> list[Path]:
    """Sources of `backend` that are still generated skeletons (they raise until written).

    With `op`, only the skeletons that register it.
    """
    folder = PROJECT_ROOT / "csrc" / backend
    return [
        path
        for path in sorted(folder.glob("*"))
        if path.is_file()
        and "KSCAFFOLD_SKELETON" in (text := path.read_text(errors="replace"))
        and (op is None or f'm.impl("{op}"' in text)
    ]


def _registers(backend: str, op: str) -> bool:
    folder = PROJECT_ROOT / "csrc" / backend
    return any(
        f'm.impl("{op}"' in path.read_text(errors="replace")
        for path in sorted(folder.glob("*"))
        if path.is_file()
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Expect a backend's cases to fail while its implementation is a skeleton.

    The cases of tests/test_<op>.py wait for the skeletons that register <op>; the cases of
    other test files wait for every skeleton of their backend.
    """
    for item in items:
        params = getattr(item, "callspec", None)
        backend = params.params.get("backend") if params is not None else None
        if not isinstance(backend, str):
            continue
        op = item.path.stem.removeprefix("test_")
        skeletons = skeleton_sources(backend, op if _registers(backend, op) else None)
        if skeletons:
            names = ", ".join(str(path.relative_to(PROJECT_ROOT)) for path in skeletons)
            item.add_marker(pytest.mark.xfail(reason=f"{names} is a skeleton: write it"))
