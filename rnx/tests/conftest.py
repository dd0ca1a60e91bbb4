"""Load rnx the way its users will: through `kernels`, from this project's build/ folder."""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from types import ModuleType

import pytest
import torch
from kernels import get_local_kernel

PROJECT_ROOT = Path(__file__).resolve().parents[1]
BACKENDS: tuple[str, ...] = ("cuda", "cpu")
NO_GPU = "needs a CUDA GPU: torch.cuda.is_available() is False"
#: Backends `kscaffold test` did not build here, with the reason: {"cuda": "not built: ..."}.
NOT_BUILT: dict[str, str] = json.loads(os.environ.get("KSCAFFOLD_SKIP_BACKENDS") or "{}")


def nix_ci_build() -> Path | None:
    """The Nix build kernel-builder's `nix run .#ci-test` names in LOCAL_KERNELS, if any."""
    hub = re.search(r'^repo-id\s*=\s*"([^"]+)"', (PROJECT_ROOT / "build.toml").read_text(), re.M)
    repo_id = hub[1] if hub else None
    for entry in os.environ.get("LOCAL_KERNELS", "").split(":"):
        name, _, path = entry.partition("=")
        if repo_id and name == repo_id and path:
            return Path(path)
    return None


@functools.cache
def load_kernel(backend: str) -> ModuleType:
    """The rnx build for `backend` under build/ (or ci-test's), as `kernels` loads it."""
    if backend in NOT_BUILT:
        pytest.skip(f"{backend}: {NOT_BUILT[backend]}")
    ci_build = nix_ci_build()
    try:
        return get_local_kernel(ci_build or PROJECT_ROOT, backend=backend)
    except FileNotFoundError as error:
        if ci_build is not None:
            pytest.skip(f"the Nix CI build holds no {backend} variant")
        pytest.fail(
            f"No {backend} build of rnx in {PROJECT_ROOT / 'build'}: "
            f"run `kscaffold build` first.\n{error}",
            pytrace=False,
        )


def device_for(backend: str) -> torch.device:
    return torch.device("cuda" if backend == "cuda" else "cpu")


def _backend_param(backend: str) -> object:
    needs_gpu = backend == "cuda" and not torch.cuda.is_available()
    reason = f"{backend}: {NOT_BUILT[backend]}" if backend in NOT_BUILT else NO_GPU
    skip = pytest.mark.skipif(needs_gpu or backend in NOT_BUILT, reason=reason)
    return pytest.param(backend, id=backend, marks=skip)


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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "kernels_ci: run by kernel-builder's `nix run .#ci-test` (pytest -m kernels_ci)"
    )


@pytest.hookimpl(tryfirst=True)  # before `-m kernels_ci` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test for kernel-builder's CI runner; expect skeleton backends to fail.

    The whole suite takes seconds, so `nix run .#ci-test` runs all of it. A backend's cases
    are expected to fail while its implementation is a generated skeleton: the cases of
    tests/test_<op>.py wait for the skeletons that register <op>; the cases of other test files
    wait for every skeleton of their backend.
    """
    for item in items:
        item.add_marker(pytest.mark.kernels_ci)
        params = getattr(item, "callspec", None)
        backend = params.params.get("backend") if params is not None else None
        if not isinstance(backend, str):
            continue
        op = item.path.stem.removeprefix("test_")
        skeletons = skeleton_sources(backend, op if _registers(backend, op) else None)
        if skeletons:
            names = ", ".join(str(path.relative_to(PROJECT_ROOT)) for path in skeletons)
            item.add_marker(pytest.mark.xfail(reason=f"{names} is a skeleton: write it"))
