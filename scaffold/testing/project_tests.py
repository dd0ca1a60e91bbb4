"""``kscaffold test``: build what is stale, then run a project's own tests against ``build/``.

The generated suite (``tests/``) loads each backend's build through ``kernels``, as users will.
:func:`prepare_project_tests` makes sure the test dependencies are installed, builds what changed
(:func:`~scaffold.compiler.build_project`), and decides per declared backend whether it is tested
here or skipped, and why: not built (no nvcc, a CPU-only torch), or built but not runnable (no
GPU). Backends that were not built are passed to the suite in :data:`SKIP_VARIABLE`, which the
generated ``tests/conftest.py`` turns into skips with that reason instead of "build first"
failures. :meth:`ProjectTests.run` then runs pytest in this Python, the one whose torch compiled
the build, with :mod:`scaffold.testing.pytest_plugin` loaded: the suite imports the kernel by its
package name and loads it by its Hub repo id from ``build/``, as kernel-builder's test shell
allows, and the plugin's counts say what happened (:class:`SuiteRun`).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scaffold.compiler import BuildReporter, BuildResult, build_project
from scaffold.errors import ToolchainError
from scaffold.project.buildconfig import load_build_config
from scaffold.support.safefs import leaves_project, read_regular_text
from scaffold.testing.run_report import BACKEND_VARIABLE, REPORT_VARIABLE, RunCounts
from scaffold.vocabulary import SUPPORTED_BACKENDS, TESTS_DIR

#: The generated project's list of what its tests and benchmarks import (pip's format).
REQUIREMENTS_FILE = "requirements-dev.txt"
#: JSON ``{backend: reason}`` for the generated conftest: backends to skip, and why.
SKIP_VARIABLE = "KSCAFFOLD_SKIP_BACKENDS"
#: The plugin's module, for ``-p`` where its ``pytest11`` entry point is not installed.
PLUGIN_MODULE = "scaffold.testing.pytest_plugin"
#: pytest's exit status when it collected no test, which ``kscaffold test`` repeats.
NO_TESTS_STATUS = 5

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

    @property
    def has_tests(self) -> bool:
        """Whether the command's tests exist (``tests/``, or the paths the user named)."""
        return TESTS_DIR not in self.command or (self.project / TESTS_DIR).is_dir()

    def run(self) -> SuiteRun:
        """Run pytest in the project, its output going to this process's; what happened."""
        if not self.has_tests:
            return SuiteRun(NO_TESTS_STATUS, RunCounts(), self)
        with tempfile.TemporaryDirectory(prefix="kscaffold-test-") as scratch:
            report = Path(scratch) / "counts.json"
            environment = {**os.environ, **self.environment, REPORT_VARIABLE: str(report)}
            status = subprocess.run(
                self.command, cwd=self.project, env=environment, check=False
            ).returncode
            try:
                counts = RunCounts(**json.loads(report.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError):
                counts = None  # pytest ended before the plugin could write (a usage error)
        return SuiteRun(status, counts, self)


@dataclass(frozen=True)
class SuiteRun:
    """pytest's exit status and counts, told as one honest line."""

    status: int
    counts: RunCounts | None
    tests: ProjectTests

    @property
    def passed(self) -> bool:
        """Tests ran and passed, or every case that ran is a skeleton's expected failure."""
        counts = self.counts
        return (
            self.status == 0
            and counts is not None
            and (counts.passed > 0 or counts.xfailed + counts.xpassed > 0)
        )

    @property
    def exit_code(self) -> int:
        """0 when passed, else pytest's status; a signal as a shell gives it (128 + its number)."""
        if self.passed:
            return 0
        return 128 - self.status if self.status < 0 else (self.status or 1)

    def verdict(self) -> str:
        """``Tested: ...`` only when tests ran and passed; otherwise what went wrong, where."""
        counts = self.counts
        variant = f"build/{counts.variant}/" if counts and counts.variant else "no built variant"
        if counts is None and self.status < 0:
            try:
                killer = signal.Signals(-self.status).name
            except ValueError:
                killer = f"signal {-self.status}"
            return (
                f"kscaffold test failed: pytest was killed by {killer} before running any test, "
                "most often a crash while loading the built library (a C++ error in its op "
                "registrations: its message is above)."
            )
        if counts is None:
            return f"kscaffold test failed: pytest exited {self.status} before running any test."
        if counts.collection_errors:
            where = ", ".join(counts.collection_errors[:3])
            more = len(counts.collection_errors) - 3
            where += f" and {more} more" if more > 0 else ""
            return (
                f"kscaffold test failed: the tests could not be collected ({where}) against "
                f"{variant}; see the errors above. {self.tests.describe()}"
            )
        if counts.collected == 0:
            return (
                f"kscaffold test found no tests to run in {self.tests.project.name}"
                f"{'' if self.tests.has_tests else f' (it has no {TESTS_DIR}/ folder)'}: "
                "nothing was tested."
            )
        tally = _tally(counts)
        if self.status != 0 or counts.failed or counts.errors:
            return f"kscaffold test failed against {variant}: {tally}. {self.tests.describe()}"
        if counts.passed == 0 and counts.xfailed + counts.xpassed > 0:
            return (
                f"kscaffold test ran only the cases expected to fail ({tally}): the ops are "
                "generated skeletons that raise until written (the files with a "
                "KSCAFFOLD_SKELETON line); nothing else was tested."
            )
        if counts.passed == 0:
            return f"kscaffold test ran no test to completion ({tally}): nothing was tested."
        return f"kscaffold test passed ({tally}). {self.tests.describe()}"


def _tally(counts: RunCounts) -> str:
    parts = [
        (counts.passed, "passed"),
        (counts.failed, "failed"),
        (counts.errors, "errors"),
        (counts.skipped, "skipped"),
        (counts.xfailed, "xfailed"),
        (counts.xpassed, "xpassed"),
    ]
    return ", ".join(f"{number} {word}" for number, word in parts if number)


def _plugin_autoloaded() -> bool:
    """Whether pytest loads the plugin by itself (kscaffold installed, autoload not disabled)."""
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    return any(
        entry.value == PLUGIN_MODULE for entry in importlib.metadata.entry_points(group="pytest11")
    )


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
    plugin = () if _plugin_autoloaded() else ("-p", PLUGIN_MODULE)
    return (sys.executable, "-m", "pytest", *plugin, *paths, *pytest_args)


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
            made = (
                f"compiled for {' '.join(result.archs)}" if result.native else "pure Python, copied"
            )
            outcomes.append(
                BackendOutcome(
                    declared,
                    tested=False,
                    detail=f"{made} into build/{result.variant}/; no CUDA GPU "
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
        environment={
            SKIP_VARIABLE: json.dumps(not_built),
            **({BACKEND_VARIABLE: backend} if backend else {}),
        },
    )
