"""``kscaffold test``: build what is stale, then run a project's own tests against ``build/``.

The generated suite (``tests/``) loads each backend's build through ``kernels``, as users will.
:func:`prepare_project_tests` makes sure the test dependencies are installed, builds what changed
(:func:`~scaffold.compiler.build_project`), and decides per declared backend whether it is tested
here or skipped, and why: not built (no nvcc, a CPU-only torch), or built but not runnable (no
GPU). Backends that were not built are passed to the suite in :data:`SKIP_VARIABLE`, which the
generated ``tests/conftest.py`` turns into skips with that reason instead of "build first"
failures. :meth:`ProjectTests.run` then runs pytest in this Python, the one whose torch compiled
the build.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scaffold.compiler import BuildReporter, BuildResult, build_project
from scaffold.errors import ToolchainError
from scaffold.project.buildconfig import load_build_config
from scaffold.support.safefs import leaves_project, read_regular_text
from scaffold.vocabulary import SUPPORTED_BACKENDS, TESTS_DIR

#: The generated project's list of what its tests and benchmarks import (pip's format).
REQUIREMENTS_FILE = "requirements-dev.txt"
#: JSON ``{backend: reason}`` for the generated conftest: backends to skip, and why.
SKIP_VARIABLE = "KSCAFFOLD_SKIP_BACKENDS"

_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class BackendOutcome:
    """Whether one declared backend is tested here, and what was built or why it is skipped."""

    backend: str
    tested: bool
    #: The variant tested (``build/<variant>/``), or the reason it is skipped.
    detail: str

    def describe(self) -> str:
        return f"{self.backend} ({self.detail})"


@dataclass(frozen=True)
class ProjectTests:
    """A built project's suite, ready to run: the command, its environment, the backends."""

    project: Path
    builds: tuple[BuildResult, ...]
    backends: tuple[BackendOutcome, ...]
    command: tuple[str, ...]
    #: Variables added to this process's environment for pytest.
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def tested(self) -> tuple[BackendOutcome, ...]:
        return tuple(outcome for outcome in self.backends if outcome.tested)

    @property
    def skipped(self) -> tuple[BackendOutcome, ...]:
        return tuple(outcome for outcome in self.backends if not outcome.tested)

    def describe(self) -> str:
        """``Tested: cpu (build/…). Skipped: cuda (…).`` for the lines around pytest's output."""
        parts = []
        if self.tested:
            parts.append("Tested: " + "; ".join(o.describe() for o in self.tested) + ".")
        else:
            parts.append("No backend can be tested on this machine.")
        if self.skipped:
            parts.append("Skipped: " + "; ".join(o.describe() for o in self.skipped) + ".")
        return " ".join(parts)

    def run(self) -> int:
        """Run pytest in the project, its output going to this process's; its exit status."""
        return subprocess.run(
            self.command, cwd=self.project, env={**os.environ, **self.environment}, check=False
        ).returncode


class _SkipRecorder(BuildReporter):
    """Passes everything on to ``inner`` and keeps the reason of each backend not built."""

    def __init__(self, inner: BuildReporter) -> None:
        self._inner = inner
        self.shows_output = inner.shows_output
        self.skipped: dict[str, str] = {}

    def note(self, message: str) -> None:
        self._inner.note(message)

    def backend_skipped(self, backend: str, reason: str) -> None:
        self.skipped[backend] = reason
        self._inner.backend_skipped(backend, reason)

    def variant_started(self, backend: str, variant: str) -> None:
        self._inner.variant_started(backend, variant)

    def step(self, variant: str, done: int, total: int, description: str) -> None:
        self._inner.step(variant, done, total, description)

    def compiler_output(self, variant: str, line: str) -> None:
        self._inner.compiler_output(variant, line)

    def variant_finished(self, result: BuildResult) -> None:
        self._inner.variant_finished(result)


def missing_requirements(project: Path) -> list[str]:
    """Names in the project's :data:`REQUIREMENTS_FILE` not installed for this Python.

    Without the file (a project from an older kscaffold), only pytest is required. Versions and
    markers are pip's business; this only catches the "No module named pytest" start.
    """
    requirements = project / REQUIREMENTS_FILE
    if leaves_project(project, requirements):
        raise ToolchainError(
            f"{REQUIREMENTS_FILE} is a link that leads out of {project}, and kscaffold reads no "
            "file outside the project: replace it with the file itself, then test again."
        )
    text = read_regular_text(requirements)
    lines = text.splitlines() if text is not None else ["pytest"]
    missing = []
    for line in lines:
        match = _REQUIREMENT_NAME.match(line.split("#", 1)[0])
        if match is None:
            continue  # blank, a comment, or a pip option such as -r or --index-url
        try:
            importlib.metadata.distribution(match[1])
        except importlib.metadata.PackageNotFoundError:
            missing.append(match[1])
    return missing


def _check_requirements(project: Path) -> None:
    missing = missing_requirements(project)
    if not missing:
        return
    listed = (project / REQUIREMENTS_FILE).is_file()
    install = f"-r {REQUIREMENTS_FILE}" if listed else " ".join(missing)
    raise ToolchainError(
        f"The tests need {', '.join(missing)}, not installed for {sys.executable}: "
        f"run `{sys.executable} -m pip install {install}` in {project}, then test again."
    )


def _pytest_command(project: Path, pytest_args: Sequence[str]) -> tuple[str, ...]:
    """The pytest command: on tests/, unless the arguments name test paths of their own."""
    names_a_path = any(
        not arg.startswith("-") and (project / arg.split("::", 1)[0]).exists()
        for arg in pytest_args
    )
    paths = () if names_a_path else (TESTS_DIR,)
    return (sys.executable, "-m", "pytest", *paths, *pytest_args)


def _why_not_built(backend: str, asked: str | None, skipped: dict[str, str]) -> str:
    if backend in skipped:
        reason = skipped[backend]
    elif asked is not None:
        reason = f"only --backend {asked} was asked for"
    elif backend not in SUPPORTED_BACKENDS:
        reason = "kscaffold cannot build it"
    else:
        reason = "the build did not produce it"
    return f"not built: {reason.rstrip('.')}"


def _gpu_visible() -> bool:
    from scaffold.compiler.toolchain import visible_gpu_capabilities

    return bool(visible_gpu_capabilities())


def prepare_project_tests(
    project: Path,
    *,
    pytest_args: Sequence[str] = (),
    backend: str | None = None,
    reporter: BuildReporter | None = None,
) -> ProjectTests:
    """Check the test dependencies, build what is stale, and decide what can be tested here.

    Raises :class:`~scaffold.errors.ToolchainError` naming the missing test dependencies and
    the pip command that installs them, before anything is compiled; a build error as
    :func:`~scaffold.compiler.build_project` does. ``backend`` builds and tests only that one.
    """
    project = project.resolve()
    config = load_build_config(project)
    _check_requirements(project)
    recorder = _SkipRecorder(reporter or BuildReporter())
    builds = tuple(build_project(project, backend=backend, reporter=recorder))
    built = {result.backend: result for result in builds}

    outcomes: list[BackendOutcome] = []
    not_built: dict[str, str] = {}
    for declared in config.backends:
        result = built.get(declared)
        if result is None:
            reason = _why_not_built(declared, backend, recorder.skipped)
            not_built[declared] = reason
            outcomes.append(BackendOutcome(declared, tested=False, detail=reason))
        elif declared == "cuda" and not _gpu_visible():
            archs = " ".join(result.archs)
            outcomes.append(
                BackendOutcome(
                    declared,
                    tested=False,
                    detail=f"compiled for {archs} into build/{result.variant}/; no CUDA GPU "
                    "is visible to run it: torch.cuda.is_available() is False",
                )
            )
        else:
            outcomes.append(
                BackendOutcome(declared, tested=True, detail=f"build/{result.variant}/")
            )

    return ProjectTests(
        project=project,
        builds=builds,
        backends=tuple(outcomes),
        command=_pytest_command(project, pytest_args),
        environment={SKIP_VARIABLE: json.dumps(not_built)},
    )
