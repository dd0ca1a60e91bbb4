"""A pytest plugin: a kernel project's tests see its build as kernel-builder's test shell shows it.

kernel-builder's Nix test shell puts the built variant on the path under the kernel's package
name, so upstream test suites ``import relu`` or ``from rmsnorm.layers import RMSNorm``, and some
load the kernel from the Hub by its repo id. This plugin, registered through the ``pytest11``
entry point (and passed with ``-p`` by ``kscaffold test`` where the entry point is missing), does
the same for a pytest run inside a project, without copying anything into it:

- the package name imports ``build/<variant>/`` (a meta-path finder, nothing written);
- ``kernels.get_kernel`` for the project's own repo id (``[general.hub] repo-id``, or any
  ``<owner>/<name>`` as upstream tests write it) and ``kernels.get_local_kernel`` for the project
  folder without an explicit backend return that same module;
- the variant is the one the ``kernels`` loader would pick for the run's backend:
  :data:`BACKEND_VARIABLE` (``kscaffold test --backend``), else CUDA where a GPU is visible and a
  CUDA variant is built, else CPU. A CPU run never loads the CUDA variant, even with a CUDA torch.

Outside a kernel-builder project (no ``build.toml`` with ``[general]``), or before anything is
built, it does nothing. :data:`REPORT_VARIABLE` names a file it writes the run's counts to, which
``kscaffold test`` reads to say what happened.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from scaffold.errors import KscaffoldError
from scaffold.project.buildconfig import load_build_config
from scaffold.testing.run_report import BACKEND_VARIABLE, REPORT_VARIABLE, RunCounts
from scaffold.vocabulary import BUILD_DIR, BUILD_TOML, SUPPORTED_BACKENDS


@dataclass(frozen=True)
class SuiteTarget:
    """The build a project's tests run against."""

    project: Path
    python_name: str
    kernel_name: str
    hub_repo_id: str | None
    backend: str
    variant_dir: Path

    def owns(self, repo_id: str) -> bool:
        """Whether a Hub repo id names this project: its own, or ``<any owner>/<its name>``."""
        if self.hub_repo_id is not None and repo_id == self.hub_repo_id:
            return True
        owner, slash, name = repo_id.partition("/")
        return bool(owner) and bool(slash) and name == self.kernel_name


def find_project(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` with a ``build.toml`` that has ``[general]``."""
    for folder in (start, *start.parents):
        toml = folder / BUILD_TOML
        if toml.is_file():
            try:
                text = toml.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return None
            return folder if "[general" in text else None
    return None


def default_backend(built: Sequence[str]) -> str:
    """CUDA where a GPU is visible and a CUDA variant is built, else CPU (never CUDA blind)."""
    if "cuda" in built:
        import torch

        if torch.cuda.is_available():
            return "cuda"
    return "cpu"


def _built_backends(build_dir: Path) -> list[str]:
    return [b for b in SUPPORTED_BACKENDS if _resolve(build_dir, b) is not None]


def _resolve(build_dir: Path, backend: str) -> Path | None:
    """The variant of ``build_dir`` the ``kernels`` loader picks for ``backend``, if any."""
    from kernels.variants import get_variants_local, resolve_variant

    try:
        variant, _ = resolve_variant(get_variants_local(build_dir), backend)
    except ValueError:  # a backend this torch cannot run, e.g. cuda with a ROCm torch
        return None
    return build_dir / variant.variant_str if variant is not None else None


def find_target(start: Path, backend: str | None = None) -> SuiteTarget | None:
    """The project around ``start`` and the built variant its tests should import, if any."""
    project = find_project(start.resolve())
    if project is None or not (project / BUILD_DIR).is_dir():
        return None
    try:
        config = load_build_config(project)
    except KscaffoldError:
        return None  # the build and check commands say what is wrong with it
    build_dir = project / BUILD_DIR
    chosen = backend or default_backend(_built_backends(build_dir))
    variant_dir = _resolve(build_dir, chosen)
    if variant_dir is None:
        return None
    return SuiteTarget(
        project=project,
        python_name=config.python_name,
        kernel_name=config.name.name,
        hub_repo_id=config.hub_repo_id,
        backend=chosen,
        variant_dir=variant_dir,
    )


class VariantFinder(importlib.abc.MetaPathFinder):
    """Imports the package name from ``build/<variant>/``, as if it were on the path."""

    def __init__(self, target: SuiteTarget) -> None:
        self.target = target

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.target.python_name:
            return None
        return importlib.util.spec_from_file_location(
            fullname,
            self.target.variant_dir / "__init__.py",
            submodule_search_locations=[str(self.target.variant_dir)],
        )


def _redirect_get_kernel(target: SuiteTarget, real: Callable[..., ModuleType]) -> Any:
    @functools.wraps(real)
    def get_kernel(repo_id: str, *args: Any, **kwargs: Any) -> ModuleType:
        if target.owns(repo_id) and kwargs.get("backend") in (None, target.backend):
            return importlib.import_module(target.python_name)
        return real(repo_id, *args, **kwargs)

    return get_kernel


def _redirect_get_local_kernel(target: SuiteTarget, real: Callable[..., ModuleType]) -> Any:
    @functools.wraps(real)
    def get_local_kernel(repo_path: Path, *args: Any, **kwargs: Any) -> ModuleType:
        names_project = Path(repo_path).resolve() in (target.project, target.project / BUILD_DIR)
        if names_project and not args and kwargs.get("backend") is None:
            return importlib.import_module(target.python_name)
        return real(repo_path, *args, **kwargs)

    return get_local_kernel


def install(target: SuiteTarget) -> None:
    """Make ``target`` importable by name and answer ``kernels``' calls for it."""
    if not any(isinstance(finder, VariantFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, VariantFinder(target))
    import kernels
    import kernels.load

    # The loader's own functions, also when a second run in this process installs again.
    get_kernel = getattr(kernels.load.get_kernel, "__wrapped__", kernels.load.get_kernel)
    get_local = getattr(kernels.load.get_local_kernel, "__wrapped__", kernels.load.get_local_kernel)
    for module in (kernels, kernels.load):
        module.get_kernel = _redirect_get_kernel(target, get_kernel)
        module.get_local_kernel = _redirect_get_local_kernel(target, get_local)


class _Plugin:
    """The hooks, holding one run's target and counts."""

    def __init__(self, target: SuiteTarget | None) -> None:
        self.target = target
        self.counts = RunCounts(variant=target.variant_dir.name if target else None)

    def pytest_report_header(self) -> str | None:
        if self.target is None:
            return None
        relative = self.target.variant_dir.relative_to(self.target.project)
        return f"kscaffold: {self.target.python_name} imports {relative}/"

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.counts.collection_errors.append(report.nodeid or "(session)")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.counts.collected = len(session.items)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        xfail = hasattr(report, "wasxfail")
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.skipped:
                if xfail:
                    self.counts.xfailed += 1
                else:
                    self.counts.skipped += 1
            elif report.failed:
                if report.when == "setup":
                    self.counts.errors += 1
                else:
                    self.counts.failed += 1
            elif xfail:
                self.counts.xpassed += 1
            else:
                self.counts.passed += 1
        elif report.when == "teardown" and report.failed:
            self.counts.errors += 1

    def pytest_sessionfinish(self) -> None:
        destination = os.environ.get(REPORT_VARIABLE)
        if destination:
            Path(destination).write_text(json.dumps(asdict(self.counts)), encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    backend = os.environ.get(BACKEND_VARIABLE) or None
    target = find_target(Path(config.invocation_params.dir), backend)
    if target is not None:
        install(target)
        # kernel-builder's CI runner selects these; its test shell knows the marker.
        config.addinivalue_line("markers", "kernels_ci: run by kernel-builder's CI test runner")
    config.pluginmanager.register(_Plugin(target), "kscaffold-target")
